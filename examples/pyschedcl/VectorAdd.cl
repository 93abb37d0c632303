// c = a + b over the n work-items of this part (PySchedCL's bound argument: the part's share)
__kernel void VectorAdd(__global const float *a, __global const float *b, __global float *c, int n) {
    int i = get_global_id(0);
    if (i >= n) return;
    c[i] = a[i] + b[i];
}
