"""GPUVerify's annotations as the proof engine reads them (docs/verify-prove.md, "Annotations").

OpenCL C gets :data:`ANNOTATION_HEADER` before its first line: each annotation a call of an
extern function named ``__kl_*`` that clspv keeps; GLSL declares the same functions itself
(:data:`GLSL_HEADER`, an ``#include``-able text). The engine
(:mod:`kernellab.verify.prove.encode`) recognises the calls by name.
"""
from __future__ import annotations

import re

from kernellab.records import dataclass

#: GPUVerify's annotations the engine does not model, in the order of their number in
#: ``__kl_unsupported(N)`` (reaching one gives ``unknown`` naming it); a number stays with its
#: name once that annotation is modelled (``__atomic_has_taken_value``, ``__array_snapshot``,
#: ``__dominator_enabled`` and the permissions no longer use theirs)
UNSUPPORTED = (
    '__function_wide_invariant',
    '__at_most_one',
    '__return_val_ptr',
    '__ptr_base',
    '__reads_from',
    '__writes_to',
    '__read_permission',
    '__write_permission',
    '__equal_floats',
    '__equal_doubles',
    '__atomic_has_taken_value',
    '__array_snapshot',
    '__dominator_enabled',
    '__axiom',
    '__add_noovfl_char',
    '__add_noovfl_short',
    '__add_noovfl_long',
    '__add_noovfl_unsigned_char',
    '__add_noovfl_unsigned_short',
    '__add_noovfl_unsigned_long',
    '__uniform_ptr_base',
    '__distinct_ptr_base',
    '__other_ptr_base',
    '__not_accessed',
    '__accessed',
    '__non_temporal_loads_begin',
    '__non_temporal_loads_end',
    '__spec_* function (a call stands for its contract)',
)
#: GPUVerify's specification language as calls the engine reads: each annotation a call of an
#: function clspv keeps as a call (``noinline``; a declared function without a body crashes clspv).
#: clspv keeps no function names, so each body adds its own constant (:data:`MAGIC`), which the
#: engine recognises. A loop invariant is asserted each time
#: the loop head evaluates it (GPUVerify's must hold there too); a candidate invariant may be
#: false, so it is dropped; an annotation the engine does not model is a call it refuses by number
ANNOTATION_HEADER = """\
/* kernellab verify --prove: GPUVerify's annotations (docs/verify-prove.md) */
__attribute__((noinline)) int __kl_assert(int c) { return c + 0x4b4c0001; }
__attribute__((noinline)) int __kl_assume(int c) { return c + 0x4b4c0002; }
__attribute__((noinline)) int __kl_requires(int c) { return c + 0x4b4c0003; }
__attribute__((noinline)) int __kl_unsupported(int c) { return c + 0x4b4c0004; }
__attribute__((noinline)) int __kl_requires_all(int c) { return c + 0x4b4c0006; }
__attribute__((noinline)) int __kl_ensures(int c) { return c + 0x4b4c0007; }
__attribute__((noinline)) int __kl_ensures_all(int c) { return c + 0x4b4c0008; }
__attribute__((noinline)) int __kl_return(int c) { return c + 0x4b4c0009; }
__attribute__((noinline)) int4 __kl_return4(int c) { return (int4)(c + 0x4b4c000a); }
__attribute__((noinline)) int __kl_other(int c) { return c + 0x4b4c000b; }
__attribute__((noinline)) int __kl_enabled(int c) { return c + 0x4b4c000c; }
__attribute__((noinline)) int __kl_read(int c) { return c + 0x4b4c000d; }
__attribute__((noinline)) int __kl_write(int c) { return c + 0x4b4c000e; }
__attribute__((noinline)) int __kl_read_offset(int c) { return c + 0x4b4c000f; }
__attribute__((noinline)) int __kl_write_offset(int c) { return c + 0x4b4c0010; }
__attribute__((noinline)) int __kl_ptr_offset(int c) { return c + 0x4b4c0011; }
__attribute__((noinline)) unsigned __kl_noovfl(unsigned a, unsigned b) { return a + b + 0x4b4c0012; }
__attribute__((noinline)) int __kl_noovfl_signed(int a, int b) { return a + b + 0x4b4c0013; }
__attribute__((noinline)) unsigned __kl_noovfl_pred(unsigned a, unsigned b, unsigned c, unsigned d) { return a + b + c + d + 0x4b4c0014; }
__attribute__((noinline)) int __kl_requires_fn(int c) { return c + 0x4b4c0015; }
__attribute__((noinline)) int __kl_instance(int c) { return c + 0x4b4c0016; }
__attribute__((noinline)) int __kl_bi_check(int c) { return c + 0x4b4c0017; }
__attribute__((noinline)) int __kl_bi_inst(int c) { return c + 0x4b4c0018; }
__attribute__((noinline)) int __kl_bi_assume(int c) { return c + 0x4b4c0019; }
__attribute__((noinline)) int __kl_spec(int c) { return c + 0x4b4c001a; }
__attribute__((noinline)) int __kl_spec_write(int c) { return c + 0x4b4c001b; }
__attribute__((noinline)) int __kl_spec_read(int c) { return c + 0x4b4c001c; }
__attribute__((noinline)) int __kl_spec_ensures(int c) { return c + 0x4b4c001d; }
__attribute__((noinline)) int __kl_spec_end(int c) { return c + 0x4b4c001e; }
__attribute__((noinline)) int __kl_dominator(int c) { return c + 0x4b4c001f; }
__attribute__((noinline)) int __kl_bi_other(int c) { return c + 0x4b4c0020; }
__attribute__((noinline)) int __kl_bi_pair(int c) { return c + 0x4b4c0021; }
__attribute__((noinline)) int __kl_snapshot(int src, int dst) { return src + dst + 0x4b4c0023; }
__attribute__((noinline)) int __kl_taken(unsigned value, unsigned offset, int c) { return c + (int)(offset + value) + 0x4b4c0022; }
size_t __kl_gid_base0(void) { return get_global_id(0) - get_local_id(0); }
#define __KL_ID ((int)get_local_id(0))
#define __assert(x) __kl_assert((x) ? 1 : 0)
#define __global_assert(x) __kl_assert((x) ? 1 : 0)
#define __invariant(x) __kl_assert((x) ? 1 : 0)
#define __global_invariant(x) __kl_assert((x) ? 1 : 0)
#define __assume(x) __kl_assume((x) ? 1 : 0)
#define __requires(x) __kl_requires((x) ? 1 : 0)
#define __global_requires(x) __kl_requires((x) ? 1 : 0)
#define __requires_in_function(x) __kl_requires_fn((x) ? 1 : 0)
#define __global_requires_in_function(x) __kl_requires_all((x) ? 1 : 0)
#define __ensures(x) __kl_ensures((x) ? 1 : 0)
#define __global_ensures(x) __kl_ensures_all((x) ? 1 : 0)
#define __return_val_int() __kl_return(__KL_ID)
#define __return_val_bool() (__kl_return(__KL_ID) != 0)
#define __return_val_int4() __kl_return4(__KL_ID)
#define __old_int(x) (x)
#define __old_bool(x) (x)
#define __candidate_invariant(x) 0
#define __candidate_global_invariant(x) 0
#define __function_wide_candidate_invariant(x) 0
#define __candidate_assert(x) 0
#define __candidate_global_assert(x) 0
#define __implies(a, b) (!(a) || (b))
#define __ite(c, a, b) ((c) ? (a) : (b))
#define __enabled() (__kl_enabled(__KL_ID) != 0)
#define __other_int(x) __kl_other((int)(x))
#define __other_bool(x) (__kl_other((x) ? 1 : 0) != 0)
#define __uniform_int(x) ((x) == __other_int(x))
#define __uniform_bool(x) (!!(x) == __other_bool(x))
#define __distinct_int(x) ((x) != __other_int(x))
#define __distinct_bool(x) (!!(x) != __other_bool(x))
#define __all(x) (!!(x) & __other_bool(x))
#define __exclusive(x) (!__all(x))
#define __same_group (get_group_id(0) == __other_int(get_group_id(0)) \\
    & get_group_id(1) == __other_int(get_group_id(1)) & get_group_id(2) == __other_int(get_group_id(2)))
#define __KL_PROBE(p) ((int)*(volatile __typeof__((p)[0]) *)&(p)[0])
#define __read(p) (__kl_read(__KL_PROBE(p)) != 0)
#define __write(p) (__kl_write(__KL_PROBE(p)) != 0)
#define __no_read(p) (!__read(p))
#define __no_write(p) (!__write(p))
#define __read_implies(p, e) (!__read(p) || (e))
#define __write_implies(p, e) (!__write(p) || (e))
#define __read_offset_bytes(p) ((size_t)__kl_read_offset(__KL_PROBE(p)))
#define __write_offset_bytes(p) ((size_t)__kl_write_offset(__KL_PROBE(p)))
#define __ptr_offset_bytes(p) ((size_t)__kl_ptr_offset(__KL_PROBE(p)))
#define __requires_fresh_array(p) ((void)0)
#define __add_noovfl_unsigned_int(x, y) __kl_noovfl((x), (y))
#define __add_noovfl_int(x, y) __kl_noovfl_signed((x), (y))
#define __KL_NOOVFL4(a, b, c, d, ...) (__kl_noovfl_pred((a), (b), (c), (d)) != 0)
#define __add_noovfl(...) __KL_NOOVFL4(__VA_ARGS__, 0u, 0u, 0u)
#define __is_pow2(x) ((x) != 0 && ((x) & ((x) - 1)) == 0)
#define __mod_pow2(x, y) ((x) & ((y) - 1))
#define __function_wide_invariant(...) __kl_unsupported(0)
#define __at_most_one(...) __kl_unsupported(1)
#define __return_val_ptr(...) __kl_unsupported(2)
#define __ptr_base(...) __kl_unsupported(3)
#define __reads_from(p) __kl_spec_read(__KL_PROBE(p))
#define __writes_to(p) __kl_spec_write(__KL_PROBE(p))
#define __KL_SPEC_ENSURES(x) __kl_spec_ensures((x) ? 1 : 0)
#define __read_permission(...) ((void)0)
#define __write_permission(...) ((void)0)
#define __equal_floats(...) __kl_unsupported(8)
#define __equal_doubles(...) __kl_unsupported(9)
#define __atomic_has_taken_value(p, offset, value) (__kl_taken((unsigned)(value), (unsigned)(offset), __KL_PROBE(p)) != 0)
#define __array_snapshot(dst, src) ((void)__kl_snapshot(__KL_PROBE(src), __KL_PROBE(dst)))
#define __dominator_enabled() (__kl_dominator(__KL_ID) != 0)
#define __axiom(...) __kl_unsupported(13)
#define __add_noovfl_char(...) __kl_unsupported(14)
#define __add_noovfl_short(...) __kl_unsupported(15)
#define __add_noovfl_long(...) __kl_unsupported(16)
#define __add_noovfl_unsigned_char(...) __kl_unsupported(17)
#define __add_noovfl_unsigned_short(...) __kl_unsupported(18)
#define __add_noovfl_unsigned_long(...) __kl_unsupported(19)
#define __uniform_ptr_base(...) __kl_unsupported(20)
#define __distinct_ptr_base(...) __kl_unsupported(21)
#define __other_ptr_base(...) __kl_unsupported(22)
#define __not_accessed(...) __kl_unsupported(23)
#define __accessed(...) __kl_unsupported(24)
#define __non_temporal_loads_begin(...) __kl_unsupported(25)
#define __non_temporal_loads_end(...) __kl_unsupported(26)
#define __barrier_invariant(...) __kl_unsupported(1000)
#define __KL_BI_CHECK(x, ...) __kl_bi_check((x) ? 1 : 0)
#define __KL_BI2_CHECK(x, ...) (__kl_bi_pair(0), __kl_bi_check(__implies(__same_group, (x)) ? 1 : 0))
#define __barrier_invariant_1(x, i) (__kl_instance((int)(i) - __KL_ID), __kl_assert((x) ? 1 : 0))
#define __barrier_invariant_binary_1(...) __kl_unsupported(1001)
#define __barrier_invariant_2(...) __kl_unsupported(1000)
#define __barrier_invariant_binary_2(...) __kl_unsupported(1001)
#define __barrier_invariant_3(...) __kl_unsupported(1000)
#define __barrier_invariant_binary_3(...) __kl_unsupported(1001)
#define __barrier_invariant_4(...) __kl_unsupported(1000)
#define __barrier_invariant_binary_4(...) __kl_unsupported(1001)
#define __barrier_invariant_5(...) __kl_unsupported(1000)
#define __barrier_invariant_binary_5(...) __kl_unsupported(1001)
#define __barrier_invariant_6(...) __kl_unsupported(1000)
#define __barrier_invariant_binary_6(...) __kl_unsupported(1001)
#define __barrier_invariant_7(...) __kl_unsupported(1000)
#define __barrier_invariant_binary_7(...) __kl_unsupported(1001)
#define __barrier_invariant_8(...) __kl_unsupported(1000)
#define __barrier_invariant_binary_8(...) __kl_unsupported(1001)
#define __barrier_invariant_9(...) __kl_unsupported(1000)
#define __barrier_invariant_binary_9(...) __kl_unsupported(1001)
#define __barrier_invariant_10(...) __kl_unsupported(1000)
#define __barrier_invariant_binary_10(...) __kl_unsupported(1001)
#define __barrier_invariant_11(...) __kl_unsupported(1000)
#define __barrier_invariant_binary_11(...) __kl_unsupported(1001)
#define __barrier_invariant_12(...) __kl_unsupported(1000)
#define __barrier_invariant_binary_12(...) __kl_unsupported(1001)
#define __barrier_invariant_13(...) __kl_unsupported(1000)
#define __barrier_invariant_binary_13(...) __kl_unsupported(1001)
#define __barrier_invariant_14(...) __kl_unsupported(1000)
#define __barrier_invariant_binary_14(...) __kl_unsupported(1001)
#define __barrier_invariant_15(...) __kl_unsupported(1000)
#define __barrier_invariant_binary_15(...) __kl_unsupported(1001)
#define __barrier_invariant_16(...) __kl_unsupported(1000)
#define __barrier_invariant_binary_16(...) __kl_unsupported(1001)
#define __barrier_invariant_17(...) __kl_unsupported(1000)
#define __barrier_invariant_binary_17(...) __kl_unsupported(1001)
#define __barrier_invariant_18(...) __kl_unsupported(1000)
#define __barrier_invariant_binary_18(...) __kl_unsupported(1001)
#define __barrier_invariant_19(...) __kl_unsupported(1000)
#define __barrier_invariant_binary_19(...) __kl_unsupported(1001)
#define __barrier_invariant_20(...) __kl_unsupported(1000)
#define __barrier_invariant_binary_20(...) __kl_unsupported(1001)
#line 1
"""


