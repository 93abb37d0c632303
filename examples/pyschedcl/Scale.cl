// y = k * x over the n work-items of this part
__kernel void Scale(__global const float *x, __global float *y, float k, int n) {
    int i = get_global_id(0);
    if (i >= n) return;
    y[i] = k * x[i];
}
