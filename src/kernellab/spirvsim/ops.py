"""Per-component semantics of SPIR-V's arithmetic, logic, comparison and conversion instructions
and of the GLSL.std.450 extended instructions, on NumPy lane arrays.

A scalar value is a NumPy array with one element per lane (or a 0-d array when it is the same in
every lane); integers are held unsigned and viewed as signed by the instructions that say so,
which gives SPIR-V's two's-complement wrap-around for free. Every function takes the operands'
components and the result's scalar type ``rt`` and the first operand's scalar type ``ot``.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from kernellab.spirvsim.types import Type

Arr = np.ndarray


def _s(a: Arr, t: Type) -> Arr:
    """The signed view of an unsigned-held integer."""
    return np.asarray(a).astype(t.sdtype, copy=False)


def _u(a: Arr, rt: Type) -> Arr:
    return np.asarray(a).astype(rt.dtype, copy=False)


def _safe(b: Arr) -> Arr:
    """Division by zero is undefined in SPIR-V; divide by one instead of trapping."""
    return np.where(b == 0, np.ones((), b.dtype), b)


def _sdiv(a: Arr, b: Arr, rt: Type, ot: Type) -> Arr:
    sa, sb = _s(a, ot), _s(_safe(np.asarray(b)), ot)
    ua = np.where(sa < 0, -sa, sa).astype(ot.dtype)
    ub = np.where(sb < 0, -sb, sb).astype(ot.dtype)
    q = ua // ub
    neg = (sa < 0) != (sb < 0)
    return _u(np.where(neg, (np.zeros((), ot.dtype) - q), q), rt)


def _srem(a: Arr, b: Arr, rt: Type, ot: Type) -> Arr:
    q = _sdiv(a, b, ot, ot)
    return _u(np.asarray(a) - q * _safe(np.asarray(b)), rt)


def _smod(a: Arr, b: Arr, rt: Type, ot: Type) -> Arr:
    r = _srem(a, b, ot, ot)
    sr, sb = _s(r, ot), _s(b, ot)
    fix = (sr != 0) & ((sr < 0) != (sb < 0))
    return _u(np.where(fix, r + np.asarray(b), r), rt)


def _shift_count(b: Arr, rt: Type) -> Arr:
    return (np.asarray(b).astype(np.uint64) % np.uint64(rt.width)).astype(rt.dtype)


def _fmod(a: Arr, b: Arr, rt: Type, ot: Type) -> Arr:
    return (a - b * np.floor(a / b)).astype(rt.dtype)


def _bitreverse(a: Arr, rt: Type) -> Arr:
    a = np.asarray(a).astype(np.uint64)
    out = np.zeros(a.shape, np.uint64)
    for i in range(rt.width):
        out |= ((a >> np.uint64(i)) & np.uint64(1)) << np.uint64(rt.width - 1 - i)
    return out.astype(rt.dtype)


def _field_mask(count: Arr, rt: Type) -> Arr:
    c = np.asarray(count).astype(np.uint64)
    full = np.uint64((1 << rt.width) - 1) if rt.width < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)
    return np.where(c >= rt.width, full, (np.uint64(1) << np.minimum(c, 63)) - np.uint64(1))


def _bfinsert(base: Arr, ins: Arr, off: Arr, cnt: Arr, rt: Type) -> Arr:
    o = np.asarray(off).astype(np.uint64)
    mask = _field_mask(cnt, rt) << o
    b, i = np.asarray(base).astype(np.uint64), np.asarray(ins).astype(np.uint64)
    return ((b & ~mask) | ((i << o) & mask)).astype(rt.dtype)


def _bfextract(base: Arr, off: Arr, cnt: Arr, rt: Type, signed: bool) -> Arr:
    o = np.asarray(off).astype(np.uint64)
    c = np.asarray(cnt).astype(np.uint64)
    v = (np.asarray(base).astype(np.uint64) >> o) & _field_mask(c, rt)
    if signed:
        top = np.uint64(1) << np.maximum(c, 1).astype(np.uint64) - np.uint64(1)
        v = np.where((c > 0) & (v & top != 0), v | ~_field_mask(c, rt), v)
    return v.astype(rt.dtype)


def _f2i(a: Arr, rt: Type, signed: bool) -> Arr:
    info = np.iinfo(rt.sdtype if signed else rt.dtype)
    t = np.trunc(np.nan_to_num(np.asarray(a, np.float64)))
    t = np.clip(t, info.min, info.max)  # out-of-range conversions are undefined; clamp
    return t.astype(rt.sdtype if signed else rt.dtype).astype(rt.dtype)


def _convert_from_s(a: Arr, rt: Type, ot: Type) -> Arr:
    return _s(a, ot).astype(rt.dtype if rt.kind == "float" else rt.sdtype).astype(rt.dtype)


#: binary instructions: name -> f(a, b, rt, ot)
BINARY: dict[str, Callable[[Arr, Arr, Type, Type], Arr]] = {
    "OpIAdd": lambda a, b, rt, ot: _u(a + b, rt),
    "OpISub": lambda a, b, rt, ot: _u(a - b, rt),
    "OpIMul": lambda a, b, rt, ot: _u(a * b, rt),
    "OpUDiv": lambda a, b, rt, ot: _u(a // _safe(np.asarray(b)), rt),
    "OpUMod": lambda a, b, rt, ot: _u(a % _safe(np.asarray(b)), rt),
    "OpSDiv": _sdiv,
    "OpSRem": _srem,
    "OpSMod": _smod,
    "OpFAdd": lambda a, b, rt, ot: (a + b).astype(rt.dtype, copy=False),
    "OpFSub": lambda a, b, rt, ot: (a - b).astype(rt.dtype, copy=False),
    "OpFMul": lambda a, b, rt, ot: (a * b).astype(rt.dtype, copy=False),
    "OpFDiv": lambda a, b, rt, ot: (a / b).astype(rt.dtype, copy=False),
    "OpFRem": lambda a, b, rt, ot: np.fmod(a, b).astype(rt.dtype, copy=False),
    "OpFMod": _fmod,
    "OpShiftLeftLogical": lambda a, b, rt, ot: _u(np.asarray(a).astype(rt.dtype) << _shift_count(b, rt), rt),
    "OpShiftRightLogical": lambda a, b, rt, ot: _u(np.asarray(a).astype(rt.dtype) >> _shift_count(b, rt), rt),
    "OpShiftRightArithmetic": lambda a, b, rt, ot: _u(_s(a, rt) >> _shift_count(b, rt).astype(rt.sdtype), rt),
    "OpBitwiseAnd": lambda a, b, rt, ot: _u(a & b, rt),
    "OpBitwiseOr": lambda a, b, rt, ot: _u(a | b, rt),
    "OpBitwiseXor": lambda a, b, rt, ot: _u(a ^ b, rt),
    "OpIEqual": lambda a, b, rt, ot: np.asarray(a == b),
    "OpINotEqual": lambda a, b, rt, ot: np.asarray(a != b),
    "OpUGreaterThan": lambda a, b, rt, ot: np.asarray(a > b),
    "OpUGreaterThanEqual": lambda a, b, rt, ot: np.asarray(a >= b),
    "OpULessThan": lambda a, b, rt, ot: np.asarray(a < b),
    "OpULessThanEqual": lambda a, b, rt, ot: np.asarray(a <= b),
    "OpSGreaterThan": lambda a, b, rt, ot: np.asarray(_s(a, ot) > _s(b, ot)),
    "OpSGreaterThanEqual": lambda a, b, rt, ot: np.asarray(_s(a, ot) >= _s(b, ot)),
    "OpSLessThan": lambda a, b, rt, ot: np.asarray(_s(a, ot) < _s(b, ot)),
    "OpSLessThanEqual": lambda a, b, rt, ot: np.asarray(_s(a, ot) <= _s(b, ot)),
    "OpFOrdEqual": lambda a, b, rt, ot: np.asarray(a == b),
    "OpFOrdNotEqual": lambda a, b, rt, ot: np.asarray((a != b) & ~np.isnan(a) & ~np.isnan(b)),
    "OpFOrdLessThan": lambda a, b, rt, ot: np.asarray(a < b),
    "OpFOrdGreaterThan": lambda a, b, rt, ot: np.asarray(a > b),
    "OpFOrdLessThanEqual": lambda a, b, rt, ot: np.asarray(a <= b),
    "OpFOrdGreaterThanEqual": lambda a, b, rt, ot: np.asarray(a >= b),
    "OpFUnordEqual": lambda a, b, rt, ot: np.asarray(~((a < b) | (a > b))),
    "OpFUnordNotEqual": lambda a, b, rt, ot: np.asarray(a != b),
    "OpFUnordLessThan": lambda a, b, rt, ot: np.asarray(~(a >= b)),
    "OpFUnordGreaterThan": lambda a, b, rt, ot: np.asarray(~(a <= b)),
    "OpFUnordLessThanEqual": lambda a, b, rt, ot: np.asarray(~(a > b)),
    "OpFUnordGreaterThanEqual": lambda a, b, rt, ot: np.asarray(~(a < b)),
    "OpLogicalAnd": lambda a, b, rt, ot: np.asarray(a & b),
    "OpLogicalOr": lambda a, b, rt, ot: np.asarray(a | b),
    "OpLogicalEqual": lambda a, b, rt, ot: np.asarray(a == b),
    "OpLogicalNotEqual": lambda a, b, rt, ot: np.asarray(a != b),
}

#: unary instructions: name -> f(a, rt, ot)
UNARY: dict[str, Callable[[Arr, Type, Type], Arr]] = {
    "OpSNegate": lambda a, rt, ot: _u(np.zeros((), rt.dtype) - a, rt),
    "OpFNegate": lambda a, rt, ot: (-a).astype(rt.dtype, copy=False),
    "OpNot": lambda a, rt, ot: _u(~np.asarray(a), rt),
    "OpLogicalNot": lambda a, rt, ot: np.asarray(~np.asarray(a)),
    "OpIsNan": lambda a, rt, ot: np.asarray(np.isnan(a)),
    "OpIsInf": lambda a, rt, ot: np.asarray(np.isinf(a)),
    "OpBitCount": lambda a, rt, ot: np.bitwise_count(np.asarray(a)).astype(rt.dtype),
    "OpBitReverse": lambda a, rt, ot: _bitreverse(a, rt),
    "OpConvertFToU": lambda a, rt, ot: _f2i(a, rt, False),
    "OpConvertFToS": lambda a, rt, ot: _f2i(a, rt, True),
    "OpConvertUToF": lambda a, rt, ot: np.asarray(a).astype(rt.dtype),
    "OpConvertSToF": lambda a, rt, ot: _convert_from_s(a, rt, ot),
    "OpUConvert": lambda a, rt, ot: np.asarray(a).astype(rt.dtype),
    "OpSConvert": lambda a, rt, ot: _convert_from_s(a, rt, ot),
    "OpFConvert": lambda a, rt, ot: np.asarray(a).astype(rt.dtype),
    "OpQuantizeToF16": lambda a, rt, ot: np.asarray(a).astype(np.float16).astype(rt.dtype),
    "OpCopyObject": lambda a, rt, ot: a,
}

TERNARY_BITFIELD = {"OpBitFieldInsert", "OpBitFieldSExtract", "OpBitFieldUExtract"}


def bitfield(op: str, args: list[Arr], rt: Type) -> Arr:
    if op == "OpBitFieldInsert":
        return _bfinsert(args[0], args[1], args[2], args[3], rt)
    return _bfextract(args[0], args[1], args[2], rt, op == "OpBitFieldSExtract")


def bitcast(value: Any, src: Type, dst: Type) -> Any:
    """OpBitcast between scalars or vectors of the same total width."""
    comps = list(value) if isinstance(value, tuple) else [value]
    src_scalar = src.elem if src.kind == "vector" else src
    dst_scalar = dst.elem if dst.kind == "vector" else dst
    assert src_scalar is not None and dst_scalar is not None
    if src_scalar.kind == "int" and dst_scalar.kind == "int" and len(comps) == (dst.count or 1):
        out = [np.asarray(c).astype(dst_scalar.dtype) for c in comps]
    else:
        shape = np.broadcast_shapes(*(np.shape(c) for c in comps))
        stacked = np.stack([np.broadcast_to(np.asarray(c, src_scalar.dtype), shape) for c in comps], axis=-1)
        raw = np.ascontiguousarray(stacked).view(np.uint8)
        as_dst = raw.view(dst_scalar.dtype)
        out = [np.ascontiguousarray(as_dst[..., i]) for i in range(as_dst.shape[-1])]
    return tuple(out) if dst.kind == "vector" else out[0]


# ---- GLSL.std.450 -------------------------------------------------------------------------

def _fsign(a: Arr, rt: Type) -> Arr:
    return np.sign(a).astype(rt.dtype)


def _ssign(a: Arr, rt: Type) -> Arr:
    s = _s(a, rt)
    return np.sign(s).astype(rt.sdtype).astype(rt.dtype)


def _sabs(a: Arr, rt: Type) -> Arr:
    s = _s(a, rt)
    return np.where(s < 0, -s, s).astype(rt.dtype)


def _round_half_away(a: Arr, rt: Type) -> Arr:
    return (np.sign(a) * np.floor(np.abs(a) + 0.5)).astype(rt.dtype)


def _find_lsb(a: Arr, rt: Type) -> Arr:
    a = np.asarray(a).astype(np.uint64)
    low = a & (~a + np.uint64(1))
    out = np.where(a == 0, -1, np.log2(np.maximum(low, 1).astype(np.float64)).astype(np.int64))
    return out.astype(rt.sdtype).astype(rt.dtype)


def _find_umsb(a: Arr, rt: Type) -> Arr:
    a = np.asarray(a).astype(np.uint64)
    bits = np.zeros(a.shape, np.int64) - 1
    for i in range(64):
        bits = np.where((a >> np.uint64(i)) & np.uint64(1) != 0, i, bits)
    return bits.astype(rt.sdtype).astype(rt.dtype)


def _find_smsb(a: Arr, rt: Type, ot: Type) -> Arr:
    s = _s(a, ot)
    return _find_umsb(np.where(s < 0, ~s, s).astype(ot.dtype), rt)


_F1: dict[str, Callable[[Arr], Arr]] = {
    "Trunc": np.trunc, "FAbs": np.abs, "Floor": np.floor, "Ceil": np.ceil, "RoundEven": np.rint,
    "Fract": lambda a: a - np.floor(a), "Radians": np.radians, "Degrees": np.degrees,
    "Sin": np.sin, "Cos": np.cos, "Tan": np.tan, "Asin": np.arcsin, "Acos": np.arccos, "Atan": np.arctan,
    "Sinh": np.sinh, "Cosh": np.cosh, "Tanh": np.tanh, "Asinh": np.arcsinh, "Acosh": np.arccosh,
    "Atanh": np.arctanh, "Exp": np.exp, "Log": np.log, "Exp2": np.exp2, "Log2": np.log2, "Sqrt": np.sqrt,
    "InverseSqrt": lambda a: 1 / np.sqrt(a),
}


def _smooth_step(a: Arr, args: list[Arr], rt: Type) -> Arr:
    t = np.clip((args[2] - a) / (args[1] - a), 0, 1)
    return (t * t * (3 - 2 * t)).astype(rt.dtype)


#: GLSL.std.450 instructions of more than one operand, or typed by more than the result:
#: (first operand, all operands, result type, first operand's type) -> one component
_CW: dict[str, Callable[[Arr, list[Arr], Type, Type], Arr]] = {
    "Round": lambda a, args, rt, ot: _round_half_away(a, rt),
    "FSign": lambda a, args, rt, ot: _fsign(a, rt),
    "SSign": lambda a, args, rt, ot: _ssign(a, rt),
    "SAbs": lambda a, args, rt, ot: _sabs(a, rt),
    "Atan2": lambda a, args, rt, ot: np.arctan2(a, args[1]).astype(rt.dtype),
    "Pow": lambda a, args, rt, ot: np.power(a, args[1]).astype(rt.dtype),
    "FMin": lambda a, args, rt, ot: np.minimum(a, args[1]).astype(rt.dtype),
    "NMin": lambda a, args, rt, ot: np.fmin(a, args[1]).astype(rt.dtype),
    "FMax": lambda a, args, rt, ot: np.maximum(a, args[1]).astype(rt.dtype),
    "NMax": lambda a, args, rt, ot: np.fmax(a, args[1]).astype(rt.dtype),
    "UMin": lambda a, args, rt, ot: np.minimum(a, args[1]).astype(rt.dtype),
    "UMax": lambda a, args, rt, ot: np.maximum(a, args[1]).astype(rt.dtype),
    "SMin": lambda a, args, rt, ot: np.minimum(_s(a, ot), _s(args[1], ot)).astype(rt.dtype),
    "SMax": lambda a, args, rt, ot: np.maximum(_s(a, ot), _s(args[1], ot)).astype(rt.dtype),
    "FClamp": lambda a, args, rt, ot: np.minimum(np.maximum(a, args[1]), args[2]).astype(rt.dtype),
    "NClamp": lambda a, args, rt, ot: np.minimum(np.maximum(a, args[1]), args[2]).astype(rt.dtype),
    "UClamp": lambda a, args, rt, ot: np.minimum(np.maximum(a, args[1]), args[2]).astype(rt.dtype),
    "SClamp": lambda a, args, rt, ot: np.minimum(np.maximum(_s(a, ot), _s(args[1], ot)),
                                                 _s(args[2], ot)).astype(rt.dtype),
    "FMix": lambda a, args, rt, ot: (a * (1 - args[2]) + args[1] * args[2]).astype(rt.dtype),
    "Step": lambda a, args, rt, ot: np.where(args[1] < a, 0, 1).astype(rt.dtype),
    "SmoothStep": lambda a, args, rt, ot: _smooth_step(a, args, rt),
    "Fma": lambda a, args, rt, ot: (a * args[1] + args[2]).astype(rt.dtype),
    "Ldexp": lambda a, args, rt, ot: _ldexp(a, args[1], rt),
    "FindILsb": lambda a, args, rt, ot: _find_lsb(a, rt),
    "FindUMsb": lambda a, args, rt, ot: _find_umsb(a, rt),
    "FindSMsb": lambda a, args, rt, ot: _find_smsb(a, rt, ot),
}


def _ldexp(a: Arr, exponent: Arr, rt: Type) -> Arr:
    """Ldexp: the exponent is a signed integer of any width (integers are kept unsigned: see
    Type.dtype), clamped to where every float's result is already 0 or infinite, so that no
    64-bit exponent wraps on its way to NumPy's int32."""
    e = np.asarray(exponent)
    if e.dtype.kind == "u":
        e = e.view(e.dtype.str.replace("u", "i"))
    return np.ldexp(a, np.clip(e, -4096, 4096).astype(np.int32)).astype(rt.dtype)