#: the GLSL equivalent: functions of these names with an empty body are recognised by name (their
#: bodies are never run); glslang keeps calls of them (no optimisation)
GLSL_HEADER = """\
// kernellab verify --prove annotations (docs/verify-prove.md)
bool __kl_assert(bool c) { return c; }
bool __kl_assume(bool c) { return c; }
bool __kl_requires(bool c) { return c; }
int __kl_other(int x) { return x; }
int __kl_enabled(int x) { return x; }
int __kl_dominator(int x) { return x; }
#define kl_assert(x) __kl_assert(x)
#define kl_assume(x) __kl_assume(x)
#define kl_requires(x) __kl_requires(x)
#define kl_invariant(x) __kl_assert(x)
#define kl_implies(a, b) (!(a) || (b))
#define kl_other(x) __kl_other(int(x))
#define kl_uniform(x) (int(x) == __kl_other(int(x)))
#define kl_distinct(x) (int(x) != __kl_other(int(x)))
#define kl_enabled() (__kl_enabled(0) != 0)
#define kl_dominator_enabled() (__kl_dominator(0) != 0)
"""


#: the constant each OpenCL C annotation function adds, by the name the engine gives it
MAGIC = {
    0x4B4C0001: '__kl_assert',
    0x4B4C0002: '__kl_assume',
    0x4B4C0003: '__kl_requires',
    0x4B4C0004: '__kl_unsupported',
    0x4B4C0006: '__kl_requires_all',
    0x4B4C0007: '__kl_ensures',
    0x4B4C0008: '__kl_ensures_all',
    0x4B4C0009: '__kl_return',
    0x4B4C000A: '__kl_return4',
    0x4B4C000B: '__kl_other',
    0x4B4C000C: '__kl_enabled',
    0x4B4C000D: '__kl_read',
    0x4B4C000E: '__kl_write',
    0x4B4C000F: '__kl_read_offset',
    0x4B4C0010: '__kl_write_offset',
    0x4B4C0011: '__kl_ptr_offset',
    0x4B4C0012: '__kl_noovfl',
    0x4B4C0013: '__kl_noovfl_signed',
    0x4B4C0014: '__kl_noovfl_pred',
    0x4B4C0015: '__kl_requires_fn',
    0x4B4C0016: '__kl_instance',
    0x4B4C0017: '__kl_bi_check',
    0x4B4C0018: '__kl_bi_inst',
    0x4B4C0019: '__kl_bi_assume',
    0x4B4C001A: '__kl_spec',
    0x4B4C001B: '__kl_spec_write',
    0x4B4C001C: '__kl_spec_read',
    0x4B4C001D: '__kl_spec_ensures',
    0x4B4C001E: '__kl_spec_end',
    0x4B4C001F: '__kl_dominator',
    0x4B4C0020: '__kl_bi_other',
    0x4B4C0021: '__kl_bi_pair',
    0x4B4C0022: '__kl_taken',
    0x4B4C0023: '__kl_snapshot',
}
NAMES = tuple(MAGIC.values())


