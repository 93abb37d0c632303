"""Findings of the SPIR-V checker, grouped so that one defect is reported once.

The kinds and the verdict rule are OpenCL verify's: ``data-race``, ``barrier-divergence`` and
``out-of-bounds`` are defects, and so are the subgroup kinds ``subgroup-inactive-read`` and
``subgroup-nonuniform`` (:mod:`kernellab.spirvsim.subgroup`); ``uninitialized-read`` is a warning unless checked
(``--check uninitialized`` or ``--check all``). A finding names the resource (the buffer's
``uid`` or the workgroup variable), the element index, the source line of each access and the
invocations involved (global, local and workgroup ids), with a count and a few examples.
"""
from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import field
from typing import Any

import numpy as np

from kernellab.records import dataclass

#: kinds that make the verdict ``defects`` whatever is checked
DEFECT_KINDS = ("data-race", "barrier-divergence", "out-of-bounds", "subgroup-inactive-read", "subgroup-nonuniform")
#: every kind the checker reports
KINDS = DEFECT_KINDS + ("uninitialized-read",)
#: examples kept per finding
EXAMPLES = 3


@dataclass
class Finding:
    kind: str
    message: str
    resource: str | None = None
    storage: str | None = None  # "workgroup", "storage-buffer", "uniform", "push-constant", "function", ...
    scope: str | None = None  # "intra-workgroup" or "inter-workgroup" for races
    index: int | None = None  # element index of the first example
    accesses: list[dict[str, Any]] = field(default_factory=list)  # the first example's accesses
    count: int = 0
    examples: list[dict[str, Any]] = field(default_factory=list)

    @property
    def severity(self) -> str:
        return "error" if self.kind in DEFECT_KINDS else "warning"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "severity": self.severity, "message": self.message, "resource": self.resource,
                "storage": self.storage, "scope": self.scope, "index": self.index, "accesses": self.accesses,
                "work_items": [[a["invocation"] for a in e.get("accesses", []) if "invocation" in a]
                               for e in self.examples],
                "count": self.count, "examples": self.examples}


def verdict(findings: Collection[Finding], checks: Collection[str] = ()) -> str:
    """``defects`` when a finding is a defect kind or a kind the user checks; else ``verified``."""
    checked = set(DEFECT_KINDS)
    if "all" in checks:
        checked |= set(KINDS)
    for c in checks:
        checked.add("uninitialized-read" if c == "uninitialized" else c)
    return "defects" if any(f.kind in checked for f in findings) else "verified"


