#version 450
// y = alpha * x + y; alpha is a specialization constant, the element count a push constant
layout(local_size_x = 64) in;
layout(constant_id = 0) const float alpha = 1.0;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) buffer Y { float y[]; };
layout(push_constant) uniform Push { uint count; } pc;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < pc.count) {
        y[i] = alpha * x[i] + y[i];
    }
}
