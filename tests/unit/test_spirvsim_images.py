"""Images in the SPIR-V checker (issue 24, point 2): storage images with texel races and bounds,
combined image samplers read as the specification filters them, image queries, image atomics,
and image barriers between dispatches. Each defect has its clean twin."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kernellab import tools
from kernellab.spirvsim import ImageBinding, Sampler, check_dispatch, glsl_to_spirv

pytestmark = pytest.mark.skipif(tools.find("glslangValidator") is None, reason="needs glslangValidator")

BLUR = Path(__file__).parents[2] / "examples" / "image_blur"
RGBA8 = "VK_FORMAT_R8G8B8A8_UNORM"


def image(uid: str, w: int, h: int, data: bytes | None = None, fmt: str = RGBA8, size: int = 4, mips: int = 1,
          **kw: object) -> ImageBinding:
    total = sum(max(w >> k, 1) * max(h >> k, 1) for k in range(mips)) * size
    return ImageBinding(uid, fmt, w, h, mips, data if data is not None else bytes(total), **kw)  # type: ignore[arg-type]


def run(source: str, groups: tuple[int, int, int], **bindings: ImageBinding):
    return check_dispatch(glsl_to_spirv(source), "main", groups,
                          bindings={(0, k): b for k, b in enumerate(bindings.values())})


def kinds(r) -> list[tuple[str, str | None]]:
    return [(f.kind, f.resource) for f in r.findings]


def blur_input() -> np.ndarray:
    from kernellab.formats import dds
    return dds.read(BLUR / "input.dds").levels[0]


def test_blur_is_clean_and_leaves_the_reference_texels() -> None:
    src = blur_input()
    r = check_dispatch(glsl_to_spirv(BLUR / "blur.comp"), "main", (8, 6),
                       bindings={(0, 0): image("input", 64, 48, src.tobytes()), (0, 1): image("output", 64, 48)})
    assert r.findings == [] and r.verdict == "verified"
    padded = np.pad(src.astype(np.float64) / 255, ((1, 1), (1, 1), (0, 0)), mode="edge")
    want = sum(padded[1 + dy:49 + dy, 1 + dx:65 + dx] for dy in (-1, 0, 1) for dx in (-1, 0, 1)) / 9
    got = np.frombuffer(r.buffers["output"], np.uint8).reshape(48, 64, 4)
    assert np.abs(got - np.floor(want * 255 + 0.5)).max() <= 1
    assert r.footprints["input"].read.all() and r.footprints["output"].written.all()
    assert r.footprints["output"].storage == "image"


BLUR_IN_PLACE = """#version 450
layout(local_size_x = 8, local_size_y = 8) in;
layout(set = 0, binding = 0, rgba8) uniform image2D img;
void main() {
    ivec2 p = ivec2(gl_GlobalInvocationID.xy), size = imageSize(img);
    vec4 sum = vec4(0.0);
    for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx)
            sum += imageLoad(img, clamp(p + ivec2(dx, dy), ivec2(0), size - 1));
    IN_PLACE
}
"""


def test_blur_writing_the_image_it_reads_races_per_texel() -> None:
    data = blur_input().tobytes()
    racy = run(BLUR_IN_PLACE.replace("IN_PLACE", "imageStore(img, p, sum / 9.0);"), (8, 6),
               img=image("img", 64, 48, data))
    assert {(f.kind, f.resource, f.storage) for f in racy.findings} == {("data-race", "img", "image")}
    assert {f.scope for f in racy.findings} == {"intra-workgroup", "inter-workgroup"}
    assert {a["access"] for a in racy.findings[0].accesses} == {"read", "write"}
    # the twin writes another image: nothing is read and written by two invocations
    clean = check_dispatch(glsl_to_spirv(BLUR_IN_PLACE.replace("IN_PLACE", "imageStore(outp, p, sum / 9.0);").replace(
        "uniform image2D img;", "uniform readonly image2D img;\nlayout(set = 0, binding = 1, rgba8) uniform "
        "writeonly image2D outp;")), "main", (8, 6),
        bindings={(0, 0): image("img", 64, 48, data), (0, 1): image("out", 64, 48)})
    assert clean.findings == []


TWO_WRITERS = """#version 450
layout(local_size_x = 8, local_size_y = 8) in;
layout(set = 0, binding = 0, r32ui) uniform uimage2D img;
void main() {
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    imageStore(img, TARGET, uvec4(gl_LocalInvocationIndex + 1u));
}
"""


def test_two_invocations_writing_one_texel_race() -> None:
    racy = run(TWO_WRITERS.replace("TARGET", "p / 2"), (1, 1, 1), img=image("img", 8, 8, fmt="VK_FORMAT_R32_UINT"))
    (f,) = racy.findings
    assert f.kind == "data-race" and f.scope == "intra-workgroup" and f.index is not None
    assert [a["access"] for a in f.accesses] == ["write", "write"]
    clean = run(TWO_WRITERS.replace("TARGET", "p"), (1, 1, 1), img=image("img", 8, 8, fmt="VK_FORMAT_R32_UINT"))
    assert clean.findings == []
    assert np.frombuffer(clean.buffers["img"], np.uint32).tolist() == list(range(1, 65))


SHIFT = """#version 450
layout(local_size_x = 4, local_size_y = 4) in;
layout(set = 0, binding = 0, rgba8) uniform readonly image2D src;
layout(set = 0, binding = 1, rgba8) uniform writeonly image2D dst;
void main() {
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    imageStore(dst, p, imageLoad(src, COORD));
}
"""


def test_image_load_outside_the_extent_is_out_of_bounds_and_clamped_is_not() -> None:
    data = np.arange(8 * 4 * 4, dtype=np.uint8).tobytes()
    oob = run(SHIFT.replace("COORD", "p + ivec2(1, 0)"), (2, 1, 1), src=image("src", 8, 4, data), dst=image("dst", 8, 4))
    (f,) = oob.findings
    assert f.kind == "out-of-bounds" and f.resource == "src" and f.count == 4
    assert "texel (8, 0, 0) outside mip level 0 of 8x4x1 texels" in f.message
    assert f.examples[0]["coordinates"] == [8, 0, 0]
    # robustImageAccess2's value for the lanes outside: (0, 0, 0, 1)
    out = np.frombuffer(oob.buffers["dst"], np.uint8).reshape(4, 8, 4)
    assert out[:, 7].tolist() == [[0, 0, 0, 255]] * 4
    clamped = run(SHIFT.replace("COORD", "min(p + ivec2(1, 0), imageSize(src) - 1)"), (2, 1, 1),
                  src=image("src", 8, 4, data), dst=image("dst", 8, 4))
    assert clamped.findings == []
    want = np.frombuffer(data, np.uint8).reshape(4, 8, 4)[:, [1, 2, 3, 4, 5, 6, 7, 7]]
    assert (np.frombuffer(clamped.buffers["dst"], np.uint8).reshape(4, 8, 4) == want).all()


def test_image_store_outside_the_extent_is_dropped_and_reported() -> None:
    r = run(TWO_WRITERS.replace("TARGET", "p + ivec2(0, 4)"), (1, 1, 1), img=image("img", 8, 8, fmt="VK_FORMAT_R32_UINT"))
    (f,) = r.findings
    assert f.kind == "out-of-bounds" and f.count == 32 and "write" in f.message


ATOMIC = """#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0, r32ui) uniform uimage2D counts;
void main() {
    ivec2 bin = ivec2(gl_LocalInvocationID.x % 4u, 0);
    UPDATE
}
"""


def test_image_atomics_do_not_race_and_a_plain_increment_does() -> None:
    clean = run(ATOMIC.replace("UPDATE", "imageAtomicAdd(counts, bin, 1u);"), (2, 1, 1),
                counts=image("counts", 4, 1, fmt="VK_FORMAT_R32_UINT"))
    assert clean.findings == []
    assert np.frombuffer(clean.buffers["counts"], np.uint32).tolist() == [32, 32, 32, 32]
    plain = ATOMIC.replace("UPDATE", "imageStore(counts, bin, imageLoad(counts, bin) + 1u);")
    racy = run(plain, (1, 1, 1), counts=image("counts", 4, 1, fmt="VK_FORMAT_R32_UINT"))
    assert {(f.kind, f.scope) for f in racy.findings} == {("data-race", "intra-workgroup")}
    across = run(plain, (2, 1, 1), counts=image("counts", 4, 1, fmt="VK_FORMAT_R32_UINT"))
    assert "inter-workgroup" in {f.scope for f in across.findings}


def test_image_atomic_outside_the_extent_is_out_of_bounds() -> None:
    r = run(ATOMIC.replace("UPDATE", "imageAtomicAdd(counts, bin + ivec2(1, 0), 1u);"), (1, 1, 1),
            counts=image("counts", 4, 1, fmt="VK_FORMAT_R32_UINT"))
    assert kinds(r) == [("out-of-bounds", "counts")] and r.findings[0].count == 16
    assert r.findings[0].index == 4  # texel (4, 0) of the 4x1 image


NEIGHBOUR = """#version 450
layout(local_size_x = 8) in;
layout(set = 0, binding = 0, r32f) uniform image1D img;
void main() {
    int i = int(gl_LocalInvocationID.x);
    imageStore(img, i, vec4(float(i)));
    SYNC
    float v = imageLoad(img, (i + 1) % 8).x;
    memoryBarrierImage();
    barrier();
    imageStore(img, i, vec4(v));
}
"""


def test_image_memory_barrier_orders_image_accesses_and_barrier_alone_does_not() -> None:
    ordered = run(NEIGHBOUR.replace("SYNC", "memoryBarrierImage(); barrier();"), (1, 1, 1),
                  img=image("img", 8, 1, fmt="VK_FORMAT_R32_SFLOAT"))
    assert ordered.findings == []
    assert np.frombuffer(ordered.buffers["img"], np.float32).tolist() == [1, 2, 3, 4, 5, 6, 7, 0]
    # barrier() has WorkgroupMemory semantics only: image accesses stay unordered
    racy = run(NEIGHBOUR.replace("SYNC", "barrier();"), (1, 1, 1), img=image("img", 8, 1, fmt="VK_FORMAT_R32_SFLOAT"))
    assert {f.kind for f in racy.findings} == {"data-race"}


SAMPLE = """#version 450
layout(local_size_x = 16) in;
layout(set = 0, binding = 0) uniform sampler2D tex;
layout(std430, set = 0, binding = 1) buffer C { vec2 uv[]; };
layout(std430, set = 0, binding = 2) buffer O { vec4 o[]; };
void main() { uint i = gl_LocalInvocationID.x; o[i] = textureLod(tex, uv[i], LOD); }
"""


def reference(tex: np.ndarray, uv: np.ndarray, linear: bool, mode: str) -> np.ndarray:
    """Vulkan's filtering written out per texel, for a 2-D float image (level 0)."""
    h, w = tex.shape[:2]

    def wrap(i: int, n: int) -> int | None:
        if mode == "REPEAT":
            return i % n
        if mode == "MIRRORED_REPEAT":
            t = i % (2 * n) - n
            return (n - 1) - (t if t >= 0 else -(1 + t))
        if mode == "CLAMP_BORDER":
            return i if 0 <= i < n else None
        return min(max(i, 0), n - 1)

    def texel(i: int, j: int) -> np.ndarray:
        x, y = wrap(i, w), wrap(j, h)
        return np.array([0.0, 0, 0, 1]) if x is None or y is None else tex[y, x]
    out = []
    for s, t in uv:
        u, v = s * w, t * h
        if not linear:
            out.append(texel(int(np.floor(u)), int(np.floor(v))))
            continue
        i0, j0 = int(np.floor(u - 0.5)), int(np.floor(v - 0.5))
        a, b = u - 0.5 - i0, v - 0.5 - j0
        out.append((1 - a) * (1 - b) * texel(i0, j0) + a * (1 - b) * texel(i0 + 1, j0)
                   + (1 - a) * b * texel(i0, j0 + 1) + a * b * texel(i0 + 1, j0 + 1))
    return np.array(out)


