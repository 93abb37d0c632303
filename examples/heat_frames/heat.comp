#version 450
// One explicit step of 1-D heat diffusion with fixed ends: next = cur + k * laplacian(cur).
layout(local_size_x = 64) in;
layout(constant_id = 0) const float K = 0.25;
layout(set = 0, binding = 0) readonly buffer Cur { float cur[]; };
layout(set = 0, binding = 1) writeonly buffer Next { float next[]; };
layout(push_constant) uniform Push { uint n; } pc;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= pc.n) return;
    if (i == 0u || i == pc.n - 1u) { next[i] = cur[i]; return; }
    next[i] = cur[i] + K * (cur[i - 1u] - 2.0 * cur[i] + cur[i + 1u]);
}
