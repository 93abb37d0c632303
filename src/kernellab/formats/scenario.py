"""Reading, checking and writing Scenario Runner JSON files.

``load_scenario`` turns a file into a :class:`kernellab.model.Scenario`, reporting every problem
of the file at once, each with the file and the JSON pointer of the offending value. Unknown fields
(also those of a refused object) and a missing or unusable file of a resource that no command uses
are warnings (errors with ``strict``), as Arm's runner tolerates them. Relative ``src`` paths
resolve against the scenario's folder and ``dst`` against the output folder.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from kernellab import logs, spirv_format
from kernellab import model as m
from kernellab.errors import InputError, Problem, Problems, json_pointer
from kernellab.formats import npy
from kernellab.formats.jsonfile import load_json
from kernellab.formats.paths import path_problem
from kernellab.modelkit import Invalid, dump, json_schema_defs, nearest, show, unknown_fields
from kernellab.parsed_options import allowed_roots, inside
from kernellab.textsafe import escape_line

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any

log = logs.getLogger("kernellab.scenario")

Loc = tuple[str | int, ...]


#: resources, and commands, a scenario may have (Arm's own suites use at most a few hundred)
MAX_ITEMS = 100_000


class _Checker(Problems):
    def __init__(self, file: Path, output_dir: Path | None, strict: bool, check_files: bool,
                 allow_absolute_dst: bool = False, allow_outside: Sequence[Path] = ()):
        super().__init__(file)
        #: the scenario file with ``..`` and symlinks resolved (each resolve walks its path with lstat)
        self.resolved = file.resolve()
        self.base = self.resolved.parent
        self.out = (output_dir or self.base).resolve()
        self.allow_absolute_dst = allow_absolute_dst
        self.roots = allowed_roots(self.base, allow_outside)
        #: resolved dst path -> where it was first given
        self.dsts: dict[Path, Loc] = {}
        self.strict = strict
        self.check_files = check_files
        #: uids of resources that failed to parse: references to them are not reported again
        self.broken_uids: set[str] = set()
        #: the .npy headers read, by path: a push-data check reads its raw_data's header once
        self.headers: dict[Path, npy.NpyHeader] = {}

    def unknown(self, loc: Loc, message: str) -> None:
        """An unknown field: a warning, or an error in strict mode."""
        (self.add if self.strict else self.warn)(loc, message)

    def unusable(self, loc: Loc, message: str, used: bool) -> None:
        """A file that cannot serve: an error when a command uses its resource; Arm's runner warns
        about an unused resource's file and goes on, and so do we (an error in strict mode)."""
        if used:
            self.add(loc, message)
        else:
            self.unknown(loc, f"{message} (no command uses this resource)")

    # --- structure -----------------------------------------------------------------------------
    def parse_items(self, items: Any, section: str, kinds: Mapping[str, str],
                    aliases: dict[str, str]) -> list[tuple[Loc, Any]]:
        """The objects of ``items``; ``kinds``: each kind -> the name of its class in the model
        (a class is built when its kind is first read: a run of buffers builds no image class)."""
        out: list[tuple[Loc, Any]] = []
        if not isinstance(items, list):
            self.add((section,), f"expected an array, got {show(items)}")
            return out
        if len(items) > MAX_ITEMS:
            # checking costs about a kilobyte and 20 us per item: a bound keeps a file from taking gigabytes
            self.add((section,), f"{len(items)} {section}; a scenario may have at most {MAX_ITEMS}")
            return out
        for i, item in enumerate(items):
            if not isinstance(item, dict) or len(item) != 1:
                what = "an object" if not isinstance(item, dict) else f"an object with {len(item)} keys"
                self.add((section, i), f"expected an object with exactly one key naming the "
                                         f"{section[:-1]} type ({'|'.join(kinds)}), got {what}")
                continue
            (key, body), = item.items()
            kind = aliases[key] if key in aliases else key
            if section == "commands" and key in m.REJECTED_COMMANDS:
                self.add((section, i), m.REJECTED_COMMANDS[key])
                continue
            if kind not in kinds:
                self.add((section, i), f"unknown {section[:-1]} type \"{key}\" "
                                         f"(expected one of {'|'.join(kinds)})")
                continue
            loc = (section, i, key)
            cls = m.declared(kinds[kind])
            # unknown fields are named even when the object is refused: "sise" explains a missing "size"
            for where, meant in unknown_fields(cls, body, near=True):
                self.unknown(loc + where, _unknown_field_message(str(where[-1]), meant))
            try:
                obj = cls.model_validate(body)
            except Invalid as exc:
                self.extend(exc.problems(self.file, loc))
                if isinstance(body, dict) and isinstance(body.get("uid"), str):
                    self.broken_uids.add(body["uid"])
                continue
            out.append((loc, obj))
        return out

    # --- paths and files -----------------------------------------------------------------------
    def resolve_src(self, loc: Loc, value: str, used: bool = True) -> Path | None:
        if not value:
            return None
        if (why := path_problem(value)) is not None:
            self.add(loc, why)
            return None
        path = Path(value) if Path(value).is_absolute() else self.base / value
        if self.check_files and not path.is_file():
            # the path on one line: a name holding a newline would print a line of its own
            shown = escape_line(path)
            self.unusable(loc, f"file not found: {shown}" if not path.exists() else f"not a file: {shown}", used)
            return None
        return path

    def resolve_dst(self, loc: Loc, value: str) -> Path | None:
        """Where ``dst`` lands: inside the output folder (after ``..`` and symlinks), or an absolute
        path when the user allowed it; never a folder, never the dst of another resource."""
        if not value:
            return None
        if (why := path_problem(value, written=True)) is not None:
            self.add(loc, why)
            return None
        if Path(value).is_absolute():
            if not self.allow_absolute_dst:
                self.add(loc, f"absolute dst {value!r}: outputs are written inside the output folder; run with "
                              "--allow-absolute-dst to write it there (as Arm's runner does)")
                return None
            path = Path(value)
            key = None
        else:
            path = self.out / value
            try:
                key = path.resolve()  # self.out is resolved: outputs.escapes(path, self.out), one walk
            except (OSError, RuntimeError) as exc:  # a name too long, a symlink loop
                self.add(loc, f"cannot use dst {value!r}: {exc}")
                return None
            if not key.is_relative_to(self.out):
                self.add(loc, f"dst {value!r} resolves to {key}, outside the output folder {self.out}")
                return None
        if Path(value).name in ("", "..") or value.endswith(("/", os.sep)):
            # the output folder does not exist yet when this is checked: "o.npy/.." is a folder only then
            self.add(loc, f"dst {value!r} names a folder, not a file")
            return None
        if path.is_dir():
            self.add(loc, f"dst {value!r} is a folder: {path}")
            return None
        if key is None:
            key = path.resolve()
        if key in self.dsts:
            self.add(loc, f"dst {value!r} is also the dst at {json_pointer(self.dsts[key])}: one run cannot write "
                          "one file twice")
            return None
        self.dsts[key] = loc
        return path

    def npy_header(self, loc: Loc, path: Path | None) -> npy.NpyHeader | None:
        if path is None or not self.check_files:
            return None
        try:
            header = self.headers[path] = npy.read_header(path)
        except (ValueError, OSError) as exc:
            self.add(loc, f"{escape_line(path)}: {exc}")
            return None
        return header


