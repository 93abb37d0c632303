"""``dispatch_graph``: a VGF graph's segments turned into pipelines over the scenario's tensors.

How the bindings meet the VGF (as Arm's runner does it, see docs/ml-extensions.md): a binding's
``id`` is looked up among the model sequence's input, then output binding numbers; the resource
must match the port's shape and format (checked when the scenario is loaded). Every other
resource a segment binds (an *intermediate*) is a tensor the runner creates itself. A segment
whose module is a placeholder runs the shader a ``shader_substitutions`` entry names for the
module; ``specialization_constants_map`` and ``push_constants`` entries reach the segment whose
module name equals their ``shader_target``.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kernellab import model as m
from kernellab.backends.base import SpecConstant
from kernellab.errors import InputError


@dataclass
class PreparedGraph:
    """One dispatch_graph command's pipelines, in sequence order, with each one's push data."""

    segments: list[tuple[Any, bytes]] = field(default_factory=list)


def substitution_for(graph: m.Graph, command: m.DispatchGraph, module_name: str) -> m.ShaderSubstitution | None:
    """The substitution for a placeholder module: the command's own (Arm 0.11) first, then the graph's."""
    for sub in (*command.shader_substitutions, *graph.shader_substitutions):
        if sub.target == module_name:
            return sub
    return None


def prepare_graph(backend: Any, scenario: m.Scenario, index: int, command: m.DispatchGraph,
                  tensors: dict[str, Any], push_data: dict[str, bytes],
                  shader_spirv: Callable[[m.Shader], bytes]) -> PreparedGraph:
    """Pipelines for one ``dispatch_graph`` (``index`` is its place in ``commands``, for errors)."""
    from kernellab.backends.vulkan_graph import GraphConstantSpec, GraphSegmentSpec
    from kernellab.backends.vulkan_tensor import TensorSpec
    from kernellab.formats import vgf

    file = str(scenario.file or "")
    where = f"/commands/{index}/dispatch_graph"
    graph = scenario.by_uid[command.graph_ref]
    assert isinstance(graph, m.Graph) and graph.src_path is not None
    g = vgf.read(graph.src_path)

    # model resource table index -> the tensor that fills it
    bound: dict[int, Any] = {}
    for j, b in enumerate(command.bindings):
        port = g.port(b.id)
        if port is None:
            continue  # Arm's runner ignores bindings that match no input or output
        if b.resource_ref not in tensors:
            raise InputError.at(file, f"{where}/bindings/{j}/resource_ref",
                                f"\"{b.resource_ref}\" fills VGF port {port.name!r}: kernellab's runner binds "
                                f"only tensors to graphs")
        bound[port.resource.index] = tensors[b.resource_ref]
    for port in (*g.inputs, *g.outputs):
        if port.resource.index not in bound:
            kind = "input" if port in g.inputs else "output"
            raise InputError.at(file, f"{where}/bindings",
                                f"VGF {kind} {port.name!r} (binding {port.binding}) of graph \"{graph.uid}\" "
                                f"is not bound (add a binding with \"id\": {port.binding})")

    def tensor_for(mrt: int) -> Any:
        if mrt not in bound:
            res = g.resources[mrt]
            if any(d < 0 for d in res.shape):
                raise InputError.at(file, where, f"graph \"{graph.uid}\": intermediate resource {mrt} has an open "
                                                 f"shape {list(res.shape)}")
            bound[mrt] = backend.alloc_tensor(TensorSpec(f"{graph.uid}/resource{mrt}", res.format,
                                                         tuple(res.shape), "LINEAR"))
        return bound[mrt]

    prepared = PreparedGraph()
    for seg in g.segments:
        module = g.modules[seg.module]
        label = f"{index}:dispatch_graph:{graph.uid}:{module.name}"
        specialization: list[SpecConstant] = []
        push_size = 0
        if module.placeholder:
            sub = substitution_for(graph, command, module.name)
            if sub is None:
                raise InputError.at(file, f"/resources/{scenario.resources.index(graph)}/graph/shader_substitutions",
                                    f"graph \"{graph.uid}\": module {module.name!r} is a placeholder; add a "
                                    f"shader_substitutions entry with \"target\": \"{module.name}\"")
            shader = scenario.by_uid[sub.shader_ref]
            assert isinstance(shader, m.Shader)
            code, entry = shader_spirv(shader), shader.entry
            specialization += [SpecConstant(s.id, s.value) for s in shader.specialization_constants]
            push_size = shader.push_constants_size
        else:
            spirv = g.module_spirv(seg.module)
            if spirv is None:
                raise InputError.at(file, where, f"graph \"{graph.uid}\": module {module.name!r} carries "
                                                 f"{module.code} source, which kernellab's runner does not compile")
            code, entry = spirv, module.entry_point
        for scm in graph.specialization_constants_map:
            if scm.shader_target == module.name:
                specialization += [SpecConstant(s.id, s.value) for s in scm.specialization_constants]
        push = b""
        for pc in command.push_constants:
            if pc.shader_target == module.name:
                push = push_data.get(pc.push_data_ref, b"")
        push_size = max([push_size, graph.push_constants_size if push else 0, len(push),
                         *(r.offset + r.size for r in seg.push_constant_ranges)])
        push_size = (push_size + 3) // 4 * 4
        slots = tuple((ds.set, b.binding) for ds in seg.descriptor_sets for b in ds.bindings)
        seg_tensors = {(ds.set, b.binding): tensor_for(b.resource) for ds in seg.descriptor_sets for b in ds.bindings}
        constants = []
        for graph_id, ci in seg.constant_bindings:
            c = g.constants[ci]
            res = g.resources[c.resource]
            constants.append(GraphConstantSpec(graph_id, res.format_value, tuple(res.shape), g.constant_data(ci),
                                               c.sparsity_dimension))
        spec = GraphSegmentSpec(label=label, kind=seg.kind, code=code, entry=entry, slots=slots,
                                constants=tuple(constants), dispatch_shape=seg.dispatch_shape,
                                push_constants_size=push_size if seg.kind == "compute" else 0,
                                specialization=tuple(specialization))
        prepared.segments.append((backend.create_graph_segment(spec, seg_tensors), push))
    return prepared


def prepare_data_graph(backend: Any, scenario: m.Scenario, index: int, command: m.DispatchDataGraph,
                       tensors: dict[str, Any]) -> PreparedGraph:
    """A ``dispatch_data_graph``: one data-graph pipeline of a SPIR-V graph module, its tensors
    bound where the bindings say (constants must be inside the module)."""
    from kernellab.backends.vulkan_graph import GraphSegmentSpec

    shader = scenario.by_uid[command.graph_ref]
    assert isinstance(shader, m.Shader) and shader.src_path is not None
    code = shader.src_path.read_bytes()
    if len(code) < 20 or len(code) % 4 or code[:4] not in (b"\x03\x02\x23\x07", b"\x07\x23\x02\x03"):
        raise InputError("not a SPIR-V binary (bad magic number or length)", file=shader.src_path)
    slots = tuple((b.set, b.id) for b in command.bindings)
    spec = GraphSegmentSpec(label=f"{index}:dispatch_data_graph:{shader.uid}", kind="graph", code=code,
                            entry=shader.entry, slots=slots)
    program = backend.create_graph_segment(spec, {(b.set, b.id): tensors[b.resource_ref] for b in command.bindings})
    return PreparedGraph([(program, b"")])


def run_graph(backend: Any, prepared: PreparedGraph) -> None:
    for program, push in prepared.segments:
        backend.dispatch_graph_segment(program, push, program.spec.label)


__all__ = ["PreparedGraph", "prepare_data_graph", "prepare_graph", "run_graph", "substitution_for"]
