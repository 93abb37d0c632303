"""Floats stored in UNORM/SNORM texels: every device stores one of the two codes nearest the
scaled value (Vulkan, "Conversion from Floating-Point to Normalized Fixed-Point"), and the
checker's codes (formats/texels.encode) are lavapipe's, code for code, ties and near-ties too."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kernellab import tools
from kernellab.cli import main
from kernellab.formats import texels
from kernellab.vkregistry import vkformat

pytestmark = pytest.mark.skipif(tools.find("glslangValidator") is None, reason="needs glslangValidator")

SHADER = """#version 450
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) buffer Src { vec4 v[]; };
layout(set = 0, binding = 1, FORMAT) uniform writeonly imageBuffer dst;
void main() { uint i = gl_GlobalInvocationID.x; imageStore(dst, int(i), v[i]); }
"""
#: (the Vulkan format, its GLSL layout, the scale: 2^bits - 1 or 2^(bits-1) - 1, the lowest value)
FORMATS = {"UNORM": ("VK_FORMAT_R8G8B8A8_UNORM", "rgba8", 255, 0.0),
           "SNORM": ("VK_FORMAT_R8G8B8A8_SNORM", "rgba8_snorm", 127, -1.0)}


def _values(kind: str) -> np.ndarray:
    """Every code, every half code (a tie, or near one in float32), and random values: 1536 floats."""
    scale, low = FORMATS[kind][2], FORMATS[kind][3]
    codes = np.arange(round(low * scale), scale + 1)
    rng = np.random.default_rng(1)
    v = np.concatenate([codes / scale, (codes + 0.5) / scale, low + rng.random(1536) * (1 - low)])
    return v[:1536].astype(np.float32)


def _stored(tmp_path: Path, kind: str, values: np.ndarray, *device: str) -> np.ndarray:
    fmt, layout, _, _ = FORMATS[kind]
    (tmp_path / "k.comp").write_text(SHADER.replace("FORMAT", layout))
    np.save(tmp_path / "in.npy", values)
    doc = {"resources": [{"shader": {"uid": "k", "src": "k.comp", "type": "GLSL"}},
                         {"buffer": {"uid": "in", "size": values.nbytes, "shader_access": "readonly", "src": "in.npy"}},
                         {"buffer": {"uid": "out", "size": values.size, "shader_access": "writeonly", "dst": "out.npy"}}],
           "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [values.size // 256], "bindings": [
               {"set": 0, "id": 0, "resource_ref": "in"},
               {"set": 0, "id": 1, "resource_ref": "out", "texel_format": fmt,
                "descriptor_type": "VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER"}]}}]}
    (tmp_path / "s.json").write_text(json.dumps(doc))
    assert main(["run", str(tmp_path / "s.json"), "--output", str(tmp_path / "out"), *device]) == 0
    raw = np.load(tmp_path / "out" / "out.npy").view(np.uint8)
    return (raw.view(np.int8) if kind == "SNORM" else raw).astype(np.int64)


@pytest.mark.parametrize("kind", sorted(FORMATS))
def test_every_device_stores_one_of_the_two_nearest_codes(kind: str, tmp_path: Path) -> None:
    values = _values(kind)
    got = _stored(tmp_path, kind, values)
    scaled = values.astype(np.float64) * FORMATS[kind][2]
    assert np.all((got >= np.floor(scaled)) & (got <= np.ceil(scaled)))
    exact = scaled == np.round(scaled)  # an integer must be kept
    assert np.array_equal(got[exact], scaled[exact])


@pytest.mark.parametrize("kind", sorted(FORMATS))
def test_the_checkers_codes_are_lavapipes(kind: str, tmp_path: Path) -> None:
    values = _values(kind)
    got = _stored(tmp_path, kind, values, "--device", "llvmpipe")  # exit 2 naming the devices there are
    ours = texels.encode(vkformat.lookup(FORMATS[kind][0]), values.reshape(-1, 4)).ravel().astype(np.int64)
    assert np.array_equal(ours, got), np.flatnonzero(ours != got)[:10]
