"""Bad tensor, aliasing and graph scenarios: each case asserts the JSON pointer and the message.

Checked when the scenario is read (``kernellab validate`` and ``kernellab run``, exit 2), except
the device's own alignment, which ``kernellab run`` checks when it creates the shared memory.
"""
from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from helpers.scenarios import kernellab, write
from kernellab.errors import InputError
from kernellab.formats.scenario import load_scenario

Doc = dict[str, Any]


def base(tmp: Path) -> Doc:
    """Two tensors and an image, the image and a tensor in one memory group; valid as it stands."""
    np.save(tmp / "t.npy", np.zeros((2, 3), np.int32))
    np.save(tmp / "img.npy", np.zeros((1, 3, 5, 4), np.uint8))
    return {"resources": [
        {"tensor": {"uid": "t", "dims": [2, 3], "format": "VK_FORMAT_R32_SINT", "shader_access": "readonly",
                    "src": "t.npy"}},
        {"image": {"uid": "img", "dims": [1, 5, 3, 1], "format": "VK_FORMAT_R8G8B8A8_UNORM",
                   "shader_access": "readwrite", "tiling": "LINEAR", "memory_group": {"id": "m"}}},
        {"tensor": {"uid": "view", "dims": [3, 5, 4], "format": "VK_FORMAT_R8_UINT", "shader_access": "readonly",
                    "tiling": "LINEAR", "memory_group": {"id": "m"}}}],
        "commands": []}


def _set(keys: list[Any], value: Any) -> Callable[[Doc, Path], None]:
    def mutate(doc: Doc, tmp: Path) -> None:
        node: Any = doc
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value
    return mutate


def _npy(name: str, array: np.ndarray) -> Callable[[Doc, Path], None]:
    return lambda doc, tmp: np.save(tmp / name, array)


T = ["resources", 0, "tensor"]
IMG = ["resources", 1, "image"]
VIEW = ["resources", 2, "tensor"]

CASES: list[tuple[str, Callable[[Doc, Path], None], str, str]] = [
    ("npy-shape", _npy("t.npy", np.zeros((3, 2), np.int32)), "/resources/0/tensor/src",
     "tensor .npy is shaped [3, 2], the tensor's dims are [2, 3]"),
    ("npy-dtype", _npy("t.npy", np.zeros((2, 3), np.float32)), "/resources/0/tensor/src",
     "tensor .npy has dtype <f4; VK_FORMAT_R32_SINT needs <i4"),
    ("not-a-tensor-format", _set(T + ["format"], "VK_FORMAT_R8G8B8A8_UNORM"), "/resources/0/tensor/format",
     'unsupported tensor format "VK_FORMAT_R8G8B8A8_UNORM" (expected one of VK_FORMAT_R8_BOOL_ARM|'),
    ("alias-dims-channels", _set(VIEW + ["dims"], [3, 5, 3]), "/resources/2/tensor/dims",
     'a tensor aliasing image "img" (VK_FORMAT_R8G8B8A8_UNORM, 5x3) needs dims [3, 5, 4] or [1, 3, 5, 4], got [3, 5, 3]'),
    ("alias-dims-extent", _set(VIEW + ["dims"], [5, 3, 4]), "/resources/2/tensor/dims",
     "needs dims [3, 5, 4] or [1, 3, 5, 4], got [5, 3, 4]"),
    ("alias-element-size", _set(VIEW + ["format"], "VK_FORMAT_R32_SINT"), "/resources/2/tensor/format",
     'VK_FORMAT_R32_SINT has 4-byte elements, but the components of image "img" (VK_FORMAT_R8G8B8A8_UNORM) are 1 byte'),
    ("alias-target-deprecated", _set(VIEW + ["alias_target"], {"resource_ref": "img"}),
     "/resources/2/tensor/alias_target",
     "The alias_target field is deprecated, please use the memory_group functionality instead"),
    ("image-dims", _set(IMG + ["dims"], [2, 5, 3, 1]), "/resources/1/image/dims",
     "image dims are [1, width, height, 1]; got [2, 5, 3, 1]"),
    ("group-offset-element", lambda d, t: d["resources"][0]["tensor"].update(memory_group={"id": "n", "offset": 6}),
     "/resources/0/tensor/memory_group/offset",
     "offset 6 is not a multiple of the 4-byte elements of VK_FORMAT_R32_SINT"),
    ("group-mipped-image", lambda d, t: (d["resources"][1]["image"].update(mips=2, memory_group={"id": "m"}),
                                         d["resources"][0]["tensor"].update(memory_group={"id": "m"})),
     "/resources/1/image/mips",
     'image "img" shares memory_group "m" with tensor "t"; only an image with one mip level can be aliased'),
    ("data-graph-not-shader", lambda d, t: d["commands"].append({"dispatch_data_graph": {"graph_ref": "t"}}),
     "/commands/0/dispatch_data_graph/graph_ref", '"t" is a tensor, expected a shader'),
    ("data-graph-glsl", lambda d, t: (d["resources"].append({"shader": {"uid": "s", "src": "t.npy", "type": "GLSL"}}),
                                      d["commands"].append({"dispatch_spirv_graph": {"graph_ref": "s"}})),
     "/commands/0/dispatch_spirv_graph/graph_ref",
     'shader "s" is GLSL; dispatch_spirv_graph runs a SPIR-V graph module (type SPIR-V)'),
    ("data-graph-binds-image", lambda d, t: (
        d["resources"].append({"shader": {"uid": "s", "src": "t.npy", "type": "SPIR-V"}}),
        d["commands"].append({"dispatch_data_graph": {"graph_ref": "s", "bindings": [
            {"set": 0, "id": 0, "resource_ref": "img"}]}})),
     "/commands/0/dispatch_data_graph/bindings/0/resource_ref", '"img" is a image, expected a tensor'),
    ("data-graph-constant-missing", lambda d, t: (
        d["resources"].append({"shader": {"uid": "s", "src": "t.npy", "type": "SPIR-V"}}),
        d["commands"].append({"dispatch_data_graph": {"graph_ref": "s", "graph_constants": ["w"]}})),
     "/commands/0/dispatch_data_graph/graph_constants/0", 'no resource with uid "w" (expected a graph_constant)'),
    ("graph-constant-shape", lambda d, t: d["resources"].append(
        {"graph_constant": {"uid": "w", "dims": [3, 2], "format": "VK_FORMAT_R32_SINT", "src": "t.npy"}}),
     "/resources/3/graph_constant/src", "graph constant .npy is shaped [2, 3], its dims are [3, 2]"),
    ("graph-constant-size", lambda d, t: d["resources"].append(
        {"graph_constant": {"uid": "w", "dims": [2, 3], "format": "VK_FORMAT_R8_SINT", "src": "t.npy"}}),
     "/resources/3/graph_constant/src", "graph constant .npy holds 24 bytes; 6 elements of VK_FORMAT_R8_SINT are 6"),
    ("graph-constant-rank", lambda d, t: d["resources"].append(
        {"graph_constant": {"uid": "w", "dims": [1] * 7, "format": "VK_FORMAT_R8_SINT", "src": "t.npy"}}),
     "/resources/3/graph_constant/dims", "expected"),
]