def glsl_componentwise(name: str, args: list[Arr], rt: Type, ot: Type) -> Arr | None:
    """A component of a GLSL.std.450 instruction that works component by component; None when
    ``name`` is not one of those."""
    f1 = _F1.get(name)
    if f1 is not None:
        return np.asarray(f1(args[0])).astype(rt.dtype)
    f = _CW.get(name)
    return None if f is None else f(args[0], args, rt, ot)


#: GLSL.std.450 instructions handled component by component
GLSL_COMPONENTWISE = frozenset(_F1) | frozenset(_CW)


def _comps(v: Any) -> list[Arr]:
    return list(v) if isinstance(v, tuple) else [v]


def _vdot(x: Any, y: Any) -> Arr:
    out: Any = 0
    for p, q in zip(_comps(x), _comps(y)):
        out = out + p * q
    return np.asarray(out)


def _like(out: list[Arr], rt: Type) -> Any:
    """The components ``out`` as a value of type ``rt``: a vector or a scalar."""
    return tuple(out) if rt.kind == "vector" else out[0]


def _distance(args: list[Any], rt: Type, dtype: Any) -> Any:
    d = tuple(p - q for p, q in zip(_comps(args[0]), _comps(args[1])))
    return np.sqrt(_vdot(d, d)).astype(dtype)