def unsupported_name(number: int) -> str:
    """The annotation ``__kl_unsupported(number)`` stands for."""
    if number == 1000:
        return "__barrier_invariant"
    if number == 1001:
        return "__barrier_invariant_binary"
    return UNSUPPORTED[number] if 0 <= number < len(UNSUPPORTED) else f"annotation #{number}"


@dataclass
class _Function:
    signature: int  # where its declaration starts
    body: int  # its opening brace
    end: int  # its closing brace
    kernel: bool


def _functions(text: str) -> list[_Function]:
    """The function definitions at file scope (comments, strings and preprocessor lines skipped)."""
    out: list[_Function] = []
    depth, k, n = 0, 0, len(text)
    start = 0  # where the current file-scope declaration starts
    open_at = 0
    while k < n:
        c = text[k]
        if text.startswith("//", k) or (c == "#" and depth == 0 and text[text.rfind("\n", 0, k) + 1:k].strip() == ""):
            while k < n and text[k] != "\n":  # a line comment or a preprocessor line (with continuations)
                k += 2 if text.startswith("\\\n", k) else 1
            if depth == 0:
                start = k
            continue
        if text.startswith("/*", k):
            end = text.find("*/", k + 2)
            k = n if end < 0 else end + 2
            continue
        if c in "\"'":
            k += 1
            while k < n and text[k] != c:
                k += 2 if text[k] == "\\" else 1
        elif c == "{":
            if depth == 0:
                open_at = k
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                sig = text[start:open_at]
                if sig.rstrip().endswith(")"):
                    out.append(_Function(start + len(sig) - len(sig.lstrip()), open_at, k,
                                         re.search(r"\b(__kernel|kernel)\b", sig) is not None))
                start = k + 1
        elif c == ";" and depth == 0:
            start = k + 1
        k += 1
    return out


