"""GPUVerify's annotations as the proof engine reads them (docs/verify-prove.md, "Annotations").

OpenCL C gets :data:`ANNOTATION_HEADER` before its first line: each annotation a call of an
extern function named ``__kl_*`` that clspv keeps; GLSL declares the same functions itself
(:data:`GLSL_HEADER`, an ``#include``-able text). The engine
(:mod:`kernellab.verify.prove.encode`) recognises the calls by name.
"""
from __future__ import annotations

#: GPUVerify's annotations the engine does not model, in the order of their number in
#: ``__kl_unsupported(N)`` (reaching one gives ``unknown`` naming it)
UNSUPPORTED = (
    '__ensures', '__function_wide_invariant', '__uniform_int', '__uniform_bool', '__distinct_int',
    '__distinct_bool', '__all', '__at_most_one', '__other_int', '__other_bool', '__old_int', '__read', '__write',
    '__no_read', '__no_write', '__read_implies', '__write_implies', '__read_offset_bytes', '__write_offset_bytes',
    '__ptr_offset_bytes', '__ptr_base', '__reads_from', '__writes_to', '__read_permission', '__write_permission',
    '__equal_floats', '__equal_doubles', '__atomic_has_taken_value', '__return_val_int', '__return_val_int4',
    '__return_val_bool', '__array_snapshot', '__requires_fresh_array', '__exclusive', '__dominator_enabled',
    '__axiom', '__global_requires', '__global_ensures', '__add_noovfl', '__add_noovfl_int',
    '__add_noovfl_unsigned_int',
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
#define __assert(x) __kl_assert((x) ? 1 : 0)
#define __global_assert(x) __kl_assert((x) ? 1 : 0)
#define __invariant(x) __kl_assert((x) ? 1 : 0)
#define __global_invariant(x) __kl_assert((x) ? 1 : 0)
#define __assume(x) __kl_assume((x) ? 1 : 0)
#define __requires(x) __kl_requires((x) ? 1 : 0)
#define __candidate_invariant(x) 0
#define __candidate_global_invariant(x) 0
#define __function_wide_candidate_invariant(x) 0
#define __implies(a, b) (!(a) || (b))
#define __ite(c, a, b) ((c) ? (a) : (b))
#define __enabled() 1
#define __is_pow2(x) ((x) != 0 && ((x) & ((x) - 1)) == 0)
#define __mod_pow2(x, y) ((x) & ((y) - 1))
#define __ensures(...) __kl_unsupported(0)
#define __function_wide_invariant(...) __kl_unsupported(1)
#define __uniform_int(...) __kl_unsupported(2)
#define __uniform_bool(...) __kl_unsupported(3)
#define __distinct_int(...) __kl_unsupported(4)
#define __distinct_bool(...) __kl_unsupported(5)
#define __all(...) __kl_unsupported(6)
#define __at_most_one(...) __kl_unsupported(7)
#define __other_int(...) __kl_unsupported(8)
#define __other_bool(...) __kl_unsupported(9)
#define __old_int(...) __kl_unsupported(10)
#define __read(...) __kl_unsupported(11)
#define __write(...) __kl_unsupported(12)
#define __no_read(...) __kl_unsupported(13)
#define __no_write(...) __kl_unsupported(14)
#define __read_implies(...) __kl_unsupported(15)
#define __write_implies(...) __kl_unsupported(16)
#define __read_offset_bytes(...) __kl_unsupported(17)
#define __write_offset_bytes(...) __kl_unsupported(18)
#define __ptr_offset_bytes(...) __kl_unsupported(19)
#define __ptr_base(...) __kl_unsupported(20)
#define __reads_from(...) __kl_unsupported(21)
#define __writes_to(...) __kl_unsupported(22)
#define __read_permission(...) __kl_unsupported(23)
#define __write_permission(...) __kl_unsupported(24)
#define __equal_floats(...) __kl_unsupported(25)
#define __equal_doubles(...) __kl_unsupported(26)
#define __atomic_has_taken_value(...) __kl_unsupported(27)
#define __return_val_int(...) __kl_unsupported(28)
#define __return_val_int4(...) __kl_unsupported(29)
#define __return_val_bool(...) __kl_unsupported(30)
#define __array_snapshot(...) __kl_unsupported(31)
#define __requires_fresh_array(...) __kl_unsupported(32)
#define __exclusive(...) __kl_unsupported(33)
#define __dominator_enabled(...) __kl_unsupported(34)
#define __axiom(...) __kl_unsupported(35)
#define __global_requires(...) __kl_unsupported(36)
#define __global_ensures(...) __kl_unsupported(37)
#define __add_noovfl(...) __kl_unsupported(38)
#define __add_noovfl_int(...) __kl_unsupported(39)
#define __add_noovfl_unsigned_int(...) __kl_unsupported(40)
#define __barrier_invariant(...) __kl_unsupported(1000)
#define __barrier_invariant_1(...) __kl_unsupported(1000)
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
#define kl_assert(x) __kl_assert(x)
#define kl_assume(x) __kl_assume(x)
#define kl_requires(x) __kl_requires(x)
#define kl_invariant(x) __kl_assert(x)
#define kl_implies(a, b) (!(a) || (b))
"""


#: the constant each OpenCL C annotation function adds, by the name the engine gives it
MAGIC = {0x4B4C0001: "__kl_assert", 0x4B4C0002: "__kl_assume", 0x4B4C0003: "__kl_requires",
         0x4B4C0004: "__kl_unsupported"}
NAMES = tuple(MAGIC.values())


def unsupported_name(number: int) -> str:
    """The annotation ``__kl_unsupported(number)`` stands for."""
    if number == 1000:
        return "__barrier_invariant"
    if number == 1001:
        return "__barrier_invariant_binary"
    return UNSUPPORTED[number] if 0 <= number < len(UNSUPPORTED) else f"annotation #{number}"
