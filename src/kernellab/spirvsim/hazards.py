"""Hazards between dispatches: two dispatches touching the same bytes of a buffer, at least one
writing, that the synchronization recorded between them does not order.

Each checked dispatch leaves a :class:`~kernellab.spirvsim.dispatch.Footprint` per buffer (the
bytes it read and wrote). The caller states the dependencies the runner records between
commands (:class:`~kernellab.spirvsim.sync.Dependency`: pipeline barriers, implicit barriers,
submissions); :mod:`kernellab.spirvsim.sync` says what they order, and each hazard is classified
with the rule it needs:

* read-after-write: the write made available, then visible to the read;
* write-after-write: the first write made available, then an execution chain to the second;
* write-after-read: an execution chain only.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kernellab.spirvsim.dispatch import DispatchResult, Footprint
from kernellab.spirvsim.findings import EXAMPLES, Finding
from kernellab.spirvsim.sync import Dependency, Since

#: the three hazards: (name, first dispatch's access, second's)
HAZARDS = (("read-after-write", "written", "read"), ("write-after-write", "written", "written"),
           ("write-after-read", "read", "written"))


def dispatch_hazards(dispatches: Sequence[tuple[int, DispatchResult]],
                     dependencies: Sequence[Dependency] = ()) -> list[Finding]:
    """Findings (kind ``data-race``, scope ``inter-dispatch``) for every pair of dispatches, in
    command order, that conflict on bytes of a buffer the ``dependencies`` (each at its command
    index) do not order. ``dispatches`` holds (command index, result) in submission order. Each
    finding names its hazard, the two commands and what is missing; each example names, per
    side, the command, the access and, where the dispatch kept them, the invocation and the
    instruction (with its source line) that made it."""
    deps = sorted(dependencies, key=lambda d: d.at)
    findings: list[Finding] = []
    for i, (ci, first) in enumerate(dispatches):
        since = Since({uid: (fp.offset, fp.read.size) for uid, fp in first.footprints.items()})
        k = next((n for n, d in enumerate(deps) if d.at >= ci), len(deps))  # ci's own: recorded after it
        for cj, second in dispatches[i + 1:]:
            while k < len(deps) and deps[k].at < cj:
                group = [d for d in deps[k:] if d.at == deps[k].at]
                since.apply(*group)
                k += len(group)
            for uid, fa in first.footprints.items():
                fb = second.footprints.get(uid)
                if fb is not None:
                    findings += _pair(uid, (ci, first, fa), (cj, second, fb), since)
            if since.executed and all(((since.visible[uid] & since.written_available(uid)) | ~fp.written).all()
                                      for uid, fp in first.footprints.items()):
                break  # every later access is ordered after this dispatch's
    return findings


def _pair(uid: str, a_side: tuple[int, DispatchResult, Footprint], b_side: tuple[int, DispatchResult, Footprint],
          since: Since) -> list[Finding]:
    (ci, _, fa), (cj, _, fb) = a_side, b_side
    lo, hi = max(fa.offset, fb.offset), min(fa.offset + fa.read.size, fb.offset + fb.read.size)
    if lo >= hi:
        return []
    a, b = slice(lo - fa.offset, hi - fa.offset), slice(lo - fb.offset, hi - fb.offset)
    available = since.written_available(uid)[a]
    ordered = {"read-after-write": since.visible[uid][a], "write-after-write": available,
               "write-after-read": np.full(hi - lo, since.executed)}
    out = []
    waw = fa.written[a] & fb.written[b]
    for hazard, mine, theirs in HAZARDS:
        clash = getattr(fa, mine)[a] & getattr(fb, theirs)[b] & ~ordered[hazard]
        if hazard == "write-after-read":
            clash &= ~waw  # reported as write-after-write
        if not clash.any():
            continue
        at = lo + np.nonzero(clash)[0]
        # one example per unit (the smallest scalar accessed), not three bytes of one element
        _, starts = np.unique(at // max(fa.unit, fb.unit), return_index=True)
        wrote = (mine == "written", theirs == "written")
        examples = [_example(int(x), a_side, b_side, wrote, hazard) for x in at[starts[:EXAMPLES]]]
        what_a, what_b = ("wrote" if w else "read" for w in wrote)
        missing = _missing(hazard, since, bool(available[at[0] - lo]), uid, ci, cj, fa.storage == "image")
        message = (f"hazard on {'image' if fa.storage == 'image' else 'buffer'} {uid} ({hazard}) between command "
                   f"{ci} and command {cj}: command {ci} "
                   f"{what_a} and command {cj} {what_b} bytes {int(at[0])}..{int(at[-1])}; {missing}")
        out.append(Finding("data-race", message, uid, fa.storage, "inter-dispatch", None,
                           examples[0]["accesses"], int(clash.sum()), examples))
    return out


def _missing(hazard: str, since: Since, available: bool, uid: str, ci: int, cj: int, image: bool = False) -> str:
    """What the hazard lacks, in the specification's terms, naming what was recorded."""
    names = [d.name for d in since.seen]
    recorded = ("recorded between them: " + ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
                if names else "nothing recorded between them: no barrier, implicit barrier or frame boundary")
    if not since.executed or hazard == "write-after-read":
        return (f"no execution dependency orders command {cj} after command {ci}, no chain of barriers from "
                f"the COMPUTE stage to the COMPUTE stage ({recorded})")
    if not available:
        barrier = f"an image_barrier of {uid} holding these mip levels" if image else \
            f"a buffer_barrier of {uid} holding these bytes"
        return (f"only an execution dependency orders them: no barrier makes command {ci}'s write available "
                f"(a memory_barrier, or {barrier}, with src_access a write "
                f"and src_stage COMPUTE or ALL; {recorded})")
    return (f"command {ci}'s write is made available but not visible to the read (no barrier after that with "
            f"dst_access a read and dst_stage COMPUTE or ALL holds these bytes; {recorded})")


def _example(byte: int, first: tuple[int, DispatchResult, Footprint], second: tuple[int, DispatchResult, Footprint],
             wrote: tuple[bool, bool], hazard: str) -> dict[str, Any]:
    """One conflicting byte (offset in the buffer): each side's command and access, and who made
    it."""
    accesses = []
    for (command, result, fp), w in zip((first, second), wrote):
        access: dict[str, Any] = {"command": command, "access": "wrote" if w else "read"}
        who = fp.accessor(byte - fp.offset, w)
        describe = getattr(result, "describe", None)
        if who is not None and describe is not None:
            access.update(describe(*who))
        accesses.append(access)
    return {"byte_offset": byte, "commands": [first[0], second[0]], "hazard": hazard, "accesses": accesses}
