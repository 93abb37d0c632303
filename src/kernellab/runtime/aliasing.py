"""Memory aliasing: which resources share one allocation, and where each one starts.

Two forms in a scenario:

- ``memory_group: {id, offset}`` on a buffer, image or tensor (Arm ML SDK 0.11): every resource
  with the same ``id`` is bound into one allocation at its ``offset``;
- a tensor's ``alias_target: {resource_ref}`` naming an image: the tensor is bound to the image's
  memory at the image's start (a LINEAR tensor then takes the image's row pitch as its strides).

A group's allocation is as large as its furthest member end; each offset must be a multiple of
the member's alignment on the device (checked when the group is created, with the JSON path).
Sources are written in resource order, so where members overlap the later ``src`` wins.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kernellab import model as m


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
    index = {r.uid: i for i, r in enumerate(scenario.resources)}
    image_group: dict[str, Group] = {}
    for i, r in enumerate(scenario.resources):
        if not isinstance(r, m.DataResource) or r.memory_group is None:
            continue
        key = f"memory_group:{r.memory_group.id}"
        g = groups.setdefault(key, Group(key))
        g.members.append(Member(r, r.memory_group.offset, f"/resources/{i}/{r.kind}/memory_group/offset"))
        if isinstance(r, m.Image):
            image_group[r.uid] = g
    for i, r in enumerate(scenario.resources):
        if not isinstance(r, m.Tensor) or r.alias_target is None or not r.alias_target.resource_ref:
            continue
        target = scenario.by_uid.get(r.alias_target.resource_ref)
        if not isinstance(target, m.Image):
            continue  # reported when the scenario was loaded
        g = image_group.get(target.uid)
        if g is None:
            key = f"alias_target:{target.uid}"
            g = groups.setdefault(key, Group(key))
            if not g.members:
                g.members.append(Member(target, 0, f"/resources/{index[target.uid]}/image"))
            image_group[target.uid] = g
        image_offset = next(mb.offset for mb in g.members if mb.resource is target)
        if r.memory_group is not None:
            # both forms on one tensor: it must land where the image is
            continue
        g.members.append(Member(r, image_offset, f"/resources/{i}/tensor/alias_target"))
    return list(groups.values())


def aliased_images(scenario: m.Scenario) -> set[str]:
    """Images some tensor aliases (they need VK_IMAGE_USAGE_TENSOR_ALIASING_BIT_ARM)."""
    out = set()
    for r in scenario.resources:
        if isinstance(r, m.Tensor) and r.alias_target is not None and r.alias_target.resource_ref:
            out.add(r.alias_target.resource_ref)
    groups_with_tensor = {r.memory_group.id for r in scenario.resources
                          if isinstance(r, m.Tensor) and r.memory_group is not None}
    for r in scenario.resources:
        if isinstance(r, m.Image) and r.memory_group is not None and r.memory_group.id in groups_with_tensor:
            out.add(r.uid)
    return out


def alias_target_of(tensor: m.Tensor, scenario: m.Scenario) -> m.Image | None:
    """The image a tensor shares memory with (``alias_target``, or an image of its memory group)."""
    if tensor.alias_target is not None and tensor.alias_target.resource_ref:
        target = scenario.by_uid.get(tensor.alias_target.resource_ref)
        return target if isinstance(target, m.Image) else None
    if tensor.memory_group is not None:
        for r in scenario.resources:
            if isinstance(r, m.Image) and r.memory_group is not None and r.memory_group.id == tensor.memory_group.id \
                    and r.memory_group.offset == tensor.memory_group.offset:
                return r
    return None
