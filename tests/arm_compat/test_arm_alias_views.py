"""Tensors viewing part of an image (issue 11, item 3): the dims Arm's runner accepts for a tensor
in an image's memory group — any view whose innermost dimension is the image's component count,
with the image's row pitch for ``dims[-3]`` — run on both runners with byte-identical ``dst``
files; dims Arm refuses (innermost dimension not the component count) are refused by both."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from arm_compat.test_arm_tensors import STORE
from helpers.scenarios import kernellab
from kernellab.testing.arm_runner import ArmRunner

W, H = 5, 3
IMAGE = np.array([[[y * 40 + x * 8 + c for c in range(4)] for x in range(W)] for y in range(H)], np.uint8)


def _scenario(folder: Path, dims: list[int]) -> Path:
    (folder / "k.comp").write_text(STORE)
    doc = {"resources": [
        {"shader": {"uid": "k", "src": "k.comp", "type": "GLSL"}},
        {"image": {"uid": "img", "dims": [1, W, H, 1], "format": "VK_FORMAT_R8G8B8A8_UINT", "tiling": "LINEAR",
                   "shader_access": "writeonly", "memory_group": {"id": "m"}}},
        {"tensor": {"uid": "t", "dims": dims, "format": "VK_FORMAT_R8_UINT", "tiling": "LINEAR",
                    "shader_access": "readonly", "memory_group": {"id": "m"}, "dst": "t.npy"}},
        {"image_barrier": {"uid": "to_tensor", "image_resource": "img", "old_layout": "general",
                           "new_layout": "tensor_aliasing", "src_access": "compute_shader_write",
                           "dst_access": "memory_read", "src_stage": ["compute"], "dst_stage": ["compute"]}}],
        "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [W, H],
                                           "bindings": [{"set": 0, "id": 0, "resource_ref": "img"}]}},
                     {"dispatch_barrier": {"image_barrier_refs": ["to_tensor"], "memory_barrier_refs": [],
                                           "buffer_barrier_refs": [], "tensor_barrier_refs": []}}]}
    path = folder / "scenario.json"
    path.write_text(json.dumps(doc, indent=1))
    return path


@pytest.mark.parametrize("dims, want", [
    ([1, 2, W, 4], IMAGE[None, :2]),          # the first rows
    ([1, H, 3, 4], IMAGE[None, :, :3]),       # the left columns, at the image's row pitch
    ([1, 2, 2, 4], IMAGE[None, :2, :2]),
])
def test_part_of_image_views_match_arm(tmp_path: Path, arm_runner: ArmRunner, icd: Path, dims, want) -> None:
    path = _scenario(tmp_path, dims)
    arm_runner.run(path, output=tmp_path / "arm", icd=icd)
    proc = kernellab("run", "--scenario", path, "--output", tmp_path / "kernellab")
    assert proc.returncode == 0, proc.stderr
    ref, got = (tmp_path / "arm" / "t.npy").read_bytes(), (tmp_path / "kernellab" / "t.npy").read_bytes()
    assert ref == got
    np.testing.assert_array_equal(np.load(tmp_path / "kernellab" / "t.npy"), want)


def test_innermost_dimension_other_than_components_refused_by_both(tmp_path: Path, arm_runner: ArmRunner,
                                                                    icd: Path) -> None:
    _refused_by_both(tmp_path, _scenario(tmp_path, [1, H, W * 2, 2]), arm_runner, icd, "innermost dimension",
                     "/resources/2/tensor/dims")


def test_view_past_the_image_refused(tmp_path: Path) -> None:
    proc = kernellab("run", "--scenario", _scenario(tmp_path, [1, H + 1, W, 4]), "--output", tmp_path / "out")
    assert proc.returncode == 2
    assert "/resources/2/tensor/dims" in proc.stderr and "past the image" in proc.stderr


@pytest.mark.parametrize("dims", [[H, 3, 4], [W * H, 4], [2, W, 4]])
def test_views_arm_gets_wrong_are_refused(tmp_path: Path, arm_runner: ArmRunner, icd: Path, dims) -> None:
    """Arm accepts a rank-3 or rank-2 part view but its file holds the first image row, then
    zeros or whatever the memory held (seen both): not the view's texels."""
    path = _scenario(tmp_path, dims)
    arm_runner.run(path, output=tmp_path / "arm", icd=icd)
    first_row = IMAGE[0].reshape(-1)
    arm = np.load(tmp_path / "arm" / "t.npy").reshape(-1)
    view = IMAGE.reshape(-1)[:arm.size]
    assert arm[:first_row.size].tolist() == first_row.tolist() and arm.tolist() != view.tolist()
    proc = kernellab("run", "--scenario", path, "--output", tmp_path / "kernellab")
    assert proc.returncode == 2
    assert "/resources/2/tensor/dims" in proc.stderr and "returns only the image's first row" in proc.stderr


def test_mixed_tiling_with_an_optimal_tensor_refused_by_both(tmp_path: Path, arm_runner: ArmRunner,
                                                             icd: Path) -> None:
    path = _scenario(tmp_path, [1, H, W, 4])
    doc = json.loads(path.read_text())
    doc["resources"][2]["tensor"]["tiling"] = "OPTIMAL"
    path.write_text(json.dumps(doc))
    _refused_by_both(tmp_path, path, arm_runner, icd, "identical tiling", "/resources/1/image/tiling")


def _refused_by_both(folder: Path, path: Path, arm_runner: ArmRunner, icd: Path, words: str, pointer: str) -> None:
    """Arm's runner fails saying ``words``; kernellab exits 2 saying them at ``pointer``."""
    with pytest.raises(Exception) as info:
        arm_runner.run(path, output=folder / "arm", icd=icd)
    assert words in str(info.value)
    proc = kernellab("run", "--scenario", path, "--output", folder / "kernellab")
    assert proc.returncode == 2
    assert pointer in proc.stderr and words in proc.stderr
