// A workgroup reduction: local memory, barriers, a loop and math builtins.
#ifndef WG
#define WG 64
#endif
__kernel void reduce(__global const float* in, __global float* out, uint n) {
    __local float scratch[WG];
    uint lid = get_local_id(0);
    uint gid = get_global_id(0);
    scratch[lid] = gid < n ? sqrt(fabs(in[gid])) : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = WG / 2; s > 0; s >>= 1) {
        if (lid < s) scratch[lid] += scratch[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) out[get_group_id(0)] = scratch[0];
}
