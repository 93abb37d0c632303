"""The SPIR-V checker's image results against the device's: a clean shader's output image as
``kernellab verify``'s checker leaves it equals what ``kernellab run`` gets on lavapipe (issue 24,
point 2)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from kernellab import tools
from kernellab.cli import main
from kernellab.formats import dds
from kernellab.formats.scenario import load_scenario
from kernellab.spirvsim import check_dispatch, glsl_to_spirv
from kernellab.verify.vulkan import _Buffers

pytestmark = pytest.mark.skipif(tools.find("glslangValidator") is None, reason="needs glslangValidator")

EXAMPLES = Path(__file__).parents[2] / "examples"

LINEAR = """#version 450
layout(local_size_x = 8, local_size_y = 8) in;
layout(set = 0, binding = 0) uniform sampler2D src;
layout(set = 0, binding = 1, rgba32f) uniform writeonly image2D dst;
void main() {
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    vec2 uv = (vec2(p) * vec2(1.37, 0.61) - vec2(3.3, 2.1)) / vec2(textureSize(src, 0));
    imageStore(dst, p, textureLod(src, uv, float(p.x % 3) * 0.5));
}
"""


def checker_images(path: Path) -> dict[str, bytes]:
    """Every image and buffer as the checker leaves the scenario's dispatches, in command order."""
    scenario, _ = load_scenario(path)
    state = _Buffers(scenario, path)
    for ci, c in enumerate(scenario.commands):
        shader = scenario.by_uid[c.shader_ref]  # type: ignore[attr-defined]
        r = check_dispatch(glsl_to_spirv(shader.src_path), shader.entry, c.workgroups,  # type: ignore[attr-defined]
                           bindings=state.bindings(c, ci))  # type: ignore[arg-type]
        assert r.findings == []
        state.update(r.buffers)
    return state.data


def test_blur_output_equals_the_device_output(tmp_path: Path) -> None:
    folder = tmp_path / "blur"
    shutil.copytree(EXAMPLES / "image_blur", folder)
    assert main(["run", "--scenario", str(folder / "scenario.json"), "--output", str(tmp_path / "out")]) == 0
    device = dds.read(tmp_path / "out" / "blurred.dds").levels[0]
    checked = np.frombuffer(checker_images(folder / "scenario.json")["output"], np.uint8).reshape(device.shape)
    assert np.abs(device.astype(int) - checked.astype(int)).max() <= 1


def test_linear_mipmapped_repeat_sampling_equals_the_device_within_its_precision(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    np.save(tmp_path / "in.npy", rng.random((1, 16, 16, 4)).astype(np.float32))
    (tmp_path / "k.comp").write_text(LINEAR)
    doc = {"resources": [
        {"shader": {"uid": "k", "src": "k.comp", "type": "GLSL"}},
        {"image": {"uid": "src", "dims": [1, 16, 16, 1], "format": "VK_FORMAT_R32G32B32A32_SFLOAT", "mips": 3,
                   "shader_access": "readonly", "src": "in.npy", "min_filter": "LINEAR", "mag_filter": "LINEAR", "mip_filter": "LINEAR",
                   "border_address_mode": "REPEAT"}},
        {"image": {"uid": "dst", "dims": [1, 16, 16, 1], "format": "VK_FORMAT_R32G32B32A32_SFLOAT",
                   "shader_access": "writeonly", "dst": "out.npy"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [2, 2], "bindings": [
            {"set": 0, "id": 0, "resource_ref": "src"}, {"set": 0, "id": 1, "resource_ref": "dst"}]}}]}
    (tmp_path / "s.json").write_text(json.dumps(doc))
    assert main(["run", "--scenario", str(tmp_path / "s.json"), "--output", str(tmp_path / "out")]) == 0
    device = np.load(tmp_path / "out" / "out.npy")[0]
    checked = np.frombuffer(checker_images(tmp_path / "s.json")["dst"], np.float32).reshape(device.shape)
    # a device rounds linear weights to its subTexelPrecisionBits (lavapipe: 8): the values of
    # neighbouring texels differ by at most 1, so the results agree within 2^-8
    assert np.abs(device - checked).max() <= 2 ** -8
    assert np.abs(device - checked).mean() < 2 ** -10


def _image_scenario(folder: Path, shader: str, image: dict) -> Path:
    (folder / "k.comp").write_text(shader)
    path = folder / "s.json"
    path.write_text(json.dumps({"resources": [{"shader": {"uid": "k", "src": "k.comp", "type": "GLSL"}},
                                              {"image": {"uid": "img", "format": "VK_FORMAT_R32_SFLOAT",
                                                         "dims": [4, 4], "shader_access": "writeonly", **image}}],
                                "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [1], "bindings": [
                                    {"set": 0, "id": 0, "resource_ref": "img"}]}}]}))
    return path


STORE_2D = ("#version 450\nlayout(local_size_x = 1) in;\nlayout(set = 0, binding = 0, r32f) uniform image2D img;\n"
            "void main() { imageStore(img, ivec2(0), vec4(1.0)); }\n")