#: the most text the loop invariants of one function may add (each loop gets all of them), so
#: that a source cannot grow with the number of invariants times the number of loops
MAX_INSERTED = 1 << 20


def _closers(text: str) -> dict[int, int]:
    """The index of the parenthesis closing each one that is closed, by its opening's index (one
    pass: a scan per loop from its parenthesis made the time grow with the loops times the text)."""
    out: dict[int, int] = {}
    opened: list[int] = []
    for k, c in enumerate(text):
        if c == "(":
            opened.append(k)
        elif c == ")" and opened:
            out[opened.pop()] = k
    return out


def prepare(text: str) -> str:
    """The kernel's source as the annotation header expects it, each line where it was:
    a called function's ``__requires`` becomes a precondition checked where it is called (the
    kernel's are the launch's assumptions); a function with a postcondition is kept out of line
    (``noinline``: its return is where ``__ensures`` is checked); a ``__function_wide_invariant``
    becomes an ``__invariant`` of every ``for`` and ``while`` loop of its function (GPUVerify's
    meaning), or stays unsupported where the function has a ``do`` loop."""
    edits: list[tuple[int, int, str]] = []  # (start, length removed, text put there)
    functions = _functions(text)
    edits += barrier_invariant_edits(text, functions)
    for f in functions:
        body = text[f.body:f.end]
        name = re.search(r"(\w+)\s*\([^()]*\)\s*$", text[f.signature:f.body])
        if not f.kernel and name and name.group(1).startswith("__spec_"):
            body = _spec_function(text, f, body, edits)
        if not f.kernel:
            for m in re.finditer(r"\b(__global_requires|__requires)\s*\(", body):
                edits.append((f.body + m.start(1), len(m.group(1)), m.group(1) + "_in_function"))
            if re.search(r"\b(__ensures|__global_ensures)\s*\(", body):
                edits.append((f.signature, 0, "__attribute__((noinline)) "))
        wide = list(re.finditer(r"\b__function_wide_invariant\s*\(", body))
        if not wide or re.search(r"\bdo\s*\{", body):
            continue
        invariants: list[tuple[int, int, str]] = []
        closers = _closers(body)
        for m in wide:
            close = closers.get(m.end() - 1, -1)
            semi = body.find(";", close) if close >= 0 else -1
            if semi < 0 or body[close + 1:semi].strip():
                invariants = []
                break
            invariants.append((m.start(), semi + 1, body[m.end():close]))
        if not invariants:
            continue
        inserted = "".join(f"__invariant({e}), " for _, _, e in invariants)
        if len(inserted) * len(re.findall(r"\b(?:for|while)\s*\(", body)) > MAX_INSERTED:
            continue  # each loop gets every invariant: a file must not grow the source without bound
        for start, end, _ in invariants:  # the statement goes, its lines stay
            edits.append((f.body + start, end - start, re.sub(r"[^\n]", " ", body[start:end])))
        for m in re.finditer(r"\b(for|while)\s*\(", body):
            if m.group(1) == "while":
                edits.append((f.body + m.end(), 0, inserted))
                continue
            close = closers.get(m.end() - 1, -1)
            first = body.find(";", m.end(), close)
            if first < 0:
                continue
            second = body.find(";", first + 1, close)
            condition = body[first + 1:second].strip() if second >= 0 else ""
            edits.append((f.body + first + 1, 0, inserted + ("" if condition else "1")))
    return _apply(text, edits)


