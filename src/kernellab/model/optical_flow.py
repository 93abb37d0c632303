"""``dispatch_optical_flow`` (VK_ARM_data_graph_optical_flow): loaded on a scenario's first optical flow."""
from __future__ import annotations

from collections.abc import Iterator

from kernellab.model import Binding, Command
from kernellab.modelkit import U32, Bool, Enum, Int, List, Nested, Node

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import ClassVar


#: Arm 0.11's names of VK_ARM_data_graph_optical_flow's enums, as its scenario files write them
OPTICAL_FLOW_GRID_SIZES = ("1x1", "2x2", "4x4", "8x8")
OPTICAL_FLOW_PERFORMANCE_LEVELS = ("unknown", "slow", "medium", "fast")
OPTICAL_FLOW_EXECUTION_FLAGS = ("disable_temporal_hints", "input_unchanged", "reference_unchanged",
                                "input_is_previous_reference", "reference_is_previous_input")


class OpticalFlowBindings(Node):
    """The images of ``dispatch_optical_flow``, each a binding by its role."""

    search_image = Nested(Binding, description="the current frame (VK_..._OPTICAL_FLOW_INPUT_ARM)")
    template_image = Nested(Binding, description="the reference frame (VK_..._OPTICAL_FLOW_REFERENCE_ARM)")
    output_image = Nested(Binding, description="the flow vectors written, one per grid cell")
    hint_motion_vectors = Nested(Binding, default=None, description="flow vectors to start the search from")
    output_cost = Nested(Binding, default=None, description="the matching cost of each flow vector")

    ROLES: ClassVar[tuple[str, ...]] = ("search_image", "template_image", "output_image", "hint_motion_vectors",
                                        "output_cost")

    def roles(self) -> list[tuple[str, Binding]]:
        """(role, binding) of the images given, in Arm's order."""
        return [(role, getattr(self, role)) for role in self.ROLES if getattr(self, role) is not None]

    def __iter__(self) -> Iterator[Binding]:
        return iter([b for _, b in self.roles()])


class DispatchOpticalFlow(Command):
    """Arm 0.11's optical flow (VK_ARM_data_graph_optical_flow): motion vectors from the search
    image to the template image, one per grid cell, computed by a data-graph pipeline."""

    kind: ClassVar[str] = "dispatch_optical_flow"
    width = Int(1, U32, description="width of the search image at the level bound")
    height = Int(1, U32, description="height of the search image at the level bound")
    grid_size = Enum(*OPTICAL_FLOW_GRID_SIZES, description="input pixels per output flow vector")
    performance_level = Enum(*OPTICAL_FLOW_PERFORMANCE_LEVELS, default="medium")
    execution_flags = List(Enum(*OPTICAL_FLOW_EXECUTION_FLAGS), default=[])
    mean_flow_l1_norm_hint = Int(0, U32, default=0, description="0, or below max(width, height)")
    bindings = Nested(OpticalFlowBindings)
    implicit_barrier = Bool(default=True)
