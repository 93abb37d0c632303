#version 450
#extension GL_ARB_gpu_shader_int64 : require
// 64-bit integers and doubles: literals that span two words.
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer Data { double d[4]; int64_t q[]; } data;

void main() {
    double x = data.d[0] * 1.0e-300 + 2.5;
    int64_t big = data.q[0] + int64_t(-9000000000l);
    if (x > 0.125) { big = big ^ 0x123456789abl; }
    data.d[1] = x;
    data.q[1] = big;
}
