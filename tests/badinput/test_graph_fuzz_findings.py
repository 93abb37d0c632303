"""Graph inputs the mutation fuzzer (tests/fuzz, and a run of it through ``kernellab run``) broke
kernellab with: damaged VGF files and SPIR-V graph modules, graph modules missing a tensor or a
constant. Each is now an input error naming the scenario's JSON path and the file, exit 2."""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("vgfpy", reason="pip ai-ml-sdk-vgf-library (kernellab[ml]) writes and reads VGF files")

from fuzz.test_fuzz_readers import _graph_constant, _vgf_buffers  # noqa: E402  (after the skip: needs vgfpy)
from helpers.scenarios import kernellab  # noqa: E402


def test_segment_name_not_utf8(tmp_path: Path) -> None:
    """Fuzzer, seed 20261125, case vgf_buffers #2583: a name stored as bytes that are not UTF-8
    reached Python as a UnicodeDecodeError from Arm's binding (an internal error)."""
    _vgf_buffers(tmp_path)
    data = (tmp_path / "k.vgf").read_bytes()
    assert data.count(b"segment") == 1
    (tmp_path / "k.vgf").write_bytes(data.replace(b"segment", b"se\xed\xa0\x80nt"))  # same length
    proc = kernellab("validate", tmp_path / "scenario.json")
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "/resources/0/graph/src" in proc.stderr and "k.vgf" in proc.stderr
    assert "a module, segment or port name: the VGF holds a name that is not UTF-8 text" in proc.stderr


def test_embedded_glsl_not_utf8(tmp_path: Path) -> None:
    """Found while fuzzing the VGF seed (validate does not read module code): bytes that are not
    UTF-8 in a module's embedded GLSL passed validate and crashed ``run`` in Arm's binding."""
    pytest.importorskip("emulation_layer", reason="running a VGF needs Arm's ML emulation layer (kernellab[ml])")
    _vgf_buffers(tmp_path)
    data = (tmp_path / "k.vgf").read_bytes()
    assert data.count(b"gl_GlobalInvocationID") == 1
    (tmp_path / "k.vgf").write_bytes(data.replace(b"gl_GlobalInvocationID", b"gl_Globa\xffInvocationID"))
    assert kernellab("validate", tmp_path / "scenario.json").returncode == 0  # module code is read by run
    proc = kernellab("run", tmp_path / "scenario.json", "--output", tmp_path / "out")
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert ("/resources/0/graph/src: " in proc.stderr and
            "k.vgf: module 'scale_add': its GLSL source is not UTF-8 text (invalid start byte" in proc.stderr)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def _damage_first_extension(spirv: bytes) -> bytes:
    """The module with its first OpExtension claiming 14,649 words (a word the fuzzer flipped)."""
    words = bytearray(spirv)
    at = 5 * 4  # after the header
    while at < len(words):
        word = int.from_bytes(words[at:at + 4], "little")
        if word & 0xFFFF == 10:  # OpExtension
            words[at:at + 4] = ((14649 << 16) | 10).to_bytes(4, "little")
            return bytes(words)
        at += (word >> 16) * 4
    raise AssertionError("no OpExtension in the module")


@pytest.mark.parametrize("damaged", ["conv.spv", "conv.vgf"])
def test_graph_module_spirv_damaged(tmp_path: Path, damaged: str) -> None:
    """Fuzzing ``run`` (seed 20261125, graph_constant #63, #67): a damaged SPIR-V graph module,
    given as a ``dispatch_spirv_graph`` shader or inside a VGF, was handed to the driver, which
    answered VK_ERROR_UNKNOWN: exit 1 naming neither file nor JSON path. spirv-val now checks it."""
    pytest.importorskip("emulation_layer", reason="running a graph needs Arm's ML emulation layer (kernellab[ml])")
    try:
        _graph_constant(tmp_path)
    except FileNotFoundError:
        pytest.skip("Arm's model converter (pip ai-ml-sdk-model-converter) builds the graph")
    path = tmp_path / damaged
    data = path.read_bytes()
    if damaged == "conv.spv":
        path.write_bytes(_damage_first_extension(data))
        pointer = "/resources/0/shader/src: "
    else:
        module = (tmp_path / "conv.spv").read_bytes()
        assert data.count(module) == 1
        path.write_bytes(data.replace(module, _damage_first_extension(module)))
        pointer = "/resources/1/graph/src: "
    proc = kernellab("run", tmp_path / "scenario.json", "--output", tmp_path / "out")
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "VK_ERROR" not in proc.stderr
    assert pointer in proc.stderr and damaged in proc.stderr
    assert "SPIR-V graph module is not valid for vulkan1.3: spirv-val failed" in proc.stderr
    assert "stated word count is 14649" in proc.stderr


def _spirv_graph_case(tmp_path: Path) -> dict:
    try:
        _graph_constant(tmp_path)
    except FileNotFoundError:
        pytest.skip("Arm's model converter (pip ai-ml-sdk-model-converter) builds the graph")
    doc = json.loads((tmp_path / "scenario.json").read_text())
    doc["commands"] = doc["commands"][:1]  # the dispatch_spirv_graph
    return doc


SPIRV_GRAPH_CASES = [
    ("no-bindings", lambda cmd: cmd.pop("bindings"), "/commands/0/dispatch_spirv_graph/bindings",
     'graph module "conv" reads or writes tensor graph_partition_0_arg_0 at set 0 binding 0, which no binding fills'),
    ("input-unbound", lambda cmd: cmd["bindings"].pop(0), "/commands/0/dispatch_spirv_graph/bindings",
     'graph module "conv" reads or writes tensor graph_partition_0_arg_0 at set 0 binding 0, which no binding fills'),
    ("no-graph-constants", lambda cmd: cmd.update(graph_constants=[]), "/commands/0/dispatch_spirv_graph/graph_constants",
     'graph module "conv" uses graph constant id 0; graph_constants gives 0 (id n is entry n)'),
]


@pytest.mark.parametrize("name, mutate, pointer, message", SPIRV_GRAPH_CASES, ids=[c[0] for c in SPIRV_GRAPH_CASES])
def test_spirv_graph_inputs_missing(tmp_path: Path, name: str, mutate: Callable[[dict], object], pointer: str,
                                   message: str) -> None:
    """Fuzzing ``run`` (seed 20261125, graph_constant #1629, #2084): a ``dispatch_spirv_graph``
    without a binding for one of the module's tensors (or without its graph constant) passed
    validate and Arm's emulation layer aborted the process (std::out_of_range). Now refused when
    the scenario is read."""
    doc = _spirv_graph_case(tmp_path)
    mutate(doc["commands"][0]["dispatch_spirv_graph"])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    proc = kernellab("validate", path)
    assert proc.returncode == 2, proc.stderr
    assert f"bad.json: {pointer}: {message}" in proc.stderr


def test_spirv_graph_entry_point_missing(tmp_path: Path) -> None:
    doc = _spirv_graph_case(tmp_path)
    doc["resources"][0]["shader"]["entry"] = "main"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    proc = kernellab("validate", path)
    assert proc.returncode == 2, proc.stderr
    assert ('bad.json: /commands/0/dispatch_spirv_graph/graph_ref: shader "conv" (' in proc.stderr and
            'has no graph entry point "main" (it has: graph_partition_0); set its "entry"' in proc.stderr)
