#version 450
// dst = src * FACTOR + 1; FACTOR comes from build_options.
layout(local_size_x = 32) in;
layout(set = 0, binding = 0) readonly buffer Src { float src[]; };
layout(set = 0, binding = 1) writeonly buffer Dst { float dst[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    dst[i] = src[i] * FACTOR + 1.0;
}