_BARRIER_INVARIANT = re.compile(r"\b__barrier_invariant_(binary_)?(\d+)\s*\(")
_BARRIER = re.compile(r"(?:work_group_)?barrier\s*\(")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
#: the local id and global id in dimension 0 as the invocation an instantiation names has them
#: (GPUVerify instantiates the x dimension's local id; y, z and the group stay this invocation's)
_INSTANTIATED_IDS = ("#define get_local_id(d) ((d) == 0 ? (size_t)__kl_t : get_local_id(d))\n"
                     "#define get_global_id(d) ((d) == 0 ? __kl_gid_base0() + (size_t)__kl_t : get_global_id(d))\n")


#: the instantiated barrier invariants are put on this line plus the barrier's (``#line``): their
#: reads are no accesses of the kernel's, so the access guard (:mod:`kernellab.verify.prove.kept`)
#: leaves those lines out
INSTANTIATION_LINES = 1 << 24


#: in a binary barrier invariant's instantiation, ``__other_*(x)``: ``x`` evaluated with the local
#: id the second instantiation gives (``__kl_u``), by swapping it in and out (the comma operator
#: orders it)
_OTHER_INSTANTIATED = """#undef __other_int
#undef __other_bool
#define __other_int(x) (__kl_sw = __kl_t, __kl_t = __kl_u, __kl_o = (int)(x), __kl_t = __kl_sw, __kl_o)
#define __other_bool(x) (__other_int((x) ? 1 : 0) != 0)"""
#: and the header's again after it
_OTHER_RESTORED = "#undef __other_int\n#undef __other_bool\n" + "\n".join(
    line for line in ANNOTATION_HEADER.splitlines() if line.startswith(("#define __other_int(", "#define __other_bool(")))


