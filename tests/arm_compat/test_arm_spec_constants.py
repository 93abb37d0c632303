"""Specialization constants (int, uint, float, bool, defaults, workgroup size), from GLSL and SPIR-V.

Like Arm's own tests these scenarios open and close with an empty ``mark_boundary`` (no
``frame_id``), and the 4-byte outputs exercise the .npy header padding of very small files.

How Arm's runner turns a JSON value into the constant's 4 bytes: a JSON bool gives 1 or 0, an
integer literal gives its int32 (or uint32) bits, a literal with a fraction or exponent gives
float32 bits -- whatever the constant's type in the shader.
"""
from __future__ import annotations

import numpy as np
import pytest

from arm_compat.arm_compat_helpers import Case, buffer, dispatch, mark_boundary, shader

ONE_CONSTANT_GLSL = """#version 450
layout(local_size_x = 1) in;
layout(constant_id = 0) const TYPE VALUE = DEFAULT;
layout(set = 0, binding = 0) writeonly buffer Out { TYPE result; };
void main() { result = VALUE; }
"""

CASES = {
    # name: (GLSL type, GLSL default, spec constants, expected, dtype)
    "float": ("float", "100500.0", [{"id": 0, "value": 42.0}], 42.0, np.float32),
    "int": ("int", "100500", [{"id": 0, "value": -42}], -42, np.int32),
    "uint": ("uint", "100500u", [{"id": 0, "value": 42}], 42, np.uint32),
    "uint_above_int32": ("uint", "1u", [{"id": 0, "value": 4000000000}], 4000000000, np.uint32),
    "default": ("uint", "100500u", None, 100500, np.uint32),
    "float_negative_fraction": ("float", "0.0", [{"id": 0, "value": -0.125}], -0.125, np.float32),
}


def _one_constant(case: Case, name: str, source: str) -> tuple[np.ndarray, str]:
    glsl_type, default, constants, expected, dtype = CASES[name]
    text = ONE_CONSTANT_GLSL.replace("TYPE", glsl_type).replace("DEFAULT", default)
    extra = {"specialization_constants": constants} if constants is not None else {}
    if source == "SPIR-V":
        case.glsl_to_spirv(text, "constant.spv")
        sh = shader("constant", "constant.spv", **extra)
    else:
        case.text("constant.comp", text)
        sh = shader("constant", "constant.comp", "GLSL", **extra)
    case.scenario([sh, buffer("result", 4, "writeonly", dst="result.npy")],
                  [mark_boundary(), dispatch("constant", [1, 1, 1], [(0, 0, "result")]), mark_boundary()])
    return np.array([expected], dtype=dtype), name


@pytest.mark.parametrize("source", ["GLSL", "SPIR-V"])
@pytest.mark.parametrize("name", list(CASES))
def test_one_specialization_constant(case: Case, name: str, source: str) -> None:
    expected, _ = _one_constant(case, name, source)
    case.run_both({"result.npy": expected})


MANY_GLSL = """#version 450
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const bool NEGATE = false;
layout(constant_id = 2) const int BIAS = 0;
layout(constant_id = 7) const float SCALE = 1.0;
layout(set = 0, binding = 0) writeonly buffer Out { float values[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    float v = float(int(i) + BIAS) * SCALE;
    values[i] = NEGATE ? -v : v;
}
"""


@pytest.mark.parametrize("negate", [True, False])
def test_workgroup_size_and_several_constants(case: Case, negate: bool) -> None:
    # local_size_x comes from constant 0: 4 invocations per workgroup, 3 workgroups = 12 values.
    case.glsl_to_spirv(MANY_GLSL, "many.spv")
    constants = [{"id": 0, "value": 4}, {"id": 1, "value": negate}, {"id": 2, "value": -5},
                 {"id": 7, "value": 0.5}]
    case.scenario([shader("many", "many.spv", specialization_constants=constants),
                   buffer("values", 48, "writeonly", dst="values.npy")],
                  [dispatch("many", [3], [(0, 0, "values")])])
    v = (np.arange(12) - 5) * 0.5
    case.run_both({"values.npy": (-v if negate else v).astype(np.float32)})


BITS_GLSL = """#version 450
layout(local_size_x = 1) in;
layout(constant_id = 0) const float F = 1.5;
layout(constant_id = 1) const int I = 7;
layout(set = 0, binding = 0) writeonly buffer Out { float f; int i; };
void main() { f = F; i = I; }
"""


def test_constant_bits_follow_the_json_literal(case: Case) -> None:
    # A float constant given the integer literal 42 gets the bits of int32 42, and an int
    # constant given 3.0 gets the bits of float32 3.0: the files must match Arm's bit for bit.
    case.glsl_to_spirv(BITS_GLSL, "bits.spv")
    case.scenario([shader("bits", "bits.spv", specialization_constants=[{"id": 0, "value": 42},
                                                                       {"id": 1, "value": 3.0}]),
                   buffer("out", 8, "writeonly", dst="out.npy")],
                  [dispatch("bits", [1], [(0, 0, "out")])])
    expected = np.concatenate([np.array([42], np.int32), np.array([3.0], np.float32).view(np.int32)])
    case.run_both({"out.npy": expected})


def test_constant_id_the_shader_does_not_declare(case: Case) -> None:
    # Arm passes every entry to Vulkan, which ignores ids the module lacks.
    text = ONE_CONSTANT_GLSL.replace("TYPE", "int").replace("DEFAULT", "7")
    case.glsl_to_spirv(text, "constant.spv")
    case.scenario([shader("constant", "constant.spv", specialization_constants=[{"id": 0, "value": 5},
                                                                               {"id": 9, "value": 3}]),
                   buffer("result", 4, "writeonly", dst="result.npy")],
                  [dispatch("constant", [1], [(0, 0, "result")])])
    case.run_both({"result.npy": np.array([5], np.int32)})
