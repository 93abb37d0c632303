"""``dispatch_fragment`` on the Vulkan device (lavapipe in CI): a graphics pipeline of our own
GLSL vertex and fragment shaders rendering known patterns, checked texel by texel."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from helpers.scenarios import write
from kernellab.cli import main


def run(*args: Any) -> int:
    return main([str(a) for a in args])


#: a triangle covering the whole viewport (vertices at (-1,-1), (3,-1), (-1,3)): no vertex input
FULL_SCREEN = """#version 450
void main() {
    vec2 p = vec2((gl_VertexIndex & 1) * 4 - 1, (gl_VertexIndex & 2) * 2 - 1);
    gl_Position = vec4(p, 0.0, 1.0);
}
"""

#: two attachments: the sampled texel swizzled, and a number from the position, a buffer and push data
PATTERN = """#version 450
layout(set = 0, binding = 0) uniform sampler2D tex;
layout(set = 1, binding = 0) readonly buffer Rows { float row_offset[]; };
layout(push_constant) uniform Push { float bias; } pc;
layout(location = 0) out vec4 swizzled;
layout(location = 1) out float number;
void main() {
    ivec2 p = ivec2(gl_FragCoord.xy);
    swizzled = texelFetch(tex, p, 0).bgra;
    number = float(p.x) + 1000.0 * float(p.y) + row_offset[p.y] + pc.bias;
}
"""


def _pattern_scenario(tmp: Path, w: int, h: int, texels: np.ndarray) -> dict[str, Any]:
    (tmp / "full.vert").write_text(FULL_SCREEN)
    (tmp / "pattern.frag").write_text(PATTERN)
    np.save(tmp / "tex.npy", texels)
    np.save(tmp / "rows.npy", (np.arange(h, dtype=np.float32) * 0.25))
    np.save(tmp / "bias.npy", np.array([0.5], np.float32))
    return {"resources": [
        {"shader": {"uid": "vs", "src": "full.vert", "type": "GLSL", "stage": "vertex"}},
        {"shader": {"uid": "fs", "src": "pattern.frag", "type": "GLSL", "stage": "fragment",
                    "push_constants_size": 4}},
        {"raw_data": {"uid": "bias", "src": "bias.npy"}},
        {"image": {"uid": "tex", "dims": [1, w, h, 1], "format": "VK_FORMAT_R8G8B8A8_UNORM",
                   "shader_access": "readonly", "src": "tex.npy"}},
        {"buffer": {"uid": "rows", "size": 4 * h, "shader_access": "readonly", "src": "rows.npy"}},
        {"image": {"uid": "color", "dims": [1, w, h, 1], "format": "VK_FORMAT_R8G8B8A8_UNORM",
                   "shader_access": "writeonly", "color_attachment": True, "dst": "color.npy"}},
        {"image": {"uid": "number", "dims": [1, w, h, 1], "format": "VK_FORMAT_R32_SFLOAT",
                   "shader_access": "writeonly", "color_attachment": True, "dst": "number.npy"}}],
        "commands": [{"dispatch_fragment": {
            "vertex_shader_ref": "vs", "fragment_shader_ref": "fs", "push_data_ref": "bias",
            "color_attachment_refs": ["color", {"resource_ref": "number"}],
            "bindings": [{"set": 0, "id": 0, "resource_ref": "tex"}, {"set": 1, "id": 0, "resource_ref": "rows"}]}}]}


def test_draw_renders_the_pattern_into_two_attachments(tmp_path: Path) -> None:
    w, h = 24, 10  # not square: width and height must not be swapped anywhere
    texels = np.random.default_rng(3).integers(0, 256, (1, h, w, 4), dtype=np.uint8)
    doc = _pattern_scenario(tmp_path, w, h, texels)
    assert run("run", write(tmp_path / "s.json", doc)) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "color.npy"), texels[..., [2, 1, 0, 3]])
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float32)
    want = xs + 1000 * ys + 0.25 * ys + 0.5
    got = np.load(tmp_path / "number.npy")
    assert got.shape == (1, h, w, 1)
    np.testing.assert_array_equal(got[0, ..., 0], want)


def test_spirv_shaders(tmp_path: Path) -> None:
    """The same draw from SPIR-V modules, as Arm's tests give them."""
    from kernellab.compile.pipeline import Compiler
    from kernellab.compile.stage import CompileRequest

    w, h = 8, 6
    texels = np.arange(w * h * 4, dtype=np.uint8).reshape(1, h, w, 4)
    doc = _pattern_scenario(tmp_path, w, h, texels)
    for uid, name, stage in (("vs", "full.vert", "vertex"), ("fs", "pattern.frag", "fragment")):
        req = CompileRequest(tmp_path / name, "glsl", target_env="vulkan1.3", shader_stage=stage)
        spv = Compiler(req).vulkan_module().data
        (tmp_path / f"{uid}.spv").write_bytes(spv)
        body = next(r["shader"] for r in doc["resources"] if r.get("shader", {}).get("uid") == uid)
        body.update(src=f"{uid}.spv", type="SPIR-V")
    assert run("run", write(tmp_path / "s.json", doc)) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "color.npy"), texels[..., [2, 1, 0, 3]])


