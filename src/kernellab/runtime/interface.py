"""A dispatch checked against its shader's interface before anything runs.

A binding on the wrong set, a buffer smaller than the shader's block, a push-constant range
shorter than the push block, a specialization-constant id the shader does not have: each runs
without a word on every driver we know and gives wrong numbers. Here each is an input error
naming the JSON path of the value to fix.
"""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from kernellab import model as m
from kernellab.errors import Problem, json_pointer
from kernellab.listing.reflect import Descriptor, Interface

#: the descriptor types each kind of resource can be bound as
_COMPATIBLE = {
    "buffer": {"STORAGE_BUFFER", "UNIFORM_BUFFER"},
    "image": {"STORAGE_IMAGE", "SAMPLED_IMAGE", "COMBINED_IMAGE_SAMPLER"},
    "tensor": {"TENSOR_ARM"},
}


def _where(scenario: m.Scenario, uid: str) -> tuple[int, str]:
    for index, resource in enumerate(scenario.resources):
        if resource.uid == uid:
            return index, resource.kind
    return -1, ""


def _describe(d: Descriptor) -> str:
    name = f" {d.name!r}" if d.name else ""
    return f"set {d.set} binding {d.binding}{name} ({d.type.lower().replace('_', ' ')})"


def check_dispatch(scenario: m.Scenario, index: int, command: m.DispatchCompute, shader: m.Shader,
                   interface: Interface, file: str | Path) -> list[Problem]:
    """Every mismatch between ``command`` (the ``index``-th command) and ``interface``."""
    file = str(file)
    at = ("commands", index, "dispatch_compute")
    problems: list[Problem] = []
    bound = {(b.set, b.id): (j, b) for j, b in enumerate(command.bindings)}
    unused = [(j, b) for (s, i), (j, b) in bound.items() if (s, i) not in interface.descriptors]
    for key, descriptor in sorted(interface.descriptors.items()):
        if key not in bound:
            hint = ""
            if unused:
                hint = "; bound but unused by the shader: " + ", ".join(
                    f"set {b.set} binding {b.id} ({b.resource_ref!r})" for _, b in unused)
            problems.append(Problem(file, json_pointer(at + ("bindings",)),
                                    f"shader {shader.uid!r} uses {_describe(descriptor)}, and nothing is bound "
                                    f"there{hint}"))
            continue
        j, binding = bound[key]
        problems.extend(_check_resource(scenario, binding, descriptor, file, at + ("bindings", j)))
    problems.extend(_check_push_constants(scenario, index, command, shader, interface, file))
    problems.extend(_check_spec_constants(scenario, shader, interface, file))
    return problems


def _check_resource(scenario: m.Scenario, binding: m.Binding, descriptor: Descriptor, file: str,
                    at: tuple[str | int, ...]) -> Iterable[Problem]:
    resource = scenario.by_uid.get(binding.resource_ref)
    if resource is None:
        return
    r_index, kind = _where(scenario, binding.resource_ref)
    if descriptor.type not in _COMPATIBLE.get(kind, set()):
        yield Problem(file, json_pointer(at + ("resource_ref",)),
                      f"{kind} {binding.resource_ref!r} cannot be bound to {_describe(descriptor)}")
        return
    if isinstance(resource, m.Buffer) and resource.size < descriptor.min_size:
        yield Problem(file, json_pointer(("resources", r_index, "buffer", "size")),
                      f"buffer {resource.uid!r} is {resource.size} bytes; {_describe(descriptor)} needs at "
                      f"least {descriptor.min_size}")
    if isinstance(resource, m.Image):
        storage = descriptor.type == "STORAGE_IMAGE"
        if storage and resource.shader_access == "readonly" and binding.descriptor_type != \
                "VK_DESCRIPTOR_TYPE_STORAGE_IMAGE":
            yield Problem(file, json_pointer(at + ("descriptor_type",)),
                          f"image {resource.uid!r} is readonly, so it is bound as a sampled image, but the shader "
                          f"declares {_describe(descriptor)}: set \"descriptor_type\": "
                          "\"VK_DESCRIPTOR_TYPE_STORAGE_IMAGE\"")
        if not storage and (resource.shader_access == "writeonly"
                            or binding.descriptor_type == "VK_DESCRIPTOR_TYPE_STORAGE_IMAGE"):
            yield Problem(file, json_pointer(at + ("resource_ref",)),
                          f"image {resource.uid!r} is bound as a storage image, but the shader declares "
                          f"{_describe(descriptor)}")


def _check_push_constants(scenario: m.Scenario, index: int, command: m.DispatchCompute, shader: m.Shader,
                          interface: Interface, file: str) -> Iterable[Problem]:
    need = interface.push_constant_size
    if need == 0:
        return
    s_index, _ = _where(scenario, shader.uid)
    if shader.push_constants_size and shader.push_constants_size < need:
        yield Problem(file, json_pointer(("resources", s_index, "shader", "push_constants_size")),
                      f"shader {shader.uid!r} declares a push-constant block of {need} bytes; the range given is "
                      f"{shader.push_constants_size}")
    if not command.push_data_ref:
        yield Problem(file, json_pointer(("commands", index, "dispatch_compute")),
                      f"shader {shader.uid!r} reads {need} bytes of push constants, and the dispatch gives none "
                      "(push_data_ref)")


def _check_spec_constants(scenario: m.Scenario, shader: m.Shader, interface: Interface,
                          file: str) -> Iterable[Problem]:
    s_index, _ = _where(scenario, shader.uid)
    have = ", ".join(map(str, sorted(interface.spec_ids))) or "none"
    for j, constant in enumerate(shader.specialization_constants):
        if constant.id not in interface.spec_ids:
            yield Problem(file, json_pointer(("resources", s_index, "shader", "specialization_constants", j, "id")),
                          f"shader {shader.uid!r} has no specialization constant with id {constant.id} "
                          f"(it has: {have})")
