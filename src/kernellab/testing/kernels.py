"""Kernels shared by kernellab's tests and benchmarks, so that a figure and a test speak of the
same code."""
from __future__ import annotations

#: the second barrier of each tile step, which orders this step's reads of the tiles before the
#: next step's writes; tests replace it to plant a race or a divergent barrier
SECOND_BARRIER = "barrier(CLK_LOCAL_MEM_FENCE);"


def tiled_matmul_cl(tile: int = 16, second_barrier: str = SECOND_BARRIER) -> str:
    """OpenCL C ``matmul(A, B, C, n)``: C = A x B for n x n floats, ``tile`` x ``tile`` work-groups
    staging both operands in ``__local`` tiles (n a multiple of ``tile``)."""
    return f"""\
#define TILE {tile}
__kernel void matmul(__global const float *A, __global const float *B, __global float *C, int n) {{
  __local float As[TILE][TILE];
  __local float Bs[TILE][TILE];
  int row = get_global_id(1), col = get_global_id(0);
  int ly = get_local_id(1), lx = get_local_id(0);
  float acc = 0.0f;
  for (int t = 0; t < n / TILE; ++t) {{
    As[ly][lx] = A[row * n + t * TILE + lx];
    Bs[ly][lx] = B[(t * TILE + ly) * n + col];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < TILE; ++k)
      acc += As[ly][k] * Bs[k][lx];
    {second_barrier}
  }}
  C[row * n + col] = acc;
}}
"""