def load_scenario(path: str | Path, output_dir: str | Path | None = None, *, strict: bool = False,
                  check_files: bool = True, allow_absolute_dst: bool = False,
                  allow_outside: Sequence[Path] = (), document: Any = None) -> tuple[m.Scenario, list[Problem]]:
    """Read and check a scenario; returns it with its warnings, or raises InputError with every problem.
    ``document``: the file's JSON when the caller has read it already (:func:`load_json`'s value)."""
    path = Path(path)
    data = load_json(path) if document is None else document
    ck = _Checker(path, Path(output_dir) if output_dir is not None else None, strict, check_files,
                  allow_absolute_dst, allow_outside)
    if not isinstance(data, dict):
        raise InputError.at(path, "/", f"expected an object with \"resources\" and \"commands\", got {show(data)}")
    for key in data:
        if key not in ("resources", "commands"):
            ck.unknown((key,), _unknown_field_message(key, nearest(key, [k for k in ("resources", "commands")
                                                                            if k not in data])))
    for key in ("resources", "commands"):
        if key not in data:
            ck.add((), f"missing required field \"{key}\"")
    resources = ck.parse_items(data.get("resources", []), "resources", m.RESOURCE_CLASSES, {})
    before = len(ck.problems)
    commands = ck.parse_items(data.get("commands", []), "commands", m.COMMAND_CLASSES, m.COMMAND_ALIASES)
    # a refused command's references are unknown: then every resource counts as used
    used = _used_uids(resources, commands) if len(ck.problems) == before and "commands" in data else None
    _check_resources(ck, resources, used)
    _check_commands(ck, resources, commands)
    if ck.problems:  # a clean file never imports the hints (start-up, issue 23)
        from kernellab.formats.near_keys import with_misspelling_hints

        ck.problems = with_misspelling_hints(ck.problems, data)
    ck.raise_if_any(with_warnings=True)
    scenario = m.Scenario([r for _, r in resources], [c for _, c in commands], ck.resolved, ck.out)
    return scenario, ck.warnings