#: level 1 of a two-level attachment gets this; a compute dispatch then reads it back
LEVEL_PATTERN = """#version 450
layout(location = 0) out vec4 color;
void main() {
    ivec2 p = ivec2(gl_FragCoord.xy);
    color = vec4(float(p.x) / 255.0, float(p.y) / 255.0, 1.0, 1.0);
}
"""

READ_LEVEL = """#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0, rgba8) uniform readonly image2D level;
layout(set = 0, binding = 1) writeonly buffer Out { uint texels[]; };
void main() {
    ivec2 size = imageSize(level);
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    texels[p.y * size.x + p.x] = packUnorm4x8(imageLoad(level, p));
}
"""


def test_draw_into_a_mip_level_then_compute_reads_it(tmp_path: Path) -> None:
    """``lod`` on a color attachment renders into that level at its extent; the draw's implicit
    barrier makes its writes visible to the compute dispatch after it (a storage binding of a
    color attachment gives the image storage use too)."""
    (tmp_path / "full.vert").write_text(FULL_SCREEN)
    (tmp_path / "level.frag").write_text(LEVEL_PATTERN)
    (tmp_path / "read.comp").write_text(READ_LEVEL)
    w, h = 16, 12
    lw, lh = w // 2, h // 2
    doc = {"resources": [
        {"shader": {"uid": "vs", "src": "full.vert", "type": "GLSL", "stage": "vertex"}},
        {"shader": {"uid": "fs", "src": "level.frag", "type": "GLSL", "stage": "fragment"}},
        {"shader": {"uid": "read", "src": "read.comp", "type": "GLSL"}},
        {"image": {"uid": "target", "dims": [1, w, h, 1], "mips": 2, "format": "VK_FORMAT_R8G8B8A8_UNORM",
                   "shader_access": "image_read", "color_attachment": True, "dst": "level0.npy"}},
        {"buffer": {"uid": "out", "size": 4 * lw * lh, "shader_access": "writeonly", "dst": "level1.npy"}}],
        "commands": [
            {"dispatch_fragment": {"vertex_shader_ref": "vs", "fragment_shader_ref": "fs", "bindings": [],
                                   "color_attachment_refs": [{"resource_ref": "target", "lod": 1}]}},
            {"dispatch_compute": {"shader_ref": "read", "rangeND": [lw, lh], "bindings": [
                {"set": 0, "id": 0, "resource_ref": "target", "lod": 1,
                 "descriptor_type": "VK_DESCRIPTOR_TYPE_STORAGE_IMAGE"},
                {"set": 0, "id": 1, "resource_ref": "out"}]}}]}
    assert run("run", write(tmp_path / "s.json", doc)) == 0
    got = np.load(tmp_path / "level1.npy").view(np.uint8).reshape(lh, lw, 4)
    ys, xs = np.mgrid[0:lh, 0:lw]
    np.testing.assert_array_equal(got[..., 0], xs)
    np.testing.assert_array_equal(got[..., 1], ys)
    assert (got[..., 2:] == 255).all()
    # level 0 was not rendered into: it keeps the zeros every image starts with
    assert not np.load(tmp_path / "level0.npy").any()


COUNT_FRAGMENTS = """#version 450
layout(set = 0, binding = 0) buffer Count { uint fragments; uint last_x; uint last_y; };
void main() {
    atomicAdd(fragments, 1u);
    atomicMax(last_x, uint(gl_FragCoord.x));
    atomicMax(last_y, uint(gl_FragCoord.y));
}
"""


