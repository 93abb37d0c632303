"""The objects a resource may hold and a file seldom gives: a data resource's memory group, a
shader's subgroup sizing. Built when a scenario first has one (``Nested`` asks for the class then),
so a run of plain buffers builds neither."""
from __future__ import annotations

from kernellab.modelkit import U32, U64, Bool, Enum, Int, Node, Str


class MemoryGroup(Node):
    """Arm 0.11's aliasing form: resources with the same ``id`` share one allocation."""

    id = Str(nonempty=True)
    offset = Int(0, U64, default=0)


class SubgroupSize(Node):
    """kernellab's extension (AmberScript's ``SUBGROUP`` of a compute pipeline): how the device
    sizes the pipeline's subgroups (VK_EXT_subgroup_size_control, core in Vulkan 1.3)."""

    required_size = Int(1, U32, default=None,
                        description="the subgroup size the pipeline must run with (a power of two)")
    required_size_bound = Enum("min", "max", default=None,
                               description="instead of required_size: the device's minSubgroupSize or "
                                           "maxSubgroupSize, read when the pipeline is made")
    full_subgroups = Bool(default=False, description="every subgroup fully populated (computeFullSubgroups)")
    varying_size = Bool(default=False, description="the subgroup size may vary (ALLOW_VARYING_SUBGROUP_SIZE)")
