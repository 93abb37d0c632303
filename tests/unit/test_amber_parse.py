"""AmberScript's compute subset read without a device: tokens, layouts, errors with line and column."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kernellab.errors import InputError
from kernellab.formats.amber.materialize import buffer_bytes, write_scenarios
from kernellab.formats.amber.parse import Unsupported, parse_amber
from kernellab.formats.amber.script import Expect, Run
from kernellab.formats.amber.tokens import tokenize_line
from kernellab.formats.amber.types import element
from kernellab.formats.detect import detect
from kernellab.suite.compare import check_all
from kernellab.suite.expectations import OutputComparison, ProbeExpectation

SHADER = """SHADER compute s GLSL
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer B { uint v[]; };
void main() { v[0] = 1u; }
END
"""
PIPE = """PIPELINE compute p
  ATTACH s
  BIND BUFFER b AS storage DESCRIPTOR_SET 0 BINDING 0
END
"""


def parse(text: str):
    return parse_amber(text, Path("t.amber"))


def error_of(text: str) -> str:
    with pytest.raises(InputError) as info:
        parse(text)
    return str(info.value)


def test_tokens_carry_line_and_column():
    tokens = tokenize_line('  BUFFER b DATA_TYPE uint32 DATA 1,2 "x y" # note', 7)
    assert [(t.text, t.column) for t in tokens] == [("BUFFER", 3), ("b", 10), ("DATA_TYPE", 12), ("uint32", 22),
                                                    ("DATA", 29), ("1", 34), ("2", 36), ("x y", 38)]
    assert {t.line for t in tokens} == {7}


def test_std430_and_std140_layouts():
    assert element("vec3<float>").components == ((0, "float32"), (4, "float32"), (8, "float32"))
    assert element("vec3<float>").size == 16
    assert element("mat2x2<float>").size == 16
    assert element("mat2x2<float>", std140=True).components[2] == (16, "float32")
    assert element("mat2x2<float>", std140=True).size == 32
    assert element("mat3x3<float16>").size == 24
    assert element("R32G32B32A32_SFLOAT").size == 16
    assert element("int8").size == 1 and element("double").components == ((0, "float64"),)


def test_buffer_bytes_follow_the_layout():
    raw = buffer_bytes(element("vec3<float>"), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    assert np.frombuffer(raw, np.float32).tolist() == [1, 2, 3, 0, 4, 5, 6, 0]
    assert np.frombuffer(buffer_bytes(element("int16"), [-1, 7]), np.int16).tolist() == [-1, 7]


def test_buffers_pipelines_and_commands():
    s = parse("#!amber\n" + SHADER + "BUFFER b DATA_TYPE uint32 SIZE 4 SERIES_FROM 3 INC_BY 2\n"
              "BUFFER c DATA_TYPE int8 DATA -1 2\n 3 END\n" + PIPE +
              "REPEAT 2\nRUN p 2 1 1\nEND\nEXPECT b IDX 4 TOLERANCE 1% 2 EQ 5 7\nEXPECT b EQ_BUFFER c\n")
    assert s.buffers["b"].values == [3, 5, 7, 9]
    assert s.buffers["c"].values == [-1, 2, 3]
    assert [type(c) for c in s.commands] == [Run, Run, Expect, Expect]
    probe = s.commands[2]
    assert isinstance(probe, Expect) and probe.offset == 4 and probe.tolerances == [(1.0, True), (2.0, False)]
    assert s.pipelines["p"].bindings[0].binding == 0


def test_continuation_lines_and_specialization():
    s = parse(SHADER + "BUFFER b DATA_TYPE uint32 SIZE 1 FILL 0\nPIPELINE compute p\n  ATTACH s \\\n"
              "    SPECIALIZE 2 AS float 1.5\n  BIND BUFFER b AS storage BINDING 0\nEND\n")
    assert s.pipelines["p"].specializations == [(2, 1.5)]


@pytest.mark.parametrize("text, where, words", [
    ("BUFFER b DATA_TYPE uint33 SIZE 1 FILL 0\n", "line 1, column 20", "unknown data type"),
    ("BUFFER b DATA_TYPE uint8 DATA 1 300 END\n", "line 1, column 33", "does not fit uint8"),
    ("\n\nRUN nowhere 1 1 1\n", "line 3, column 5", "no compute pipeline 'nowhere'"),
    ("FROB\n", "line 1, column 1", "unknown statement"),
    ("BUFFER b DATA_TYPE float DATA 1.0 x END\n", "line 1, column 35", "expected a float32 value"),
    (SHADER + "BUFFER b DATA_TYPE uint32 SIZE 1 FILL 0\n" + PIPE + "RUN p 0 1 1\n", "line 12, column 7",
     "integer >= 1"),
    ("SHADER compute s GLSL\nvoid main() {}\n", "line 1, column 1", "has no END"),
])
def test_bad_input_names_line_and_column(text, where, words):
    message = error_of(text)
    assert f"t.amber: {where}: " in message and words in message


@pytest.mark.parametrize("text, construct", [
    ("SHADER vertex v PASSTHROUGH\n", "SHADER vertex"),
    ("PIPELINE graphics g\nEND\n", "PIPELINE graphics"),
    ("CLEAR p\n", "CLEAR"),
])
def test_graphics_is_refused_naming_the_line(text, construct):
    with pytest.raises(Unsupported) as info:
        parse("#!amber\n" + text)
    assert info.value.construct == construct
    assert "t.amber: line 2, column" in str(info.value)
    assert "graphics pipelines are not supported" in str(info.value)


def test_an_expect_between_runs_makes_a_checkpoint(tmp_path):
    s = parse(SHADER + "BUFFER b DATA_TYPE uint32 SIZE 1 FILL 0\n" + PIPE +
              "RUN p 1 1 1\nEXPECT b IDX 0 EQ 1\nRUN p 1 1 1\nEXPECT b IDX 0 EQ 1\n")
    checkpoints = write_scenarios(s, tmp_path, lambda src, env: b"")
    assert [len(c.expects) for c in checkpoints] == [1, 1]
    from kernellab.formats.scenario import load_scenario

    first, _ = load_scenario(checkpoints[0].scenario)
    second, _ = load_scenario(checkpoints[1].scenario)
    assert len(first.commands) == 1 and len(second.commands) == 2


def test_detect_tells_amber_by_extension_or_header(tmp_path):
    (tmp_path / "a.amber").write_text("SHADER compute s GLSL\n")
    (tmp_path / "b.txt").write_text("#!amber\n")
    assert detect(tmp_path / "a.amber") == "amber" and detect(tmp_path / "b.txt") == "amber"


def _probe(cmp, values, tol=None, dtype="float32"):
    return ProbeExpectation("b", cmp, tuple((4 * i, dtype) for i in range(len(values))), tuple(values), tol)


@pytest.mark.parametrize("probe, ok", [
    (_probe("EQ", [0.1, 2.0]), True),            # Amber compares at the component's precision
    (_probe("EQ", [0.1001, 2.0]), False),
    (_probe("EQ", [0.1001, 2.0], (0.001, False)), True),
    (_probe("EQ", [0.11, 2.2], (10.0, True)), True),
    (_probe("EQ", [0.12, 2.0], (10.0, True)), False),
    (_probe("NE", [0.2, 3.0]), True),
    (_probe("LT", [0.2, 2.5]), True),
    (_probe("LE", [0.1, 1.5]), False),
    (_probe("GT", [0.0, 1.0]), True),
    (_probe("GE", [0.1, 2.5]), False),
])
def test_probe_comparators(probe, ok):
    data = np.array([0.1, 2.0], np.float32).tobytes()
    assert check_all([probe], {"b": data}).ok is ok


def test_output_comparisons():
    a = np.array([1.0, 2.0], np.float32).tobytes()
    b = np.array([1.0, 2.5], np.float32).tobytes()
    eq = OutputComparison("a", "EQ_BUFFER", "b", "float32")
    rmse = OutputComparison("a", "RMSE_BUFFER", "b", "float32", 0.4)
    result = check_all([eq, rmse], {"a": a, "b": b})
    assert [o.ok for o in result.outputs] == [False, True]
    assert "1 of 2 elements differ (EQ_BUFFER)" in result.report() and "expected 2.5, actual 2.0" in result.report()
    failed = check_all([_probe("EQ", [0.2], (1.0, True))], {"b": np.array([0.1], np.float32).tobytes()})
    assert "1 of 1 elements differ (EQ within 1%)" in failed.report()
    assert check_all([eq], {"a": a, "b": a}).ok


def test_a_sidecar_carries_checks(tmp_path):
    from kernellab.suite.expectations import Expectations, parse_expectations

    probe = _probe("GE", [0.1], (1.0, True))
    sidecar = tmp_path / "t.expect.json"
    data = Expectations(sidecar, tmp_path / "t.json", checks=[probe, OutputComparison("a", "EQ_BUFFER", "b", "int8")])
    parsed = parse_expectations(data.to_json(), sidecar)
    assert parsed.checks == data.checks and parsed.outputs == {}
    assert parsed.output_names() == ["b", "a"]
    with pytest.raises(InputError) as info:
        parse_expectations({"checks": [{"output": "b", "comparator": "ABOUT", "components": [], "values": []}]},
                           sidecar)
    assert "t.expect.json: /checks/0: not a check: comparator" in str(info.value)


def subgroup_pipe(body: str) -> str:
    return SHADER + "BUFFER b DATA_TYPE uint32 SIZE 1 FILL 0\n" + PIPE.replace(
        "  BIND", "  SUBGROUP s\n" + body + "  END\n  BIND") + "RUN p 1 1 1\n"


def test_subgroup_becomes_the_scenario_shaders_subgroup_field(tmp_path):
    s = parse(subgroup_pipe("    FULLY_POPULATED on\n    VARYING_SIZE off\n    REQUIRED_SIZE 16\n"))
    assert s.pipelines["p"].subgroup == (16, True, False, 10)
    from kernellab import model as m
    from kernellab.formats.scenario import load_scenario

    scenario, _ = load_scenario(write_scenarios(s, tmp_path, lambda src, env: b"")[-1].scenario)
    shader = next(r for r in scenario.resources if isinstance(r, m.Shader))
    assert shader.subgroup is not None
    assert (shader.subgroup.required_size, shader.subgroup.full_subgroups, shader.subgroup.varying_size) == (
        16, True, False)


@pytest.mark.parametrize("body, where, words", [
    ("    REQUIRED_SIZE 12\n", "line 11, column 19", "not a power of two"),
    ("    FULLY_POPULATED maybe\n", "line 11, column 21", "expected on or off"),
    ("    WIDTH 3\n", "line 11, column 5", "expected FULLY_POPULATED"),
])
def test_bad_subgroup_names_line_and_column(body, where, words):
    message = error_of(subgroup_pipe(body))
    assert f"t.amber: {where}: " in message and words in message


@pytest.mark.parametrize("word, bound, resolved", [("MIN", "min", 4), ("MAX", "max", 64)])
def test_subgroup_required_size_min_max_is_the_devices_bound(tmp_path, word, bound, resolved):
    from kernellab import model as m
    from kernellab.backends.base import Limits, UnsupportedError
    from kernellab.formats.scenario import load_scenario
    from kernellab.runtime.executor import subgroup_sizing

    s = parse(subgroup_pipe(f"    REQUIRED_SIZE {word}\n"))
    assert s.pipelines["p"].subgroup == (word, False, False, 10)
    scenario, _ = load_scenario(write_scenarios(s, tmp_path, lambda src, env: b"")[-1].scenario)
    shader = next(r for r in scenario.resources if isinstance(r, m.Shader))
    assert shader.subgroup is not None and shader.subgroup.required_size_bound == bound
    sizing = subgroup_sizing(shader, Limits(subgroup_size_range=(4, 64)))
    assert sizing is not None and sizing.required_size == resolved
    with pytest.raises(UnsupportedError, match="VK_EXT_subgroup_size_control"):
        subgroup_sizing(shader, Limits())


def test_buffer_file_text_and_binary_read_beside_the_script(tmp_path):
    import struct

    (tmp_path / "v.txt").write_text("# x y\n1.5, -2\n3 4 5\n")
    (tmp_path / "v.bin").write_bytes(struct.pack("<2f2I", 1.5, -2.0, 7, 8))
    s = parse_amber("BUFFER t DATA_TYPE vec2<float> SIZE 3 FILE TEXT v.txt\n"
                    "BUFFER b DATA_TYPE uint32 SIZE 3 FILE BINARY v.bin\n", tmp_path / "t.amber")
    # TEXT: the file's values, zero past its end; BINARY: its bytes in the buffer's layout
    assert s.buffers["t"].values == [1.5, -2.0, 3.0, 4.0, 5.0, 0]
    assert s.buffers["b"].values == [0x3FC00000, 0xC0000000, 7]


def test_buffer_file_missing_or_png_names_the_line(tmp_path):
    with pytest.raises(InputError) as info:
        parse_amber("\nBUFFER b DATA_TYPE uint32 SIZE 1 FILE TEXT nowhere.txt\n", tmp_path / "t.amber")
    assert "t.amber: line 2, column 44: cannot read" in str(info.value)
    with pytest.raises(InputError) as info:
        parse_amber("BUFFER b FORMAT R32_SFLOAT SIZE 1 FILE PNG x.png\n", tmp_path / "t.amber")
    assert "line 1, column 40" in str(info.value) and "FORMAT must be an R8G8B8A8 one" in str(info.value)


def test_buffer_file_png_holds_the_png_s_texels(tmp_path):
    from kernellab.formats import png

    (tmp_path / "a.png").write_bytes(png.encode(bytes(range(16)), 2, 2))
    s = parse_amber("BUFFER a FORMAT R8G8B8A8_UNORM FILE PNG a.png\n"
                    "BUFFER b FORMAT R8G8B8A8_UINT FILE a.png\n"  # PNG is Amber's default
                    "BUFFER c FORMAT R8G8B8A8_UNORM SIZE 1 FILE PNG a.png\n", tmp_path / "t.amber")
    assert s.buffers["a"].values == s.buffers["b"].values == list(range(16))
    assert s.buffers["c"].values == [0, 1, 2, 3]
    (tmp_path / "wrong.png").write_bytes(b"not a png")
    with pytest.raises(InputError) as info:
        parse_amber("BUFFER a FORMAT R8G8B8A8_UNORM FILE PNG wrong.png\n", tmp_path / "t.amber")
    assert "t.amber: line 1, column 41: " in str(info.value) and "wrong.png" in str(info.value)


@pytest.mark.parametrize("statement, column", [
    ("BUFFER b DATA_TYPE uint32 SIZE 1 FILE BINARY {}", 46),
    ("BUFFER b DATA_TYPE uint32 SIZE 1 FILE TEXT {}", 44),
    ("BUFFER b FORMAT R8G8B8A8_UNORM FILE PNG {}", 41),
    ("SHADER compute s GLSL FILE {}", 28),
])
def test_every_file_a_script_names_passes_one_boundary(tmp_path, statement, column):
    import os

    (tmp_path / "in").mkdir()
    os.mkfifo(tmp_path / "in" / "fifo")
    (tmp_path / "in" / "link").symlink_to("/etc/hostname")
    (tmp_path / "outside").write_text("1\n")
    cases = {"fifo": "is not a regular file", "link": "lies outside the script's folder",
             "../outside": "lies outside the script's folder", str(tmp_path / "outside"): "lies outside",
             "a\0b": "NUL", "missing": "cannot read"}
    for name, words in cases.items():
        with pytest.raises(InputError) as info:
            parse_amber(statement.format(name) + "\n", tmp_path / "in" / "t.amber")
        assert f"t.amber: line 1, column {column}: " in str(info.value) and words in str(info.value), \
            (name, str(info.value))


def test_shader_from_a_file_and_spirv_bin(tmp_path):
    (tmp_path / "s.comp").write_text("#version 450\nvoid main() {}\n")
    (tmp_path / "s.spv").write_bytes(bytes([3, 2, 0x23, 7, 0, 1]))
    s = parse_amber("SHADER compute g GLSL FILE s.comp\nSHADER compute b SPIRV-BIN FILE s.spv\n", tmp_path / "t.amber")
    assert s.shaders["g"].source == "#version 450\nvoid main() {}\n"
    assert (s.shaders["b"].format, s.shaders["b"].source) == ("SPIRV-HEX", "03 02 23 07 00 01")
    with pytest.raises(InputError) as info:
        parse_amber("SHADER compute g GLSL FILE none.comp\n", tmp_path / "t.amber")
    assert "t.amber: line 1, column 28: cannot read" in str(info.value)
