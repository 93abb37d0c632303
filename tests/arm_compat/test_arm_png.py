"""PNG image src/dst, run by Arm's runner and by kernellab on the same scenario folder.

Arm's PNG writer deflates with its own compressor (stb_image_write), so the IDAT bytes are not
zlib's; everything else is compared exactly: the chunk sequence, IHDR, IEND, and the *inflated*
IDAT stream -- the filter type chosen for each row and the filtered bytes -- plus the texels,
which both runners must get right against NumPy.
"""
from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from arm_compat.arm_compat_helpers import Case, dispatch, shader
from kernellab.formats import png


def _chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    assert data.startswith(png.SIGNATURE)
    out, pos = [], len(png.SIGNATURE)
    while pos < len(data):
        length, ctype = struct.unpack_from(">I4s", data, pos)
        out.append((ctype, data[pos + 8:pos + 8 + length]))
        pos += 12 + length
    return out


def _image(uid: str, access: str, size: int, **extra: object) -> dict:
    return {"image": {"uid": uid, "shader_access": access, "dims": [1, size, size, 1],
                      "format": "VK_FORMAT_R8G8B8A8_UNORM", **extra}}


@pytest.mark.parametrize("swizzle", [False, True])
def test_png_src_and_dst(case: Case, swizzle: bool) -> None:
    size = 16
    texels = np.arange(size * size * 4, dtype=np.uint8).reshape(1, size, size, 4)
    (case.root / "input.png").write_bytes(png.encode(texels, size, size))
    case.glsl_to_spirv(f"""#version 450
layout(local_size_x = 1, local_size_y = 1) in;
layout(set = 0, binding = 0) uniform sampler2D inputImage;
layout(set = 0, binding = 1, rgba8) uniform writeonly image2D outputImage;
void main() {{
    ivec2 coord = ivec2(gl_GlobalInvocationID.xy);
    imageStore(outputImage, coord, texelFetch(inputImage, coord, 0){'.bgra' if swizzle else ''});
}}
""", "shader.spv")
    case.scenario([shader("copy", "shader.spv"), _image("input", "readonly", size, src="input.png"),
                   _image("output", "writeonly", size, dst="output.png")],
                  [dispatch("copy", [size, size, 1], [(0, 0, "input"), (0, 1, "output")])])
    want = texels[..., [2, 1, 0, 3]] if swizzle else texels

    written = {}
    for runner, run in (("Arm", case.run_arm), ("kernellab", case.run_kernellab)):
        out = case.root / runner
        proc = run(case.root / "scenario.json", out)
        assert proc.returncode == 0, f"{runner} failed:\n{proc.stdout}\n{proc.stderr}"
        assert sorted(p.name for p in out.iterdir()) == ["output.png"]
        data = (out / "output.png").read_bytes()
        got = np.frombuffer(png.decode(data, f"{runner}/output.png", size, size), np.uint8)
        np.testing.assert_array_equal(got, want.reshape(-1), err_msg=runner)
        written[runner] = data

    arm, ours = _chunks(written["Arm"]), _chunks(written["kernellab"])
    assert [c for c, _ in ours] == [c for c, _ in arm] == [b"IHDR", b"IDAT", b"IEND"]
    assert ours[0] == arm[0]
    assert zlib.decompress(ours[1][1]) == zlib.decompress(arm[1][1])


def test_png_of_wrong_size_refused_by_both(case: Case) -> None:
    (case.root / "input.png").write_bytes(png.encode(np.zeros(8 * 8 * 4, np.uint8), 8, 8))
    case.glsl_to_spirv("""#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) uniform sampler2D inputImage;
layout(set = 0, binding = 1, rgba8) uniform writeonly image2D outputImage;
void main() { imageStore(outputImage, ivec2(0), texelFetch(inputImage, ivec2(0), 0)); }
""", "shader.spv")
    case.scenario([shader("copy", "shader.spv"), _image("input", "readonly", 4, src="input.png"),
                   _image("output", "writeonly", 4, dst="output.png")],
                  [dispatch("copy", [1, 1, 1], [(0, 0, "input"), (0, 1, "output")])])
    arm = case.run_arm(case.root / "scenario.json", case.root / "arm")
    assert arm.returncode != 0
    ours = case.run_kernellab(case.root / "scenario.json", case.root / "kernellab")
    assert ours.returncode == 2, ours.stderr
    assert "input.png" in ours.stderr and "8x8" in ours.stderr and "Traceback" not in ours.stderr
    assert not Path(case.root / "kernellab" / "output.png").exists()
