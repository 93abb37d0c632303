"""Tensors (VK_ARM_tensors): loaded on a scenario's first tensor."""
from __future__ import annotations

from kernellab.model import DataResource
from kernellab.modelkit import I64, Enum, Int, List, Nested, Node, Str, VkFormat

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import ClassVar


class AliasTarget(Node):
    resource_ref = Str(default="")
    mip_level = Int(0, 0, default=0, description="only 0 is supported")
    array_layer = Int(0, 0, default=0, description="only 0 is supported")


class Tensor(DataResource):
    kind: ClassVar[str] = "tensor"
    dims = List(Int(1, I64), min_len=1)
    format = VkFormat
    shader_access = Enum("readonly", "writeonly", "readwrite")
    alias_target = Nested(AliasTarget, default=None)
    tiling = Enum("OPTIMAL", "LINEAR", default=None)
