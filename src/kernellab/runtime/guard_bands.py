"""Guard bands after the buffers a dispatch may write (``RunOptions.guard_bands``, the checker's
runs): each such buffer is an exact-size view of a longer allocation whose tail is filled with
:data:`GUARD_BYTE`, and a changed tail after the commands is a warning. The executor loads this
module only when a run asks for guard bands."""
from __future__ import annotations

import weakref

from kernellab import model as m
from kernellab.errors import shown

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any

    from kernellab.backends.base import Backend, Buffer

#: the byte a guard band is filled with before the commands run
GUARD_BYTE = 0xA5

#: bytes of guard band after a buffer: an overrun by a few thousand elements lands in it, and a
#: big buffer costs no big copy
GUARD_SIZE = 65536

#: the exact-size view of each guarded allocation, made once: a session's pool lends the
#: allocation again to later workloads
_views: weakref.WeakKeyDictionary[Any, Buffer] = weakref.WeakKeyDictionary()


def guarded_uids(ex: Any) -> set[str]:
    """The buffers of executor ``ex``'s scenario a guard band follows: those a dispatch binds whole
    as a storage buffer its shader may write, where a write past the end reaches memory (not
    ranges: their views share memory).
    ``ex`` is the executor (runtime/executor.py, which imports this module: not named here);
    it asks only where such writes reach memory (``Executor.wants_guard_bands``)."""
    guarded, ranged = set(), set()
    for c in ex.scenario.commands:
        if not isinstance(c, (m.DispatchCompute, m.DispatchFragment)):
            continue
        storage = {(s.set, s.id) for s in ex._slots(c) if s.descriptor == "storage-buffer"}
        declared: dict[tuple[int, int], Any] = {}
        for shader in ex._shaders(c):
            known = ex.interfaces.get(shader.uid)
            declared.update(known.interface.descriptors if known is not None else {})
        for b in c.bindings:
            if b.buffer_range is not None:
                ranged.add(b.resource_ref)
            elif (b.set, b.id) in storage and getattr(declared.get((b.set, b.id)), "writes", True):
                guarded.add(b.resource_ref)
    return guarded - ranged


def guarded_buffer(ex: Any, backend: Backend, r: m.Buffer) -> Buffer:
    """Buffer ``r`` as an exact-size view of an allocation :data:`GUARD_SIZE` bytes longer, the
    band after it filled with :data:`GUARD_BYTE`; the allocation is kept in ``ex.guards``."""
    band = GUARD_SIZE
    whole = ex.lease.alloc_buffer(backend, r.size + band, r.uid)
    try:
        view = _views.get(whole)
    except TypeError:  # a backend's buffers that cannot be weakly referenced: a view per run
        view = None
    if view is None:
        view = backend.sub_buffer(whole, 0, r.size)
        try:
            _views[whole] = view
        except TypeError:
            pass
    view.uid = r.uid
    backend.write_buffer(whole, bytes([GUARD_BYTE]) * band, r.size)
    ex.guards[r.uid] = (whole, band)
    return view


def check(ex: Any, backend: Backend) -> None:
    """A warning for each guard band a dispatch changed: the spec leaves such writes undefined,
    so the run does not fail, but ``verify`` can name the access."""
    where = f" {shown(ex.scenario.file)}" if ex.scenario.file is not None else " S.json"
    for uid, (whole, band) in ex.guards.items():
        data = backend.read_buffer_range(whole, whole.size - band, band)
        changed = band - data.count(GUARD_BYTE)
        if changed:
            text = (f"a dispatch wrote past the end of buffer {uid!r} ({changed} of {band} guard bytes changed "
                    f"after it): `kernellab verify{where}` names the access")
            ex.report.warnings.append(text)
