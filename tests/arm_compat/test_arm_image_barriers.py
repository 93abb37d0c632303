"""Image barriers between dependent dispatches on storage images (Arm's test_barrier image case,
with our own shader): a DDS input, an intermediate image written by one dispatch and read by the
next, a DDS output. The input file is made with Arm's own ``dds_utils`` (header) plus our texels,
so the input does not depend on kernellab's DDS writer."""
from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from arm_compat.arm_compat_helpers import Case, dispatch, shader
from kernellab.testing.arm_runner import ArmRunner

WIDTH, HEIGHT = 64, 4
DDS_HEADER = 4 + 124 + 20  # magic, DDS_HEADER, DDS_HEADER_DXT10

TWICE_PLUS_HALF_GLSL = """#version 450
layout(local_size_x = 16, local_size_y = 1) in;
layout(set = 0, binding = 0, rgba16f) uniform readonly image2D src;
layout(set = 0, binding = 1, rgba16f) uniform writeonly image2D dst;
void main() {
    ivec2 at = ivec2(gl_GlobalInvocationID.xy);
    imageStore(dst, at, imageLoad(src, at) * 2.0 + vec4(0.5, 0.0, -0.5, 1.0));
}
"""


def _dds_input(runner: ArmRunner, path: Path, texels: np.ndarray) -> None:
    tool = runner.executable.parent / "dds_utils"
    subprocess.run([str(tool), "--action", "generate", "--height", str(HEIGHT), "--width", str(WIDTH),
                    "--element-dtype", "uint8", "--element-size", "8", "--format", "DXGI_FORMAT_R16G16B16A16_FLOAT",
                    "--output", str(path), "--header-only"], check=True, capture_output=True)
    path.write_bytes(path.read_bytes() + texels.tobytes())


def _image(uid: str, access: str, **extra: object) -> dict:
    return {"image": {"uid": uid, "shader_access": access, "dims": [1, WIDTH, HEIGHT, 1],
                      "format": "VK_FORMAT_R16G16B16A16_SFLOAT", **extra}}


def _step(x: np.ndarray) -> np.ndarray:
    return (x.astype(np.float32) * 2 + np.array([0.5, 0.0, -0.5, 1.0], np.float32)).astype(np.float16)


@pytest.mark.parametrize("implicit, stages", [(False, True), (False, False), (True, False)],
                         ids=["explicit_barrier_stages", "explicit_barrier_default_stages", "implicit_barrier"])
def test_image_barrier_between_dispatches(case: Case, rng: np.random.Generator, implicit: bool, stages: bool) -> None:
    # eighths in [-4, 4]: exact in float16 through both steps
    texels = (rng.integers(-32, 32, (HEIGHT, WIDTH, 4)) / 8).astype(np.float16)
    _dds_input(case.arm_runner, case.root / "input.dds", texels)
    case.glsl_to_spirv(TWICE_PLUS_HALF_GLSL, "twice.spv")
    extra = {} if implicit else {"implicit_barrier": False}
    barrier = {"uid": "middle_written", "image_resource": "middle", "old_layout": "general",
               "new_layout": "general", "src_access": "compute_shader_write", "dst_access": "compute_shader_read"}
    if stages:
        barrier.update(src_stage=["compute"], dst_stage=["compute"])
    commands = [dispatch("twice", [WIDTH // 16, HEIGHT, 1], [(0, 0, "input"), (0, 1, "middle")], **extra)]
    if not implicit:
        commands.append({"dispatch_barrier": {"image_barrier_refs": ["middle_written"], "memory_barrier_refs": [],
                                              "buffer_barrier_refs": []}})
    commands.append(dispatch("twice", [WIDTH // 16, HEIGHT, 1], [(0, 0, "middle"), (0, 1, "output")], **extra))
    case.scenario([shader("twice", "twice.spv"),
                   _image("input", "image_read", src="input.dds"),
                   _image("middle", "image_read"),
                   _image("output", "writeonly", dst="output.dds"),
                   {"image_barrier": barrier}],
                  commands)
    result = case.run_both()
    expected = _step(_step(texels))
    for runner, folder in (("Arm", result.arm), ("kernellab", result.kernellab)):
        data = (folder / "output.dds").read_bytes()
        got = np.frombuffer(data[DDS_HEADER:], np.float16).reshape(HEIGHT, WIDTH, 4)
        np.testing.assert_array_equal(got, expected, err_msg=runner)
