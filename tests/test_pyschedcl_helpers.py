"""Kernels and spec writers shared by the issue-6 tests (kernel specs, partitions, schedules).

Not a test module (``__test__ = False``); tests import it by name (``tests/`` is on the path).
"""
from __future__ import annotations

import json
from pathlib import Path

from kernellab.errors import InputError

__test__ = False

VECADD = """
__kernel void VectorAdd(__global const float* a, __global const float* b, __global float* c, int n) {
    int i = get_global_id(0);
    if (i >= n) return;
    c[i] = a[i] + b[i];
}
"""
# rows of C = A (m x p) * B (p x n); dimension 0 is the row, so a split gives each part whole rows
MATMUL = """
__kernel void matmul(__global const float* A, __global const float* B, __global float* C, int p, int n) {
    int row = get_global_id(0);
    int col = get_global_id(1);
    float acc = 0.0f;
    for (int k = 0; k < p; ++k) acc += A[row * p + k] * B[k * n + col];
    C[row * n + col] = acc;
}
"""
# y = M x: x has break 0 (every part needs all of it), M and y are split by rows
MATVEC = """
__kernel void matvec(__global const float* M, __global const float* x, __global float* y, uint n, uint rows) {
    uint r = get_global_id(0);
    if (r >= rows) return;
    float acc = 0.0f;
    for (uint j = 0; j < n; ++j) acc += M[r * n + j] * x[j];
    y[r] = acc;
}
"""
# io buffer with a vector type and a local argument
SCALE4 = """
__kernel void scale4(__global int4* v, int k, __local int4* tmp) {
    int i = get_global_id(0);
    int l = get_local_id(0);
    tmp[l] = v[i] * k;
    barrier(CLK_LOCAL_MEM_FENCE);
    v[i] = tmp[l] + (int4)(1, 2, 3, 4);
}
"""
# transpose into a break: 0 output (offset mode: absolute ids, whole buffers, merged writes)
TRANSPOSE = """
__kernel void transpose(__global const int* src, __global int* dst, int n) {
    int r = get_global_id(0);
    for (int c = 0; c < n; ++c) dst[c * n + r] = src[r * n + c];
}
"""


def write_spec(tmp: Path, name: str, source: str, spec: dict) -> Path:
    (tmp / f"{name}.cl").write_text(source)
    spec = {"name": name, "src": f"{name}.cl", **spec}
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(spec))
    return path


def vecadd_spec(tmp: Path, local: bool = True) -> Path:
    spec = {"workDimension": 1, "globalWorkSize": "[dataset]", "partition": 10,
            "inputBuffers": [{"break": 1, "pos": 0, "size": "dataset", "type": "float"},
                             {"break": 1, "pos": 1, "size": "dataset", "type": "float"}],
            "outputBuffers": [{"break": 1, "pos": 2, "size": "dataset", "type": "float"}],
            "varArguments": [{"pos": 3, "type": "int", "value": "partition_round(dataset, size_percent)"}]}
    if local:
        spec["localWorkSize"] = "[16]"
    return write_spec(tmp, "VectorAdd", VECADD, spec)


GOOD = {
    "name": "VectorAdd", "src": "k.cl", "workDimension": 1, "partition": 10, "globalWorkSize": "[dataset]",
    "inputBuffers": [{"break": 1, "pos": 0, "size": "dataset", "type": "float"},
                     {"break": 1, "pos": 1, "size": "dataset", "type": "float"}],
    "outputBuffers": [{"break": 1, "pos": 2, "size": "dataset", "type": "float"}],
    "varArguments": [{"pos": 3, "type": "int", "value": "partition_round(dataset, size_percent)"}],
}


def spec_file(tmp: Path, **changes) -> Path:
    (tmp / "k.cl").write_text("__kernel void VectorAdd() {}")
    data = {**GOOD, **changes}
    for k, v in list(data.items()):
        if v is None:
            del data[k]
    p = tmp / "spec.json"
    p.write_text(json.dumps(data))
    return p


def problems(exc: InputError) -> dict[str, str]:
    found: dict[str, str] = {}
    for p in exc.problems:
        found[p.where] = f"{found[p.where]}\n{p.message}" if p.where in found else p.message
    return found