@pytest.mark.parametrize("filt", ["NEAREST", "LINEAR"])
@pytest.mark.parametrize("mode", ["CLAMP_EDGE", "REPEAT", "MIRRORED_REPEAT", "CLAMP_BORDER"])
def test_sampling_filters_and_address_modes_as_the_specification_defines(filt: str, mode: str) -> None:
    from kernellab.spirvsim import Binding
    rng = np.random.default_rng(3)
    tex = rng.random((4, 4, 4)).astype(np.float32)
    uv = rng.uniform(-1.2, 2.2, (16, 2)).astype(np.float32)
    sampler = Sampler(filt, filt, "NEAREST", mode, "FLOAT_OPAQUE_BLACK")
    r = check_dispatch(glsl_to_spirv(SAMPLE.replace("LOD", "0.0")), "main", (1, 1, 1), bindings={
        (0, 0): ImageBinding("tex", "VK_FORMAT_R32G32B32A32_SFLOAT", 4, 4, 1, tex.tobytes(), sampler=sampler),
        (0, 1): Binding("uv", uv.tobytes()), (0, 2): Binding("o", bytes(16 * 16))})
    assert r.findings == []
    got = np.frombuffer(r.buffers["o"], np.float32).reshape(16, 4)
    np.testing.assert_allclose(got, reference(tex.astype(np.float64), uv.astype(np.float64), filt == "LINEAR", mode),
                               rtol=1e-5, atol=1e-6)


