"""Correct programs run by the SPIR-V checker: verified clean, with results equal to NumPy's;
and shaders outside the supported subset refused, naming what is unsupported."""
from __future__ import annotations

import struct

import numpy as np
import pytest

from kernellab.spirvsim import Binding, Unsupported, check_dispatch, glsl_to_spirv

MATMUL = """#version 450
layout(local_size_x = 16, local_size_y = 16) in;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) writeonly buffer C { float c[]; };
layout(push_constant) uniform P { uint n; } pc;
shared float ta[16][16];
shared float tb[16][16];
void main() {
  uint lx = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y;
  uint col = gl_GlobalInvocationID.x, row = gl_GlobalInvocationID.y;
  uint n = pc.n;
  float acc = 0.0;
  for (uint t = 0u; t < n / 16u; ++t) {
    ta[ly][lx] = a[row * n + t * 16u + lx];
    tb[ly][lx] = b[(t * 16u + ly) * n + col];
    barrier();
    for (int k = 0; k < 16; ++k) acc += ta[ly][k] * tb[k][lx];
    barrier();
  }
  c[row * n + col] = acc;
}
"""


def matmul(n: int, source: str = MATMUL):
    rng = np.random.default_rng(1)
    a = rng.random((n, n), np.float32)
    b = rng.random((n, n), np.float32)
    r = check_dispatch(glsl_to_spirv(source), "main", (n // 16, n // 16, 1), push_constants=struct.pack("<I", n),
                       bindings={(0, 0): Binding("A", a.tobytes()), (0, 1): Binding("B", b.tobytes()),
                                 (0, 2): Binding("C", bytes(4 * n * n))})
    return r, a, b, np.frombuffer(r.buffers["C"], np.float32).reshape(n, n)


def test_tiled_matmul_verified_and_equal_to_numpy():
    r, a, b, c = matmul(64)
    assert r.findings == [] and r.verdict == "verified"
    assert r.invocations == 64 * 64 and r.local_size == (16, 16, 1)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
    assert not r.footprints["C"].read.any() and r.footprints["C"].written.all()


def test_tiled_matmul_missing_second_barrier_races():
    r, a, b, c = matmul(32, MATMUL.replace("    barrier();\n  }", "  }"))
    assert {f.kind for f in r.findings} == {"data-race"}
    assert {f.resource for f in r.findings} == {"ta", "tb"}


REDUCE = """#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer In { int x[]; };
layout(std430, binding = 1) writeonly buffer Out { int sums[]; };
shared int part[64];
int combine(int p, int q) { return p + q; }
void main() {
  uint lid = gl_LocalInvocationIndex;
  part[lid] = x[gl_GlobalInvocationID.x];
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1) {
    if (lid < s) part[lid] = combine(part[lid], part[lid + s]);
    barrier();
  }
  if (lid == 0u) sums[gl_WorkGroupID.x] = part[0];
}
"""


def test_reduction_verified_and_equal_to_numpy():
    x = np.random.default_rng(2).integers(-1000, 1000, 64 * 8, dtype=np.int32)
    r = check_dispatch(glsl_to_spirv(REDUCE), "main", (8, 1, 1),
                       bindings={(0, 0): Binding("x", x.tobytes()), (0, 1): Binding("sums", bytes(32))})
    assert r.findings == []
    assert (np.frombuffer(r.buffers["sums"], np.int32) == x.reshape(8, 64).sum(axis=1)).all()


def test_reduction_with_barrier_inside_the_if_diverges():
    bad = REDUCE.replace("    if (lid < s) part[lid] = combine(part[lid], part[lid + s]);\n    barrier();",
                         "    if (lid < s) { part[lid] = combine(part[lid], part[lid + s]); barrier(); }")
    x = np.ones(64, np.int32)
    r = check_dispatch(glsl_to_spirv(bad), "main", (1, 1, 1),
                       bindings={(0, 0): Binding("x", x.tobytes()), (0, 1): Binding("sums", bytes(4))})
    assert "barrier-divergence" in {f.kind for f in r.findings}


def test_specialization_constants_and_local_size_id():
    src = """#version 450
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int SCALE = 2;
layout(std430, binding = 0) buffer O { int o[]; };
void main() { o[gl_GlobalInvocationID.x] = int(gl_WorkGroupSize.x) * 1000 + SCALE * int(gl_LocalInvocationID.x); }
"""
    spv = glsl_to_spirv(src)
    r = check_dispatch(spv, "main", (2, 1, 1), spec_constants={0: 8, 1: 3},
                       bindings={(0, 0): Binding("o", bytes(64))})
    assert r.local_size == (8, 1, 1) and r.findings == []
    assert np.frombuffer(r.buffers["o"], np.int32).tolist() == [8000 + 3 * (i % 8) for i in range(16)]


def test_scalar_types_vectors_and_glsl_functions_match_numpy():
    src = """#version 450
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = 32) in;
layout(std430, binding = 0) readonly buffer In { float f[]; };
layout(std430, binding = 1) buffer Out { float r[]; };
layout(std430, binding = 2) buffer Small { uint16_t h[]; };
void main() {
  uint i = gl_GlobalInvocationID.x;
  float x = f[i];
  vec3 v = vec3(x, x * 2.0, -x);
  r[i * 6u + 0u] = sqrt(abs(x)) + floor(x) * fract(x);
  r[i * 6u + 1u] = length(v);
  r[i * 6u + 2u] = clamp(x, -0.5, 0.5) + mix(1.0, 3.0, 0.25);
  r[i * 6u + 3u] = dot(normalize(v), vec3(1.0, 0.0, 0.0));
  r[i * 6u + 4u] = float(int(x * 10.0) / 3 + int(x * 10.0) % 3);
  r[i * 6u + 5u] = exp2(x) + pow(2.0, 0.5) + max(x, 0.1);
  h[i] = uint16_t(i * 4000u);
}
"""
    x = np.linspace(-3.3, 3.3, 32).astype(np.float32)
    r = check_dispatch(glsl_to_spirv(src), "main", (1, 1, 1),
                       bindings={(0, 0): Binding("f", x.tobytes()), (0, 1): Binding("r", bytes(32 * 6 * 4)),
                                 (0, 2): Binding("h", bytes(64))})
    assert r.findings == []
    out = np.frombuffer(r.buffers["r"], np.float32).reshape(32, 6)
    v = np.stack([x, 2 * x, -x], axis=1)
    ix = np.trunc(x * np.float32(10)).astype(np.int32)
    # int / truncates (OpSDiv); glslang compiles int % to OpSMod, whose sign follows the divisor
    q = np.trunc(ix / 3).astype(np.int32)
    expect = np.stack([np.sqrt(np.abs(x)) + np.floor(x) * (x - np.floor(x)), np.linalg.norm(v, axis=1),
                       np.clip(x, -0.5, 0.5) + 1.5, x / np.linalg.norm(v, axis=1),
                       (q + np.mod(ix, 3)).astype(np.float32), np.exp2(x) + np.sqrt(2) + np.maximum(x, 0.1)], axis=1)
    np.testing.assert_allclose(out, expect, rtol=1e-5, atol=1e-6)
    assert np.frombuffer(r.buffers["h"], np.uint16).tolist() == [(i * 4000) % 65536 for i in range(32)]


def test_switch_and_int64():
    src = """#version 450
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x = 8) in;
layout(std430, binding = 0) buffer O { int64_t o[]; };
void main() {
  uint i = gl_LocalInvocationID.x;
  int64_t v;
  switch (i % 4u) {
    case 0u: v = int64_t(1) << 40; break;
    case 1u: v = -int64_t(i); break;
    case 2u: v = int64_t(i) * 3000000000l; break;
    default: v = 7l;
  }
  o[i] = v / 2l;
}
"""
    r = check_dispatch(glsl_to_spirv(src), "main", (1, 1, 1), bindings={(0, 0): Binding("o", bytes(64))})
    assert r.findings == []
    expect = [[1 << 40, -i, i * 3000000000, 7][i % 4] for i in range(8)]
    assert np.frombuffer(r.buffers["o"], np.int64).tolist() == [int(e / 2) for e in expect]


@pytest.mark.parametrize("source, named", [
    ("""#version 450
#extension GL_NV_shader_subgroup_partitioned : require
layout(local_size_x = 32) in;
layout(std430, binding = 0) buffer O { uint o[]; };
void main() { o[gl_LocalInvocationID.x] = subgroupPartitionNV(1u).x; }
""", "GroupNonUniformPartitionedNV"),
    ("""#version 450
layout(local_size_x = 8) in;
layout(binding = 0, r32f) uniform imageCube img;
void main() { imageStore(img, ivec3(0, 0, int(gl_LocalInvocationID.x % 6u)), vec4(1.0)); }
""", "Dim Cube"),
])
def test_unsupported_shader_refused_naming_it(source, named):
    with pytest.raises(Unsupported, match=named) as info:
        check_dispatch(glsl_to_spirv(source), "main", (1, 1, 1), bindings={(0, 0): Binding("o", bytes(128))})
    assert "not supported" in str(info.value)


def test_missing_binding_is_an_input_error():
    from kernellab.errors import InputError
    with pytest.raises(InputError, match="set 0 binding 1"):
        check_dispatch(glsl_to_spirv(REDUCE), "main", (1, 1, 1), bindings={(0, 0): Binding("x", bytes(256))})


def test_glsl_functions_with_out_parameters_and_refract():
    src = """#version 450
layout(local_size_x = 4) in;
layout(std430, binding = 0) buffer B { float f[]; };
layout(std430, binding = 1) buffer I { int e[]; };
void main() {
  uint i = gl_LocalInvocationID.x;
  float x = f[i], whole;
  int ex;
  vec3 r = refract(normalize(vec3(x, 1.0, 0.0)), vec3(0.0, 1.0, 0.0), 0.5);
  f[4u + i * 5u] = modf(x, whole);
  f[5u + i * 5u] = whole;
  f[6u + i * 5u] = frexp(x, ex);
  e[i] = ex;
  f[7u + i * 5u] = r.x;
  f[8u + i * 5u] = r.y;
}
"""
    x = np.array([1.5, -2.25, 8.0, 0.1], np.float32)
    r = check_dispatch(glsl_to_spirv(src), "main", (1, 1, 1),
                       bindings={(0, 0): Binding("f", x.tobytes() + bytes(80)), (0, 1): Binding("e", bytes(16))})
    assert r.findings == []
    out = np.frombuffer(r.buffers["f"], np.float32)[4:].reshape(4, 5)
    mant, exps = np.frexp(x)
    i = np.stack([x, np.ones(4, np.float32), np.zeros(4, np.float32)], axis=1)
    i /= np.linalg.norm(i, axis=1, keepdims=True)
    k = 1 - 0.25 * (1 - i[:, 1] ** 2)
    np.testing.assert_allclose(out, np.stack([x - np.trunc(x), np.trunc(x), mant, 0.5 * i[:, 0],
                                              0.5 * i[:, 1] - (0.5 * i[:, 1] + np.sqrt(k))], axis=1), rtol=1e-5)
    assert np.frombuffer(r.buffers["e"], np.int32).tolist() == exps.tolist()


def test_atomics_histogram_compare_exchange_and_uniform_buffer():
    src = """#version 450
layout(local_size_x = 32) in;
layout(std140, binding = 0) uniform Params { vec4 scale; float offsets[4]; } params;
layout(std430, binding = 1) readonly buffer In { uint v[]; };
layout(std430, binding = 2) buffer Hist { uint bins[8]; uint firsts[8]; int lo; };
void main() {
  uint x = v[gl_GlobalInvocationID.x];
  uint old = atomicAdd(bins[x % 8u], 1u);
  atomicCompSwap(firsts[x % 8u], 0u, gl_GlobalInvocationID.x + 1u);
  atomicMin(lo, int(x) - int(params.offsets[2] * params.scale.y));
}
"""
    v = np.random.default_rng(4).integers(0, 100, 96, dtype=np.uint32)
    ubo = struct.pack("<4f", 1.0, 2.0, 3.0, 4.0) + b"".join(struct.pack("<f12x", f) for f in (0.0, 1.0, 5.0, 9.0))
    hist = bytes(64) + struct.pack("<i", 1 << 30)
    r = check_dispatch(glsl_to_spirv(src), "main", (3, 1, 1),
                       bindings={(0, 0): Binding("params", ubo), (0, 1): Binding("v", v.tobytes()),
                                 (0, 2): Binding("hist", hist)})
    assert r.findings == []
    out = np.frombuffer(r.buffers["hist"], np.uint32)
    assert out[:8].tolist() == np.bincount(v % 8, minlength=8).tolist()
    for b in range(8):  # some invocation of that bin won the compare-exchange
        winners = np.nonzero(v % 8 == b)[0] + 1
        assert out[8 + b] in winners if winners.size else out[8 + b] == 0
    assert int(np.frombuffer(r.buffers["hist"], np.int32)[16]) == int(v.min()) - 10


CONTROL_FLOW = """#version 450
layout(local_size_x = 8, local_size_y = 2, local_size_z = 2) in;
layout(std430, binding = 0) buffer O { int o[]; };
struct Pair { int a; vec2 b; };
shared Pair pairs[32];
void bump(inout int x, out int y) { x += 3; y = x * 2; }
int f(uint i) {
  int acc = 0;
  for (int j = 0; j < 10; ++j) {
    if (j == int(i % 5u)) continue;
    if (j > 7) break;
    int k = 0;
    do { acc += k; k++; } while (k < j);
  }
  if (i == 3u) return -acc;
  int y; bump(acc, y);
  return (i % 2u == 0u) ? acc + y : acc - y;
}
void main() {
  uint i = gl_LocalInvocationIndex;
  pairs[i].a = f(i);
  pairs[i].b = vec2(float(i), 0.5);
  barrier();
  Pair p = pairs[31u - i];
  o[gl_WorkGroupID.x * 32u + i] = p.a + int(p.b.x * 2.0) + int(gl_LocalInvocationID.z * 100u);
}
"""


def _control_flow_reference(i: int) -> int:
    acc = 0
    for j in range(10):
        if j == i % 5:
            continue
        if j > 7:
            break
        acc += sum(range(max(j, 1)))  # do { acc += k; } while (++k < j) runs at least once
    if i == 3:
        return -acc
    acc += 3
    return acc + 2 * acc if i % 2 == 0 else acc - 2 * acc


def test_control_flow_calls_and_shared_structs_match_python():
    r = check_dispatch(glsl_to_spirv(CONTROL_FLOW), "main", (2, 1, 1), bindings={(0, 0): Binding("o", bytes(256))})
    assert r.findings == []
    expect = [_control_flow_reference(31 - i) + 2 * (31 - i) + 100 * (i // 16) for i in range(32)]
    assert np.frombuffer(r.buffers["o"], np.int32).reshape(2, 32).tolist() == [expect, expect]


def test_unsupported_instruction_refused_even_on_a_path_not_taken():
    from kernellab import tools
    asm = """OpCapability Shader
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main"
OpExecutionMode %main LocalSize 4 1 1
%void = OpTypeVoid
%fn = OpTypeFunction %void
%bool = OpTypeBool
%float = OpTypeFloat 32
%false = OpConstantFalse %bool
%one = OpConstant %float 1
%main = OpFunction %void None %fn
%entry = OpLabel
OpSelectionMerge %end None
OpBranchConditional %false %never %end
%never = OpLabel
%d = OpDPdx %float %one
OpBranch %end
%end = OpLabel
OpReturn
OpFunctionEnd
"""
    spv = tools.require("spirv-as").transform(["-o", tools.OUTPUT, tools.INPUT], what="assembling", input=asm.encode())
    with pytest.raises(Unsupported, match="OpDPdx is not supported"):
        check_dispatch(spv, "main", (1, 1, 1))


def test_extended_integer_arithmetic():
    src = """#version 450
layout(local_size_x = 4) in;
layout(std430, binding = 0) buffer O { uint o[]; };
void main() {
  uint i = gl_LocalInvocationID.x;
  uint a = 0xF0000000u + i * 0x12345u, b = 0x10u + i;
  uint hi, lo, carry, borrow;
  umulExtended(a, b, hi, lo);
  o[i * 4u] = hi;
  o[i * 4u + 1u] = lo;
  o[i * 4u + 2u] = uaddCarry(a, a, carry) + carry;
  o[i * 4u + 3u] = usubBorrow(b, a, borrow) + borrow;
}
"""
    r = check_dispatch(glsl_to_spirv(src), "main", (1, 1, 1), bindings={(0, 0): Binding("o", bytes(64))})
    assert r.findings == []
    expect = []
    for i in range(4):
        a, b = 0xF0000000 + i * 0x12345, 0x10 + i
        expect += [(a * b) >> 32, (a * b) & 0xFFFFFFFF, ((2 * a) + ((2 * a) >> 32)) & 0xFFFFFFFF,
                   ((b - a) + (1 if b < a else 0)) & 0xFFFFFFFF]
    assert np.frombuffer(r.buffers["o"], np.uint32).tolist() == expect


def test_spec_constant_ops_size_workgroup_arrays():
    src = """#version 450
layout(local_size_x = 8) in;
layout(constant_id = 2) const uint N = 4u;
layout(std430, binding = 0) buffer O { uint o[]; };
shared uint tmp[N * 2u];
void main() {
  uint i = gl_LocalInvocationID.x;
  tmp[i] = i * (N + 1u);
  barrier();
  o[i] = tmp[(i + 1u) % 8u] + uint(tmp.length());
}
"""
    spv = glsl_to_spirv(src)
    for n in (4, 8):
        r = check_dispatch(spv, "main", (1, 1, 1), spec_constants={2: n} if n != 4 else None,
                           bindings={(0, 0): Binding("o", bytes(32))})
        assert r.findings == []
        assert np.frombuffer(r.buffers["o"], np.uint32).tolist() == [((i + 1) % 8) * (n + 1) + 2 * n for i in range(8)]
    # N = 3 makes tmp 6 long: invocations 6 and 7 write past its end
    r = check_dispatch(spv, "main", (1, 1, 1), spec_constants={2: 3}, bindings={(0, 0): Binding("o", bytes(32))})
    assert {f.kind for f in r.findings} == {"out-of-bounds"}
