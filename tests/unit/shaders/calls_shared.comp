#version 450
// Function calls, shared memory, barriers and GLSL.std.450 instructions.
layout(local_size_x = 32) in;
layout(set = 0, binding = 0) readonly buffer In { vec4 a[]; } src;
layout(set = 0, binding = 1) writeonly buffer Out { float b[]; } dst;
layout(constant_id = 0) const int SHIFT = 3;
shared float tile[32];

float weight(vec4 v, float bias) {
    return fma(length(v), 0.5, bias) + pow(v.x, 2.0);
}

float clampw(float x) { return clamp(x, -1.0e3, 1.0e3); }

void main() {
    uint lid = gl_LocalInvocationID.x;
    tile[lid] = weight(src.a[gl_GlobalInvocationID.x], float(SHIFT));
    barrier();
    float s = 0.0;
    for (int j = 0; j < 32; j += 2) { s += tile[(lid + uint(j)) % 32u]; }
    switch (int(lid) % 4) {
        case 0: s = clampw(s); break;
        case 1: s = -s; break;
        case 3: s = floor(s); break;
        default: s = s * 3.14159;
    }
    dst.b[gl_GlobalInvocationID.x] = s;
}
