"""Push constants from ``raw_data`` through ``push_data_ref`` and ``push_constants_size``.

Arm's runner pushes the raw_data file's payload bytes as they are (whatever the .npy dtype),
and the pipeline layout's range is ``push_constants_size`` bytes; the two need not be equal.
"""
from __future__ import annotations

import struct

import numpy as np

from arm_compat.arm_compat_helpers import Case, Expect, buffer, dispatch, raw_data, shader

N = 10

ARRAY_GLSL = """#version 450
layout(local_size_x = 1) in;
layout(push_constant) uniform Offsets { float offsets[10]; } pc;
layout(set = 0, binding = 0) readonly buffer Src { float src[]; };
layout(set = 0, binding = 1) writeonly buffer Dst { float dst[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    dst[i] = src[i] + pc.offsets[i];
}
"""


def test_push_constant_array(case: Case, rng: np.random.Generator) -> None:
    data = case.save("src.npy", rng.uniform(-100, 100, N).astype(np.float32))
    offsets = case.save("offsets.npy", rng.uniform(-100, 100, N).astype(np.float32))
    case.glsl_to_spirv(ARRAY_GLSL, "offsets.spv")
    case.scenario(
        [shader("add_offsets", "offsets.spv", push_constants_size=40),
         buffer("src", 40, "readonly", src="src.npy"),
         raw_data("offsets", "offsets.npy"),
         buffer("dst", 40, "writeonly", dst="dst.npy")],
        [dispatch("add_offsets", [N], [(0, 0, "src"), (0, 1, "dst")], push_data_ref="offsets")])
    case.run_both({"dst.npy": data + offsets})


# std430 members of mixed sizes: 16 + 8 + 4 = 28 bytes of data.
MIXED_GLSL = """#version 450
layout(local_size_x = 1) in;
layout(push_constant) uniform Params {
    vec4 shift;
    vec2 gains;
    float scale;
};
layout(set = 0, binding = 0) readonly buffer Src { float src[]; };
layout(set = 0, binding = 1) writeonly buffer Dst { float dst[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    float v = src[i] + shift.x + shift.y + shift.z + shift.w;
    dst[i] = v * scale * gains.x * gains.y;
}
"""


def test_push_constant_range_larger_than_data(case: Case, rng: np.random.Generator) -> None:
    # The layout declares 36 bytes, the raw_data holds 28: only the data's bytes are pushed.
    data = case.save("src.npy", rng.uniform(-100, 100, N).astype(np.float32))
    params = case.save("params.npy", np.array([1.0, 2.0, 3.0, 4.0, 0.5, 3.0, 0.25], dtype=np.float32))
    case.glsl_to_spirv(MIXED_GLSL, "mixed.spv")
    case.scenario(
        [shader("mixed", "mixed.spv", push_constants_size=36),
         buffer("src", 40, "readonly", src="src.npy"),
         raw_data("params", "params.npy"),
         buffer("dst", 40, "writeonly", dst="dst.npy")],
        [dispatch("mixed", [N], [(0, 0, "src"), (0, 1, "dst")], push_data_ref="params")])
    expected = (data + params[:4].sum()) * params[6] * params[4] * params[5]
    case.run_both({"dst.npy": Expect(expected.astype(np.float32), atol=1e-3)})


TYPED_GLSL = """#version 450
layout(local_size_x = 1) in;
layout(push_constant) uniform Params { uint count; int bias; float scale; };
layout(set = 0, binding = 0) writeonly buffer Dst { float dst[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    dst[i] = i < count ? float(int(i) + bias) * scale : -1.0;
}
"""


def test_push_constants_of_mixed_types_from_a_byte_file(case: Case) -> None:
    # The raw_data file is int8 bytes packing uint, int and float: the dtype does not matter.
    packed = struct.pack("<Iif", 7, -3, 1.5)
    case.save("params.npy", np.frombuffer(packed, dtype=np.int8))
    case.glsl_to_spirv(TYPED_GLSL, "typed.spv")
    case.scenario(
        [shader("typed", "typed.spv", push_constants_size=12),
         raw_data("params", "params.npy"),
         buffer("dst", 40, "writeonly", dst="dst.npy")],
        [dispatch("typed", [N], [(0, 0, "dst")], push_data_ref="params")])
    i = np.arange(N)
    expected = np.where(i < 7, (i - 3) * 1.5, -1.0).astype(np.float32)
    case.run_both({"dst.npy": expected})


def test_one_shader_two_push_data(case: Case, rng: np.random.Generator) -> None:
    # The same pipeline dispatched twice with different push constants.
    data = case.save("src.npy", rng.uniform(-100, 100, N).astype(np.float32))
    first = case.save("first.npy", np.arange(N, dtype=np.float32))
    second = case.save("second.npy", np.full(N, 0.5, dtype=np.float32))
    case.glsl_to_spirv(ARRAY_GLSL, "offsets.spv")
    case.scenario(
        [shader("add_offsets", "offsets.spv", push_constants_size=40),
         buffer("src", 40, "readonly", src="src.npy"),
         raw_data("first", "first.npy"),
         raw_data("second", "second.npy"),
         buffer("mid", 40, dst="mid.npy"),
         buffer("dst", 40, "writeonly", dst="dst.npy")],
        [dispatch("add_offsets", [N], [(0, 0, "src"), (0, 1, "mid")], push_data_ref="first"),
         dispatch("add_offsets", [N], [(0, 0, "mid"), (0, 1, "dst")], push_data_ref="second")])
    case.run_both({"mid.npy": data + first, "dst.npy": (data + first) + second})


def test_push_constant_range_without_push_data(case: Case) -> None:
    # A layout with a push-constant range but no push_data_ref: nothing is pushed, and a
    # shader that does not read them runs normally.
    case.glsl_to_spirv("""#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) writeonly buffer Dst { int dst[]; };
void main() { dst[gl_GlobalInvocationID.x] = int(gl_GlobalInvocationID.x) * 7; }
""", "plain.spv")
    case.scenario([shader("plain", "plain.spv", push_constants_size=8), buffer("dst", 40, "writeonly", dst="dst.npy")],
                  [dispatch("plain", [N], [(0, 0, "dst")])])
    case.run_both({"dst.npy": (np.arange(N) * 7).astype(np.int32)})