def test_mip_levels_are_selected_by_the_lod_and_queried() -> None:
    src = """#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) uniform sampler2D tex;
layout(std430, set = 0, binding = 1) buffer O { vec4 o[4]; ivec4 q; };
void main() {
    o[0] = textureLod(tex, vec2(0.5), 0.0);
    o[1] = textureLod(tex, vec2(0.5), 1.0);
    o[2] = textureLod(tex, vec2(0.5), 1.6);   // nearest mip: ceil(1.6 + 0.5) - 1 = level 2
    o[3] = texelFetch(tex, ivec2(1, 0), 1);
    q = ivec4(textureSize(tex, 0), textureSize(tex, 2).x, textureQueryLevels(tex));
}
"""
    from kernellab.spirvsim import Binding
    levels = [np.full((4 >> k, 8 >> k, 1), 10 * k + 1, np.float32) for k in range(3)]
    levels[1][0, 1] = 99
    data = b"".join(lv.tobytes() for lv in levels)
    r = check_dispatch(glsl_to_spirv(src), "main", (1, 1, 1), bindings={
        (0, 0): ImageBinding("tex", "VK_FORMAT_R32_SFLOAT", 8, 4, 3, data), (0, 1): Binding("o", bytes(80))})
    assert r.findings == []
    out = np.frombuffer(r.buffers["o"], np.float32)[:16].reshape(4, 4)
    assert out[:, 0].tolist() == [1, 11, 21, 99] and out[:, 3].tolist() == [1, 1, 1, 1]
    assert np.frombuffer(r.buffers["o"], np.int32)[16:].tolist() == [8, 4, 2, 3]


