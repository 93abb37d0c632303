"""VGF files with compute-shader segments, storage-buffer resources and alias groups, and
``dispatch_spirv_graph`` with ``graph_constant`` resources, run by ``kernellab run`` on lavapipe.

The VGF files are written in the test with the VGF library's encoder (``vgfpy``), the shaders are
our own: a segment that writes a buffer intermediate and one that reads the tensor intermediate
sharing its alias group (a silent wrong result before intermediates were aliased: the reader saw
zeros), buffers bound to a VGF's inputs and outputs with an embedded SPIR-V or GLSL module on
explicit descriptor sets, and the conv graph's module run with its weights as a graph constant.
"""
from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from helpers.scenarios import write
from kernellab.cli import main

vgfpy = pytest.importorskip("vgfpy", reason="pip ai-ml-sdk-vgf-library (kernellab[ml]) writes VGF files")

STORAGE_BUFFER, TENSOR = 7, 1000460000
R32_UINT, R32_SFLOAT = 98, 100

#: writes v[i] = 3 i + 1 into a buffer, one invocation per element of an 8 x 4 grid
WRITE_BUFFER = """#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0, std430) buffer B { uint v[]; };
void main() { uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * 8u; v[i] = i * 3u + 1u; }
"""

#: copies a [4, 8] tensor, adding 100
READ_TENSOR = """#version 450
#extension GL_ARM_tensors : require
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) uniform tensorARM<uint, 2> src_t;
layout(set = 0, binding = 1) uniform tensorARM<uint, 2> dst_t;
void main() {
    uint v;
    tensorReadARM(src_t, uint[](gl_GlobalInvocationID.y, gl_GlobalInvocationID.x), v);
    tensorWriteARM(dst_t, uint[](gl_GlobalInvocationID.y, gl_GlobalInvocationID.x), v + 100u);
}
"""

#: out = a * SCALE + b, the inputs on set 0 and the output on set 1 at scattered binding numbers
SCALE_ADD = """#version 450
layout(local_size_x = 1) in;
layout(constant_id = 0) const float SCALE = 1.0;
layout(set = 0, binding = 4, std430) readonly buffer A { float a[]; };
layout(set = 0, binding = 9, std430) readonly buffer B { float b[]; };
layout(set = 1, binding = 17, std430) writeonly buffer O { float o[]; };
void main() { uint i = gl_GlobalInvocationID.x; o[i] = a[i] * SCALE + b[i]; }
"""


def run(*args: Any) -> int:
    return main([str(a) for a in args])


def _save(encoder: Any, path: Path) -> None:
    encoder.Finish()
    stream = io.FileIO(str(path), mode="wb")
    assert encoder.WriteTo(stream)
    stream.close()


def _spirv(folder: Path, name: str, source: str) -> np.ndarray:
    """SPIR-V words of a GLSL compute shader, compiled by kernellab's compile layer."""
    from kernellab.compile.pipeline import Compiler
    from kernellab.compile.stage import CompileRequest

    (folder / name).write_text(source)
    code = Compiler(CompileRequest(source=folder / name, language="glsl"), None).vulkan_module().data
    return np.frombuffer(code, dtype=np.uint32)


