#version 450
layout(local_size_x = 4) in;
layout(set = 0, binding = 0) buffer B { uint v[]; };
void main() { v[gl_GlobalInvocationID.x] += gl_GlobalInvocationID.x + 10u; }
