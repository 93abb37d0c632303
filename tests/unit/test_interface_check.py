"""A dispatch checked against its shader's reflected interface (issue 11, "no silent wrong results")."""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from kernellab import model as m
from kernellab import tools
from kernellab.errors import InputError
from kernellab.listing.reflect import Interface, reflect
from kernellab.runtime.interface import check_dispatch

SHADER = """#version 450
layout(local_size_x = 64) in;
layout(constant_id = 3) const int K = 2;
layout(set = 0, binding = 0) readonly buffer A { vec4 head; float a[]; };
layout(set = 0, binding = 1) uniform U { mat4 m; float s; } u;
layout(set = 1, binding = 0) writeonly buffer C { float c[]; };
layout(set = 2, binding = 5, rgba8) uniform writeonly image2D img;
layout(set = 3, binding = 0) buffer Unused { float x[]; };
layout(push_constant) uniform Push { uint count; float f; } pc;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < pc.count) { c[i] = a[i] + u.s * K + head.x; imageStore(img, ivec2(i, 0), vec4(1)); }
}
"""


@pytest.fixture(scope="module")
def interface() -> Interface:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "s.comp").write_text(SHADER)
        tools.require("glslangValidator").run(["-V", "--target-env", "vulkan1.2", "-o", f"{tmp}/s.spv",
                                               f"{tmp}/s.comp"], what="compiling")
        return reflect((Path(tmp) / "s.spv").read_bytes())


def test_reflection_reads_what_the_entry_point_uses(interface: Interface) -> None:
    got = {k: (d.type, d.min_size, d.stride, d.writes) for k, d in interface.descriptors.items()}
    assert got == {(0, 0): ("STORAGE_BUFFER", 16, 4, False), (0, 1): ("UNIFORM_BUFFER", 68, 0, True),
                   (1, 0): ("STORAGE_BUFFER", 0, 4, True), (2, 5): ("STORAGE_IMAGE", 0, 0, True)}
    assert (interface.push_constant_size, interface.spec_ids, interface.local_size) == (8, {3}, (64, 1, 1))


def test_an_unknown_entry_point_is_named(interface: Interface, tmp_path: Path) -> None:
    (tmp_path / "s.comp").write_text(SHADER)
    tools.require("glslangValidator").run(["-V", "-o", str(tmp_path / "s.spv"), str(tmp_path / "s.comp")],
                                          what="compiling")
    with pytest.raises(InputError, match="no entry point 'go' \\(it has: main\\)"):
        reflect((tmp_path / "s.spv").read_bytes(), "go", "s.spv")


def scenario(*, a_size: int = 64, bindings: list[dict] | None = None, push: int = 8, spec: list[dict] | None = None,
             push_ref: str = "p") -> tuple[m.Scenario, m.DispatchCompute, m.Shader]:
    shader = m.Shader.model_validate({"uid": "s", "src": "s.comp", "type": "GLSL", "push_constants_size": push,
                                      "specialization_constants": spec or [{"id": 3, "value": 1}]})
    resources = [shader,
                 m.Buffer.model_validate({"uid": "a", "size": a_size, "shader_access": "readonly"}),
                 m.Buffer.model_validate({"uid": "u", "size": 80, "shader_access": "readonly"}),
                 m.Buffer.model_validate({"uid": "c", "size": 64, "shader_access": "writeonly"}),
                 m.Image.model_validate({"uid": "img", "dims": [1, 4, 4, 1], "format": "VK_FORMAT_R8G8B8A8_UNORM",
                                         "shader_access": "writeonly"}),
                 m.RawData.model_validate({"uid": "p", "src": "p.npy"})]
    if bindings is None:
        bindings = [{"set": 0, "id": 0, "resource_ref": "a"}, {"set": 0, "id": 1, "resource_ref": "u"},
                    {"set": 1, "id": 0, "resource_ref": "c"}, {"set": 2, "id": 5, "resource_ref": "img"}]
    command = m.DispatchCompute.model_validate({"shader_ref": "s", "rangeND": [1], "bindings": bindings,
                                                "push_data_ref": push_ref})
    return m.Scenario(resources, [command]), command, shader


def messages(interface: Interface, **kw: object) -> list[str]:
    sc, command, shader = scenario(**kw)  # type: ignore[arg-type]
    return [str(p) for p in check_dispatch(sc, 0, command, shader, interface, "s.json")]


def test_a_matching_dispatch_has_no_problem(interface: Interface) -> None:
    assert messages(interface) == []


def test_a_binding_on_the_wrong_set(interface: Interface) -> None:
    wrong = [{"set": 0, "id": 0, "resource_ref": "a"}, {"set": 0, "id": 1, "resource_ref": "u"},
             {"set": 0, "id": 2, "resource_ref": "c"}, {"set": 2, "id": 5, "resource_ref": "img"}]
    assert messages(interface, bindings=wrong) == [
        "s.json: /commands/0/dispatch_compute/bindings: shader 's' uses set 1 binding 0 'C' (storage buffer), and "
        "nothing is bound there; bound but unused by the shader: set 0 binding 2 ('c')"]


def test_a_buffer_smaller_than_its_block(interface: Interface) -> None:
    assert messages(interface, a_size=12) == [
        "s.json: /resources/1/buffer/size: buffer 'a' is 12 bytes; set 0 binding 0 'A' (storage buffer) needs at "
        "least 16"]


def test_an_image_where_a_buffer_is_declared(interface: Interface) -> None:
    swapped = [{"set": 0, "id": 0, "resource_ref": "img"}, {"set": 0, "id": 1, "resource_ref": "u"},
               {"set": 1, "id": 0, "resource_ref": "c"}, {"set": 2, "id": 5, "resource_ref": "a"}]
    assert messages(interface, bindings=swapped) == [
        "s.json: /commands/0/dispatch_compute/bindings/0/resource_ref: image 'img' cannot be bound to set 0 "
        "binding 0 'A' (storage buffer)",
        "s.json: /commands/0/dispatch_compute/bindings/3/resource_ref: buffer 'a' cannot be bound to set 2 "
        "binding 5 'img' (storage image)"]


def test_push_constants_and_spec_constants(interface: Interface) -> None:
    assert messages(interface, push=4, spec=[{"id": 7, "value": 1}], push_ref="") == [
        "s.json: /resources/0/shader/push_constants_size: shader 's' declares a push-constant block of 8 bytes; "
        "the range given is 4",
        "s.json: /commands/0/dispatch_compute: shader 's' reads 8 bytes of push constants, and the dispatch gives "
        "none (push_data_ref)",
        "s.json: /resources/0/shader/specialization_constants/0/id: shader 's' has no specialization constant "
        "with id 7 (it has: 3)"]
