"""The barrier resources (of memory, buffers, images and tensors) and ``dispatch_barrier``: loaded
on a scenario's first barrier."""
from __future__ import annotations

from kernellab.model import ACCESS, ACCESS_ALIASES, LAYOUT_ALIASES, LAYOUTS, STAGE_ALIASES, STAGES, Command, Resource
from kernellab.modelkit import U32, U64, Enum, Int, List, Nested, Node, Str

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import ClassVar


class BarrierBase(Resource):
    src_access = Enum(*ACCESS, aliases=ACCESS_ALIASES)
    dst_access = Enum(*ACCESS, aliases=ACCESS_ALIASES)
    # optional in Arm's runner, where they default to ALL
    src_stage = List(Enum(*STAGES, aliases=STAGE_ALIASES), default=["ALL"], min_len=1)
    dst_stage = List(Enum(*STAGES, aliases=STAGE_ALIASES), default=["ALL"], min_len=1)


class MemoryBarrier(BarrierBase):
    kind: ClassVar[str] = "memory_barrier"


class BufferBarrier(BarrierBase):
    kind: ClassVar[str] = "buffer_barrier"
    buffer_resource = Str(nonempty=True)
    size = Int(1, U64)
    offset = Int(0, U64, default=0)


class DispatchBarrier(Command):
    kind: ClassVar[str] = "dispatch_barrier"
    image_barrier_refs = List(Str(), default=[])
    tensor_barrier_refs = List(Str(), default=[])
    memory_barrier_refs = List(Str(), default=[])
    buffer_barrier_refs = List(Str(), default=[])


class SubresourceRange(Node):
    base_mip_level = Int(0, U32, default=0)
    level_count = Int(1, U32, default=1)
    base_array_layer = Int(0, U32, default=0)
    layer_count = Int(1, U32, default=1)


class ImageBarrier(BarrierBase):
    kind: ClassVar[str] = "image_barrier"
    old_layout = Enum(*LAYOUTS, aliases=LAYOUT_ALIASES)
    new_layout = Enum(*LAYOUTS, aliases=LAYOUT_ALIASES)
    image_resource = Str(nonempty=True)
    subresource_range = Nested(SubresourceRange, default_factory=SubresourceRange)


class TensorBarrier(BarrierBase):
    kind: ClassVar[str] = "tensor_barrier"
    tensor_resource = Str(nonempty=True)
