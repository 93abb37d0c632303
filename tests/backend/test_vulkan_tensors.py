"""Tensor resources run by ``kernellab run`` on lavapipe (through Arm's ML emulation layer).

Each test writes a scenario, runs the CLI in-process and checks the ``dst`` files against NumPy
and against the layout Arm's runner writes (shape = dims, descr = the format's).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from helpers.scenarios import kernellab, write
from kernellab.cli import main
from kernellab.vkregistry import vkformat

pytest.importorskip("vulkan")


def run(*args: Any) -> int:
    return main([str(a) for a in args])


BINARY = """#version 450
#extension GL_ARM_tensors : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = 1, local_size_y = 1) in;
layout(set = 0, binding = 0) uniform tensorARM<T, 2> a;
layout(set = 0, binding = 1) uniform tensorARM<T, 2> b;
layout(set = 0, binding = 2) uniform tensorARM<T, 2> c;
void main() {
    uint i = gl_GlobalInvocationID.y, j = gl_GlobalInvocationID.x;
    T x, y;
    tensorReadARM(a, uint[](i, j), x);
    tensorReadARM(b, uint[](i, j), y);
    tensorWriteARM(c, uint[](i, j), T(OP));
}
"""

#: format -> (GLSL element type, expression, NumPy reference)
CASES = {
    "VK_FORMAT_R32_SINT": ("int32_t", "x+y", lambda a, b: a + b),
    "VK_FORMAT_R8_SINT": ("int8_t", "x-y", lambda a, b: (a - b).astype(np.int8)),
    "VK_FORMAT_R16_SFLOAT": ("float16_t", "x*y", lambda a, b: a * b),
    "VK_FORMAT_R64_SINT": ("int64_t", "x*y+x", lambda a, b: a * b + a),
    "VK_FORMAT_R32_SFLOAT": ("float", "x-y*0.5", lambda a, b: a - b * np.float32(0.5)),
}


def _values(fmt: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
    info = vkformat.lookup(fmt)
    assert info is not None
    rng = np.random.default_rng(seed)
    dtype = np.dtype(info.dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if dtype.kind == "f":
        return (rng.integers(-8, 8, shape) / 4).astype(dtype)
    if dtype.kind == "u":
        return rng.integers(0, min(200, np.iinfo(dtype).max), shape).astype(dtype)
    return rng.integers(-100, 100, shape).astype(dtype)


def _binary_scenario(tmp: Path, fmt: str, shape: tuple[int, int], tiling: str | None = None) -> dict[str, Any]:
    glsl_type, op, _ = CASES[fmt]
    (tmp / "k.comp").write_text(BINARY)
    for name, seed in (("a", 1), ("b", 2)):
        np.save(tmp / f"{name}.npy", _values(fmt, shape, seed))
    extra = {"tiling": tiling} if tiling else {}
    return {"resources": [
        {"shader": {"uid": "k", "src": "k.comp", "type": "GLSL", "build_options": f"-DT={glsl_type} \"-DOP={op}\""}},
        {"tensor": {"uid": "a", "dims": list(shape), "format": fmt, "shader_access": "readonly", "src": "a.npy", **extra}},
        {"tensor": {"uid": "b", "dims": list(shape), "format": fmt, "shader_access": "readonly", "src": "b.npy", **extra}},
        {"tensor": {"uid": "c", "dims": list(shape), "format": fmt, "shader_access": "writeonly", "dst": "c.npy", **extra}}],
        "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [shape[1], shape[0]], "bindings": [
            {"set": 0, "id": 0, "resource_ref": "a"}, {"set": 0, "id": 1, "resource_ref": "b"},
            {"set": 0, "id": 2, "resource_ref": "c"}]}}]}


@pytest.mark.parametrize("fmt", list(CASES))
def test_tensor_shader_per_format(tmp_path: Path, fmt: str) -> None:
    shape = (3, 5)
    assert run("run", write(tmp_path / "s.json", _binary_scenario(tmp_path, fmt, shape))) == 0
    info = vkformat.lookup(fmt)
    got = np.load(tmp_path / "c.npy")
    a, b = np.load(tmp_path / "a.npy"), np.load(tmp_path / "b.npy")
    assert got.shape == shape and got.dtype == np.dtype(info.dtype)
    np.testing.assert_array_equal(got, CASES[fmt][2](a, b).astype(info.dtype))
    # Arm's header: no space after commas, padded to 16 bytes, the format's descr
    raw = (tmp_path / "c.npy").read_bytes()
    assert f"{{'descr': '{info.npy_descr}','fortran_order': False,'shape': (3, 5)}}".encode() in raw[:128]


def test_optimal_tiling_tensors(tmp_path: Path) -> None:
    shape = (4, 6)
    doc = _binary_scenario(tmp_path, "VK_FORMAT_R32_SINT", shape, tiling="OPTIMAL")
    assert run("run", write(tmp_path / "s.json", doc)) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "c.npy"), np.load(tmp_path / "a.npy") + np.load(tmp_path / "b.npy"))


@pytest.mark.parametrize("fmt", vkformat.TENSOR_FORMAT_NAMES)
def test_tensor_files_round_trip_every_format(tmp_path: Path, fmt: str) -> None:
    """src -> device -> dst for every tensor format, rank 1 to 3 (BF16/FP8 as raw bit patterns)."""
    info = vkformat.lookup(fmt)
    assert info is not None
    shape = (2, 3, 4)
    data = _values(fmt, shape, 3)
    np.save(tmp_path / "t.npy", data)
    doc = {"resources": [
        {"tensor": {"uid": "t", "dims": list(shape), "format": fmt, "shader_access": "readwrite", "src": "t.npy",
                    "dst": "out.npy"}},
        {"tensor_barrier": {"uid": "tb", "tensor_resource": "t", "src_access": "ACCESS_MEMORY_WRITE",
                            "dst_access": "ACCESS_MEMORY_READ"}}],
        "commands": [{"dispatch_barrier": {"tensor_barrier_refs": ["tb"]}}]}
    assert run("run", write(tmp_path / "s.json", doc)) == 0
    raw = (tmp_path / "out.npy").read_bytes()
    assert f"'descr': '{info.npy_descr}'".encode() in raw[:128]
    assert raw[-data.nbytes:] == data.tobytes()


BARRIER_STEPS = """#version 450
#extension GL_ARM_tensors : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) uniform tensorARM<int32_t, 1> src_t;
layout(set = 0, binding = 1) uniform tensorARM<int32_t, 1> dst_t;
void main() {
    uint i = gl_GlobalInvocationID.x;
    int32_t v;
    tensorReadARM(src_t, uint[](i), v);
    tensorWriteARM(dst_t, uint[](i), v * MUL + ADD);
}
"""


def test_tensor_barrier_orders_dependent_dispatches(tmp_path: Path) -> None:
    n = 256
    (tmp_path / "k.comp").write_text(BARRIER_STEPS)
    x = np.arange(n, dtype=np.int32) - 100
    np.save(tmp_path / "x.npy", x)

    def step(shader: str, src: str, dst: str) -> dict[str, Any]:
        return {"dispatch_compute": {"shader_ref": shader, "rangeND": [n // 64], "implicit_barrier": False,
                                     "bindings": [{"set": 0, "id": 0, "resource_ref": src},
                                                  {"set": 0, "id": 1, "resource_ref": dst}]}}
    tensor = {"dims": [n], "format": "VK_FORMAT_R32_SINT", "shader_access": "readwrite"}
    doc = {"resources": [
        {"shader": {"uid": "inc", "src": "k.comp", "type": "GLSL", "build_options": "-DMUL=1 -DADD=7"}},
        {"shader": {"uid": "dbl", "src": "k.comp", "type": "GLSL", "build_options": "-DMUL=2 -DADD=0"}},
        {"tensor": {"uid": "x", **tensor, "src": "x.npy"}},
        {"tensor": {"uid": "y", **tensor}},
        {"tensor": {"uid": "z", **tensor, "dst": "z.npy"}},
        {"tensor_barrier": {"uid": "y_ready", "tensor_resource": "y", "src_access": "compute_shader_write",
                            "dst_access": "compute_shader_read", "src_stage": ["COMPUTE"], "dst_stage": ["COMPUTE"]}}],
        "commands": [step("inc", "x", "y"), {"dispatch_barrier": {"tensor_barrier_refs": ["y_ready"]}},
                     step("dbl", "y", "z")]}
    assert run("run", write(tmp_path / "s.json", doc)) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "z.npy"), (x + 7) * 2)


STORE_IMAGE = """#version 450
layout(local_size_x = 1, local_size_y = 1) in;
layout(set = 0, binding = 0, rgba8ui) uniform writeonly uimage2D img;
void main() {
    uvec2 p = gl_GlobalInvocationID.xy;
    imageStore(img, ivec2(p), uvec4(p.y * 40u + p.x * 8u) + uvec4(0u, 1u, 2u, 3u));
}
"""


@pytest.mark.parametrize("rank", [3, 4])
def test_tensor_aliasing_an_image_sees_its_texels(tmp_path: Path, rank: int) -> None:
    w, h = 5, 3
    (tmp_path / "k.comp").write_text(STORE_IMAGE)
    dims = [h, w, 4] if rank == 3 else [1, h, w, 4]
    doc = {"resources": [
        {"shader": {"uid": "k", "src": "k.comp", "type": "GLSL"}},
        {"image": {"uid": "img", "dims": [1, w, h, 1], "format": "VK_FORMAT_R8G8B8A8_UINT",
                   "shader_access": "writeonly", "tiling": "LINEAR", "dst": "img.npy", "memory_group": {"id": "m"}}},
        {"tensor": {"uid": "t", "dims": dims, "format": "VK_FORMAT_R8_UINT", "shader_access": "readonly",
                    "tiling": "LINEAR", "memory_group": {"id": "m"}, "dst": "t.npy"}},
        {"image_barrier": {"uid": "to_tensor", "image_resource": "img", "old_layout": "IMAGE_LAYOUT_GENERAL",
                           "new_layout": "IMAGE_LAYOUT_TENSOR_ALIASING", "src_access": "ACCESS_COMPUTE_SHADER_WRITE",
                           "dst_access": "ACCESS_MEMORY_READ"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [w, h],
                                           "bindings": [{"set": 0, "id": 0, "resource_ref": "img"}]}},
                     {"dispatch_barrier": {"image_barrier_refs": ["to_tensor"]}}]}
    assert run("run", write(tmp_path / "s.json", doc)) == 0
    want = np.array([[[y * 40 + x * 8 + c for c in range(4)] for x in range(w)] for y in range(h)], np.uint8)
    got = np.load(tmp_path / "t.npy")
    assert got.shape == tuple(dims)
    np.testing.assert_array_equal(got.reshape(h, w, 4), want)
    np.testing.assert_array_equal(np.load(tmp_path / "img.npy").reshape(h, w, 4), want)


def test_image_aliasing_a_tensor_sees_its_data(tmp_path: Path) -> None:
    """The other direction: a tensor's src fills the memory an image reads back."""
    w, h = 4, 6
    data = np.random.default_rng(4).integers(0, 256, (h, w, 4), dtype=np.uint8)
    np.save(tmp_path / "t.npy", data)
    doc = {"resources": [
        {"image": {"uid": "img", "dims": [1, w, h, 1], "format": "VK_FORMAT_R8G8B8A8_UNORM",
                   "shader_access": "readwrite", "tiling": "LINEAR", "dst": "img.npy", "memory_group": {"id": "m"}}},
        {"tensor": {"uid": "t", "dims": [h, w, 4], "format": "VK_FORMAT_R8_UINT", "shader_access": "readwrite",
                    "tiling": "LINEAR", "memory_group": {"id": "m"}, "src": "t.npy"}}],
        "commands": []}
    assert run("run", write(tmp_path / "s.json", doc)) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "img.npy")[0], data)