def _unknown_field_message(key: str, meant: str | None) -> str:
    from kernellab.formats.near_keys import unknown_field_message  # a file with unknown fields only

    return unknown_field_message(key, meant)


def _used_uids(resources: list[tuple[Loc, m.Resource]], commands: list[tuple[Loc, m.Command]]) -> set[str]:
    """The uids of the resources some command reads or writes: named by a command (bindings,
    shader, push data, graph, barrier, boundary), or tied to such a resource (a barrier's
    resource, a graph's substitute shader, an aliased image, a memory group shared)."""
    named: set[str] = set()
    for _, c in commands:
        named |= _named_by(c)
    # resources tied together are used together: a group of uids per tie, joined until nothing changes
    ties: list[set[str]] = []
    for _, r in resources:
        # kinds before classes, here and below: a run of buffers builds no barrier, graph or image class
        if r.kind in _BARRIER_TARGETS:
            named.add(getattr(r, _BARRIER_TARGETS[r.kind]))
        elif r.kind == "graph" and isinstance(r, m.Graph):
            ties.append({r.uid, *(s.shader_ref for s in r.shader_substitutions)})
        if isinstance(r, m.DataResource) and r.memory_group is not None:
            ties.append({r.uid, f"\x00memory_group {r.memory_group.id}"})
    used = set(named)
    grown = True
    while grown:
        grown = False
        for tie in ties:
            if tie & used and not tie <= used:
                used |= tie
                grown = True
    return used


#: a barrier resource's kind -> its field naming the resource it guards
_BARRIER_TARGETS = {"buffer_barrier": "buffer_resource", "image_barrier": "image_resource",
                    "tensor_barrier": "tensor_resource"}