def test_alias_group_intermediates_share_memory(tmp_path: Path) -> None:
    """A buffer intermediate written by one segment is the tensor intermediate of its alias group
    that the next segment reads (Arm's runner binds a group's members at offset 0 of one allocation)."""
    enc = vgfpy.CreateEncoder(123)
    writer = enc.AddModule(vgfpy.ModuleType.Compute, "writer", "main")
    reader = enc.AddModule(vgfpy.ModuleType.Compute, "reader", "main")
    buf = enc.AddIntermediateResource(STORAGE_BUFFER, R32_UINT, [32], [], 3)
    view = enc.AddIntermediateResource(TENSOR, R32_UINT, [4, 8], [], 3)
    out = enc.AddOutputResource(TENSOR, R32_UINT, [4, 8], [])
    buf_slot, view_slot, out_slot = enc.AddBindingSlot(0, buf), enc.AddBindingSlot(0, view), enc.AddBindingSlot(1, out)
    write_set, read_set = enc.AddDescriptorSetInfo([buf_slot]), enc.AddDescriptorSetInfo([view_slot, out_slot])
    enc.AddModelSequenceInputsOutputs([], [], [out_slot], ["out"])
    enc.AddSegmentInfo(writer, "write", [write_set], [], [buf_slot], [], [8, 4, 1])
    enc.AddSegmentInfo(reader, "read", [read_set], [view_slot], [out_slot], [], [8, 4, 1])
    _save(enc, tmp_path / "alias.vgf")
    (tmp_path / "w.comp").write_text(WRITE_BUFFER)
    (tmp_path / "r.comp").write_text(READ_TENSOR)
    doc = {"resources": [
        {"shader": {"uid": "w", "src": "w.comp", "type": "GLSL"}},
        {"shader": {"uid": "r", "src": "r.comp", "type": "GLSL"}},
        {"graph": {"uid": "g", "src": "alias.vgf"}},
        {"tensor": {"uid": "out", "dims": [4, 8], "format": "VK_FORMAT_R32_UINT", "shader_access": "writeonly",
                    "dst": "out.npy"}}],
        "commands": [{"dispatch_graph": {"graph_ref": "g", "bindings": [{"set": 0, "id": 1, "resource_ref": "out"}],
                                         "shader_substitutions": [{"shader_ref": "w", "target": "writer"},
                                                                  {"shader_ref": "r", "target": "reader"}]}}]}
    assert run("run", write(tmp_path / "s.json", doc)) == 0
    want = (np.arange(32, dtype=np.uint32) * 3 + 1 + 100).reshape(4, 8)
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), want)


def _buffer_vgf(path: Path, module: tuple[str, Any]) -> None:
    """A one-segment VGF: two float buffers in (bindings 4, 9 on set 0), one out (17 on set 1),
    the sets listed output first so only their explicit indexes put them right."""
    enc = vgfpy.CreateEncoder(123)
    kind, code = module
    mod = enc.AddModule(vgfpy.ModuleType.Compute, "scale_add", "main", code) if kind == "spirv" else \
        enc.AddModule(vgfpy.ModuleType.Compute, "scale_add", "main", vgfpy.ShaderType.Glsl, code)
    a, b = (enc.AddInputResource(STORAGE_BUFFER, R32_SFLOAT, [6], []) for _ in range(2))
    o = enc.AddOutputResource(STORAGE_BUFFER, R32_SFLOAT, [6], [])
    a_slot, b_slot, o_slot = enc.AddBindingSlot(4, a), enc.AddBindingSlot(9, b), enc.AddBindingSlot(17, o)
    ins, outs = enc.AddDescriptorSetInfo([a_slot, b_slot], 0), enc.AddDescriptorSetInfo([o_slot], 1)
    enc.AddModelSequenceInputsOutputs([a_slot, b_slot], ["a", "b"], [o_slot], ["o"])
    enc.AddSegmentInfo(mod, "segment", [outs, ins], [a_slot, b_slot], [o_slot], [], [6, 1, 1])
    _save(enc, path)


