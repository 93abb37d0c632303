"""``dispatch_graph``: a VGF graph's segments turned into pipelines over the scenario's tensors.

How the bindings meet the VGF (as Arm's runner does it, see docs/ml-extensions.md): a binding's
``id`` is looked up among the model sequence's input, then output binding numbers; the resource
(a tensor or a buffer, as the VGF's descriptor type says) must match the port's shape and format
or byte size (checked when the scenario is loaded). Every other resource a segment binds (an
*intermediate*) is a tensor or buffer the runner creates itself, once per graph resource;
intermediates with the same VGF *alias group* share one allocation, each at its start, so a
buffer written by one segment is the tensor another one reads. A segment whose module is a
placeholder runs the shader a ``shader_substitutions`` entry names for the module; a compute
module carrying SPIR-V runs it, one carrying GLSL is compiled as Arm compiles it;
``specialization_constants_map`` and ``push_constants`` entries reach the segment whose module
name equals their ``shader_target``.
"""
from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernellab import model as m
from kernellab.backends.base import Backend, Buffer, SpecConstant
from kernellab.backends.feature_specs import BufferSpec, GraphConstantSpec, GraphSegmentSpec, Image, TensorSpec
from kernellab.errors import InputError, shown
from kernellab.formats.paths import escaped_name
from kernellab.records import dataclass

if TYPE_CHECKING:  # the parts' protocols are the checker's (backends/base.py)
    from kernellab.backends.base import GraphFeature, GraphSegment, Tensor


@dataclass
class PreparedGraph:
    """One dispatch_graph command's pipelines, in sequence order, with each one's push data."""

    segments: list[tuple[GraphSegment, bytes]] = field(default_factory=list)


def substitution_for(graph: m.Graph, command: m.DispatchGraph, module_name: str) -> m.ShaderSubstitution | None:
    """The substitution for a placeholder module: the command's own (Arm 0.11) first, then the graph's."""
    for sub in (*command.shader_substitutions, *graph.shader_substitutions):
        if sub.target == module_name:
            return sub
    return None


def prepare_graph(backend: Backend, scenario: m.Scenario, index: int, command: m.DispatchGraph,
                  resources: Mapping[str, Tensor | Buffer], push_data: dict[str, bytes],
                  shader_spirv: Callable[[m.Shader], bytes], intermediates: dict[str, dict[int, Tensor | Buffer]]
                  ) -> PreparedGraph:
    """Pipelines for one ``dispatch_graph`` (``index`` is its place in ``commands``, for errors).

    ``resources``: the scenario's tensors and buffers by uid; ``intermediates``: per graph uid, the
    objects created for the VGF's intermediates (filled on the graph's first dispatch, shared by
    the later ones, as Arm's runner creates them once per graph)."""
    builder = _GraphBuilder(backend, scenario, index, command)
    if builder.graph.uid not in intermediates:
        intermediates[builder.graph.uid] = builder.create_intermediates()
    builder.bound.update(intermediates[builder.graph.uid])
    builder.bind_ports(resources)
    prepared = PreparedGraph()
    with tempfile.TemporaryDirectory(prefix="kernellab-vgf-") as folder:
        for seg in builder.vgf.segments:
            prepared.segments.append(builder.segment(seg, push_data, shader_spirv, Path(folder)))
    return prepared