STORE_3D = ("#version 450\nlayout(local_size_x = 4, local_size_y = 4, local_size_z = DEPTH) in;\n"
            "layout(set = 0, binding = 0, r32f) uniform image3D img;\n"
            "void main() { imageStore(img, ivec3(gl_LocalInvocationID), vec4(1.0)); }\n")


@pytest.mark.parametrize("extension, named", [({"image_type": "3D", "depth": 2, "mips": 2},
                                               "a 3D image with mip levels (4x4x2, 2 levels)"),
                                              ({"samples": 4}, "a multisampled image (4 samples a texel)")])
def test_multisampled_and_mipmapped_3d_images_are_refused_by_name(extension, named, tmp_path, capsys):
    """kernellab's scenario image extensions the checker does not model (AmberScript's SAMPLES
    images, a 3D image with mip levels) are refused naming the image, not checked as another one."""
    path = _image_scenario(tmp_path, STORE_2D, extension)
    assert main(["verify", str(path)]) == 2
    assert f"image img: {named} is not supported by the SPIR-V checker" in capsys.readouterr().err


@pytest.mark.parametrize("invocations_deep, verdict", [(2, 0), (3, 1)])
def test_3d_image_slices_and_their_bounds(invocations_deep, verdict, tmp_path, capsys):
    """A 3D scenario image (AmberScript's DIM_3D) is bound with its depth: a store in each of its
    two slices is in bounds, one in a third slice is out of bounds."""
    path = _image_scenario(tmp_path, STORE_3D.replace("DEPTH", str(invocations_deep)), {"image_type": "3D", "depth": 2})
    assert main(["verify", str(path), "--json"]) == verdict
    doc = json.loads(capsys.readouterr().out)
    assert {f["kind"] for f in doc["findings"]} == ({"out-of-bounds"} if verdict else set())


SEPARATE = """#version 450
layout(local_size_x = 8, local_size_y = 8) in;
layout(set = 0, binding = 0) uniform texture2D tex;
layout(set = 0, binding = 2) uniform sampler smp;
layout(set = 0, binding = 1, rgba32f) uniform writeonly image2D dst;
void main() {
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    vec2 uv = (vec2(p) * vec2(1.37, 0.61) - vec2(3.3, 2.1)) / vec2(textureSize(sampler2D(tex, smp), 0));
    imageStore(dst, STORE_AT, textureLod(sampler2D(tex, smp), uv, 0.0) + texelFetch(sampler2D(tex, smp), p / 2, 0));
}
"""


def _separate(folder: Path, store_at: str) -> Path:
    """A sampled image (texture2D) and a sampler bound on their own (AmberScript's BIND SAMPLER:
    the sampler descriptor takes the sampler of the image it names, here a 1x1 holder)."""
    folder.mkdir()
    rng = np.random.default_rng(3)
    np.save(folder / "in.npy", rng.random((1, 16, 16, 4)).astype(np.float32))
    (folder / "k.comp").write_text(SEPARATE.replace("STORE_AT", store_at))
    doc = {"resources": [
        {"shader": {"uid": "k", "src": "k.comp", "type": "GLSL"}},
        {"image": {"uid": "src", "dims": [1, 16, 16, 1], "format": "VK_FORMAT_R32G32B32A32_SFLOAT",
                   "shader_access": "readonly", "src": "in.npy"}},
        {"image": {"uid": "holder", "dims": [1, 1, 1, 1], "format": "VK_FORMAT_R32G32B32A32_SFLOAT",
                   "shader_access": "readonly", "min_filter": "LINEAR", "mag_filter": "LINEAR",
                   "border_address_mode": "REPEAT"}},
        {"image": {"uid": "dst", "dims": [1, 16, 16, 1], "format": "VK_FORMAT_R32G32B32A32_SFLOAT",
                   "shader_access": "writeonly", "dst": "out.npy"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [2, 2], "bindings": [
            {"set": 0, "id": 0, "resource_ref": "src", "descriptor_type": "VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE"},
            {"set": 0, "id": 2, "resource_ref": "holder", "descriptor_type": "VK_DESCRIPTOR_TYPE_SAMPLER"},
            {"set": 0, "id": 1, "resource_ref": "dst"}]}}]}
    (folder / "s.json").write_text(json.dumps(doc))
    return folder / "s.json"


def test_separate_sampler_and_sampled_image_sample_as_the_device(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = _separate(tmp_path / "clean", "p")
    assert main(["run", "--scenario", str(path), "--output", str(tmp_path / "out")]) == 0
    device = np.load(tmp_path / "out" / "out.npy")[0]
    checked = np.frombuffer(checker_images(path)["dst"], np.float32).reshape(device.shape)
    assert np.abs(device - checked).max() <= 2 ** -7  # linear weights at the device's 8 sub-texel bits
    assert main(["verify", str(path)]) == 0
    capsys.readouterr()
    # planted: invocations of a row pair store into one texel
    assert main(["verify", str(_separate(tmp_path / "planted", "p / ivec2(1, 2)")), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert {(f["kind"], f["resource"]) for f in doc["findings"]} == {("data-race", "dst")}
