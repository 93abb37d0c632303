"""The repository's own test shaders (tests/unit/shaders) through the SPIR-V checker: results equal
to NumPy's where the shader is correct, and the race found where it is not."""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

from kernellab.spirvsim import Binding, check_dispatch, glsl_to_spirv

SHADERS = Path(__file__).parent / "shaders"


def test_calls_shared_matches_numpy():
    spv = glsl_to_spirv((SHADERS / "calls_shared.comp").read_text())
    rng = np.random.default_rng(5)
    a = rng.uniform(-2, 2, (64, 4)).astype(np.float32)
    r = check_dispatch(spv, "main", (2, 1, 1), spec_constants={0: 5},
                       bindings={(0, 0): Binding("src", a.tobytes()), (0, 1): Binding("dst", bytes(64 * 4))})
    assert r.findings == []
    tile = (np.linalg.norm(a, axis=1) * 0.5 + 5 + a[:, 0] ** 2).astype(np.float32).reshape(2, 32)
    lid = np.arange(32)
    s = sum(np.roll(tile, -j, axis=1) for j in range(0, 32, 2))
    expect = np.where(lid % 4 == 0, np.clip(s, -1e3, 1e3),
                      np.where(lid % 4 == 1, -s, np.where(lid % 4 == 3, np.floor(s), s * np.float32(3.14159))))
    np.testing.assert_allclose(np.frombuffer(r.buffers["dst"], np.float32).reshape(2, 32), expect, rtol=1e-5)


def test_loop_branch_reads_what_others_write():
    spv = glsl_to_spirv(SHADERS / "loop_branch.comp")
    values = np.arange(64, dtype=np.float32)
    r = check_dispatch(spv, "main", (1, 1, 1), push_constants=struct.pack("<If", 8, 2.0),
                       bindings={(0, 0): Binding("values", values.tobytes())})
    assert {(f.kind, f.resource, f.scope) for f in r.findings} == {("data-race", "values", "intra-workgroup")}
    assert {a["location"]["file"] for f in r.findings for a in f.accesses} == {str(SHADERS / "loop_branch.comp")}
    # both arms of the if read values[k]: one finding per pair of source places
    assert sorted(tuple(sorted(a["location"]["line"] for a in f.accesses)) for f in r.findings) == [(12, 17), (14, 17)]
    # clean when each invocation only reads what no one writes: count the loop to zero
    clean = check_dispatch(spv, "main", (1, 1, 1), push_constants=struct.pack("<If", 0, 2.0),
                           bindings={(0, 0): Binding("values", values.tobytes())})
    assert clean.findings == [] and not np.frombuffer(clean.buffers["values"], np.float32).any()


def test_types64_doubles_and_int64():
    spv = glsl_to_spirv((SHADERS / "types64.comp").read_text())
    data = struct.pack("<4d2q", 3.0, 0, 0, 0, 5, 0)
    r = check_dispatch(spv, "main", (1, 1, 1), bindings={(0, 0): Binding("data", data)})
    assert r.findings == []
    d1, q1 = struct.unpack_from("<d", r.buffers["data"], 8)[0], struct.unpack_from("<q", r.buffers["data"], 40)[0]
    assert d1 == 3.0 * 1.0e-300 + 2.5
    assert q1 == (5 - 9000000000) ^ 0x123456789AB
