"""``dispatch_graph`` scenarios run by ``kernellab run`` on lavapipe (Arm's ML emulation layer).

The VGF files are converted from TOSA MLIR text in the test (helpers/vgf_models.py): a 3x3
conv2d alone, and followed by a placeholder compute shader that the scenario substitutes, with a
specialization constant (``specialization_constants_map``) and push constants.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from helpers.scenarios import write
from helpers.vgf_models import (
    IN_SHAPE,
    OUT_SHAPE,
    POST_SHADER,
    build_conv_vgf,
    conv_reference,
)
from kernellab.cli import main

pytest.importorskip("vgfpy", reason="pip ai-ml-sdk-vgf-library (kernellab[ml]) decodes VGF files")

X = (np.arange(20, dtype=np.float32).reshape(IN_SHAPE) - 7) / 3


def run(*args: Any) -> int:
    return main([str(a) for a in args])


def _tensors() -> list[dict[str, Any]]:
    return [{"tensor": {"uid": "x", "dims": list(IN_SHAPE), "format": "VK_FORMAT_R32_SFLOAT",
                        "shader_access": "readonly", "src": "x.npy"}},
            {"tensor": {"uid": "y", "dims": list(OUT_SHAPE), "format": "VK_FORMAT_R32_SFLOAT",
                        "shader_access": "writeonly", "dst": "y.npy"}}]


def _bindings(vgf_path: Path) -> list[dict[str, Any]]:
    """Bindings by the VGF's port numbers (the converter numbers them; Arm matches on ``id``)."""
    from kernellab.formats import vgf

    g = vgf.read(vgf_path)
    return [{"set": 0, "id": g.inputs[0].binding, "resource_ref": "x"},
            {"set": 0, "id": g.outputs[0].binding, "resource_ref": "y"}]


def test_conv_graph(tmp_path: Path) -> None:
    vgf_path = build_conv_vgf(tmp_path, "conv")
    np.save(tmp_path / "x.npy", X)
    doc = {"resources": [{"graph": {"uid": "g", "src": "conv.vgf"}}, *_tensors()],
           "commands": [{"dispatch_graph": {"graph_ref": "g", "bindings": _bindings(vgf_path)}}]}
    assert run("run", write(tmp_path / "s.json", doc)) == 0
    got = np.load(tmp_path / "y.npy")
    assert got.shape == OUT_SHAPE
    np.testing.assert_allclose(got, conv_reference(X), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("command,on_command", [("dispatch_graph", False), ("dispatch_vgf", True)])
def test_conv_then_substituted_shader_with_constants(tmp_path: Path, command: str, on_command: bool) -> None:
    """The substitution sits on the graph resource (the spec) or on the command (where Arm 0.11 reads it)."""
    vgf_path = build_conv_vgf(tmp_path, "conv_post", with_placeholder=True)
    from kernellab.formats import vgf

    (placeholder,) = vgf.read(vgf_path).placeholders()
    np.save(tmp_path / "x.npy", X)
    (tmp_path / "post.comp").write_text(POST_SHADER)
    np.save(tmp_path / "push.npy", np.array([0.5], np.float32))
    substitutions = [{"shader_ref": "post", "target": placeholder.name}]
    graph: dict[str, Any] = {"uid": "g", "src": "conv_post.vgf",
                             "specialization_constants_map": [{"shader_target": placeholder.name,
                                                               "specialization_constants": [{"id": 0, "value": 3.0}]}]}
    dispatch: dict[str, Any] = {"graph_ref": "g", "bindings": _bindings(vgf_path),
                                "push_constants": [{"push_data_ref": "push", "shader_target": placeholder.name}]}
    (dispatch if on_command else graph)["shader_substitutions"] = substitutions
    doc = {"resources": [
        {"shader": {"uid": "post", "src": "post.comp", "type": "GLSL", "push_constants_size": 4}},
        {"raw_data": {"uid": "push", "src": "push.npy"}},
        {"graph": graph}, *_tensors()],
        "commands": [{command: dispatch}]}
    assert run("run", write(tmp_path / "s.json", doc)) == 0
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), conv_reference(X) * 3 + 0.5, rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("command", ["dispatch_data_graph", "dispatch_spirv_graph"])
def test_spirv_graph_module(tmp_path: Path, command: str) -> None:
    """Arm 0.11's dispatch_data_graph: a SPIR-V graph module from a shader resource, tensors at (set, id)."""
    from helpers.vgf_models import data_graph_scenario

    doc, want = data_graph_scenario(tmp_path, command)
    assert run("run", write(tmp_path / "s.json", doc)) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "o.npy"), want)
