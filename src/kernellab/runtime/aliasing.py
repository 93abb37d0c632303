"""Memory aliasing: which resources share one allocation, and where each one starts.

A scenario writes it as ``memory_group: {id, offset}`` on a buffer, image or tensor (Arm ML SDK
0.11): every resource with the same ``id`` is bound into one allocation at its ``offset``; a
tensor at an image's offset views the image's texels (a LINEAR tensor then takes the image's row
pitch as its strides). The older ``alias_target`` is refused when the scenario is read, as Arm's
runner refuses it. (A VGF's intermediates in one alias group share memory too: runtime/graph.py.)

A group's allocation is as large as its furthest member end; each offset must be a multiple of
the member's alignment on the device (checked when the group is created, with the JSON path).
Sources are written in resource order, so where members overlap the later ``src`` wins.
"""
from __future__ import annotations

from dataclasses import field

from kernellab import model as m
from kernellab.records import dataclass


@dataclass
class Member:
    resource: m.DataResource
    offset: int
    #: JSON pointer of the value that placed it (for alignment errors)
    where: str


@dataclass
class Group:
    key: str
    members: list[Member] = field(default_factory=list)

    @property
    def uids(self) -> list[str]:
        return [mb.resource.uid for mb in self.members]


def plan(scenario: m.Scenario) -> list[Group]:
    """The scenario's shared allocations, in the order their first member appears."""
    groups: dict[str, Group] = {}
    for i, r in enumerate(scenario.resources):
        if not isinstance(r, m.DataResource) or r.memory_group is None:
            continue
        key = f"memory_group:{r.memory_group.id}"
        g = groups.setdefault(key, Group(key))
        g.members.append(Member(r, r.memory_group.offset, f"/resources/{i}/{r.kind}/memory_group/offset"))
    return list(groups.values())


def aliased_images(scenario: m.Scenario) -> set[str]:
    """Images sharing a memory group with a tensor (they need VK_IMAGE_USAGE_TENSOR_ALIASING_BIT_ARM)."""
    groups_with_tensor = {r.memory_group.id for r in scenario.resources
                          if isinstance(r, m.Tensor) and r.memory_group is not None}
    return {r.uid for r in scenario.resources
            if isinstance(r, m.Image) and r.memory_group is not None and r.memory_group.id in groups_with_tensor}


def alias_target_of(tensor: m.Tensor, scenario: m.Scenario) -> m.Image | None:
    """The image a tensor views: the image of its memory group at the tensor's offset."""
    if tensor.memory_group is not None:
        for r in scenario.resources:
            if isinstance(r, m.Image) and r.memory_group is not None and r.memory_group.id == tensor.memory_group.id \
                    and r.memory_group.offset == tensor.memory_group.offset:
                return r
    return None
