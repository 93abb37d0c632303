"""Async copies in flight, modelled by rewriting the kernel source before Oclgrind builds it.

An ``async_work_group_copy`` is an operation of the whole work-group, in flight from its call until
the ``wait_group_events`` that waits for its event; when that wait returns (in every work-item: it
is a work-group function) the copy is complete and its data visible to the group, with no barrier
needed (OpenCL C "Async Copies"; the OpenCL CTS reads a copy's destination right after the wait).
An access to the destination (or a write to the source) by any work-item while the copy is in
flight is a data race, and a copy reached by only part of a work-group, or with different
arguments, is barrier divergence. Oclgrind performs a copy when the group reaches the wait and
treats the wait as a barrier, so an access between the copy and the wait is usually not seen. The
rewrite makes Oclgrind's own race detector see it:

* at the call, the copy is also done by the work-items themselves (inline, so its accesses are
  reported on the call's line and column): element ``e`` is written (and its source read) by two
  different work-items, ``(e + c) mod L`` and ``(e + c + 1) mod L`` with ``c`` the call's line,
  with the same value, which Oclgrind allows (a uniform write), so any other access by any
  work-item of the group in the same barrier interval races with one of them. Oclgrind records one
  store per address and work-item in an interval, so copies from other lines get other writers:
  two copies colliding on a destination race;
* every copy still in flight is done again the same way after each barrier that fences memory
  (Oclgrind's sync forgets the first) and after a ``wait_group_events`` that does not wait for it;
  a copy the wait waited for is complete and forgotten;
* the call is preceded by a barrier without memory fences, so the race detector orders nothing,
  but Oclgrind reports a group that does not reach it uniformly as barrier divergence; the copy's
  event argument rides in the barrier's flags (bits :data:`EVENT_SHIFT` and up), so work-items
  passing different events to one copy are reported too (Oclgrind compares the flags).

The copies done again are placed (with ``#line``) on the call's own line, at column
:data:`SHADOW_COLUMN` or beyond; with the inline ones at the call's own column, the parent can tell
them from the user's accesses and name the copy.  Kernels without async copies are built unchanged.
"""
from __future__ import annotations

import re

#: accesses reported at this column or beyond are the modelled copy's, not the user's
SHADOW_COLUMN = 900
#: copies tracked per work-item (more are still checked at their call, not after barriers)
TABLE_SIZE = 8
#: the barrier before each copy carries the copy's event argument in its fence flags from this bit on
#: (Oclgrind reports work-items reaching one barrier with other flags; the memory fences are bits 0-2)
EVENT_SHIFT = 8

_CALL = re.compile(r"\basync_work_group(?:_strided)?_copy\b")
_KERNEL_BODY = re.compile(r"\b(?:__kernel|kernel)\b[^;{}]*?\([^{}]*?\)\s*(?:__attribute__\s*\(\(.*?\)\)\s*)*\{",
                          re.S)