@pytest.mark.parametrize("embedded", ["spirv", "glsl"])
def test_buffers_bound_to_an_embedded_shader_module(tmp_path: Path, embedded: str) -> None:
    """Scenario buffers fill the VGF's buffer ports; the module's own SPIR-V (or GLSL, compiled
    as a scenario's GLSL) runs with the graph's specialization_constants_map."""
    code = _spirv(tmp_path, "k.comp", SCALE_ADD) if embedded == "spirv" else SCALE_ADD
    _buffer_vgf(tmp_path / "k.vgf", (embedded, code))
    a, b = np.linspace(-1, 1, 6, dtype=np.float32), np.arange(6, dtype=np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    buf = {"size": 24}
    doc = {"resources": [
        {"graph": {"uid": "g", "src": "k.vgf", "specialization_constants_map": [
            {"shader_target": "scale_add", "specialization_constants": [{"id": 0, "value": 2.5}]}]}},
        {"buffer": {"uid": "a", **buf, "shader_access": "readonly", "src": "a.npy"}},
        {"buffer": {"uid": "b", **buf, "shader_access": "readonly", "src": "b.npy"}},
        {"buffer": {"uid": "o", **buf, "shader_access": "writeonly", "dst": "o.npy"}}],
        "commands": [{"dispatch_graph": {"graph_ref": "g", "bindings": [
            {"set": 0, "id": 4, "resource_ref": "a"}, {"set": 0, "id": 9, "resource_ref": "b"},
            {"set": 0, "id": 17, "resource_ref": "o"}]}}]}
    assert run("run", write(tmp_path / "s.json", doc)) == 0
    np.testing.assert_allclose(np.load(tmp_path / "o.npy").view(np.float32), a * 2.5 + b, rtol=1e-6)


def test_buffer_of_the_wrong_size_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _buffer_vgf(tmp_path / "k.vgf", ("glsl", SCALE_ADD))
    doc = {"resources": [
        {"graph": {"uid": "g", "src": "k.vgf"}},
        *({"buffer": {"uid": u, "size": 24 if u != "o" else 20, "shader_access": "readwrite"}} for u in "abo")],
        "commands": [{"dispatch_graph": {"graph_ref": "g", "bindings": [
            {"set": 0, "id": i, "resource_ref": u} for i, u in ((4, "a"), (9, "b"), (17, "o"))]}}]}
    assert run("run", write(tmp_path / "s.json", doc)) == 2
    err = capsys.readouterr().err
    assert "/commands/0/dispatch_graph/bindings/2/resource_ref" in err
    assert "VGF output 'o' (binding 17) expects a buffer of 24 bytes, not 20" in err


def test_spirv_graph_with_graph_constants(tmp_path: Path) -> None:
    """The conv graph's module with its weights given as a graph_constant (id 0, the first
    entry of graph_constants) computes what the VGF computes."""
    from helpers.vgf_models import IN_SHAPE, OUT_SHAPE, build_conv_vgf, conv_reference
    from kernellab.formats import vgf

    g = vgf.read(build_conv_vgf(tmp_path, "conv"))
    seg = g.segments[0]
    code = g.module_spirv(seg.module)
    assert code is not None and seg.constant_bindings == ((0, 0),)
    (tmp_path / "conv.spv").write_bytes(code)
    weights = g.resources[g.constants[0].resource]
    np.save(tmp_path / "w.npy", np.frombuffer(g.constant_data(0), np.float32).reshape(weights.shape))
    x = (np.arange(20, dtype=np.float32).reshape(IN_SHAPE) - 7) / 3
    np.save(tmp_path / "x.npy", x)
    f32 = "VK_FORMAT_R32_SFLOAT"
    doc = {"resources": [
        {"shader": {"uid": "conv", "src": "conv.spv", "type": "SPIR-V", "entry": g.modules[seg.module].entry_point}},
        {"tensor": {"uid": "x", "dims": list(IN_SHAPE), "format": f32, "shader_access": "readonly", "src": "x.npy"}},
        {"tensor": {"uid": "y", "dims": list(OUT_SHAPE), "format": f32, "shader_access": "writeonly", "dst": "y.npy"}},
        {"graph_constant": {"uid": "weights", "dims": list(weights.shape), "format": f32, "src": "w.npy"}}],
        "commands": [{"dispatch_spirv_graph": {"graph_ref": "conv", "graph_constants": ["weights"], "bindings": [
            {"set": 0, "id": g.inputs[0].binding, "resource_ref": "x"},
            {"set": 0, "id": g.outputs[0].binding, "resource_ref": "y"}]}}]}
    assert run("run", write(tmp_path / "s.json", doc)) == 0
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), conv_reference(x), rtol=1e-6, atol=1e-6)