def _named_by(c: m.Command) -> set[str]:
    """The uids one command names (its bindings included)."""
    named: set[str] = {b.resource_ref for b in getattr(c, "bindings", [])}
    if isinstance(c, m.DispatchCompute):
        named |= {c.shader_ref, c.push_data_ref}
    elif isinstance(c, m.MarkBoundary):
        named |= set(c.resources)
    elif c.kind == "dispatch_graph" and isinstance(c, m.DispatchGraph):
        named |= {c.graph_ref, *(p.push_data_ref for p in c.push_constants),
                  *(s.shader_ref for s in c.shader_substitutions)}
    elif c.kind == "dispatch_data_graph" and isinstance(c, m.DispatchDataGraph):
        named |= {c.graph_ref, *c.graph_constants}
    elif c.kind == "dispatch_barrier" and isinstance(c, m.DispatchBarrier):
        named |= {*c.image_barrier_refs, *c.tensor_barrier_refs, *c.memory_barrier_refs, *c.buffer_barrier_refs}
    elif c.kind == "dispatch_fragment" and isinstance(c, m.DispatchFragment):
        named |= {c.vertex_shader_ref, c.fragment_shader_ref, c.push_data_ref,
                  *(a.resource_ref for a in c.color_attachment_refs)}
    return named


def _check_resources(ck: _Checker, resources: list[tuple[Loc, m.Resource]], used: set[str] | None = None) -> None:
    """``used``: the uids commands use (a missing file of another resource is only a warning);
    None when every resource counts as used."""
    first: dict[str, Loc] = {}
    for k, (loc, r) in enumerate(resources):
        if r.uid in first:
            ck.add(loc + ("uid",),
                   f"duplicate uid \"{r.uid}\" (first defined at {json_pointer(first[r.uid] + ('uid',))})")
        else:
            first[r.uid] = loc
        in_use = used is None or r.uid in used
        # each resource at the files its fields name, resolved: the object the scenario holds
        if isinstance(r, m.DataResource):
            r = r.located(src_path=ck.resolve_src(loc + ("src",), r.src, in_use),
                          dst_path=ck.resolve_dst(loc + ("dst",), r.dst))
        elif isinstance(r, m.RawData) or r.kind in ("graph", "graph_constant") and \
                isinstance(r, (m.Graph, m.GraphConstant)):
            r = r.located(src_path=ck.resolve_src(loc + ("src",), r.src, in_use))
        elif isinstance(r, m.Shader):
            r = _located_shader(ck, loc, r, in_use)
        resources[k] = (loc, r)
        if isinstance(r, m.Shader):
            _check_shader(ck, loc, r)
        elif r.kind == "graph" and isinstance(r, m.Graph) and r.push_constants_size % 4:
            ck.add(loc + ("push_constants_size",), f"expected a multiple of 4, got {r.push_constants_size}")
        elif isinstance(r, (m.Buffer, m.RawData)) and r.src_path is not None:
            hdr = ck.npy_header(loc + ("src",), r.src_path)
            if isinstance(r, m.Buffer) and hdr is not None and hdr.nbytes != r.size:
                ck.add(loc + ("src",), f"{r.src_path} holds {hdr.nbytes} bytes "
                                         f"({hdr.dtype} {list(hdr.shape)}) but the buffer size is {r.size}")
        elif r.kind == "image" and isinstance(r, m.Image):
            from kernellab.formats import scenario_images  # an image's: a run of buffers loads none

            scenario_images.check_image(ck, loc, r)
    if any(r.kind in ("tensor", "graph", "graph_constant") or isinstance(r, m.DataResource)
           and r.memory_group is not None for _, r in resources):
        from kernellab.formats import scenario_ml  # tensors, graphs, shared memory: not a plain compute run's

        scenario_ml.check_resources(ck, resources)


def _located_shader(ck: _Checker, loc: Loc, r: m.Shader, in_use: bool) -> m.Shader:
    """The shader at its source (a SPIR-V file must be one) and include folders."""
    src = ck.resolve_src(loc + ("src",), r.src, in_use)
    if r.type == "SPIR-V" and src is not None and ck.check_files:
        if (why := _spirv_problem(src)) is not None:
            ck.unusable(loc + ("src",), why, in_use)
            src = None
    return r.located(src_path=src, include_paths=_include_paths(ck, loc, r.include_dirs))