def test_texel_fetch_outside_the_level_is_out_of_bounds() -> None:
    src = """#version 450
layout(local_size_x = 4) in;
layout(set = 0, binding = 0) uniform sampler2D tex;
layout(std430, set = 0, binding = 1) buffer O { vec4 o[]; };
void main() { int i = int(gl_LocalInvocationID.x); o[i] = texelFetch(tex, ivec2(i, 0), LEVEL); }
"""
    from kernellab.spirvsim import Binding
    tex = ImageBinding("tex", "VK_FORMAT_R32_SFLOAT", 4, 4, 2, np.arange(20, dtype=np.float32).tobytes())
    assert check_dispatch(glsl_to_spirv(src.replace("LEVEL", "0")), "main", (1, 1, 1),
                          bindings={(0, 0): tex, (0, 1): Binding("o", bytes(64))}).findings == []
    r = check_dispatch(glsl_to_spirv(src.replace("LEVEL", "1")), "main", (1, 1, 1),
                       bindings={(0, 0): tex, (0, 1): Binding("o", bytes(64))})
    (f,) = r.findings
    assert f.kind == "out-of-bounds" and f.count == 2 and "mip level 1 of 2x2x1" in f.message


# --- between dispatches: scenarios through kernellab verify ----------------------------------

WRITE = """#version 450
layout(local_size_x = 4, local_size_y = 4) in;
layout(set = 0, binding = 0, rgba8) uniform writeonly image2D img;
void main() { imageStore(img, ivec2(gl_GlobalInvocationID.xy), vec4(0.5)); }
"""
READ = """#version 450
layout(local_size_x = 4, local_size_y = 4) in;
layout(set = 0, binding = 0) uniform sampler2D img;
layout(std430, set = 0, binding = 1) buffer O { vec4 o[]; };
void main() {
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    o[p.y * 4 + p.x] = texelFetch(img, p, 0);
}
"""


def scenario(tmp_path: Path, barrier: dict | None) -> Path:
    (tmp_path / "w.comp").write_text(WRITE)
    (tmp_path / "r.comp").write_text(READ)
    resources: list[dict] = [
        {"shader": {"uid": "w", "src": "w.comp", "type": "GLSL"}},
        {"shader": {"uid": "r", "src": "r.comp", "type": "GLSL"}},
        {"image": {"uid": "img", "dims": [1, 4, 4, 1], "format": RGBA8, "shader_access": "readwrite"}},
        {"buffer": {"uid": "out", "size": 256, "shader_access": "readwrite"}}]
    commands: list[dict] = [
        {"dispatch_compute": {"shader_ref": "w", "rangeND": [1, 1], "implicit_barrier": False,
                              "bindings": [{"set": 0, "id": 0, "resource_ref": "img",
                                            "descriptor_type": "VK_DESCRIPTOR_TYPE_STORAGE_IMAGE"}]}}]
    if barrier is not None:
        resources.append({"image_barrier": {"uid": "b", "image_resource": "img", "old_layout": "IMAGE_LAYOUT_GENERAL",
                                            "new_layout": "IMAGE_LAYOUT_GENERAL", **barrier}})
        commands.append({"dispatch_barrier": {"image_barrier_refs": ["b"]}})
    commands.append({"dispatch_compute": {"shader_ref": "r", "rangeND": [1, 1], "implicit_barrier": False,
                                          "bindings": [{"set": 0, "id": 0, "resource_ref": "img"},
                                                       {"set": 0, "id": 1, "resource_ref": "out"}]}})
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"resources": resources, "commands": commands}))
    return path


