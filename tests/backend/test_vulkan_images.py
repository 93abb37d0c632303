"""Images on the Vulkan device (lavapipe in CI): storage and sampled access, samplers, mips, DDS."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from helpers.scenarios import raw, write
from kernellab.cli import main
from kernellab.formats import dds


def run(*args: Any) -> int:
    return main([str(a) for a in args])


INVERT = """#version 450
layout(local_size_x = 8, local_size_y = 8) in;
layout(set = 0, binding = 0, rgba8) uniform readonly image2D src;
layout(set = 0, binding = 1, rgba8) uniform writeonly image2D dst;
void main() {
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    if (any(greaterThanEqual(p, imageSize(src)))) return;
    vec4 c = imageLoad(src, p);
    imageStore(dst, p, vec4(1.0) - c.bgra);
}
"""


@pytest.mark.parametrize("dst_ext", [".npy", ".dds"])
def test_storage_image_transform_and_outputs(tmp_path: Path, dst_ext: str) -> None:
    h, w = 12, 20
    rng = np.random.default_rng(1)
    pixels = rng.integers(0, 256, (1, h, w, 4), dtype=np.uint8)
    np.save(tmp_path / "in.npy", pixels)
    (tmp_path / "k.comp").write_text(INVERT)
    doc = {"resources": [
        {"shader": {"uid": "k", "src": "k.comp", "type": "GLSL"}},
        {"image": {"uid": "src", "dims": [1, w, h, 1], "format": "VK_FORMAT_R8G8B8A8_UNORM",
                   "shader_access": "image_read", "src": "in.npy"}},
        {"image": {"uid": "dst", "dims": [1, w, h, 1], "format": "VK_FORMAT_R8G8B8A8_UNORM",
                   "shader_access": "writeonly", "dst": f"out{dst_ext}"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [3, 2], "bindings": [
            {"set": 0, "id": 0, "resource_ref": "src"}, {"set": 0, "id": 1, "resource_ref": "dst"}]}}]}
    assert run("run", write(tmp_path / "s.json", doc)) == 0
    want = 255 - pixels[..., [2, 1, 0, 3]]
    if dst_ext == ".npy":
        got = np.load(tmp_path / "out.npy")
        assert got.shape == (1, h, w, 4) and got.dtype == np.uint8
        np.testing.assert_array_equal(got, want)
    else:
        img = dds.read(tmp_path / "out.dds")
        assert (img.width, img.height, img.format.name, img.mip_levels) == (w, h, "VK_FORMAT_R8G8B8A8_UNORM", 1)
        np.testing.assert_array_equal(np.frombuffer(img.tobytes(), np.uint8).reshape(want.shape)[..., :], want)


SAMPLE = """#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) uniform sampler2D tex;
layout(set = 0, binding = 1) readonly buffer UV { vec4 uv[]; };
layout(set = 0, binding = 2) writeonly buffer OUT { vec4 color[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    color[i] = textureLod(tex, uv[i].xy, uv[i].z);
}
"""


def _sampling(tmp: Path, texels: np.ndarray, uv: np.ndarray, image: dict[str, Any]) -> np.ndarray:
    h, w = texels.shape[1:3]
    np.save(tmp / "tex.npy", texels)
    np.save(tmp / "uv.npy", uv.astype(np.float32))
    (tmp / "k.comp").write_text(SAMPLE)
    n = len(uv)
    doc = {"resources": [
        {"shader": {"uid": "k", "src": "k.comp", "type": "GLSL"}},
        {"image": {"uid": "tex", "dims": [1, w, h, 1], "format": "VK_FORMAT_R8G8B8A8_UNORM",
                   "shader_access": "readonly", "src": "tex.npy", **image}},
        {"buffer": {"uid": "uv", "size": 16 * n, "shader_access": "readonly", "src": "uv.npy"}},
        {"buffer": {"uid": "out", "size": 16 * n, "shader_access": "writeonly", "dst": "out.npy"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [n], "bindings": [
            {"set": 0, "id": 0, "resource_ref": "tex"}, {"set": 0, "id": 1, "resource_ref": "uv"},
            {"set": 0, "id": 2, "resource_ref": "out"}]}}]}
    assert run("run", write(tmp / "s.json", doc)) == 0
    return raw(tmp / "out.npy").view(np.float32).reshape(n, 4)


def _texels() -> np.ndarray:
    t = np.zeros((1, 4, 4, 4), np.uint8)
    t[0, :, :, 0] = np.arange(16).reshape(4, 4) * 16          # red varies with position
    t[0, :, :, 1] = 200
    t[0, :, :, 3] = 255
    return t


def _uv(points: list[tuple[float, float]], lod: float = 0.0) -> np.ndarray:
    return np.array([(u, v, lod, 0.0) for u, v in points], np.float32)


def test_nearest_and_linear_filters(tmp_path: Path) -> None:
    t = _texels()
    red = t[0, :, :, 0].astype(np.float64) / 255
    centers = [((x + 0.5) / 4, (y + 0.5) / 4) for y in range(4) for x in range(4)]
    (tmp_path / "n").mkdir()
    got = _sampling(tmp_path / "n", t, _uv(centers), {"min_filter": "NEAREST", "mag_filter": "NEAREST"})
    np.testing.assert_allclose(got[:, 0], red.reshape(-1), atol=1e-6)
    np.testing.assert_allclose(got[:, 1], 200 / 255, atol=1e-6)
    # halfway between texel centres, LINEAR averages the two neighbours; NEAREST would not
    (tmp_path / "l").mkdir()
    mids = [((x + 1.0) / 4, 0.5 / 4) for x in range(3)]
    got = _sampling(tmp_path / "l", t, _uv(mids), {"min_filter": "LINEAR", "mag_filter": "LINEAR"})
    np.testing.assert_allclose(got[:, 0], (red[0, :3] + red[0, 1:]) / 2, atol=1.5 / 255)


@pytest.mark.parametrize("mode,expect", [
    ("CLAMP_EDGE", lambda red: red[0, 3]),
    ("REPEAT", lambda red: red[0, 0]),
    ("MIRRORED_REPEAT", lambda red: red[0, 3]),
    ("CLAMP_BORDER", lambda red: 1.0),
])
def test_address_modes(tmp_path: Path, mode: str, expect: Any) -> None:
    t = _texels()
    red = t[0, :, :, 0].astype(np.float64) / 255
    # u = 1.125 is the centre of the first texel past the right edge
    got = _sampling(tmp_path, t, _uv([(1.125, 0.125)]),
                    {"border_address_mode": mode, "border_color": "FLOAT_OPAQUE_WHITE"})
    np.testing.assert_allclose(got[0, 0], expect(red), atol=1e-6)


def test_custom_border_color(tmp_path: Path) -> None:
    got = _sampling(tmp_path, _texels(), _uv([(-0.5, 0.5)]),
                    {"border_address_mode": "CLAMP_BORDER", "border_color": "FLOAT_CUSTOM_EXT",
                     "custom_border_color": [0.25, 0.5, 0.75, 1.0]})
    # a driver may hold the border colour in the image's format (NVIDIA: 8-bit UNORM, 64/255 for 0.25)
    np.testing.assert_allclose(got[0], [0.25, 0.5, 0.75, 1.0], atol=1 / 255)


def test_only_a_run_with_images_opens_the_device_with_custom_border_colors(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # VK_EXT_custom_border_color and its feature structure cost every device opening; only an
    # image's sampler can use them
    from helpers.scenarios import vector_add
    from kernellab.backends.vulkan_device import VulkanDevice

    opened: list[bool] = []
    real = VulkanDevice._create_device

    def create(self: VulkanDevice) -> Any:
        opened.append(self.custom_border_color)
        return real(self)

    monkeypatch.setattr(VulkanDevice, "_create_device", create)
    (tmp_path / "buffers").mkdir()
    path, _ = vector_add(tmp_path / "buffers")
    assert run("run", path, "--output", tmp_path / "buffers" / "out") == 0
    assert opened == [False]
    test_custom_border_color(tmp_path)  # its sampler still gets one (UnsupportedError without it)
    assert opened == [False, True]


def test_generated_mips_are_box_filtered(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    t = np.zeros((1, 8, 8, 4), np.uint8)
    t[0, :, :, 0] = rng.integers(0, 256, (8, 8))
    t[0, :, :, 3] = 255
    level = t[0, :, :, 0].astype(np.float64) / 255
    want = [level]
    for _ in range(3):
        level = level.reshape(level.shape[0] // 2, 2, level.shape[1] // 2, 2).mean(axis=(1, 3))
        want.append(level)
    uv = np.concatenate([_uv([((x + 0.5) / w.shape[1], (y + 0.5) / w.shape[0]) for y in range(w.shape[0])
                              for x in range(w.shape[1])], lod=k) for k, w in enumerate(want)])
    got = _sampling(tmp_path, t, uv, {"mips": 4})
    np.testing.assert_allclose(got[:, 0], np.concatenate([w.reshape(-1) for w in want]), atol=2.5 / 255)


LOD = """#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0, rgba8) uniform readonly image2D level;
layout(set = 0, binding = 1) writeonly buffer OUT { vec4 color[]; };
void main() {
    ivec2 s = imageSize(level);
    for (int y = 0; y < s.y; ++y) for (int x = 0; x < s.x; ++x) color[y * s.x + x] = imageLoad(level, ivec2(x, y));
}
"""


def test_lod_binding_selects_a_mip_level_as_storage_image(tmp_path: Path) -> None:
    t = np.zeros((1, 4, 4, 4), np.uint8)
    t[0, :, :, 0] = 255
    t[0, :2, :2, 0] = 0  # level 1's top-left texel is the average of a 2x2 block: 0
    np.save(tmp_path / "tex.npy", t)
    (tmp_path / "k.comp").write_text(LOD)
    doc = {"resources": [
        {"shader": {"uid": "k", "src": "k.comp", "type": "GLSL"}},
        {"image": {"uid": "tex", "dims": [1, 4, 4, 1], "format": "VK_FORMAT_R8G8B8A8_UNORM", "mips": 3,
                   "shader_access": "readwrite", "src": "tex.npy"}},
        {"buffer": {"uid": "out", "size": 64, "shader_access": "writeonly", "dst": "out.npy"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [1], "bindings": [
            {"set": 0, "id": 0, "resource_ref": "tex", "lod": 1, "descriptor_type": "VK_DESCRIPTOR_TYPE_STORAGE_IMAGE"},
            {"set": 0, "id": 1, "resource_ref": "out"}]}}]}
    assert run("run", write(tmp_path / "s.json", doc)) == 0
    got = raw(tmp_path / "out.npy").view(np.float32).reshape(4, 4)
    np.testing.assert_allclose(got[:, 0], [0.0, 1.0, 1.0, 1.0], atol=1 / 255)


def test_dds_source_with_mip_chain(tmp_path: Path) -> None:
    from kernellab.vkregistry.vkformat import lookup
    fmt = lookup("VK_FORMAT_R32_SFLOAT")
    assert fmt is not None
    l0 = np.arange(16, dtype=np.float32).reshape(4, 4)
    l1 = np.full((2, 2), 100.0, np.float32)  # deliberately not the average: given levels are kept
    dds.save(tmp_path / "in.dds", fmt, 4, 4, [l0.tobytes(), l1.tobytes()])
    (tmp_path / "k.comp").write_text(SAMPLE)
    np.save(tmp_path / "uv.npy", _uv([(0.25, 0.25)], lod=1))
    doc = {"resources": [
        {"shader": {"uid": "k", "src": "k.comp", "type": "GLSL"}},
        {"image": {"uid": "tex", "dims": [1, 4, 4, 1], "format": "VK_FORMAT_R32_SFLOAT", "mips": 3,
                   "shader_access": "readonly", "src": "in.dds", "dst": "copy.dds"}},
        {"buffer": {"uid": "uv", "size": 16, "shader_access": "readonly", "src": "uv.npy"}},
        {"buffer": {"uid": "out", "size": 16, "shader_access": "writeonly", "dst": "out.npy"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [1], "bindings": [
            {"set": 0, "id": 0, "resource_ref": "tex"}, {"set": 0, "id": 1, "resource_ref": "uv"},
            {"set": 0, "id": 2, "resource_ref": "out"}]}}]}
    assert run("run", write(tmp_path / "s.json", doc)) == 0
    assert raw(tmp_path / "out.npy").view(np.float32)[0] == 100.0
    copy = dds.read(tmp_path / "copy.dds")
    np.testing.assert_array_equal(np.frombuffer(copy.tobytes(), np.float32)[:16], l0.reshape(-1))


def test_image_barrier_layout_transition(tmp_path: Path) -> None:
    h, w = 8, 8
    pixels = np.full((1, h, w, 4), 10, np.uint8)
    np.save(tmp_path / "in.npy", pixels)
    (tmp_path / "k.comp").write_text(INVERT)
    disp = {"dispatch_compute": {"shader_ref": "k", "rangeND": [1, 1], "implicit_barrier": False, "bindings": [
        {"set": 0, "id": 0, "resource_ref": "a"}, {"set": 0, "id": 1, "resource_ref": "b"}]}}
    back = json.loads(json.dumps(disp))
    back["dispatch_compute"]["bindings"] = [{"set": 0, "id": 0, "resource_ref": "b"},
                                            {"set": 0, "id": 1, "resource_ref": "a"}]
    barrier = {"image_barrier": {"uid": "ib", "image_resource": "b", "old_layout": "general",
                                 "new_layout": "general", "src_access": "compute_shader_write",
                                 "dst_access": "compute_shader_read", "src_stage": ["compute"],
                                 "dst_stage": ["compute"], "subresource_range": {"level_count": 1}}}
    doc = {"resources": [
        {"shader": {"uid": "k", "src": "k.comp", "type": "GLSL"}},
        {"image": {"uid": "a", "dims": [1, w, h, 1], "format": "VK_FORMAT_R8G8B8A8_UNORM",
                   "shader_access": "readwrite", "src": "in.npy", "dst": "a.npy"}},
        {"image": {"uid": "b", "dims": [1, w, h, 1], "format": "VK_FORMAT_R8G8B8A8_UNORM",
                   "shader_access": "readwrite"}}, barrier],
        "commands": [disp, {"dispatch_barrier": {"image_barrier_refs": ["ib"], "memory_barrier_refs": [],
                                                 "buffer_barrier_refs": []}}, back]}
    for d in (doc["commands"][0], doc["commands"][2]):
        for b in d["dispatch_compute"]["bindings"]:
            b["descriptor_type"] = "VK_DESCRIPTOR_TYPE_STORAGE_IMAGE"
    assert run("run", write(tmp_path / "s.json", doc)) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "a.npy"), pixels)  # inverted twice