def _normalize(args: list[Any], rt: Type, dtype: Any) -> Any:
    n = np.sqrt(_vdot(args[0], args[0]))
    return _like([(c / n).astype(dtype) for c in _comps(args[0])], rt)


def _cross(args: list[Any], rt: Type, dtype: Any) -> Any:
    (a0, a1, a2), (b0, b1, b2) = args[0], args[1]
    return ((a1 * b2 - a2 * b1).astype(dtype), (a2 * b0 - a0 * b2).astype(dtype),
            (a0 * b1 - a1 * b0).astype(dtype))


def _reflect(args: list[Any], rt: Type, dtype: Any) -> Any:
    d = _vdot(args[1], args[0])
    return _like([(i - 2 * d * n).astype(dtype) for i, n in zip(_comps(args[0]), _comps(args[1]))], rt)


def _face_forward(args: list[Any], rt: Type, dtype: Any) -> Any:
    d = _vdot(args[2], args[1])
    return _like([np.where(d < 0, n, -n).astype(dtype) for n in _comps(args[0])], rt)


def _refract(args: list[Any], rt: Type, dtype: Any) -> Any:
    d = _vdot(args[1], args[0])
    eta = np.asarray(args[2])
    k = 1 - eta * eta * (1 - d * d)
    return _like([np.where(k < 0, 0, eta * i - (eta * d + np.sqrt(np.maximum(k, 0))) * n).astype(dtype)
                  for i, n in zip(_comps(args[0]), _comps(args[1]))], rt)