class _GraphBuilder:
    """One ``dispatch_graph``'s VGF, the resources bound to its model resources, and its segments' pipelines."""

    def __init__(self, backend: Backend, scenario: m.Scenario, index: int, command: m.DispatchGraph):
        from kernellab.formats import vgf

        self.backend = backend
        self.graphs: GraphFeature = backend.need(backend.graphs(), "graphs")
        self.scenario = scenario
        self.index = index
        self.command = command
        self.file = str(scenario.file or "")
        self.where = f"/commands/{index}/dispatch_graph"
        graph = scenario.by_uid[command.graph_ref]
        assert isinstance(graph, m.Graph) and graph.src_path is not None
        self.graph = graph
        self.vgf = vgf.read(graph.src_path)
        #: model resource table index -> the tensor or buffer that fills it
        self.bound: dict[int, Tensor | Buffer] = {}

    def bind_ports(self, resources: Mapping[str, Tensor | Buffer]) -> None:
        """The scenario's tensors and buffers on the VGF's input and output ports (every port must get one)."""
        g = self.vgf
        for j, b in enumerate(self.command.bindings):
            port = g.port(b.id)
            if port is None:
                continue  # Arm's runner ignores bindings that match no input or output
            where = f"{self.where}/bindings/{j}/resource_ref"
            if b.resource_ref not in resources:
                raise InputError.at(self.file, where, f"\"{b.resource_ref}\" fills VGF port {port.name!r}: kernellab's "
                                                      f"runner binds tensors and buffers to graphs")
            if (alias := g.alias_problem(port)) is not None:
                raise InputError.at(self.file, where, alias)
            self.bound[port.resource.index] = resources[b.resource_ref]
        for port in (*g.inputs, *g.outputs):
            if port.resource.index not in self.bound:
                kind = "input" if port in g.inputs else "output"
                raise InputError.at(self.file, f"{self.where}/bindings",
                                    f"VGF {kind} {port.name!r} (binding {port.binding}) of graph \"{self.graph.uid}\" "
                                    f"is not bound (add a binding with \"id\": {port.binding})")

    def create_intermediates(self) -> dict[int, Tensor | Buffer]:
        """A tensor or buffer for every intermediate of the VGF's resource table (zero-filled);
        those of one alias group share an allocation, each at offset 0 (Arm's runner)."""
        specs: dict[int, BufferSpec | TensorSpec] = {}
        for res in self.vgf.resources:
            if res.category != "intermediate":
                continue
            name = f"{self.graph.uid}/Resource_{res.index}_intermediate"
            if res.kind == "buffer":
                specs[res.index] = BufferSpec(name, max(res.byte_size, 1))
            elif res.kind == "tensor":
                if any(d < 0 for d in res.shape):
                    raise InputError.at(self.file, self.where, f"graph \"{self.graph.uid}\": intermediate resource "
                                                               f"{res.index} has an open shape {list(res.shape)}")
                specs[res.index] = TensorSpec(name, res.format, tuple(res.shape), "LINEAR")
            else:
                raise InputError.at(self.file, self.where,
                                    f"graph \"{self.graph.uid}\": intermediate resource {res.index} has descriptor "
                                    f"type {res.descriptor_type or 'none'}; kernellab's runner creates tensor and "
                                    "buffer intermediates")
        groups: dict[int, list[int]] = {}
        for i in specs:
            group = self.vgf.resources[i].alias_group
            if group is not None:
                groups.setdefault(group, []).append(i)
        out: dict[int, Tensor | Buffer] = {}
        for members in groups.values():
            if len(members) > 1:
                shared = self.backend.need(self.backend.memory_groups(), "memory_groups")
                for i, obj in zip(members, shared.alloc_group([(specs[i], 0) for i in members])):
                    assert not isinstance(obj, Image)  # no image is a VGF intermediate
                    out[i] = obj
        for i, spec in specs.items():
            if i in out:
                continue
            if isinstance(spec, BufferSpec):
                buf = self.backend.alloc_buffer(spec.size, spec.uid)
                self.backend.clear_buffer(buf)
                out[i] = buf
            else:
                out[i] = self.backend.need(self.backend.tensors(), "tensors").alloc_tensor(spec)
        return out

    def _code(self, seg: Any, module: Any, shader_spirv: Callable[[m.Shader], bytes], folder: Path
              ) -> tuple[bytes, str, list[SpecConstant], int]:
        """(SPIR-V, entry point, specialization, push constants size) of a segment's module: the
        module's own, or for a placeholder the shader its substitution names."""
        graph = self.graph
        if module.placeholder:
            sub = substitution_for(graph, self.command, module.name)
            if sub is None:
                raise InputError.at(self.file,
                                    f"/resources/{self.scenario.resources.index(graph)}/graph/shader_substitutions",
                                    f"graph \"{graph.uid}\": module {module.name!r} is a placeholder; add a "
                                    f"shader_substitutions entry with \"target\": \"{module.name}\"")
            shader = self.scenario.by_uid[sub.shader_ref]
            assert isinstance(shader, m.Shader)
            return (shader_spirv(shader), shader.entry,
                    [SpecConstant(s.id, s.value) for s in shader.specialization_constants], shader.push_constants_size)
        if module.code == "glsl" and module.kind == "compute":
            return shader_spirv(self._glsl_shader(module, folder)), module.entry_point, [], 0
        spirv = self.vgf.module_spirv(seg.module)
        if spirv is None:
            raise InputError.at(self.file, self.where,
                                f"graph \"{graph.uid}\": module {module.name!r} carries {module.code} source, "
                                f"which kernellab's runner does not compile")
        where = f"{shown(self.file)}: /resources/{self.scenario.resources.index(graph)}/graph/src: {shown(self.vgf.path)}"
        return checked_graph_module(spirv, f"{where}: module {module.name!r}"), module.entry_point, [], 0

    def _glsl_shader(self, module: Any, folder: Path) -> m.Shader:
        """A GLSL shader resource for a compute module's embedded source, written to ``folder``
        and compiled like a scenario's GLSL (the uid names the graph and module, for messages
        and the compiled-module memo)."""
        try:
            source = self.vgf.module_source(module.index)
        except UnicodeDecodeError as exc:  # Arm's binding decodes the stored bytes as UTF-8
            raise InputError.at(self.file, f"/resources/{self.scenario.resources.index(self.graph)}/graph/src",
                                f"{self.vgf.path}: module {module.name!r}: its GLSL source is not UTF-8 text "
                                f"({exc.reason} at byte {exc.start})") from None
        assert source is not None
        # the module name comes from the VGF file: escaped, it cannot climb out of the folder
        path = folder / f"{module.index}-{escaped_name(module.name)}.comp"
        path.write_text(source, encoding="utf-8")
        shader = m.Shader(uid=f"{self.graph.uid}/{module.name}", src=str(path), type="GLSL",
                          entry=module.entry_point, src_path=path)
        return shader

    def segment(self, seg: Any, push_data: dict[str, bytes], shader_spirv: Callable[[m.Shader], bytes],
                folder: Path) -> tuple[GraphSegment, bytes]:
        """One segment's pipeline, and the push data it is dispatched with."""
        g, graph = self.vgf, self.graph
        module = g.modules[seg.module]
        code, entry, specialization, push_size = self._code(seg, module, shader_spirv, folder)
        for scm in graph.specialization_constants_map:
            if scm.shader_target == module.name:
                specialization += [SpecConstant(s.id, s.value) for s in scm.specialization_constants]
        push = b""
        for pc in self.command.push_constants:
            if pc.shader_target == module.name:
                push = push_data.get(pc.push_data_ref, b"")
        push_size = max([push_size, graph.push_constants_size if push else 0, len(push),
                         *(r.offset + r.size for r in seg.push_constant_ranges)])
        push_size = (push_size + 3) // 4 * 4
        slots = []
        seg_resources: dict[tuple[int, int], Tensor | Buffer] = {}
        for ds in seg.descriptor_sets:
            for b in ds.bindings:
                if b.resource not in self.bound:
                    raise InputError.at(self.file, self.where,
                                        f"graph \"{graph.uid}\": segment {seg.name!r} binds resource {b.resource} "
                                        f"(set {ds.set} binding {b.binding}), which is no input, output or "
                                        "intermediate of the VGF")
                res = g.resources[b.resource]
                slots.append((ds.set, b.binding, "tensor" if res.kind == "tensor" else "storage-buffer"))
                seg_resources[(ds.set, b.binding)] = self.bound[b.resource]
        constants = []
        for graph_id, ci in seg.constant_bindings:
            c = g.constants[ci]
            res = g.resources[c.resource]
            constants.append(GraphConstantSpec(graph_id, res.format_value, tuple(res.shape), g.constant_data(ci),
                                               c.sparsity_dimension))
        # "<graph>/<segment>": the command name of Arm's profiling dump (its scenario.cpp createPipeline)
        kind = "dispatch_graph" if seg.kind == "graph" else "dispatch_graph_shader"
        spec = GraphSegmentSpec(label=f"{self.index}:{kind}:{graph.uid}/{seg.name}", kind=seg.kind,
                                code=code, entry=entry, slots=tuple(slots), constants=tuple(constants),
                                dispatch_shape=seg.dispatch_shape,
                                push_constants_size=push_size if seg.kind == "compute" else 0,
                                specialization=tuple(specialization))
        return self.graphs.create_graph_segment(spec, seg_resources), push