def test_memory_group_buffers_share_bytes(tmp_path: Path) -> None:
    data = np.arange(128, dtype=np.uint8)
    np.save(tmp_path / "a.npy", data)
    doc = {"resources": [
        {"buffer": {"uid": "a", "size": 128, "shader_access": "readwrite", "src": "a.npy",
                    "memory_group": {"id": "g", "offset": 0}}},
        {"buffer": {"uid": "b", "size": 16, "shader_access": "readwrite", "dst": "b.npy",
                    "memory_group": {"id": "g", "offset": 64}}}],
        "commands": []}
    assert run("run", write(tmp_path / "s.json", doc)) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "b.npy").view(np.uint8), data[64:80])


def test_memory_group_tensor_and_buffer(tmp_path: Path) -> None:
    """A buffer written by a shader, read back through a tensor of the same memory group."""
    n = 64
    (tmp_path / "k.comp").write_text("""#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer B { int v[]; };
void main() { v[gl_GlobalInvocationID.x] = int(gl_GlobalInvocationID.x) * 3 - 5; }
""")
    doc = {"resources": [
        {"shader": {"uid": "k", "src": "k.comp", "type": "GLSL"}},
        {"buffer": {"uid": "buf", "size": 4 * n, "shader_access": "writeonly", "memory_group": {"id": "m"}}},
        {"tensor": {"uid": "t", "dims": [n // 8, 8], "format": "VK_FORMAT_R32_SINT", "shader_access": "readonly",
                    "memory_group": {"id": "m", "offset": 0}, "dst": "t.npy"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [1],
                                           "bindings": [{"set": 0, "id": 0, "resource_ref": "buf"}]}}]}
    assert run("run", write(tmp_path / "s.json", doc)) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "t.npy"), (np.arange(n, dtype=np.int32) * 3 - 5).reshape(n // 8, 8))


def test_other_backends_refuse_tensors(tmp_path: Path) -> None:
    np.save(tmp_path / "t.npy", np.zeros(4, np.int32))
    doc = {"resources": [{"tensor": {"uid": "t", "dims": [4], "format": "VK_FORMAT_R32_SINT",
                                     "shader_access": "readonly", "src": "t.npy"}}], "commands": []}
    proc = kernellab("run", write(tmp_path / "s.json", doc), "--backend", "opencl")
    assert proc.returncode == 1
    assert "the opencl backend does not run tensors: use --backend vulkan" in proc.stderr
    assert "Traceback" not in proc.stderr
