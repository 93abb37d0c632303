#version 450
// Reads and writes VK_ARM_tensors tensors: dst[i] = src[i] * 2 + 1 over a rank-1 int32 tensor.
#extension GL_ARM_tensors : require
#extension GL_EXT_shader_explicit_arithmetic_types : require

layout(local_size_x = 4) in;
layout(set = 0, binding = 0) uniform tensorARM<int32_t, 1> src_t;
layout(set = 0, binding = 1) uniform tensorARM<int32_t, 1> dst_t;

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= tensorSizeARM(src_t, 0)) {
        return;
    }
    int32_t v;
    tensorReadARM(src_t, uint[](i), v);
    tensorWriteARM(dst_t, uint[](i), v * 2 + 1);
}
