#version 450
// values[i] = (i + OFFSET) * STEP, negated when NEGATE; the workgroup size is constant 0.
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int OFFSET = 0;
layout(constant_id = 2) const float STEP = 1.0;
layout(constant_id = 3) const bool NEGATE = false;
layout(set = 0, binding = 0) buffer Values { float values[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    float v = float(int(i) + OFFSET) * STEP;
    values[i] += NEGATE ? -v : v;
}