@pytest.mark.parametrize("name,mutate,pointer,message", CASES, ids=[c[0] for c in CASES])
def test_bad_ml_scenario(tmp_path: Path, name: str, mutate: Callable[[Doc, Path], None], pointer: str,
                         message: str) -> None:
    doc = base(tmp_path)
    load_scenario(write(tmp_path / "ok.json", copy.deepcopy(doc)))  # the base is valid
    mutate(doc, tmp_path)
    with pytest.raises(InputError) as info:
        load_scenario(write(tmp_path / "s.json", doc))
    found = [(p.where, p.message) for p in info.value.problems if not p.warning]
    assert any(where == pointer and message in text for where, text in found), found


def test_device_alignment_of_a_memory_group_offset(tmp_path: Path) -> None:
    """lavapipe aligns buffers to 64 bytes: offset 32 passes the file checks but not the device's."""
    doc = {"resources": [
        {"buffer": {"uid": "a", "size": 128, "shader_access": "readwrite", "memory_group": {"id": "g"}}},
        {"buffer": {"uid": "b", "size": 16, "shader_access": "readwrite", "dst": "b.npy",
                    "memory_group": {"id": "g", "offset": 32}}}], "commands": []}
    proc = kernellab("run", write(tmp_path / "s.json", doc))
    assert proc.returncode == 2, proc.stderr
    assert "s.json: /resources/1/buffer/memory_group/offset: " in proc.stderr
    assert "offset 32 is not a multiple of the 64-byte alignment" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_graph_binding_shape_differs_from_vgf(tmp_path: Path) -> None:
    pytest.importorskip("vgfpy")
    from helpers.vgf_models import IN_SHAPE, OUT_SHAPE, build_conv_vgf

    build_conv_vgf(tmp_path, "conv")
    doc = {"resources": [
        {"graph": {"uid": "g", "src": "conv.vgf", "shader_substitutions": [{"shader_ref": "g", "target": "nope"}]}},
        {"tensor": {"uid": "x", "dims": [1, 4, 5, 1], "format": "VK_FORMAT_R32_SFLOAT", "shader_access": "readonly"}},
        {"tensor": {"uid": "y", "dims": list(OUT_SHAPE), "format": "VK_FORMAT_R16_SFLOAT", "shader_access": "writeonly"}}],
        "commands": [{"dispatch_vgf": {"graph_ref": "g", "bindings": [
            {"set": 0, "id": 0, "resource_ref": "x"}, {"set": 0, "id": 1, "resource_ref": "y"}]}}]}
    with pytest.raises(InputError) as info:
        load_scenario(write(tmp_path / "s.json", doc))
    found = {(p.where, p.message) for p in info.value.problems if not p.warning}
    assert ("/commands/0/dispatch_vgf/bindings/0/resource_ref",
            f"VGF input 'input_0' (binding 0) has shape {list(IN_SHAPE)}, the tensor has dims [1, 4, 5, 1]") in found
    assert any(w == "/commands/0/dispatch_vgf/bindings/1/resource_ref" and "has format VK_FORMAT_R32_SFLOAT, the "
               "tensor has VK_FORMAT_R16_SFLOAT" in m for w, m in found), found
    assert any(w == "/resources/0/graph/shader_substitutions/0/shader_ref" for w, _ in found), found
    assert any(w == "/resources/0/graph/shader_substitutions/0/target" and 'no placeholder module "nope"' in m
               for w, m in found), found
    proc = kernellab("validate", tmp_path / "s.json")
    assert proc.returncode == 2 and "/commands/0/dispatch_vgf/bindings/0/resource_ref" in proc.stderr