def barrier_invariant_edits(text: str, functions: list[_Function]) -> list[tuple[int, int, str]]:
    """GPUVerify's unary barrier invariants written as statements just before a ``barrier(...);``
    (docs/verify-prove.md, "Barrier invariants"): each becomes a check of its expression for the
    invocation reaching it (``__KL_BI_CHECK``), and after the barrier, for each instantiation
    ``i``, the expression again with the local id in dimension 0 made ``i``, between the markers
    ``__kl_bi_inst(i)`` and ``__kl_bi_assume(e)`` (the engine assumes it there, or refuses it).
    The lines stay where they were (``#line``). An invariant in any other place is left as it is
    (the header's macros: unsupported, or the unary self-instantiated check)."""
    closers = _closers(text)
    bodies = [(f.body, f.end) for f in functions]
    edits: list[tuple[int, int, str]] = []
    k = 0
    while True:
        m = _BARRIER_INVARIANT.search(text, k)
        if m is None:
            return edits
        k = m.end()
        if not any(b < m.start() < e for b, e in bodies) or not _statement_start(text, m.start()):
            continue
        group: list[tuple[re.Match[str], list[str]]] = []
        at = m.start()
        while True:  # the invariants written one after the other, then the barrier
            g = _BARRIER_INVARIANT.match(text, at)
            if g is None:
                break
            close = closers.get(g.end() - 1, -1)
            args = _arguments(text[g.end():close]) if close >= 0 else []
            width = 2 if g.group(1) else 1
            if close < 0 or len(args) != width * int(g.group(2)) + 1 or \
                    not text[close + 1:].lstrip().startswith(";"):
                group = []
                break
            group.append((g, args))
            at = _skip_space(text, text.index(";", close) + 1)
        b = _BARRIER.match(text, at) if group else None
        if b is None:
            continue
        close = closers.get(b.end() - 1, -1)
        if close < 0 or not text[close + 1:].lstrip().startswith(";"):
            continue
        semi = text.index(";", close) + 1
        line = text.count("\n", 0, semi) + 1
        values, assumed, paired = [], [], []
        for n, (g, args) in enumerate(group):
            binary = g.group(1) is not None
            edits.append((g.start(), len(g.group(0).rstrip("( \t\r\n")), "__KL_BI2_CHECK" if binary else "__KL_BI_CHECK"))
            expr = _COMMENT.sub(" ", args[0]).replace("\n", " ")
            for j, inst in enumerate(args[1:]):
                values.append(f"int __kl_bi{n}_{j} = (int)({_COMMENT.sub(' ', inst)});")
            if binary:
                paired += [f"{{ int __kl_t = __kl_bi_inst(__kl_bi{n}_{j}); int __kl_u = __kl_bi_other(__kl_bi{n}_{j + 1});"
                           f" int __kl_sw, __kl_o; __kl_bi_assume(({expr}) ? 1 : 0); }}" for j in range(0, len(args) - 1, 2)]
            else:
                assumed += [f"{{ int __kl_t = __kl_bi_inst(__kl_bi{n}_{j}); __kl_bi_assume(({expr}) ? 1 : 0); }}"
                            for j in range(len(args) - 1)]
        if paired:
            assumed += [_OTHER_INSTANTIATED, *paired, _OTHER_RESTORED]
        edits.append((semi, 0, " { " + " ".join(values).replace("\n", " ") + "\n" + _INSTANTIATED_IDS
                      + f"#line {INSTANTIATION_LINES + line}\n" + "\n".join(assumed)
                      + "\n#undef get_local_id\n#undef get_global_id\n" + f"#line {line}\n}}"))
        k = semi


