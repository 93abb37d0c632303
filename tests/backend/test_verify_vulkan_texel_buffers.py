"""`kernellab verify` on texel buffers (kernellab's texel_format extension, AmberScript's
uniform_texel_buffer and storage_texel_buffer): a buffer's range read and written as texels of
the view's format through the shared texel codec, as `kernellab run` binds it; bounds are the
view's texels, races are per texel."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kernellab import tools
from kernellab.cli import main

pytestmark = pytest.mark.skipif(tools.find("glslangValidator") is None, reason="needs glslangValidator")

SHADER = """#version 450
layout(local_size_x = 16) in;
layout(set = 0, binding = 0) uniform samplerBuffer src;
layout(set = 0, binding = 1, rgba8) uniform writeonly imageBuffer dst;
void main() {
  int i = int(gl_GlobalInvocationID.x);
  imageStore(dst, STORE_AT, texelFetch(src, i).bgra * 0.5);
}
"""


def _scenario(folder: Path, store_at: str, dst_range: list[int] | None = None) -> Path:
    folder.mkdir()
    (folder / "k.comp").write_text(SHADER.replace("STORE_AT", store_at))
    np.save(folder / "in.npy", np.linspace(-2.0, 2.0, 16 * 2, dtype=np.float32))
    dst: dict[str, Any] = {"set": 0, "id": 1, "resource_ref": "out", "texel_format": "VK_FORMAT_R8G8B8A8_UNORM",
                           "descriptor_type": "VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER"}
    if dst_range is not None:
        dst["buffer_range"] = dst_range
    doc = {"resources": [
        {"shader": {"uid": "k", "src": "k.comp", "type": "GLSL"}},
        {"buffer": {"uid": "in", "size": 128, "shader_access": "readonly", "src": "in.npy"}},
        {"buffer": {"uid": "out", "size": 128, "shader_access": "writeonly", "dst": "out.npy"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [1], "bindings": [
            {"set": 0, "id": 0, "resource_ref": "in", "texel_format": "VK_FORMAT_R16G16_SFLOAT",
             "descriptor_type": "VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER", "buffer_range": [0, 64]}, dst]}}]}
    (folder / "s.json").write_text(json.dumps(doc))
    return folder / "s.json"


def _findings(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, Any]:
    status = main(["verify", str(path), "--json"])
    return status, [(f["kind"], f["resource"]) for f in json.loads(capsys.readouterr().out)["findings"]]


def test_texel_buffers_read_and_write_as_the_device(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kernellab.formats.scenario import load_scenario
    from kernellab.spirvsim import check_dispatch, glsl_to_spirv
    from kernellab.verify.vulkan import _Buffers
    path = _scenario(tmp_path / "clean", "i", [64, 64])
    assert main(["run", "--scenario", str(path), "--output", str(tmp_path / "out")]) == 0
    device = np.load(tmp_path / "out" / "out.npy").tobytes()
    scenario, _ = load_scenario(path)
    state = _Buffers(scenario, path)
    (c,) = scenario.commands
    shader = scenario.by_uid[c.shader_ref]  # type: ignore[attr-defined]
    r = check_dispatch(glsl_to_spirv(shader.src_path), shader.entry, c.workgroups,  # type: ignore[attr-defined]
                       bindings=state.bindings(c, 0))  # type: ignore[arg-type]
    assert r.findings == [] and len(r.buffers["out"]) == len(device) == 128
    ours = np.frombuffer(r.buffers["out"], np.uint8)
    assert ours[:64].tolist() == list(device[:64]) == [0] * 64  # the view is the 16 texels from byte 64
    # what the shader stores, exactly: the R16G16_SFLOAT texels (r, g, 0, 1) swizzled and halved
    half = np.frombuffer(np.load(path.parent / "in.npy").tobytes()[:64], np.float16).reshape(16, 2).astype(np.float32)
    stored = np.stack([np.zeros(16, np.float32), half[:, 1], half[:, 0], np.ones(16, np.float32)], 1) * np.float32(0.5)
    scaled = np.clip(stored.astype(np.float64), 0.0, 1.0) * 255.0
    # the checker stores what lavapipe does (the float32 product rounded to nearest, a tie to even;
    # texels.encode); Vulkan lets a device store either integer nearest the scaled value: alpha 0.5
    # is 127.5, lavapipe 128, NVIDIA 127
    lavapipe = np.rint(np.clip(stored, 0, 1) * np.float32(255)).astype(np.uint8)
    assert ours[64:].tolist() == lavapipe.ravel().tolist()
    theirs = np.frombuffer(device[64:], np.uint8).reshape(16, 4)
    assert np.all((theirs >= np.floor(scaled)) & (theirs <= np.ceil(scaled))), (theirs, scaled)
    assert device[64:] != bytes(64)
    assert _findings(path, capsys) == (0, [])


@pytest.mark.parametrize(("store_at", "dst_range", "kind"), [
    ("i / 2", None, "data-race"),  # two invocations a texel
    ("i + 1", [64, 64], "out-of-bounds"),  # one past the view's 16 texels, inside the buffer
])
def test_planted_defects_in_texel_buffers(store_at: str, dst_range: list[int] | None, kind: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert _findings(_scenario(tmp_path / "planted", store_at, dst_range), capsys) == (1, [(kind, "out")])


def test_a_buffer_bound_as_texels_and_as_a_block_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One memory reached through two bindings is not modelled: refused, not checked as two."""
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "k.comp").write_text("#version 450\nlayout(local_size_x = 4) in;\n"
                                   "layout(set = 0, binding = 0, r32ui) uniform uimageBuffer t;\n"
                                   "layout(std430, set = 0, binding = 1) buffer B { uint b[]; };\n"
                                   "void main() { uint i = gl_GlobalInvocationID.x;\n"
                                   "  imageStore(t, int(i), uvec4(i)); b[i + 4u] = i; }\n")
    doc = {"resources": [{"shader": {"uid": "k", "src": "k.comp", "type": "GLSL"}},
                         {"buffer": {"uid": "out", "size": 64, "shader_access": "readwrite"}}],
           "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [1], "bindings": [
               {"set": 0, "id": 0, "resource_ref": "out", "texel_format": "VK_FORMAT_R32_UINT",
                "descriptor_type": "VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER"},
               {"set": 0, "id": 1, "resource_ref": "out"}]}}]}
    (folder / "s.json").write_text(json.dumps(doc))
    assert main(["verify", str(folder / "s.json")]) == 2
    assert "buffer out is bound twice" in capsys.readouterr().err


def test_a_hazard_between_dispatches_on_a_texel_buffer_names_a_buffer(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Two dispatches writing one texel buffer with nothing between them: the hazard is a buffer's
    (what a buffer barrier orders), not an image's."""
    path = _scenario(tmp_path / "twice", "i")
    doc = json.loads(path.read_text())
    doc["commands"][0]["dispatch_compute"]["implicit_barrier"] = False
    doc["commands"].append(doc["commands"][0])
    path.write_text(json.dumps(doc))
    status = main(["verify", str(path), "--json"])
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert status == 1 and [(f["kind"], f["resource"]) for f in findings] == [("data-race", "out")]
    assert "hazard on buffer out (write-after-write)" in findings[0]["message"]
