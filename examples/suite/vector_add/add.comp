#version 450
// c = a + b over float buffers; the element count comes from a push constant so a partial
// last workgroup does not write past the end.
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(set = 1, binding = 0) writeonly buffer C { float c[]; };
layout(push_constant) uniform Push { uint count; } pc;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < pc.count) {
        c[i] = a[i] + b[i];
    }
}