#: the statements a ``__spec_`` function's body may have (GPUVerify's contract language)
_CONTRACT = re.compile(r"\s*(__requires|__global_requires|__ensures|__global_ensures|__writes_to|__reads_from)\s*\(")
_OLD = re.compile(r"\b__old_(?:int|bool)\s*\(")


def _spec_function(text: str, f: _Function, body: str, edits: list[tuple[int, int, str]]) -> str:
    """The edits of a ``__spec_`` function (its contract, or unsupported); its body as the rest of
    :func:`prepare` sees it (its postconditions are no reason to keep it out of line)."""
    contract = spec_function_edits(text, f)
    if contract is None:
        edits.append((f.body + 1, 0, f"__kl_unsupported({len(UNSUPPORTED) - 1});"))
        return body
    edits += contract
    return re.sub(r"\b(?:__ensures|__global_ensures)\b", "", body)


def spec_function_edits(text: str, f: _Function) -> list[tuple[int, int, str]] | None:
    """A ``__spec_`` function's body as its contract (docs/verify-prove.md, "Specification
    functions"): ``__kl_spec(0)`` opens it; its preconditions stay (checked at the call, then
    assumed); each ``__old_*(x)`` of a postcondition becomes a variable set after them;
    ``__writes_to(p)`` and ``__reads_from(p)`` stay where they are (an access of the array at any
    offset); the postconditions move to its closing brace's line (assumed, with every access the
    contract makes satisfying them) before ``__kl_spec_end(0)``. None where the body has anything
    else (the caller leaves it unsupported)."""
    closers = _closers(text)
    at, end = f.body + 1, f.end
    statements: list[tuple[str, int, int, int]] = []  # (name, start, its parenthesis, past its ';')
    while True:
        at = _skip_space(text, at)
        if at >= end:
            break
        m = _CONTRACT.match(text, at)
        close = closers.get(m.end() - 1, -1) if m is not None else -1
        if m is None or close < 0 or close >= end or not text[close + 1:end].lstrip().startswith(";"):
            return None
        statements.append((m.group(1), m.start(1), m.end() - 1, text.index(";", close) + 1))
        at = statements[-1][3]
    edits: list[tuple[int, int, str]] = []
    olds: list[str] = []
    moved: list[str] = []
    for name, start, paren, past in statements:
        if name in ("__writes_to", "__reads_from", "__requires", "__global_requires"):
            continue
        cond = text[paren:closers[paren] + 1]
        pieces, k = [], 0
        for o in _OLD.finditer(cond):
            close = _closers(cond).get(o.end() - 1, -1)
            if close < 0 or o.start() < k:
                return None
            olds.append(f"int __kl_old{len(olds)} = (int)({_COMMENT.sub(' ', cond[o.end():close])});")
            pieces += [cond[k:o.start()], f"__kl_old{len(olds) - 1}"]
            k = close + 1
        pieces.append(cond[k:])
        moved.append("__KL_SPEC_ENSURES" + _COMMENT.sub(" ", "".join(pieces)).replace("\n", " ") + ";")
        edits.append((start, past - start, re.sub(r"[^\n]", " ", text[start:past])))
    edits.append((f.body + 1, 0, "__kl_spec(0); "))
    # the values before the contract's effects, after its preconditions are checked
    first = next((start for name, start, _, _ in statements if "requires" not in name), f.end)
    edits.append((first, 0, " ".join(olds).replace("\n", " ") + " "))
    edits.append((f.end, 0, " ".join(moved) + " __kl_spec_end(0); "))
    return edits


def _statement_start(text: str, at: int) -> bool:
    """Whether a statement may start at ``at`` in a block (after ``;``, ``{`` or ``}``, comments
    skipped): not the body of an ``if``, ``else`` or loop without braces."""
    window = text[max(0, at - 4096):at]  # a statement is seldom preceded by 4 KiB of comment
    before = _COMMENT.sub(lambda m: " " * len(m.group(0)), window).rstrip()
    return before.endswith((";", "{", "}"))


def _skip_space(text: str, at: int) -> int:
    while True:
        m = re.compile(r"\s+|//[^\n]*|/\*.*?\*/", re.S).match(text, at)
        if m is None or m.end() == at:
            return at
        at = m.end()


