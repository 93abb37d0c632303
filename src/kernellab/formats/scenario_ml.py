"""Checks of a scenario's tensors, shared memory and graphs, run by :mod:`kernellab.formats.scenario`.

Each problem names the JSON pointer of the value at fault:

- a tensor's format must be a tensor format; its ``src`` ``.npy`` shaped by ``dims`` with the
  format's dtype; ``alias_target`` is refused as Arm's runner refuses it (``memory_group`` replaces it);
- a ``graph_constant``'s ``src`` ``.npy`` is shaped by ``dims`` and holds elements of the format's size;
- a ``dispatch_data_graph``'s graph module has the shader's ``entry``, every tensor of it is bound
  and every graph constant id it uses is given (read from the module's words);
- a tensor viewing an image (a ``memory_group`` member at the image's offset) needs dims
  ``[H, W, C]`` or ``[1, H, W, C]`` of the image, elements the size of the image's components,
  and an image of one mip level;
- a ``memory_group`` offset must be a multiple of the member's element (texel) size; the
  device's own alignment is checked when the group is created;
- a ``dispatch_graph``'s bindings must match the VGF's inputs and outputs (a tensor's shape and
  format, a buffer's byte size),
  ``shader_substitutions`` must name placeholder modules of the VGF and shader resources.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import Any

from kernellab import model as m
from kernellab import spirv_format
from kernellab.errors import InputError, MissingToolError
from kernellab.records import dataclass
from kernellab.vkregistry import vkformat

Loc = tuple[str | int, ...]


def check_resources(ck: Any, resources: list[tuple[Loc, m.Resource]]) -> None:
    by_uid = {r.uid: (loc, r) for loc, r in reversed(resources)}
    for loc, r in resources:
        if isinstance(r, m.Image) and len(r.dims) == 4 and (r.dims[0] != 1 or r.dims[3] != 1):
            ck.add(loc + ("dims",), f"image dims are [1, width, height, 1]; got {list(r.dims)}")
        if isinstance(r, m.GraphConstant):
            _check_graph_constant(ck, loc, r)
        if isinstance(r, m.Tensor):
            _check_tensor(ck, loc, r, by_uid)
    _check_memory_groups(ck, resources)


def _check_tensor(ck: Any, loc: Loc, r: m.Tensor, by_uid: dict[str, tuple[Loc, m.Resource]]) -> None:
    if r.alias_target is not None:
        ck.add(loc + ("alias_target",), ALIAS_TARGET_DEPRECATED)
    fmt = vkformat.lookup(r.format)
    if fmt is None or not fmt.tensor:
        ck.add(loc + ("format",), f"unsupported tensor format \"{r.format}\" "
                                    f"(expected one of {'|'.join(vkformat.TENSOR_FORMAT_NAMES)})")
        return
    _check_tensor_src(ck, loc, r, fmt)
    if r.memory_group is not None and r.memory_group.offset % fmt.texel_size:
        ck.add(loc + ("memory_group", "offset"), f"offset {r.memory_group.offset} is not a multiple of the "
                                                   f"{fmt.texel_size}-byte elements of {r.format}")
    target = _viewed_image(r, by_uid)
    if target is not None:
        _check_view(ck, loc, r, fmt, target)


def _check_memory_groups(ck: Any, resources: list[tuple[Loc, m.Resource]]) -> None:
    """The resources sharing each memory group: one tiling, images aligned to their texels and of one level."""
    groups: dict[str, list[tuple[Loc, m.DataResource]]] = {}
    for loc, r in resources:
        if isinstance(r, m.DataResource) and r.memory_group is not None:
            groups.setdefault(r.memory_group.id, []).append((loc, r))
    for gid, members in groups.items():
        check_group_tiling(ck, members, gid)
        tensors = [r for _, r in members if isinstance(r, m.Tensor)]
        for loc, r in members:
            if not isinstance(r, m.Image):
                continue
            fmt = vkformat.lookup(r.format)
            if fmt is not None and r.memory_group is not None and r.memory_group.offset % fmt.texel_size:
                ck.add(loc + ("memory_group", "offset"), f"offset {r.memory_group.offset} is not a multiple "
                                                           f"of the {fmt.texel_size}-byte texels of {r.format}")
            if tensors and r.mips > 1:
                ck.add(loc + ("mips",), f"image \"{r.uid}\" shares memory_group \"{gid}\" with tensor "
                                          f"\"{tensors[0].uid}\"; only an image with one mip level can be aliased")


#: Arm's runner's words (0.11, json_reader.cpp) for a tensor with ``alias_target``
ALIAS_TARGET_DEPRECATED = "The alias_target field is deprecated, please use the memory_group functionality instead"


def _check_graph_constant(ck: Any, loc: Loc, r: m.GraphConstant) -> None:
    """Arm's checks of a graph constant's ``.npy``: its shape is ``dims``, its bytes the format's
    element size times the element count."""
    fmt = vkformat.lookup(r.format)
    if fmt is None or not fmt.tensor:
        ck.add(loc + ("format",), f"unsupported graph constant format \"{r.format}\" "
                                  f"(expected one of {'|'.join(vkformat.TENSOR_FORMAT_NAMES)})")
        return
    hdr = ck.npy_header(loc + ("src",), r.src_path)
    if hdr is None:
        return
    count = 1
    for d in r.dims:
        count *= d
    if tuple(hdr.shape) != tuple(r.dims):
        ck.add(loc + ("src",), f"{r.src_path}: graph constant .npy is shaped {list(hdr.shape)}, its dims are "
                                 f"{list(r.dims)}")
    elif hdr.nbytes != count * fmt.texel_size:
        ck.add(loc + ("src",), f"{r.src_path}: graph constant .npy holds {hdr.nbytes} bytes; {count} elements of "
                                 f"{r.format} are {count * fmt.texel_size}")


def _check_tensor_src(ck: Any, loc: Loc, r: m.Tensor, fmt: vkformat.VkFormatInfo) -> None:
    hdr = ck.npy_header(loc + ("src",), r.src_path)
    if hdr is None:
        return
    import numpy as np  # only for a tensor's .npy dtype

    want = tuple(r.dims)
    if tuple(hdr.shape) != want:
        ck.add(loc + ("src",),
               f"{r.src_path}: tensor .npy is shaped {list(hdr.shape)}, the tensor's dims are {list(want)}")
    elif not fmt.npy_dtype_ok(np.dtype(hdr.dtype)):
        ck.add(loc + ("src",), f"{r.src_path}: tensor .npy has dtype {np.dtype(hdr.dtype).str}; "
                                 f"{fmt.name} needs {fmt.npy_descr}")


def _viewed_image(r: m.Tensor, by_uid: dict[str, tuple[Loc, m.Resource]]) -> m.Image | None:
    """The image of the tensor's memory group at the tensor's offset, if any."""
    if r.memory_group is not None:
        for _, other in by_uid.values():
            if isinstance(other, m.Image) and other.memory_group is not None:
                group = other.memory_group
                if group.id == r.memory_group.id and group.offset == r.memory_group.offset:
                    return other
    return None


def _check_view(ck: Any, loc: Loc, r: m.Tensor, fmt: vkformat.VkFormatInfo, image: m.Image) -> None:
    ifmt = vkformat.lookup(image.format)
    if ifmt is None:
        return
    w, h = (image.dims[1], image.dims[2]) if len(image.dims) >= 3 else (image.dims[0], image.dims[1])
    problem = view_dims_problem(list(r.dims), r.tiling, w, h, ifmt.channels)
    if problem:
        ck.add(loc + ("dims",), f"a tensor aliasing image \"{image.uid}\" ({image.format}, {w}x{h}) {problem}")
    component = ifmt.texel_size // max(ifmt.channels, 1)
    if fmt.texel_size != component:
        unit = "byte" if component == 1 else "bytes"
        ck.add(loc + ("format",), f"{r.format} has {fmt.texel_size}-byte elements, but the components of image "
                                    f"\"{image.uid}\" ({image.format}) are {component} {unit}")


def view_dims_problem(dims: list[int], tiling: str | None, width: int, height: int, channels: int) -> str | None:
    """Why a tensor of ``dims`` cannot view a ``width`` x ``height`` image of ``channels``
    components, or None.

    Arm's runner (``Tensor::setup``) gives a non-OPTIMAL tensor the image's strides and refuses only
    an innermost dimension other than the image's component count. Measured with Arm 0.11 on
    lavapipe: a rank-4 view ``[1, h, w, C]`` with ``h <= H``, ``w <= W`` reads that part of the image
    at its row pitch; a rank-3 or lower view other than ``[H, W, C]`` comes back as the image's
    first row followed by zeros. kernellab takes the rank-4 parts and the whole image, and refuses
    the views Arm gets wrong and those reaching past the image (memory that is not the image's)."""
    want = [height, width, channels]
    exact = f"needs dims {want} or {[1, *want]}, got {dims}"
    if tiling != "OPTIMAL" and len(dims) > 1 and dims[-1] != channels:
        return (f"{exact}: its innermost dimension must be the image's {channels} components, as Arm's runner "
                "requires")
    if dims == want:
        return None
    if len(dims) == 4 and dims[0] == 1 and dims[-1] == channels:
        if dims[1] <= height and dims[2] <= width:
            return None
        return (f"{exact} (or a part of the image, [1, h, w, {channels}] with h <= {height} and w <= {width}): "
                "the view would reach past the image's memory")
    return (f"{exact} (or a part of the image, [1, h, w, {channels}] with h <= {height} and w <= {width}): "
            f"Arm's runner accepts a rank-{len(dims)} view like this one but returns only the image's first row "
            "for it, so kernellab refuses it")


def check_group_tiling(ck: Any, members: list[tuple[Loc, m.DataResource]], gid: str) -> None:
    """Arm's runner refuses a memory group holding an OPTIMAL tensor unless every member has the
    same tiling (an image without ``tiling`` counts as LINEAR in a shared group, a tensor
    without it as LINEAR): "Aliased resources must have identical tiling"."""
    if len(members) < 2 or not any(isinstance(r, m.Tensor) and r.tiling == "OPTIMAL" for _, r in members):
        return
    for loc, r in members:
        if isinstance(r, (m.Tensor, m.Image)) and (r.tiling or "LINEAR") != "OPTIMAL":
            # Arm's own words first: scripts written against Arm's runner look for them
            ck.add(loc + ("tiling",), f"Aliased resources must have identical tiling: {r.kind} \"{r.uid}\" shares "
                                      f"memory_group \"{gid}\" with an OPTIMAL tensor but its tiling is "
                                      f"{r.tiling or 'LINEAR (by default)'}")


def check_graph(ck: Any, loc: Loc, r: m.Graph, ref: Callable[..., Any], by_uid: dict[str, Any]) -> Any:
    """Check a graph resource against its VGF; returns the decoded VGF (or None)."""
    if r.src_path is None or not ck.check_files:
        return None
    try:
        from kernellab.formats import vgf

        g = vgf.read(r.src_path)
    except InputError as exc:
        for p in exc.problems:
            ck.add(loc + ("src",), f"{p.file}: {p.where + ': ' if p.where else ''}{p.message}")
        return None
    except MissingToolError as exc:
        # without Arm's VGF library the file cannot be read here; running it will say so too
        ck.warn(loc + ("src",), f"not checked against the VGF: {exc}")
        return None
    _check_targets(ck, loc, r.uid, g, r.shader_substitutions, r.specialization_constants_map,
                   "specialization_constants_map")
    return g


def _check_targets(ck: Any, loc: Loc, uid: str, g: Any, substitutions: Any, targeted: Any, field: str) -> list[str]:
    """Substitutions must name placeholder modules of the VGF, and ``field``'s entries (constant
    maps, push constants) modules of it; returns the placeholder names."""
    placeholders = [mod.name for mod in g.placeholders()]
    for j, sub in enumerate(substitutions):
        if sub.target not in placeholders:
            have = ", ".join(placeholders) if placeholders else "none"
            ck.add(loc + ("shader_substitutions", j, "target"),
                     f"graph \"{uid}\" has no placeholder module \"{sub.target}\" (placeholders: {have})")
    names = [mod.name for mod in g.modules]
    for j, entry in enumerate(targeted):
        if entry.shader_target not in names:
            ck.add(loc + (field, j, "shader_target"),
                     f"graph \"{uid}\" has no module \"{entry.shader_target}\" (modules: {', '.join(names)})")
    return placeholders


#: what a graph module's interface is read from (SPIR-V registry; SPV_ARM_graph for the last two)
_OP_NAME, _OP_DECORATE, _OP_GRAPH_CONSTANT, _OP_GRAPH_ENTRY_POINT = 5, 71, 4181, 4182
_BINDING, _DESCRIPTOR_SET = 33, 34


@dataclass
class GraphModuleFacts:
    """What a ``dispatch_data_graph`` must supply to a SPIR-V graph module."""

    #: graph entry point name -> ids of its interface variables
    entry_points: dict[str, list[int]] = field(default_factory=dict)
    names: dict[int, str] = field(default_factory=dict)
    #: variable id -> {decoration (Binding, DescriptorSet): value}
    places: dict[int, dict[int, int]] = field(default_factory=dict)
    constant_ids: set[int] = field(default_factory=set)


def graph_module_facts(code: bytes) -> GraphModuleFacts | None:
    """The interface of a SPIR-V graph module, or None if ``code`` does not decode (spirv-val
    names the fault when the graph runs). A walk over the words: no listing needed here."""
    try:
        words = spirv_format.words(code)
        framing = list(spirv_format.instructions(words))
    except InputError:
        return None
    facts = GraphModuleFacts()
    for at, count, opcode in framing:
        ops = words[at + 1:at + count]
        if opcode == _OP_NAME and len(ops) >= 2:
            facts.names[ops[0]] = spirv_format.literal_string(ops, 1, len(ops))[0]
        elif opcode == _OP_DECORATE and len(ops) >= 3 and ops[1] in (_BINDING, _DESCRIPTOR_SET):
            facts.places.setdefault(ops[0], {})[ops[1]] = ops[2]
        elif opcode == _OP_GRAPH_CONSTANT and len(ops) >= 3:
            facts.constant_ids.add(ops[2])
        elif opcode == _OP_GRAPH_ENTRY_POINT and len(ops) >= 2:
            name, after = spirv_format.literal_string(ops, 1, len(ops))
            facts.entry_points[name] = list(ops[after:])
    return facts


def check_data_graph_interface(ck: Any, loc: Loc, c: m.DispatchDataGraph, shader: m.Shader) -> None:
    """A ``dispatch_data_graph``'s bindings and ``graph_constants`` against its SPIR-V graph
    module: every interface variable of the graph entry point bound at its (set, binding), every
    graph constant id the module uses given. Arm's emulation layer 0.11 aborts the process
    (std::out_of_range) on a graph whose tensor or constant is missing."""
    if shader.src_path is None or not ck.check_files:
        return
    try:
        facts = graph_module_facts(shader.src_path.read_bytes())
    except OSError:
        return
    if facts is None:
        return
    if shader.entry not in facts.entry_points:
        ck.add(loc + ("graph_ref",), f"shader \"{shader.uid}\" ({shader.src_path}) has no graph entry point "
                                     f"\"{shader.entry}\" (it has: {', '.join(facts.entry_points) or 'none'}); "
                                     "set its \"entry\"")
        return
    bound = {(b.set, b.id) for b in c.bindings}
    for var in facts.entry_points[shader.entry]:
        place = facts.places.get(var, {})
        if _DESCRIPTOR_SET in place and _BINDING in place and (place[_DESCRIPTOR_SET], place[_BINDING]) not in bound:
            name = facts.names.get(var) or f"%{var}"
            ck.add(loc + ("bindings",), f"graph module \"{shader.uid}\" reads or writes tensor {name} at set "
                                        f"{place[_DESCRIPTOR_SET]} binding {place[_BINDING]}, which no binding fills")
    missing = sorted(n for n in facts.constant_ids if n >= len(c.graph_constants))
    if missing:
        ck.add(loc + ("graph_constants",), f"graph module \"{shader.uid}\" uses graph constant id"
                                           f"{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))}; "
                                           f"graph_constants gives {len(c.graph_constants)} (id n is entry n)")


def check_dispatch_graph(ck: Any, loc: Loc, c: m.DispatchGraph, g: Any, graph: m.Graph,
                         by_uid: dict[str, tuple[Loc, m.Resource]], ref: Callable[..., Any]) -> None:
    for j, sub in enumerate(c.shader_substitutions):
        ref(ck, by_uid, loc + ("shader_substitutions", j, "shader_ref"), sub.shader_ref, ("shader",), "shader")
    if g is None:
        return
    placeholders = _check_targets(ck, loc, graph.uid, g, c.shader_substitutions, c.push_constants, "push_constants")
    substituted = {s.target for s in (*graph.shader_substitutions, *c.shader_substitutions)}
    missing = [p for p in placeholders if p not in substituted]
    if missing:
        ck.add(loc, f"graph \"{graph.uid}\" has placeholder module{'s' if len(missing) > 1 else ''} "
                      f"{', '.join(missing)} without a shader_substitutions entry")
    bound = set()
    for j, b in enumerate(c.bindings):
        port = g.port(b.id)
        hit = by_uid.get(b.resource_ref)
        if port is None or hit is None:
            continue
        bound.add(port.binding)
        res = hit[1]
        if isinstance(res, m.Tensor):
            problem = g.binding_problem(port, "tensor", list(res.dims), res.format)
        elif isinstance(res, m.Image):
            problem = g.binding_problem(port, "image", list(res.dims), res.format)
        elif isinstance(res, m.Buffer):
            problem = g.binding_problem(port, "buffer", [], "", res.size)
        else:
            continue
        if problem:
            ck.add(loc + ("bindings", j, "resource_ref"), problem)
        elif isinstance(res, m.Image):
            ck.add(loc + ("bindings", j, "resource_ref"),
                     f"\"{res.uid}\" is an image: kernellab's runner binds tensors and buffers to graphs")
        elif (alias := g.alias_problem(port)) is not None:
            ck.add(loc + ("bindings", j, "resource_ref"), alias)
    for port in (*g.inputs, *g.outputs):
        if port.binding not in bound:
            kind = "input" if port in g.inputs else "output"
            ck.add(loc + ("bindings",), f"VGF {kind} {port.name!r} (binding {port.binding}) of graph "
                                          f"\"{graph.uid}\" is not bound (add a binding with \"id\": {port.binding})")


def check_graph_command(ck: Any, loc: Loc, c: m.DispatchGraph, by_uid: dict[str, Any], vgfs: dict[str, object],
                        ref: Callable[..., Any], check_bindings: Callable[..., None]) -> None:
    """A ``dispatch_graph``'s references, bindings and graph (``ref`` and ``check_bindings``:
    :mod:`kernellab.formats.scenario`'s, which resolve uids and check bindings)."""
    graph = ref(ck, by_uid, loc + ("graph_ref",), c.graph_ref, ("graph",), "graph")
    for j, pc in enumerate(c.push_constants):
        ref(ck, by_uid, loc + ("push_constants", j, "push_data_ref"), pc.push_data_ref, ("raw_data",), "raw_data")
    if isinstance(graph, m.Graph):
        check_dispatch_graph(ck, loc, c, vgfs.get(graph.uid), graph, by_uid, ref)
    check_bindings(ck, loc, c.bindings, by_uid, ("buffer", "image", "tensor"), "buffer, image or tensor")


def check_data_graph_command(ck: Any, loc: Loc, c: m.DispatchDataGraph, by_uid: dict[str, Any],
                             ref: Callable[..., Any], check_bindings: Callable[..., None]) -> None:
    """A ``dispatch_data_graph``'s graph module, bindings and graph constants (``ref`` and
    ``check_bindings`` as for :func:`check_graph_command`)."""
    shader = ref(ck, by_uid, loc + ("graph_ref",), c.graph_ref, ("shader",), "shader")
    if isinstance(shader, m.Shader) and shader.type != "SPIR-V":
        ck.add(loc + ("graph_ref",), f"shader \"{shader.uid}\" is {shader.type}; {loc[-1]} runs a "
                                       f"SPIR-V graph module (type SPIR-V)")
    elif isinstance(shader, m.Shader):
        check_data_graph_interface(ck, loc, c, shader)
    check_bindings(ck, loc, c.bindings, by_uid, ("tensor",), "tensor")
    for j, uid in enumerate(c.graph_constants):
        ref(ck, by_uid, loc + ("graph_constants", j), uid, ("graph_constant",), "graph_constant")
