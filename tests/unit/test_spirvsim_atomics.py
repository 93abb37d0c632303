"""Atomic counters in the SPIR-V checker: many invocations adding to one address are applied at
once (prefix sums), giving what applying them one after another in invocation order gives."""
from __future__ import annotations

import numpy as np
import pytest

from kernellab import tools
from kernellab.spirvsim import Binding, check_dispatch, glsl_to_spirv

pytestmark = pytest.mark.skipif(tools.find("glslangValidator") is None, reason="needs glslangValidator")

COUNTER = """#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer C { uint counter[2]; };
layout(std430, binding = 1) buffer O { uint old[]; };
void main() {
  uint i = gl_GlobalInvocationID.x;
  old[i] = OP;
}
"""


@pytest.mark.parametrize("op, delta", [
    ("atomicAdd(counter[i % 2u], i * 7u)", lambda i: i * 7),
    ("atomicAdd(counter[0], 0xffffff00u)", lambda i: 0xffffff00),  # wraps at 32 bits
    ("atomicAdd(counter[i % 2u], uint(-int(i)))", lambda i: -i),
])
def test_counters_as_one_after_another(op, delta):
    spv = glsl_to_spirv(COUNTER.replace("OP", op), debug="-g0")
    start = np.array([5, 1000], np.uint32)
    n = 4 * 64
    r = check_dispatch(spv, "main", (4, 1, 1), bindings={(0, 0): Binding("counter", start.tobytes()),
                                                          (0, 1): Binding("old", bytes(4 * n))})
    assert not r.findings
    mem = start.astype(np.int64).copy()
    expected = np.zeros(n, np.int64)
    two = "% 2u" in op
    for i in range(n):  # invocation order, which the checker's lockstep batch applies
        k = i % 2 if two else 0
        expected[i] = mem[k]
        mem[k] = (mem[k] + delta(i)) % 2 ** 32
    assert np.frombuffer(r.buffers["old"], np.uint32).tolist() == (expected % 2 ** 32).tolist()
    assert np.frombuffer(r.buffers["counter"], np.uint32).tolist() == (mem % 2 ** 32).tolist()