def _arguments(text: str) -> list[str]:
    """A macro call's arguments: ``text`` split at the commas outside parentheses and brackets."""
    return split_top_level(text, "([{", ")]}")


def split_top_level(text: str, opening: str, closing: str) -> list[str]:
    """``text`` split at the commas outside the ``opening``/``closing`` brackets, each part stripped
    (C's ``<`` is no bracket; LLVM IR's vector types are)."""
    out, depth, start = [], 0, 0
    for k, c in enumerate(text):
        if c in opening:
            depth += 1
        elif c in closing:
            depth -= 1
        elif c == "," and depth == 0:
            out.append(text[start:k].strip())
            start = k + 1
    out.append(text[start:].strip())
    return out


def _apply(text: str, edits: list[tuple[int, int, str]]) -> str:
    """``text`` with each (start, length removed, text put there) made, in one pass (an edit per
    copy of the text made the time grow with the edits times the text)."""
    pieces: list[str] = []
    at = 0
    # at one place the later edit's text comes first, as when edits were made from the end
    for _, (start, length, new) in sorted(enumerate(edits), key=lambda e: (e[1][0], -e[0])):
        pieces += [text[at:start], new]
        at = start + length
    return "".join(pieces) + text[at:]


def annotated(text: str, extra: str = "", name: str | None = None) -> str:
    """An OpenCL C source as the proof compiles it: the annotation header and ``extra`` (more
    declarations), then the source (:func:`prepare`), its line numbers kept. ``name``: the file
    the source's lines are reported in (its path), through the ``#line`` directive: without a
    name, a file that ``#include`` another has the lines past the include counted from the
    header's first line. A function the source defines under a name the header takes
    (GPUVerify's tests define their own ``__equal_floats``) is the source's."""
    own = _own_definitions(text)
    header = ANNOTATION_HEADER
    cut = header.rindex("#line 1")
    header = header[:cut] + "".join(f"#undef {own_name}\n" for own_name in own) + extra
    header += "#line 1\n" if name is None else f"#line 1 {_c_string(name)}\n"
    return header + prepare(text)


def _c_string(text: str) -> str:
    """``text`` as a C string literal (a ``#line`` directive's file name)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _own_definitions(text: str) -> list[str]:
    """The functions ``text`` defines under a name the annotation header takes as a macro."""
    return sorted({m.group(1) for m in re.finditer(r"\b(__\w+)\s*\([^;{}()]*(?:\([^;{}()]*\)[^;{}()]*)*\)\s*\{", text)
                   if re.search(rf"^#define {re.escape(m.group(1))}\b", ANNOTATION_HEADER, re.M)})


#: the annotations whose value a kernel may compute with, as a concrete launch evaluates them
_REPLAY_VALUES = {
    "__implies": "(a, b) (!(a) || (b))",
    "__ite": "(c, a, b) ((c) ? (a) : (b))",
    "__old_int": "(x) (x)",
    "__old_bool": "(x) (x)",
    "__is_pow2": "(x) ((x) != 0 && ((x) & ((x) - 1)) == 0)",
    "__mod_pow2": "(x, y) ((x) & ((y) - 1))",
    "__add_noovfl_unsigned_int": "(x, y) ((x) + (y))",
    "__add_noovfl_int": "(x, y) ((x) + (y))",
}


def replayed(text: str, name: str) -> str:
    """An OpenCL C source as a concrete launch (the replay of a counterexample on Oclgrind) builds
    it: GPUVerify's annotations defined away (a statement annotation does nothing; a predicate,
    only ever an annotation's argument, is true; :data:`_REPLAY_VALUES` keep their value), then
    the source unchanged, its lines and file named ``name`` (``#line``). The counterexample
    already satisfies the kernel's ``__requires`` (the prover assumed them)."""
    own = set(_own_definitions(text))
    lines = ["/* kernellab verify --prove: GPUVerify's annotations defined away for a concrete launch */"]
    for m in re.finditer(r"^#define (__\w+)(\()?", ANNOTATION_HEADER, re.M):
        macro, function_like = m.group(1), m.group(2) is not None
        if macro.startswith("__kl_") or macro.startswith("__KL_") or macro in own:
            continue
        if macro in _REPLAY_VALUES:
            lines.append(f"#define {macro}{_REPLAY_VALUES[macro]}")
        elif not function_like:
            lines.append(f"#define {macro} 1")
        elif re.search(r"(assert|assume|requires|ensures|invariant|fresh_array|non_temporal)", macro):
            lines.append(f"#define {macro}(...) ((void)0)")
        else:
            lines.append(f"#define {macro}(...) 1")
    return "\n".join(lines) + f"\n#line 1 {_c_string(name)}\n" + text
