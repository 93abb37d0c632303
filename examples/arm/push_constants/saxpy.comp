#version 450
// y = a * x + y, with a and the element count as push constants.
layout(local_size_x = 64) in;
layout(push_constant) uniform Params {
    float a;
    uint count;
};
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) buffer Y { float y[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < count) {
        y[i] = a * x[i] + y[i];
    }
}