def _split_struct(name: str, args: list[Any], rt: Type) -> Any:
    """ModfStruct (fraction, whole part) and FrexpStruct (significand, exponent)."""
    whole_t, part_t = rt.members
    fd = (whole_t.elem if whole_t.kind == "vector" else whole_t).dtype  # type: ignore[union-attr]
    xs = _comps(args[0])
    if name == "ModfStruct":
        first = [(x - np.trunc(x)).astype(fd) for x in xs]
        second = [np.trunc(x).astype(fd) for x in xs]
    else:
        pairs = [np.frexp(x) for x in xs]
        first = [m.astype(fd) for m, _ in pairs]
        idt = (part_t.elem if part_t.kind == "vector" else part_t).dtype  # type: ignore[union-attr]
        second = [e.astype(np.int32).astype(idt) for _, e in pairs]
    vec = isinstance(args[0], tuple)
    return (tuple(first) if vec else first[0], tuple(second) if vec else second[0])


def _pack_double(args: list[Any], rt: Type, dtype: Any) -> Any:
    lo, hi = (np.asarray(c).astype(np.uint64) for c in _comps(args[0]))
    return np.ascontiguousarray(lo | (hi << np.uint64(32))).view(np.float64)


def _unpack_double(args: list[Any], rt: Type, dtype: Any) -> Any:
    bits = np.ascontiguousarray(np.asarray(args[0], np.float64)).view(np.uint64)
    return ((bits & np.uint64(0xFFFFFFFF)).astype(np.uint32), (bits >> np.uint64(32)).astype(np.uint32))


