"""Hazards between dispatches: two dispatches touching the same bytes of a buffer, at least one
writing, with nothing ordering them.

Each checked dispatch leaves a :class:`~kernellab.spirvsim.dispatch.Footprint` per buffer (the
bytes it read and wrote). Whether a pipeline barrier orders two commands for a buffer is the
scenario's business (implicit barriers, ``dispatch_barrier`` access masks and stages); the caller
answers it through ``ordered(first, second, uid)``.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from kernellab.spirvsim.dispatch import DispatchResult
from kernellab.spirvsim.findings import EXAMPLES, Finding


def dispatch_hazards(dispatches: Sequence[tuple[int, DispatchResult]],
                     ordered: Callable[[int, int, str], bool]) -> list[Finding]:
    """Findings (kind ``data-race``, scope ``inter-dispatch``) for every pair of dispatches, in
    command order, that conflict on a buffer ``ordered`` says no barrier covers. ``dispatches``
    holds (command index, result) in submission order."""
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
                what_a = "wrote" if fa.written[a][at[0] - lo] else "read"
                what_b = "wrote" if fb.written[b][at[0] - lo] else "read"
                message = (f"hazard on buffer {uid} between command {ci} and command {cj}: command {ci} {what_a} "
                           f"and command {cj} {what_b} bytes {int(at[0])}..{int(at[-1])} with no barrier "
                           "ordering them")
                examples = [{"byte_offset": int(x), "commands": [ci, cj]} for x in at[:EXAMPLES]]
                findings.append(Finding("data-race", message, uid, "storage-buffer", "inter-dispatch",
                                        None, [{"command": ci, "access": what_a}, {"command": cj, "access": what_b}],
                                        int(clash.sum()), examples))
    return findings
