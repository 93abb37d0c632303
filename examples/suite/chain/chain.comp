#version 450
// one step of a chain: dst = src * scale + offset (scale and offset from push constants)
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer Src { float src[]; };
layout(set = 0, binding = 1) writeonly buffer Dst { float dst[]; };
layout(push_constant) uniform Push { float scale; float offset; } pc;
void main() {
    uint i = gl_GlobalInvocationID.x;
    dst[i] = sin(src[i]) * pc.scale + pc.offset;
}
