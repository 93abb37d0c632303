"""OpenCL C's async copies for the proof (docs/verify-prove.md, "Async copies").

clspv lowers ``async_work_group_copy`` to plain loads and stores done at the call and
``wait_group_events`` to nothing, which loses what the OpenCL C specification says of them: the
copy is an operation of the whole work-group, in flight from its call until a
``wait_group_events`` that waits for its event; any access to its destination, or write to its
source, by a work-item of the group while it is in flight is a data race; and every work-item of
the group must reach it with the same arguments (OpenCL C 3.0, "Async Copies from Global to Local
Memory, Local to Global Memory, and Prefetch").

So the proof sees them before clspv does: :data:`HEADER` turns each call into calls of a marker
function (``__kl_async(code, value)``, recognised by the constant its body adds,
:data:`ASYNC_MAGIC`) around one access of an arbitrary element ``i < n`` (one element stands for
all of them: z3 chooses it). The engine (:mod:`kernellab.verify.prove.encode`) gives the accesses
between :data:`BEGIN` and :data:`END` the copy's lifetime: from its call's barrier interval until
the wait that names its event (:data:`WAIT_EVENT`, :data:`WAIT_DONE`). ``event_t`` becomes an
integer: a copy's event is a number of its own, or the event it was given (the copies then share
it).
"""
from __future__ import annotations

#: the constant the marker's body adds
ASYNC_MAGIC = 0x4B4C0200
#: the marker's codes: a copy begins (value: its event argument; returns its event), ends, an
#: arbitrary element index, a wait names an event (value), a wait is done, a copy's count (value)
BEGIN, END, ANY_INDEX, WAIT_EVENT, WAIT_DONE, COUNT = 1, 2, 3, 4, 5, 6

HEADER = f"""\
#define event_t uint
__attribute__((noinline)) uint __kl_async(uint code, uint value) {{ return code + value + {ASYNC_MAGIC:#x}u; }}
int __attribute__((overloadable)) __kl_to_global(__local const void *p) {{ return 0; }}
int __attribute__((overloadable)) __kl_to_global(__global const void *p) {{ return 1; }}
#define async_work_group_copy(dst, src, n, ev) ({{ \\
  uint __kl_e = __kl_async({BEGIN}u, (ev)); uint __kl_i = __kl_async({ANY_INDEX}u, 0u); \\
  __kl_async({COUNT}u, (uint)(n)); \\
  if (__kl_i < (uint)(n)) (dst)[__kl_i] = (src)[__kl_i]; \\
  __kl_async({END}u, 0u); __kl_e; }})
#define async_work_group_strided_copy(dst, src, n, stride, ev) ({{ \\
  uint __kl_e = __kl_async({BEGIN}u, (ev)); uint __kl_i = __kl_async({ANY_INDEX}u, 0u); \\
  __kl_async({COUNT}u, (uint)(n)); \\
  if (__kl_i < (uint)(n)) {{ \\
    if (__kl_to_global(dst)) (dst)[__kl_i * (stride)] = (src)[__kl_i]; \\
    else (dst)[__kl_i] = (src)[__kl_i * (stride)]; }} \\
  __kl_async({END}u, 0u); __kl_e; }})
#define wait_group_events(num, list) do {{ \\
  for (int __kl_w = 0; __kl_w < (num); ++__kl_w) __kl_async({WAIT_EVENT}u, (list)[__kl_w]); \\
  __kl_async({WAIT_DONE}u, 0u); }} while (0)
"""