def test_render_extent_without_attachments(tmp_path: Path) -> None:
    """A draw of ``render_extent`` and no color attachment: one fragment per texel of the
    extent, which the fragment shader counts in a buffer (fragmentStoresAndAtomics)."""
    (tmp_path / "full.vert").write_text(FULL_SCREEN)
    (tmp_path / "count.frag").write_text(COUNT_FRAGMENTS)
    doc = {"resources": [
        {"shader": {"uid": "vs", "src": "full.vert", "type": "GLSL", "stage": "vertex"}},
        {"shader": {"uid": "fs", "src": "count.frag", "type": "GLSL", "stage": "fragment"}},
        {"buffer": {"uid": "count", "size": 12, "shader_access": "readwrite", "dst": "count.npy"}}],
        "commands": [{"dispatch_fragment": {"vertex_shader_ref": "vs", "fragment_shader_ref": "fs",
                                            "render_extent": [7, 3],
                                            "bindings": [{"set": 0, "id": 0, "resource_ref": "count"}]}}]}
    assert run("run", write(tmp_path / "s.json", doc)) == 0
    assert np.load(tmp_path / "count.npy").view(np.uint32).tolist() == [21, 6, 2]


def test_graphics_pipeline_cache_miss_fails_as_arm(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """A cache stored by a compute scenario of the same name holds no graphics pipeline: with
    --fail-on-pipeline-cache-miss the draw's pipeline is a miss, named in Arm's words."""
    from helpers.scenarios import vector_add

    cache = tmp_path / "cache"
    cache.mkdir()
    compute_dir = tmp_path / "compute"
    compute_dir.mkdir()
    path, _ = vector_add(compute_dir)
    seeded = compute_dir / "draw.json"
    seeded.write_text(path.read_text())
    assert run("run", seeded, "--pipeline-caching", "--cache-path", cache, "--dry-run") == 0
    assert (cache / "draw.cache").is_file()
    texels = np.zeros((1, 4, 4, 4), np.uint8)
    doc = _pattern_scenario(tmp_path, 4, 4, texels)
    capfd.readouterr()
    code = run("run", write(tmp_path / "draw.json", doc), "--pipeline-caching", "--fail-on-pipeline-cache-miss",
               "--cache-path", cache, "--dry-run")
    out = capfd.readouterr()
    assert code != 0
    assert "INFO: Pipeline Cache loaded and validated." in out.out
    assert "ERROR: Pipeline cache miss for pipeline: fs" in out.out + out.err


def test_opencl_backend_refuses_a_draw(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    doc = _pattern_scenario(tmp_path, 4, 4, np.zeros((1, 4, 4, 4), np.uint8))
    assert run("run", write(tmp_path / "s.json", doc), "--backend", "opencl") == 2
    err = capfd.readouterr().err
    assert "/commands/0/dispatch_fragment: dispatch_fragment draws with a graphics pipeline; the OpenCL backend " \
           "runs compute only (use --backend vulkan)" in err
    assert json.loads((tmp_path / "s.json").read_text())  # the file is untouched


def test_module_of_another_stage_is_refused(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """A SPIR-V vertex module given as the fragment shader: refused before any pipeline exists."""
    from kernellab.compile.pipeline import Compiler
    from kernellab.compile.stage import CompileRequest

    doc = _pattern_scenario(tmp_path, 4, 4, np.zeros((1, 4, 4, 4), np.uint8))
    req = CompileRequest(tmp_path / "full.vert", "glsl", target_env="vulkan1.3", shader_stage="vertex")
    (tmp_path / "vs.spv").write_bytes(Compiler(req).vulkan_module().data)
    doc["resources"][1]["shader"].update(src="vs.spv", type="SPIR-V")
    assert run("run", write(tmp_path / "s.json", doc)) == 2
    assert "/resources/1/shader/stage: shader 'fs' has stage fragment, but its entry point 'main' is a Vertex " \
           "entry point" in capfd.readouterr().err


def test_verify_refuses_a_draw(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    doc = _pattern_scenario(tmp_path, 4, 4, np.zeros((1, 4, 4, 4), np.uint8))
    assert run("verify", write(tmp_path / "s.json", doc)) == 2
    assert "/commands/0/dispatch_fragment: verify checks dispatch_compute only; dispatch_fragment (a graphics " \
           "pipeline) is not checked" in capfd.readouterr().err