WRITE_TO_READ = {"src_access": "ACCESS_COMPUTE_SHADER_WRITE", "dst_access": "ACCESS_COMPUTE_SHADER_READ",
                 "src_stage": ["COMPUTE"], "dst_stage": ["COMPUTE"]}


@pytest.mark.parametrize("barrier, hazard", [
    (None, "read-after-write"),
    (WRITE_TO_READ, None),
    # an image barrier with the write made available but not visible to reads
    (dict(WRITE_TO_READ, dst_access="ACCESS_COMPUTE_SHADER_WRITE"), "read-after-write"),
    # a barrier on mip level 1 only does not hold level 0's texels
    (dict(WRITE_TO_READ, subresource_range={"base_mip_level": 1, "level_count": 1}), "read-after-write"),
])
def test_image_hazard_between_dispatches_and_the_image_barrier_that_orders_it(
        tmp_path: Path, barrier: dict | None, hazard: str | None) -> None:
    from kernellab.verify.vulkan import verify_scenario
    path = scenario(tmp_path, barrier)
    if barrier is not None and "subresource_range" in barrier:
        data = json.loads(path.read_text())
        data["resources"][2]["image"]["mips"] = 2
        path.write_text(json.dumps(data))
    result = verify_scenario(path)
    races = [f for f in result.findings if f.kind == "data-race"]
    if hazard is None:
        assert result.findings == []
        return
    (f,) = races
    assert f.race == {"type": "read-write", "scope": "inter-dispatch"} and f.resource == "img"
    assert f"hazard on image img ({hazard})" in f.message
    # counted and indexed in texels of 4 bytes: the 16 texels of level 0
    assert f.count == 16 and f.index == 0 and f.element_size == 4


def test_later_dispatch_reads_what_the_earlier_one_wrote(tmp_path: Path) -> None:
    from kernellab.formats.scenario import load_scenario
    from kernellab.spirvsim import Binding
    from kernellab.verify.vulkan import _Buffers, image_binding
    path = scenario(tmp_path, WRITE_TO_READ)
    sc, _ = load_scenario(path)
    state = _Buffers(sc, path)
    w = check_dispatch(glsl_to_spirv(WRITE), "main", (1, 1, 1), bindings=state.bindings(sc.commands[0], 0))
    state.update(w.buffers)
    binding = state.bindings(sc.commands[2], 2)
    assert isinstance(binding[(0, 0)], ImageBinding) and isinstance(binding[(0, 1)], Binding)
    r = check_dispatch(glsl_to_spirv(READ), "main", (1, 1, 1), bindings=binding)
    assert np.allclose(np.frombuffer(r.buffers["out"], np.float32), 128 / 255)
    assert image_binding(sc.by_uid["img"], None, b"").data == bytes(64)  # type: ignore[arg-type]


def test_blur_example_writing_the_image_it_samples_races(tmp_path: Path) -> None:
    import shutil

    from kernellab.verify.vulkan import verify_scenario
    folder = tmp_path / "blur"
    shutil.copytree(BLUR, folder)
    assert verify_scenario(folder / "scenario.json").findings == []
    doc = json.loads((folder / "scenario.json").read_text())
    doc["resources"][1]["image"]["shader_access"] = "readwrite"
    doc["commands"][0]["dispatch_compute"]["bindings"][1].update(
        resource_ref="input", descriptor_type="VK_DESCRIPTOR_TYPE_STORAGE_IMAGE")
    (folder / "scenario.json").write_text(json.dumps(doc))
    found = verify_scenario(folder / "scenario.json").findings
    assert {(f.kind, f.resource, f.race["scope"]) for f in found} == {  # type: ignore[index]
        ("data-race", "input", "intra-group"), ("data-race", "input", "inter-group")}
    assert all(a.location is not None and a.location["line"] in (13, 14) for f in found for a in f.accesses)
