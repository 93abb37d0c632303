"""``kernellab verify`` on an AmberScript file compares the SPIR-V checker's simulated buffers with
the file's EXPECTs, as a reference device reported apart from the findings (issue 24): the
second opinion CONFORMANCE.md uses on the CTS's ``ldexp`` files and its fp16 determinant."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernellab import tools
from kernellab.cli import main

pytestmark = pytest.mark.skipif(tools.find("glslangValidator") is None, reason="needs glslangValidator")

#: ldexp with 16-bit signed exponents, as the CTS's ldexp/*_int16 files use them (negative ones included)
LDEXP = """#!amber
DEVICE_FEATURE shaderInt16
DEVICE_FEATURE Storage16BitFeatures.storageBuffer16BitAccess

SHADER compute ldexp GLSL
#version 460
#extension GL_EXT_shader_explicit_arithmetic_types : enable
layout(local_size_x = 4) in;
layout(set = 0, binding = 0, std430) buffer S { float s[]; };
layout(set = 0, binding = 1, std430) buffer E { int16_t e[]; };
layout(set = 0, binding = 2, std430) buffer R { float r[]; };
void main() {
  uint i = gl_LocalInvocationIndex;
  r[i] = ldexp(s[i], e[i]);
}
END

BUFFER significands DATA_TYPE float DATA
-1.0 0.5 3.0 1.0
END
BUFFER exponents DATA_TYPE int16 DATA
1 -1 -2 -32765
END
BUFFER results DATA_TYPE float SIZE 4 FILL 7.0

PIPELINE compute pipeline
  ATTACH ldexp
  BIND BUFFER significands AS storage DESCRIPTOR_SET 0 BINDING 0
  BIND BUFFER exponents AS storage DESCRIPTOR_SET 0 BINDING 1
  BIND BUFFER results AS storage DESCRIPTOR_SET 0 BINDING 2
END

EXPECT results IDX 0 TOLERANCE .0001 EQ -2.0
RUN pipeline 1 1 1
EXPECT results IDX 0 TOLERANCE .0001 EQ -2.0 0.25 0.75 0.0
"""


def run(path: Path, capsys: pytest.CaptureFixture[str], *options: str) -> tuple[int, str]:
    status = main(["verify", str(path), *options])
    return status, capsys.readouterr().out


def test_expects_hold_on_the_checkers_simulation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The EXPECTs of each checkpoint against the buffers as the checker computed them there:
    before the RUN the results are the FILL (7.0, so the first EXPECT fails), after it ldexp's
    values with negative 16-bit exponents."""
    path = tmp_path / "ldexp.amber"
    path.write_text(LDEXP)
    status, out = run(path, capsys, "--json")
    doc = json.loads(out)
    assert status == 0 and doc["verdict"] == "verified"  # the reference changes no verdict
    ref = doc["reference"]
    assert (ref["expects"], ref["hold"]) == (2, 1)
    (failure,) = ref["failures"]
    assert "ldexp.amber:33" in failure and "actual 7.0" in failure
    # text: the reference after the verdict, worded as not a verdict on the shader
    status, out = run(path, capsys)
    assert status == 0 and "reference: 1 of 2 EXPECTs hold" in out and "not a verdict" in out


def test_a_wrong_expect_is_shown_and_a_right_one_is_not(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    right = tmp_path / "right.amber"
    right.write_text(LDEXP.replace("EXPECT results IDX 0 TOLERANCE .0001 EQ -2.0\nRUN", "RUN"))
    status, out = run(right, capsys, "--json")
    assert status == 0 and json.loads(out)["reference"] == {
        "device": "the SPIR-V checker's simulation (specification semantics)", "expects": 1, "hold": 1, "failures": []}
    wrong = tmp_path / "wrong.amber"
    wrong.write_text(right.read_text().replace("-2.0 0.25 0.75 0.0", "-2.0 0.25 0.5 0.0"))
    status, out = run(wrong, capsys, "--json")
    ref = json.loads(out)["reference"]
    assert status == 0 and ref["hold"] == 0 and "expected 0.5, actual 0.75" in ref["failures"][0]


def test_a_scenario_has_no_reference(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Only an AmberScript file states expected values: a scenario's JSON has no "reference"."""
    from kernellab.compile.amber import scenario_of
    path = tmp_path / "ldexp.amber"
    path.write_text(LDEXP)
    status, out = run(scenario_of(path), capsys, "--json")
    assert status == 0 and "reference" not in json.loads(out)