def _pack_half(args: list[Any], rt: Type, dtype: Any) -> Any:
    lo, hi = (np.asarray(c).astype(np.float16).view(np.uint16).astype(np.uint32) for c in _comps(args[0]))
    return (lo | (hi << np.uint32(16))).astype(np.uint32)


def _unpack_half(args: list[Any], rt: Type, dtype: Any) -> Any:
    v = np.asarray(args[0]).astype(np.uint32)
    lo = (v & np.uint32(0xFFFF)).astype(np.uint16).view(np.float16).astype(dtype)
    hi = (v >> np.uint32(16)).astype(np.uint16).view(np.float16).astype(dtype)
    return (lo, hi)


def _pack_norm(bits: int, signed: bool) -> Callable[[list[Any], Type, Any], Arr]:
    """PackUnorm4x8, PackSnorm4x8, PackUnorm2x16, PackSnorm2x16: components of ``bits`` bits."""
    def pack(args: list[Any], rt: Type, dtype: Any) -> Arr:
        out = np.zeros(np.shape(_comps(args[0])[0]), np.uint32)
        for i, c in enumerate(_comps(args[0])):
            if signed:
                q = np.rint(np.clip(c, -1, 1) * ((1 << (bits - 1)) - 1)).astype(np.int64) & ((1 << bits) - 1)
            else:
                q = np.rint(np.clip(c, 0, 1) * ((1 << bits) - 1)).astype(np.int64)
            out |= (q.astype(np.uint32) << np.uint32(i * bits))
        return out
    return pack