def checked_graph_module(code: bytes, what: str) -> bytes:
    """``code`` once spirv-val passes it (a :class:`CompileError` with its log if not): Arm's
    emulation layer answers a graph module it cannot take with VK_ERROR_UNKNOWN and no reason, as
    a device error; compute modules are validated the same way by the compile layer."""
    from kernellab import tools
    from kernellab.errors import CompileError

    val = tools.require("spirv-val", "validating SPIR-V")
    val.transform(["--target-env", GRAPH_SPIRV_ENV, tools.INPUT], input=code, input_name="module.spv",
                  what=f"{what}: SPIR-V graph module is not valid for {GRAPH_SPIRV_ENV}", error=CompileError)
    return code


#: graph modules are SPIR-V 1.6 (the model converter writes 1.6), which Vulkan 1.3 takes
GRAPH_SPIRV_ENV = "vulkan1.3"


def prepare_data_graph(backend: Backend, scenario: m.Scenario, index: int, command: m.DispatchDataGraph,
                       tensors: Mapping[str, Tensor]) -> PreparedGraph:
    """A ``dispatch_data_graph``: one data-graph pipeline of a SPIR-V graph module, its tensors
    bound where the bindings say, the n-th ``graph_constants`` entry as graph constant id n
    (Arm's runner numbers them so)."""
    from kernellab.compile.stage import check_spirv_binary
    from kernellab.formats import npy
    from kernellab.vkregistry import vkformat

    shader = scenario.by_uid[command.graph_ref]
    assert isinstance(shader, m.Shader) and shader.src_path is not None
    code = check_spirv_binary(shader.src_path.read_bytes(), shader.src_path)
    checked_graph_module(code, f"{shown(scenario.file or '')}: /resources/{scenario.resources.index(shader)}/shader/src: "
                               f"{shown(shader.src_path)}")
    constants = []
    for graph_id, uid in enumerate(command.graph_constants):
        gc = scenario.by_uid[uid]
        assert isinstance(gc, m.GraphConstant) and gc.src_path is not None
        fmt = vkformat.lookup(gc.format)
        assert fmt is not None
        constants.append(GraphConstantSpec(graph_id, fmt.value, tuple(gc.dims), npy.read_bytes(gc.src_path)))
    slots = tuple((b.set, b.id, "tensor") for b in command.bindings)
    spec = GraphSegmentSpec(label=f"{index}:dispatch_data_graph:{shader.uid}", kind="graph", code=code,
                            entry=shader.entry, slots=slots, constants=tuple(constants))
    program = backend.need(backend.graphs(), "graphs").create_graph_segment(
        spec, {(b.set, b.id): tensors[b.resource_ref] for b in command.bindings})
    return PreparedGraph([(program, b"")])


def run_graph(backend: Backend, prepared: PreparedGraph) -> None:
    graphs = backend.need(backend.graphs(), "graphs")
    for program, push in prepared.segments:
        graphs.dispatch_graph_segment(program, push, program.spec.label)


__all__ = ["PreparedGraph", "prepare_data_graph", "prepare_graph", "run_graph", "substitution_for"]