_PRELUDE = r"""
typedef struct { ulong ev, dst, src, n, dstride, sstride; uint size, dir, line; } __kl_copy_t;
typedef struct { int n; __kl_copy_t c[%(table)d]; } __kl_table_t;
enum { __kl_copies = 1 }; /* outside kernels: no table (and no program-scope memory, which would
                             shift Oclgrind's buffer numbers) */
uint __attribute__((overloadable)) __kl_dir(__local const void *d) { return 0; }
uint __attribute__((overloadable)) __kl_dir(__global const void *d) { return 1; }
void __kl_shadow_at(uint line, uint dir, ulong dst, ulong src, ulong n, ulong size, ulong dstride, ulong sstride);
void __attribute__((overloadable)) __kl_replay(__private __kl_table_t *t, int waited, int n, __private ulong *evs) {
  int keep = 0;
  for (int i = 0; i < t->n; ++i) {
    __private __kl_copy_t *c = &t->c[i];
    int done = 0;
    for (int k = 0; k < n; ++k) done |= waited && evs[k] == c->ev;
    if (done) continue;  /* complete for the whole group: Oclgrind copied it at the wait */
    __kl_shadow_at(c->line, c->dir, c->dst, c->src, c->n, c->size, c->dstride, c->sstride);
    if (keep != i) t->c[keep] = *c;
    ++keep;
  }
  t->n = keep;
}
void __attribute__((overloadable)) __kl_replay(int t, int waited, int n, __private ulong *evs) {}
void __attribute__((overloadable)) __kl_track(__private __kl_table_t *t, uint line, uint dir, ulong dst, ulong src,
                                              ulong n, ulong size, ulong dstride, ulong sstride, ulong ev) {
  if (t->n < %(table)d) { __kl_copy_t c = {ev, dst, src, n, dstride, sstride, (uint)size, dir, line}; t->c[t->n++] = c; }
}
void __attribute__((overloadable)) __kl_track(int t, uint line, uint dir, ulong dst, ulong src,
                                              ulong n, ulong size, ulong dstride, ulong sstride, ulong ev) {}
/* the barrier before the copy syncs nothing (no fence bits) but must be reached by the whole group
   with the same event argument, carried in fence bits 8-31 that Oclgrind compares and ignores */
#define __KL_PRE(D, S, N, STRIDE, E) \
  __typeof__(&(D)[0]) __kl_d = (D); __typeof__(&(S)[0]) __kl_s = (S); size_t __kl_n = (N); \
  size_t __kl_st = (STRIDE); event_t __kl_in = (E); uint __kl_dr = __kl_dir(__kl_d); \
  barrier((cl_mem_fence_flags)((*(__private uint *)&__kl_in & 0xffffffu) << %(event_shift)d)); \
  ulong __kl_ds = __kl_dr ? __kl_st : 1, __kl_ss = __kl_dr ? 1 : __kl_st;
/* the copy by the work-items, inline: its accesses are on the call's line, at the call's column */
#define __KL_POST { \
  size_t __kl_L = get_local_size(0) * get_local_size(1) * get_local_size(2); \
  size_t __kl_w = get_local_id(0) + get_local_size(0) * (get_local_id(1) + get_local_size(1) * get_local_id(2)); \
  for (size_t __kl_p = 0; __kl_p < (__kl_L > 1 ? 2 : 1); ++__kl_p) \
    for (size_t __kl_i = (__kl_w + 2 * __kl_L - __kl_p - __LINE__ %% __kl_L) %% __kl_L; __kl_i < __kl_n; __kl_i += __kl_L) \
      __kl_d[__kl_i * __kl_ds] = __kl_s[__kl_i * __kl_ss]; } \
  __kl_track(__kl_copies, __LINE__, __kl_dr, (ulong)__kl_d, (ulong)__kl_s, __kl_n, sizeof(*__kl_d), __kl_ds, \
             __kl_ss, *(__private ulong *)&__kl_e); \
  __kl_e;
/* a macro's own name is not expanded inside it: the builtins below are Oclgrind's */
#define async_work_group_copy(D, S, N, E) ({ __KL_PRE(D, S, N, 1, E) \
  event_t __kl_e = async_work_group_copy(__kl_d, __kl_s, __kl_n, __kl_in); __KL_POST })
#define async_work_group_strided_copy(D, S, N, STRIDE, E) ({ __KL_PRE(D, S, N, STRIDE, E) \
  event_t __kl_e = async_work_group_strided_copy(__kl_d, __kl_s, __kl_n, __kl_st, __kl_in); __KL_POST })
#define wait_group_events(N, EVS) do { int __kl_wn = (N); __typeof__(&(EVS)[0]) __kl_we = (EVS); \
  wait_group_events(__kl_wn, __kl_we); __kl_replay(__kl_copies, 1, __kl_wn, (__private ulong *)__kl_we); } while (0)
/* a barrier that fences memory makes Oclgrind forget the copies' accesses: copies still in flight are done
   again; one without fence bits (the copies' own) orders nothing for the race detector */
#define barrier(F) do { cl_mem_fence_flags __kl_f = (F); barrier(__kl_f); \
  if (__kl_f & (CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)) __kl_replay(__kl_copies, 0, 0, 0); } while (0)
/* a copy done again after a barrier or wait (replays only): by bytes, or 4-byte words when they divide */
#define __KL_SHADOW { \
  size_t L = get_local_size(0) * get_local_size(1) * get_local_size(2), \
         w = get_local_id(0) + get_local_size(0) * (get_local_id(1) + get_local_size(1) * get_local_id(2)), \
         wide = size %% 4 == 0, u = wide ? size / 4 : size, p, i, b; \
  for (p = 0; p < (L > 1 ? 2 : 1); ++p) for (i = (w + 2 * L - p - line %% L) %% L; i < n; i += L) for (b = 0; b < u; ++b) { \
    ulong to = i * dstride * u + b, from = i * sstride * u + b; \
    if (dir == 0 && wide) ((__local uint *)dst)[to] = ((__global const uint *)src)[from]; \
    else if (dir == 0) ((__local uchar *)dst)[to] = ((__global const uchar *)src)[from]; \
    else if (wide) ((__global uint *)dst)[to] = ((__local const uint *)src)[from]; \
    else ((__global uchar *)dst)[to] = ((__local const uchar *)src)[from]; } }
"""


def call_lines(source: str) -> list[int]:
    """The 1-based lines of ``source`` that call an async copy."""
    return [n for n, line in enumerate(source.splitlines(), 1) if _CALL.search(line)]


def instrument(source: str) -> str | None:
    """The source with async copies modelled, or None when it has none (built unchanged).

    Line numbers of the user's code are kept (``#line 1`` after the prelude, the per-kernel table
    inserted on the line of the kernel's opening brace)."""
    lines = call_lines(source)
    if not lines:
        return None
    body = _KERNEL_BODY.sub(lambda m: m.group(0) + " __kl_table_t __kl_table; __kl_table.n = 0; "
                              "__private __kl_table_t *__kl_copies = &__kl_table;", source)
    pad = " " * SHADOW_COLUMN
    params = "uint dir, ulong dst, ulong src, ulong n, ulong size, ulong dstride, ulong sstride"
    args = "dir, dst, src, n, size, dstride, sstride"
    # one function a call line (its accesses on that line, at column SHADOW_COLUMN and beyond)
    functions = "".join(f"#line {n or 1000001}\nvoid __kl_shadow_{n}({params}) {pad}{{ uint line = {n}; "
                        "__KL_SHADOW }\n" for n in lines + [0])  # 0: a copy made through a macro of the user's
    cases = "".join(f"case {n}: __kl_shadow_{n}({args}); break;\n" for n in lines)
    postlude = ("\n" + functions + "#line 1000000\n"
                f"void __kl_shadow_at(uint line, {params}) {{\nswitch (line) {{\n" + cases +
                f"default: __kl_shadow_0({args});\n}}\n}}\n")
    return _PRELUDE % {"table": TABLE_SIZE, "event_shift": EVENT_SHIFT} + "#line 1\n" + body + postlude