def _unpack_norm(bits: int, signed: bool) -> Callable[[list[Any], Type, Any], tuple[Arr, ...]]:
    """UnpackUnorm4x8, UnpackSnorm4x8, UnpackUnorm2x16, UnpackSnorm2x16: components of ``bits`` bits."""
    def unpack(args: list[Any], rt: Type, dtype: Any) -> tuple[Arr, ...]:
        v = np.asarray(args[0]).astype(np.uint32)
        out = []
        for i in range(32 // bits):
            q = (v >> np.uint32(i * bits)) & np.uint32((1 << bits) - 1)
            if signed:
                sq = q.astype(np.int64) - np.where(q >= (1 << (bits - 1)), 1 << bits, 0)
                out.append(np.clip(sq / ((1 << (bits - 1)) - 1), -1, 1).astype(dtype))
            else:
                out.append((q / ((1 << bits) - 1)).astype(dtype))
        return tuple(out)
    return unpack


#: GLSL.std.450 instructions on whole vectors: (operand values, result type, its component dtype) -> value
_GEOMETRIC: dict[str, Callable[[list[Any], Type, Any], Any]] = {
    "Length": lambda args, rt, dtype: np.sqrt(_vdot(args[0], args[0])).astype(dtype),
    "Distance": _distance,
    "Normalize": _normalize,
    "Cross": _cross,
    "Reflect": _reflect,
    "FaceForward": _face_forward,
    "Refract": _refract,
    "ModfStruct": lambda args, rt, dtype: _split_struct("ModfStruct", args, rt),
    "FrexpStruct": lambda args, rt, dtype: _split_struct("FrexpStruct", args, rt),
    "PackDouble2x32": _pack_double,
    "UnpackDouble2x32": _unpack_double,
    "PackHalf2x16": _pack_half,
    "UnpackHalf2x16": _unpack_half,
    "PackUnorm4x8": _pack_norm(8, signed=False),
    "PackSnorm4x8": _pack_norm(8, signed=True),
    "PackUnorm2x16": _pack_norm(16, signed=False),
    "PackSnorm2x16": _pack_norm(16, signed=True),
    "UnpackUnorm4x8": _unpack_norm(8, signed=False),
    "UnpackSnorm4x8": _unpack_norm(8, signed=True),
    "UnpackUnorm2x16": _unpack_norm(16, signed=False),
    "UnpackSnorm2x16": _unpack_norm(16, signed=True),
}


def glsl_geometric(name: str, args: list[Any], rt: Type) -> Any:
    """GLSL.std.450 instructions on whole vectors (Length, Dot-based ones, Cross, packing); None
    when ``name`` is not one of those."""
    f = _GEOMETRIC.get(name)
    if f is None:
        return None
    dtype = (rt.elem if rt.kind == "vector" else rt).dtype if rt.kind != "struct" else None  # type: ignore[union-attr]
    return f(args, rt, dtype)


GLSL_GEOMETRIC = frozenset(_GEOMETRIC)


def dot(a: tuple, b: tuple, rt: Type) -> Arr:
    out: Any = np.zeros((), rt.dtype)
    for p, q in zip(a, b):
        out = out + p * q
    return np.asarray(out).astype(rt.dtype)


