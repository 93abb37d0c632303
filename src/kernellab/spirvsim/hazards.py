"""Hazards between dispatches: two dispatches touching the same bytes of a buffer, at least one
writing, with nothing ordering them.

Each checked dispatch leaves a :class:`~kernellab.spirvsim.dispatch.Footprint` per buffer (the
bytes it read and wrote). Whether a pipeline barrier orders two commands for a buffer is the
scenario's business (implicit barriers, ``dispatch_barrier`` access masks and stages); the caller
answers it through ``ordered(first, second, uid)``.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from kernellab.spirvsim.dispatch import DispatchResult, Footprint
from kernellab.spirvsim.findings import EXAMPLES, Finding


def dispatch_hazards(dispatches: Sequence[tuple[int, DispatchResult]],
                     ordered: Callable[[int, int, str], bool]) -> list[Finding]:
    """Findings (kind ``data-race``, scope ``inter-dispatch``) for every pair of dispatches, in
    command order, that conflict on a buffer ``ordered`` says no barrier covers. ``dispatches``
    holds (command index, result) in submission order. Each example names, per side, the
    command, the access and, where the dispatch kept them, the invocation and the instruction
    (with its source line) that made it."""
    findings: list[Finding] = []
    for i, (ci, first) in enumerate(dispatches):
        for cj, second in dispatches[i + 1:]:
            for uid, fa in first.footprints.items():
                fb = second.footprints.get(uid)
                if fb is None or ordered(ci, cj, uid):
                    continue
                lo, hi = max(fa.offset, fb.offset), min(fa.offset + fa.read.size, fb.offset + fb.read.size)
                if lo >= hi:
                    continue
                a = slice(lo - fa.offset, hi - fa.offset)
                b = slice(lo - fb.offset, hi - fb.offset)
                clash = (fa.written[a] & (fb.read[b] | fb.written[b])) | (fa.read[a] & fb.written[b])
                if not clash.any():
                    continue
                at = lo + np.nonzero(clash)[0]
                # one example per unit (the smallest scalar accessed), not three bytes of one element
                _, starts = np.unique(at // max(fa.unit, fb.unit), return_index=True)
                examples = [_example(int(x), (ci, first, fa), (cj, second, fb)) for x in at[starts[:EXAMPLES]]]
                what_a, what_b = (e["access"] for e in examples[0]["accesses"])
                message = (f"hazard on buffer {uid} between command {ci} and command {cj}: command {ci} {what_a} "
                           f"and command {cj} {what_b} bytes {int(at[0])}..{int(at[-1])} with no barrier "
                           "ordering them")
                findings.append(Finding("data-race", message, uid, "storage-buffer", "inter-dispatch",
                                        None, examples[0]["accesses"], int(clash.sum()), examples))
    return findings


def _example(byte: int, first: tuple[int, DispatchResult, Footprint], second: tuple[int, DispatchResult, Footprint]
             ) -> dict[str, Any]:
    """One conflicting byte (offset in the buffer): each side's command and access — a write
    where the first dispatch wrote, else a read against the second's write — and who made it."""
    (ci, ra, fa), (cj, rb, fb) = first, second
    a_wrote = bool(fa.written[byte - fa.offset])
    b_wrote = bool(fb.written[byte - fb.offset]) if a_wrote else True
    accesses = []
    for command, result, fp, wrote in ((ci, ra, fa, a_wrote), (cj, rb, fb, b_wrote)):
        access: dict[str, Any] = {"command": command, "access": "wrote" if wrote else "read"}
        who = fp.accessor(byte - fp.offset, wrote)
        describe = getattr(result, "describe", None)
        if who is not None and describe is not None:
            access.update(describe(*who))
        accesses.append(access)
    return {"byte_offset": byte, "commands": [ci, cj], "accesses": accesses}