class Recorder:
    """Collects findings by (kind, resource, instructions, scope): counts every occurrence, keeps
    the first few as examples. ``where(inst)`` gives an instruction's location and source text,
    ``who(lane)`` an invocation's ids."""

    def __init__(self, where: Callable[[int], dict[str, Any]], who: Callable[[int], dict[str, list[int]]]):
        self.where, self.who = where, who
        self._by_key: dict[tuple, Finding] = {}

    def findings(self) -> list[Finding]:
        order = {k: i for i, k in enumerate(KINDS)}
        return sorted(self._by_key.values(), key=lambda f: order.get(f.kind, 99))

    def _access(self, lane: int, inst: int, access: str) -> dict[str, Any]:
        return {"invocation": self.who(lane), "access": access, **self.where(inst)}

    def _add(self, key: tuple, make: Callable[[], Finding], count: int, examples: list[dict[str, Any]]) -> None:
        f = self._by_key.get(key)
        if f is None:
            f = self._by_key[key] = make()
            if examples:
                f.accesses = examples[0]["accesses"]
                f.index = examples[0].get("index")
        f.count += count
        room = EXAMPLES - len(f.examples)
        if room > 0:
            f.examples.extend(examples[:room])

    def race(self, resource: str, storage: str, inst: int, access: str, lanes: np.ndarray, index: np.ndarray | None,
             partner: np.ndarray, partner_inst: np.ndarray, partner_access: list[str], across: np.ndarray) -> None:
        """Record conflicting accesses (arrays over the conflicting invocations)."""
        for far in (False, True):
            sel = across == far
            if not sel.any():
                continue
            pinsts = partner_inst[sel]
            for pi in np.unique(pinsts):
                s2 = np.nonzero(sel)[0][pinsts == pi]
                scope = "inter-workgroup" if far else "intra-workgroup"
                places = tuple(sorted((inst, int(pi))))
                key = ("data-race", resource, places, scope)
                examples = []
                for j in s2[:EXAMPLES]:
                    ex: dict[str, Any] = {"accesses": [self._access(int(lanes[j]), inst, access),
                                                       self._access(int(partner[j]), int(pi), partner_access[j])]}
                    if index is not None:
                        ex["index"] = int(index[j])
                    examples.append(ex)
                between = "invocations of different workgroups" if far else "invocations of one workgroup"
                msg = (f"data race on {resource} ({storage}): {access} and {partner_access[s2[0]]} by two "
                       f"{between} not ordered by a barrier")

                def make(msg: str = msg, scope: str = scope) -> Finding:
                    return Finding("data-race", msg, resource, storage, scope)
                self._add(key, make, len(s2), examples)

    def out_of_bounds(self, resource: str, storage: str, inst: int, access: str, lanes: np.ndarray,
                      index: np.ndarray | None, offsets: np.ndarray, size: int,
                      texels: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
                      samples: tuple[np.ndarray, int] | None = None) -> None:
        """``texels``: for an image, per access its (x, y, z) coordinates, the extent of the level and
        the level (the message names these instead of bytes); ``samples``: for a multisampled
        image, per access the sample index, and the image's sample count."""
        key = ("out-of-bounds", resource, (inst,))
        examples = []
        for j in range(min(EXAMPLES, len(lanes))):
            ex: dict[str, Any] = {"accesses": [self._access(int(lanes[j]), inst, access)],
                                  "byte_offset": int(offsets[j])}
            if index is not None:
                ex["index"] = int(index[j])
            if texels is not None:
                ex["coordinates"], ex["level"] = texels[0][j].tolist(), int(texels[2][j])
            examples.append(ex)
        what = f"element {int(index[0])}" if index is not None else f"byte offset {int(offsets[0])}"
        msg = f"out-of-bounds {access} of {resource} ({storage}, {size} bytes): {what}"
        if texels is not None:
            coords, extent, level = texels
            msg = (f"out-of-bounds {access} of {resource} ({storage}): texel {tuple(coords[0].tolist())} outside "
                   f"mip level {int(level[0])} of {'x'.join(str(int(x)) for x in extent[0])} texels")
            if samples is not None and not 0 <= int(samples[0][0]) < samples[1]:
                msg = (f"out-of-bounds {access} of {resource} ({storage}): sample {int(samples[0][0])} of texel "
                       f"{tuple(coords[0].tolist())}, outside the image's {samples[1]} samples")
        self._add(key, lambda: Finding("out-of-bounds", msg, resource, storage), len(lanes), examples)

    def uninitialized(self, resource: str, inst: int, lanes: np.ndarray, index: np.ndarray | None) -> None:
        key = ("uninitialized-read", resource, (inst,))
        examples = []
        for j in range(min(EXAMPLES, len(lanes))):
            ex: dict[str, Any] = {"accesses": [self._access(int(lanes[j]), inst, "read")]}
            if index is not None:
                ex["index"] = int(index[j])
            examples.append(ex)
        msg = f"read of {resource} (workgroup memory) before anything was written there"
        self._add(key, lambda: Finding("uninitialized-read", msg, resource, "workgroup"), len(lanes), examples)

    def subgroup(self, kind: str, inst: int, lanes: np.ndarray, partners: np.ndarray, message: str,
                 targets: np.ndarray | None = None) -> None:
        """A subgroup operation the specification leaves undefined: ``lanes`` executed it,
        ``partners`` (-1: none) is the invocation it read (inactive) or one that disagreed."""
        key = (kind, None, (inst,))
        examples = []
        for j in range(min(EXAMPLES, len(lanes))):
            ex: dict[str, Any] = {"accesses": [self._access(int(lanes[j]), inst, "subgroup operation")]}
            if int(partners[j]) >= 0:
                ex["partner"] = self.who(int(partners[j]))
            if targets is not None:
                ex["subgroup_invocation"] = int(targets[j])
            examples.append(ex)
        self._add(key, lambda: Finding(kind, message), len(lanes), examples)

    def divergence(self, inst: int, arrived: list[int], missing: list[int], groups: int) -> None:
        key = ("barrier-divergence", None, (inst,))
        examples = [{"accesses": [self._access(a, inst, "barrier")],
                     "not_arrived": self.who(m)} for a, m in zip(arrived, missing)][:EXAMPLES]
        msg = ("barrier reached by only part of a workgroup (non-uniform control flow) "
               f"in {groups} workgroup(s)")
        self._add(key, lambda: Finding("barrier-divergence", msg), groups, examples)