def _check_shader(ck: _Checker, loc: Loc, r: m.Shader) -> None:
    """A shader's push constants, stage and specialization constants."""
    if r.push_constants_size % 4:
        ck.add(loc + ("push_constants_size",), f"expected a multiple of 4, got {r.push_constants_size}")
    if r.stage != "compute" and r.type == "OpenCL-C":
        ck.add(loc + ("stage",), f"an OpenCL-C shader is a compute kernel; stage {r.stage} needs GLSL or SPIR-V")
    seen: dict[int, int] = {}
    for j, sc in enumerate(r.specialization_constants):
        if sc.id in seen:
            ck.add(loc + ("specialization_constants", j, "id"),
                   f"duplicate specialization constant id {sc.id} (also at index {seen[sc.id]})")
        seen[sc.id] = j


def _include_paths(ck: _Checker, loc: Loc, include_dirs: Sequence[str]) -> tuple[Path, ...]:
    """A shader's include folders, resolved; each must lie inside the scenario's folder (or an allowed one)."""
    incs = []
    for j, d in enumerate(include_dirs):
        if (why := path_problem(d)) is not None:
            ck.add(loc + ("include_dirs", j), why)
            continue
        p = Path(d) if Path(d).is_absolute() else ck.base / d
        if not inside(p, ck.roots):
            ck.add(loc + ("include_dirs", j), f"include directory {p} is outside the scenario's folder "
                                              f"{ck.base} (allow it with --allow-outside)")
            continue
        if ck.check_files and not p.is_dir():
            ck.add(loc + ("include_dirs", j), f"include directory not found: {p}")
        incs.append(p)
    return tuple(incs)


#: what a file given as a SPIR-V module probably is, by its extension, and what to do about it
_NOT_SPIRV_HINTS = {".comp": "GLSL source: give the shader \"type\": \"GLSL\"",
                    ".glsl": "GLSL source: give the shader \"type\": \"GLSL\"",
                    ".cl": "OpenCL C source: give the shader \"type\": \"OpenCL-C\"",
                    ".spvasm": "SPIR-V assembly: assemble it with spirv-as first"}


