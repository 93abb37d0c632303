"""A dispatch checked against its shader's interface before anything runs.

A binding on the wrong set, a buffer smaller than the shader's block, a push-constant range
shorter than the push block, a specialization-constant id the shader does not have: each runs
without a word on every driver we know and gives wrong numbers. Here each is an input error
naming the JSON path of the value to fix.
"""
from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from kernellab import jsontext
from kernellab import model as m
from kernellab.backends import base
from kernellab.backends.base import KernelInterface
from kernellab.compile.cache import sha256
from kernellab.errors import Problem, json_pointer
from kernellab.records import Value
from kernellab.spirv_format import Descriptor, Interface

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    from kernellab.backends.base import LocalArgument
    from kernellab.compile.cache import ArtifactCache

#: the descriptor types each kind of resource can be bound as
_COMPATIBLE = {
    "buffer": {"STORAGE_BUFFER", "UNIFORM_BUFFER", "UNIFORM_TEXEL_BUFFER", "STORAGE_TEXEL_BUFFER"},
    "image": {"STORAGE_IMAGE", "SAMPLED_IMAGE", "COMBINED_IMAGE_SAMPLER", "SAMPLER"},
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


def check_dispatch(scenario: m.Scenario, index: int, command: m.DispatchCompute | m.DispatchFragment,
                   shader: m.Shader, interface: Interface, file: str | Path, *,
                   spec_constants: bool = True) -> list[Problem]:
    """Every mismatch between ``command`` (the ``index``-th command) and ``interface``, that of
    ``shader`` (a draw is checked once per stage: each stage's descriptors must be bound)
    (``spec_constants=False``: all but the shader's specialization ids, see :func:`check_spec_constants`)."""
    file = str(file)
    at = ("commands", index, command.kind)
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
        elements = sum(1 for b in command.bindings if (b.set, b.id) == key)
        if elements != descriptor.count and max(elements, descriptor.count) > 1 and descriptor.count:
            problems.append(Problem(file, json_pointer(at + ("bindings", j)),
                                    f"shader {shader.uid!r} uses {_describe(descriptor)}, an array of "
                                    f"{descriptor.count}; {elements} bound (array_element 0 to {elements - 1})"))
    problems.extend(_check_push_constants(scenario, index, command, shader, interface, file))
    if spec_constants:
        problems.extend(check_spec_constants(scenario, shader, interface, file))
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
    if isinstance(resource, m.Buffer) and binding.buffer_range is not None and \
            binding.buffer_range[1] < descriptor.min_size:
        yield Problem(file, json_pointer(at + ("buffer_range", 1)),
                      f"the binding sees {binding.buffer_range[1]} bytes of buffer {resource.uid!r}; "
                      f"{_describe(descriptor)} needs at least {descriptor.min_size}")
    elif isinstance(resource, m.Buffer) and resource.size < descriptor.min_size:
        yield Problem(file, json_pointer(("resources", r_index, "buffer", "size")),
                      f"buffer {resource.uid!r} is {resource.size} bytes; {_describe(descriptor)} needs at "
                      f"least {descriptor.min_size}")
    # a texel or dynamic descriptor type must be the one the shader declares (a dynamic one less its
    # _DYNAMIC, which SPIR-V does not declare), and a texel buffer the shader declares needs one
    explicit = binding.descriptor_type.removeprefix("VK_DESCRIPTOR_TYPE_")
    texel = descriptor.type in ("UNIFORM_TEXEL_BUFFER", "STORAGE_TEXEL_BUFFER")
    pinned = texel or explicit.endswith("_DYNAMIC")
    if isinstance(resource, m.Buffer) and texel != (explicit in ("UNIFORM_TEXEL_BUFFER", "STORAGE_TEXEL_BUFFER")) \
            or pinned and explicit.removesuffix("_DYNAMIC") != descriptor.type:
        shown = explicit.lower().replace("_", " ") if explicit != "AUTO" else "a storage or uniform buffer"
        yield Problem(file, json_pointer(at + ("descriptor_type",)),
                      f"buffer {binding.resource_ref!r} is bound as {shown}, but the shader declares "
                      f"{_describe(descriptor)}")
        return
    if resource.kind != "image":  # a kind, not a class: a run of buffers builds no image class
        return
    if isinstance(resource, m.Image) and explicit not in ("AUTO", "STORAGE_IMAGE") and explicit != descriptor.type:
        yield Problem(file, json_pointer(at + ("descriptor_type",)),
                      f"image {resource.uid!r} is bound as {explicit.lower().replace('_', ' ')}, but the shader "
                      f"declares {_describe(descriptor)}")
        return
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


def _check_push_constants(scenario: m.Scenario, index: int, command: m.DispatchCompute | m.DispatchFragment,
                          shader: m.Shader, interface: Interface, file: str) -> Iterable[Problem]:
    need = interface.push_constant_size
    if need == 0:
        return
    s_index, _ = _where(scenario, shader.uid)
    if shader.push_constants_size < need:
        yield Problem(file, json_pointer(("resources", s_index, "shader", "push_constants_size")),
                      f"shader {shader.uid!r} declares a push-constant block of {need} bytes; the range given is "
                      f"{shader.push_constants_size}")
    if not command.push_data_ref:
        yield Problem(file, json_pointer(("commands", index, command.kind)),
                      f"shader {shader.uid!r} reads {need} bytes of push constants, and the dispatch gives none "
                      "(push_data_ref)")


def check_spec_constants(scenario: m.Scenario, shader: m.Shader, interface: Interface,
                         file: str, *, warning: bool = False) -> list[Problem]:
    """Specialization ids ``shader`` sets that its module does not have. Vulkan ignores such an
    entry (Arm's runner passes them on), so a run may take them as warnings (``warning``)."""
    return [p.replace(warning=warning) for p in _unknown_spec_ids(scenario, shader, interface, file)]


def _unknown_spec_ids(scenario: m.Scenario, shader: m.Shader, interface: Interface, file: str) -> Iterable[Problem]:
    s_index, _ = _where(scenario, shader.uid)
    have = ", ".join(map(str, sorted(interface.spec_ids))) or "none"
    for j, constant in enumerate(shader.specialization_constants):
        if constant.id not in interface.spec_ids:
            yield Problem(file, json_pointer(("resources", s_index, "shader", "specialization_constants", j, "id")),
                          f"shader {shader.uid!r} has no specialization constant with id {constant.id} "
                          f"(it has: {have})")


def check_local_arguments(scenario: m.Scenario, shader: m.Shader, local_arguments: Sequence[LocalArgument],
                          file: str | Path) -> list[Problem]:
    """Each OpenCL C ``__local`` argument's length is a specialization constant the shader must set:
    left out, the drivers size it as they please (clspv's default on lavapipe ends in
    ``free(): invalid pointer``)."""
    given = {c.id for c in shader.specialization_constants}
    s_index, _ = _where(scenario, shader.uid)
    return [Problem(str(file), json_pointer(("resources", s_index, "shader", "specialization_constants")),
                    f"kernel {shader.entry!r} of shader {shader.uid!r}: __local argument {a.index} ({a.name or '?'}) "
                    f"takes its element count from specialization constant {a.spec_id}, which is not set: add "
                    f'{{"id": {a.spec_id}, "value": N}}')
            for a in local_arguments if a.spec_id not in given]


class SizeTerm(Value):
    """One dimension of a workgroup size: a literal, or a specialization constant and its default.
    (Values of plain classes, here and below: a run reads them, and each dataclass cost its
    start-up more to build than the class, issue 23.)"""

    __slots__ = ("spec_id", "value")
    _fields = ("value", "spec_id")

    def __init__(self, value: int, spec_id: int | None = None):
        self.value = value
        self.spec_id = spec_id


class ModuleFacts(Value):
    """What the run needs from a module beyond :class:`Interface`: the workgroup size however it is
    written (LocalSize, LocalSizeId, the WorkgroupSize built-in) and, for OpenCL C compiled by
    clspv, the ``__local`` arguments sized by specialization constants."""

    __slots__ = ("execution_model", "local_arguments", "workgroup_size")
    _fields = ("workgroup_size", "local_arguments", "execution_model")

    def __init__(self, workgroup_size: tuple[SizeTerm, SizeTerm, SizeTerm] | None = None,
                 local_arguments: tuple[LocalArgument, ...] = (), execution_model: str = ""):
        self.workgroup_size = workgroup_size
        self.local_arguments = local_arguments
        #: the entry point's execution model as SPIR-V names it (``GLCompute``, ``Vertex``, ``Fragment``)
        self.execution_model = execution_model

    def local_size(self, spec_values: Mapping[int, int | float | bool]) -> tuple[int, int, int] | None:
        if self.workgroup_size is None:
            return None
        return tuple(int(spec_values.get(t.spec_id, t.value)) if t.spec_id is not None else t.value
                     for t in self.workgroup_size)  # type: ignore[return-value]


#: a scenario shader's stage -> the execution model its entry point must have
EXECUTION_MODELS = {"compute": "GLCompute", "vertex": "Vertex", "fragment": "Fragment"}


def stage_problem(scenario: m.Scenario, shader: m.Shader, facts: ModuleFacts, file: str) -> list[Problem]:
    """The entry point of another stage than the shader's ``stage`` says (a vertex module given
    as a fragment shader): drivers crash on such a pipeline or refuse it without a reason."""
    want = EXECUTION_MODELS[shader.stage]
    if facts.execution_model not in EXECUTION_MODELS.values() or facts.execution_model == want:
        return []
    s_index, _ = _where(scenario, shader.uid)
    return [Problem(file, json_pointer(("resources", s_index, "shader", "stage")),
                    f"shader {shader.uid!r} has stage {shader.stage}, but its entry point {shader.entry!r} is a "
                    f"{facts.execution_model} entry point")]


#: reflection is cached by content: a repeated run loads no SPIR-V grammar (about 30 ms) and decodes nothing
_CACHE_EXT = "interface.json"


def reflect_module(spirv: bytes, entry: str, file: str = "",
                   cache: ArtifactCache | None = None) -> tuple[Interface, ModuleFacts]:
    """The interface and :class:`ModuleFacts` of entry point ``entry``, from ``cache`` when it holds
    them; :class:`UnknownEntryError` when the module has no such entry point."""
    key = _cache_key(spirv, entry) if cache is not None else ""
    if cache is not None:
        raw = cache.get(key, _CACHE_EXT)
        if raw is not None:
            try:
                return _loads(raw)
            except (ValueError, KeyError, TypeError, IndexError):
                pass  # an entry from another layout: reflect again and replace it
    from kernellab.runtime.reflection import reflect_uncached  # a miss only: the decoder and its grammar

    interface, (size, local_arguments, model) = reflect_uncached(spirv, entry, file)
    terms = tuple(SizeTerm(value, spec_id) for value, spec_id in size) if size is not None else None
    found = interface, ModuleFacts(terms, local_arguments, model)  # type: ignore[arg-type]
    if cache is not None:
        cache.put(key, _CACHE_EXT, _dumps(*found))
    return found


def clspv_specialization(scenario: m.Scenario, shader: m.Shader, spirv: bytes,
                         cache: ArtifactCache | None = None) -> dict[int, Any]:
    """An OpenCL C shader's specialization constants as its clspv module takes them: each
    ``__local`` argument's count converted from the scenario's declared-type elements to the
    elements of clspv's array (:func:`~kernellab.backends.opencl_abi.clspv_spec_values`). The one
    conversion for ``run`` and ``verify`` on Vulkan; other shaders' values are returned as given."""
    values: dict[int, Any] = {c.id: c.value for c in shader.specialization_constants}
    if shader.type != "OpenCL-C" or not values:  # no count given: nothing to convert
        return values
    try:
        _, facts = reflect_module(spirv, shader.entry, str(shader.src_path or ""), cache)
    except base.UnknownEntryError:
        return values  # the interface check names the entry at its JSON path
    if not facts.local_arguments:  # the usual kernel: no source to read, no OpenCL backend to load
        return values
    from kernellab.backends import opencl_abi
    from kernellab.opencl_types import parse_type, source_typedefs

    file = str(scenario.file or "")
    source = shader.src_path.read_text(errors="replace") if shader.src_path is not None else ""
    s_index, _ = _where(scenario, shader.uid)
    typedefs = source_typedefs(source)
    return opencl_abi.clspv_spec_values(values, facts.local_arguments, lambda t: parse_type(t, typedefs).size, file,
                                        json_pointer(("resources", s_index, "shader", "specialization_constants")))


def workgroup_memory(shader: m.Shader, known: KernelInterface) -> int:
    """Bytes of workgroup (``shared``/``__local``) memory a dispatch of ``shader`` asks for: its
    module's Workgroup variables and each ``__local`` argument's length (given in elements of the
    declared type; a type with no size known counts one byte an element, a lower bound)."""
    values = {c.id: c.value for c in shader.specialization_constants}
    total = known.interface.workgroup_memory
    for a in known.local_arguments:
        count = values.get(a.spec_id)
        if isinstance(count, (int, float)) and count > 0:
            total += int(count) * max(1, a.element_size)
    return total


@functools.cache
def _code_digest() -> bytes:
    """The code that reflects is part of the key: a change to it never meets an old entry. Its
    files' paths, sizes and change times stand for their text (recordbuild.py keys its code the
    same way): hashing ~35 KB of source cost each run ~2 M instructions (issue 23)."""
    folder = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parts = []
    for source in (os.path.join(folder, "runtime", "interface.py"), os.path.join(folder, "runtime", "reflection.py"),
                   os.path.join(folder, "listing", "reflect.py")):
        try:
            st = os.stat(source)
            parts.append(f"{source}|{st.st_size}|{st.st_mtime_ns}|{st.st_ctime_ns}")
        except OSError:  # not a file (a zip import): a key of this process's own
            parts.append(f"{source}|{os.getpid()}|{id(parts)}")
    return "\n".join(parts).encode("utf-8", "surrogatepass")


def _cache_key(spirv: bytes, entry: str) -> str:
    h = sha256(_code_digest())
    h.update(entry.encode("utf-8", "surrogatepass") + b"\0")
    h.update(spirv)
    return h.hexdigest()


def _dumps(interface: Interface, facts: ModuleFacts) -> bytes:
    import json

    return json.dumps({
        "entry": interface.entry,
        "descriptors": [[d.set, d.binding, d.type, d.name, d.count, d.min_size, d.stride, d.writes, d.element]
                        for d in interface.descriptors.values()],
        "push": interface.push_constant_size, "spec_ids": sorted(interface.spec_ids),
        "local_size": list(interface.local_size) if interface.local_size else None,
        "workgroup_memory": interface.workgroup_memory,
        "workgroup_size": [[t.value, t.spec_id] for t in facts.workgroup_size] if facts.workgroup_size else None,
        "local_arguments": [[a.index, a.name, a.spec_id, a.element_size, a.type_name]
                            for a in facts.local_arguments],
        "execution_model": facts.execution_model}).encode()


def _loads(raw: bytes) -> tuple[Interface, ModuleFacts]:
    d: dict[str, Any] = jsontext.loads(raw.decode("utf-8", "surrogatepass"))
    descriptors = [Descriptor(int(s), int(b), str(t), str(n), int(c), int(ms), int(st), bool(w), str(e))
                   for s, b, t, n, c, ms, st, w, e in d["descriptors"]]
    interface = Interface(str(d["entry"]), {(x.set, x.binding): x for x in descriptors}, int(d["push"]),
                          frozenset(int(i) for i in d["spec_ids"]),
                          tuple(int(n) for n in d["local_size"]) if d["local_size"] else None,  # type: ignore[arg-type]
                          int(d["workgroup_memory"]))
    size = tuple(SizeTerm(int(v), None if i is None else int(i)) for v, i in d["workgroup_size"]) \
        if d["workgroup_size"] else None
    locals_ = tuple(base.LocalArgument(int(i), str(n), int(s), int(e), str(t)) for i, n, s, e, t in d["local_arguments"])
    return interface, ModuleFacts(size, locals_, str(d["execution_model"]))  # type: ignore[arg-type]
