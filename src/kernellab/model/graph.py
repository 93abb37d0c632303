"""Graphs (VK_ARM_data_graph): VGF graphs, graph constants and the commands that dispatch them;
loaded on a scenario's first graph."""
from __future__ import annotations

from pathlib import Path

from kernellab.model import Binding, Command, Resource, SpecializationConstant
from kernellab.modelkit import I64, U32, Bool, Int, List, Node, Str, VkFormat

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import ClassVar


class SpecializationConstantMap(Node):
    specialization_constants = List(SpecializationConstant)
    shader_target = Str(nonempty=True)


class ShaderSubstitution(Node):
    shader_ref = Str(nonempty=True)
    target = Str(nonempty=True)


class Graph(Resource):
    kind: ClassVar[str] = "graph"
    src = Str(nonempty=True, description="VGF file")
    specialization_constants_map = List(SpecializationConstantMap, default=[])
    shader_substitutions = List(ShaderSubstitution, default=[])
    push_constants_size = Int(0, U32, default=0)
    model_locations: ClassVar[tuple[str, ...]] = ("src_path",)
    _src_path: Path | None = None

    @property
    def src_path(self) -> Path | None:
        return self._src_path


class GraphConstant(Resource):
    """Arm 0.11's ``graph_constant``: a constant tensor (weights) a ``dispatch_spirv_graph``'s graph
    module reads; the n-th entry of the command's ``graph_constants`` has graph constant id n."""

    kind: ClassVar[str] = "graph_constant"
    dims = List(Int(1, I64), min_len=1, max_len=6)
    format = VkFormat
    src = Str(nonempty=True, description="NumPy file holding the values, shaped by dims")
    model_locations: ClassVar[tuple[str, ...]] = ("src_path",)
    _src_path: Path | None = None

    @property
    def src_path(self) -> Path | None:
        return self._src_path


class PushConstantMap(Node):
    push_data_ref = Str(nonempty=True)
    shader_target = Str(nonempty=True)


class DispatchGraph(Command):
    kind: ClassVar[str] = "dispatch_graph"
    graph_ref = Str(nonempty=True)
    push_constants = List(PushConstantMap, default=[])
    # Arm's runner 0.11 reads the substitutions here; the spec puts them on the graph resource
    shader_substitutions = List(ShaderSubstitution, default=[])
    bindings = List(Binding, default=[])
    implicit_barrier = Bool(default=True)


class DispatchDataGraph(Command):
    """Arm 0.11's ``dispatch_data_graph`` (also ``dispatch_spirv_graph``): a graph SPIR-V module
    from a ``shader`` resource, its tensors bound at (set, id)."""

    kind: ClassVar[str] = "dispatch_data_graph"
    graph_ref = Str(nonempty=True, description="a shader resource holding a SPIR-V graph module")
    bindings = List(Binding, default=[])
    graph_constants = List(Str(), default=[],
                           description="graph_constant resources, graph constant ids 0, 1, ... in this order")
    implicit_barrier = Bool(default=True)