def _spirv_problem(path: Path) -> str | None:
    """Why the file at ``path`` cannot be a SPIR-V module (magic number, whole words), or None."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
            size = os.fstat(fh.fileno()).st_size
    except OSError as exc:
        return f"cannot read {path}: {exc.strerror or exc}"
    if spirv_format.looks_like_module(head, size):
        return None
    hint = _NOT_SPIRV_HINTS.get(path.suffix.lower())
    return f"not a SPIR-V binary (bad magic number or length): {path}" + (f"; it looks like {hint}" if hint else "")


def _ref(ck: _Checker, by_uid: dict[str, tuple[Loc, m.Resource]], loc: Loc, uid: str,
         kinds: tuple[str, ...], what: str) -> m.Resource | None:
    """The resource ``uid`` names when it is of one of ``kinds`` (``"buffer"``...), else None and a problem."""
    hit = by_uid.get(uid)
    if hit is None and uid in ck.broken_uids:
        return None
    if hit is None:
        ck.add(loc, f"no resource with uid \"{uid}\" (expected a {what})")
        return None
    if hit[1].kind not in kinds:
        ck.add(loc, f"\"{uid}\" is a {hit[1].kind}, expected a {what}")
        return None
    return hit[1]


_DATA_KINDS = ("buffer", "image", "tensor")
#: a barrier list of dispatch_barrier -> the resource kind it names
_BARRIER_KINDS = {"image_barrier_refs": "image_barrier", "tensor_barrier_refs": "tensor_barrier",
                  "memory_barrier_refs": "memory_barrier", "buffer_barrier_refs": "buffer_barrier"}
_ByUid = dict[str, tuple[Loc, m.Resource]]


def _check_commands(ck: _Checker, resources: list[tuple[Loc, m.Resource]],
                    commands: list[tuple[Loc, m.Command]]) -> None:
    by_uid: _ByUid = {}
    for loc, r in resources:
        by_uid.setdefault(r.uid, (loc, r))
    vgfs = _check_resource_refs(ck, resources, by_uid)
    for loc, c in commands:
        if isinstance(c, m.DispatchCompute):
            _check_dispatch_compute(ck, loc, c, by_uid)
        elif c.kind == "dispatch_fragment" and isinstance(c, m.DispatchFragment):
            from kernellab.formats import scenario_graphics

            scenario_graphics.check_dispatch_fragment(ck, loc, c, by_uid, _ref, _check_push_size)
        elif c.kind == "dispatch_graph" and isinstance(c, m.DispatchGraph):
            from kernellab.formats import scenario_ml

            scenario_ml.check_graph_command(ck, loc, c, by_uid, vgfs, _ref, _check_bindings)
        elif c.kind == "dispatch_data_graph" and isinstance(c, m.DispatchDataGraph):
            from kernellab.formats import scenario_ml

            scenario_ml.check_data_graph_command(ck, loc, c, by_uid, _ref, _check_bindings)
        elif c.kind == "dispatch_optical_flow" and isinstance(c, m.DispatchOpticalFlow):
            from kernellab.formats import scenario_optical_flow

            scenario_optical_flow.check_dispatch_optical_flow(ck, loc, c, by_uid, _ref)
        elif c.kind == "dispatch_barrier":
            for field, what in _BARRIER_KINDS.items():
                for j, uid in enumerate(getattr(c, field)):
                    _ref(ck, by_uid, loc + (field, j), uid, (what,), what)
        elif isinstance(c, m.MarkBoundary):
            for j, uid in enumerate(c.resources):
                _ref(ck, by_uid, loc + ("resources", j), uid, _DATA_KINDS, "buffer, image or tensor")


def _check_resource_refs(ck: _Checker, resources: list[tuple[Loc, m.Resource]], by_uid: _ByUid) -> dict[str, object]:
    """The resources that name others (barriers, graphs' substitute shaders); the VGF file read for each graph."""
    vgfs: dict[str, object] = {}
    for loc, r in resources:
        if r.kind == "buffer_barrier" and isinstance(r, m.BufferBarrier):
            buf = _ref(ck, by_uid, loc + ("buffer_resource",), r.buffer_resource, ("buffer",), "buffer")
            if isinstance(buf, m.Buffer) and r.offset + r.size > buf.size:
                ck.add(loc + ("size",), f"offset {r.offset} + size {r.size} exceeds the {buf.size} bytes "
                                          f"of buffer \"{buf.uid}\"")
        elif r.kind == "image_barrier" and isinstance(r, m.ImageBarrier):
            _ref(ck, by_uid, loc + ("image_resource",), r.image_resource, ("image",), "image")
        elif r.kind == "tensor_barrier" and isinstance(r, m.TensorBarrier):
            _ref(ck, by_uid, loc + ("tensor_resource",), r.tensor_resource, ("tensor",), "tensor")
        elif r.kind == "graph" and isinstance(r, m.Graph):
            for j, sub in enumerate(r.shader_substitutions):
                _ref(ck, by_uid, loc + ("shader_substitutions", j, "shader_ref"), sub.shader_ref, ("shader",), "shader")
            from kernellab.formats import scenario_ml

            vgfs[r.uid] = scenario_ml.check_graph(ck, loc, r, _ref, by_uid)
    return vgfs


def _check_bindings(ck: _Checker, loc: Loc, bindings: Sequence[m.Binding], by_uid: _ByUid,
                    kinds: tuple[str, ...], what: str) -> None:
    """Each binding names a resource of ``kinds``, and takes a (set, binding) slot no earlier one took."""
    slots: dict[tuple[int, int, int], int] = {}
    elements: dict[tuple[int, int], list[int]] = {}
    for j, b in enumerate(bindings):
        resource = _ref(ck, by_uid, loc + ("bindings", j, "resource_ref"), b.resource_ref, kinds, what)
        _check_descriptor_type(ck, loc + ("bindings", j), b, resource)
        _check_buffer_range(ck, loc + ("bindings", j), b, resource)
        element = f" element {b.array_element}" if b.array_element else ""
        if (b.set, b.id, b.array_element) in slots:
            ck.add(loc + ("bindings", j), f"set {b.set} binding {b.id}{element} is already bound "
                                            f"by bindings/{slots[(b.set, b.id, b.array_element)]}")
        slots.setdefault((b.set, b.id, b.array_element), j)
        elements.setdefault((b.set, b.id), []).append(j)
    for (s, i), js in elements.items():
        have = sorted({bindings[j].array_element for j in js})
        if have != list(range(len(have))):
            ck.add(loc + ("bindings", js[-1], "array_element"),
                   f"set {s} binding {i} is an array of buffers: its bindings fill elements 0 to {len(have) - 1}, "
                   f"got elements {', '.join(map(str, have))}")
        elif len(have) > 1 and any(not isinstance(by_uid.get(bindings[j].resource_ref, (None, None))[1], m.Buffer)
                                   for j in js):
            ck.add(loc + ("bindings", js[-1], "array_element"), f"set {s} binding {i}: only buffers are bound "
                                                                  "as an array here")


_TEXEL_TYPES = ("VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER", "VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER")
_BUFFER_TYPES = _TEXEL_TYPES + ("VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC", "VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC")


def _format_unknown(name: str) -> bool:
    from kernellab.vkregistry import vkformat  # the table of formats, for texel buffers and images only

    return vkformat.lookup(name) is None


def _check_descriptor_type(ck: _Checker, loc: Loc, b: m.Binding, resource: m.Resource | None) -> None:
    """kernellab's descriptor types: texel buffers view a buffer with a texel_format, dynamic ones
    bind a buffer, the others bind an image."""
    texel = b.descriptor_type in _TEXEL_TYPES
    if b.texel_format is not None and _format_unknown(b.texel_format):
        ck.add(loc + ("texel_format",), f"unknown format {b.texel_format}")
    if texel and b.texel_format is None:
        ck.add(loc + ("texel_format",), f"{b.descriptor_type} needs texel_format (the VkFormat of its texels)")
    if not texel and b.texel_format is not None:
        ck.add(loc + ("texel_format",), "texel_format goes with a texel buffer descriptor_type "
                                        "(VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER or ..._STORAGE_TEXEL_BUFFER)")
    if b.descriptor_type in _BUFFER_TYPES and resource is not None and not isinstance(resource, m.Buffer):
        ck.add(loc + ("descriptor_type",), f"{b.descriptor_type} binds a buffer, not a {resource.kind}")
    if b.descriptor_type not in _BUFFER_TYPES and b.descriptor_type != "VK_DESCRIPTOR_TYPE_AUTO" and \
            isinstance(resource, m.Buffer):
        ck.add(loc + ("descriptor_type",), f"{b.descriptor_type} binds an image, not a buffer")


def _check_buffer_range(ck: _Checker, loc: Loc, b: m.Binding, resource: m.Resource | None) -> None:
    """A binding's range and dynamic offset: of a buffer, inside it (a dynamic offset only on a
    dynamic descriptor)."""
    dynamic = b.descriptor_type.endswith("_BUFFER_DYNAMIC")
    if b.dynamic_offset and not dynamic:
        ck.add(loc + ("dynamic_offset",), "a dynamic offset needs a dynamic descriptor_type "
                                           "(VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC or _UNIFORM_BUFFER_DYNAMIC)")
    if b.buffer_range is not None and resource is not None and not isinstance(resource, m.Buffer):
        ck.add(loc + ("buffer_range",), f"\"{b.resource_ref}\" is a {resource.kind}: a buffer_range is a buffer's")
        return
    if isinstance(resource, m.Buffer):
        offset, size = b.buffer_range if b.buffer_range is not None else (0, resource.size)
        if offset + size + b.dynamic_offset > resource.size:
            ck.add(loc + ("buffer_range" if b.buffer_range is not None else "dynamic_offset",),
                   f"the binding sees bytes {offset + b.dynamic_offset} to {offset + size + b.dynamic_offset} of "
                   f"buffer \"{resource.uid}\", which has {resource.size}")
        elif b.buffer_range is not None and size < 1:
            ck.add(loc + ("buffer_range", 1), "a range of at least 1 byte")


def _check_dispatch_compute(ck: _Checker, loc: Loc, c: m.DispatchCompute, by_uid: _ByUid) -> None:
    shader = _ref(ck, by_uid, loc + ("shader_ref",), c.shader_ref, ("shader",), "shader")
    if isinstance(shader, m.Shader) and shader.stage != "compute":
        ck.add(loc + ("shader_ref",), f"shader \"{shader.uid}\" has stage {shader.stage}; "
                                        "dispatch_compute runs compute shaders (a vertex and a "
                                        "fragment shader are drawn by dispatch_fragment)")
    if c.push_data_ref:
        raw = _ref(ck, by_uid, loc + ("push_data_ref",), c.push_data_ref, ("raw_data",), "raw_data")
        _check_push_size(ck, loc + ("push_data_ref",), raw, shader)
    _check_bindings(ck, loc, c.bindings, by_uid, _DATA_KINDS, "buffer, image or tensor")


def _check_push_size(ck: _Checker, loc: Loc, raw: m.Resource | None, shader: m.Resource | None) -> None:
    if not isinstance(raw, m.RawData) or not isinstance(shader, m.Shader) or raw.src_path is None:
        return
    try:
        header = ck.headers.get(raw.src_path) or npy.read_header(raw.src_path)
    except (ValueError, OSError):
        return  # already reported at the raw_data resource
    nbytes = header.nbytes
    if shader.push_constants_size == 0:
        ck.add(loc, f"shader \"{shader.uid}\" declares push_constants_size 0, so it takes no push data")
    elif nbytes > shader.push_constants_size:
        ck.add(loc, f"raw_data \"{raw.uid}\" holds {nbytes} bytes, more than the "
                      f"push_constants_size {shader.push_constants_size} of shader \"{shader.uid}\"")


# --- writing ---------------------------------------------------------------------------------

def scenario_to_json(scenario: m.Scenario) -> dict[str, Any]:
    """The JSON document for a scenario (fields at their defaults are left out)."""
    return {"resources": [{r.kind: dump(r)} for r in scenario.resources],
            "commands": [{c.kind: dump(c)} for c in scenario.commands]}


def write_scenario(scenario: m.Scenario, path: str | Path) -> None:
    import json

    from kernellab.outputs import write_text
    write_text(path, json.dumps(scenario_to_json(scenario), indent=4) + "\n")


# --- JSON Schema -----------------------------------------------------------------------------

def json_schema() -> dict[str, Any]:
    """A JSON Schema (draft 2020-12) for scenario files, for editors."""
    defs = json_schema_defs([*m.RESOURCE_KINDS.values(), *m.COMMAND_KINDS.values()])

    def wrap(items: Iterable[tuple[str, type[m.Node]]]) -> list[dict[str, Any]]:
        return [{"type": "object", "properties": {k: {"$ref": f"#/$defs/{cls.__name__}"}},
                 "required": [k], "additionalProperties": False} for k, cls in items]

    command_items = list(m.COMMAND_KINDS.items()) + [(a, m.COMMAND_KINDS[t]) for a, t in m.COMMAND_ALIASES.items()]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Scenario Runner scenario (kernellab)",
        "type": "object",
        "required": ["resources", "commands"],
        "additionalProperties": False,
        "properties": {
            "resources": {"type": "array", "items": {"oneOf": wrap(m.RESOURCE_KINDS.items())}},
            "commands": {"type": "array", "items": {"oneOf": wrap(command_items)}},
        },
        "$defs": defs,
    }
