"""Matrices: ``OpTypeMatrix`` layouts and the matrix instructions.

A matrix value is a tuple of columns, each a tuple of components (what ``OpCompositeExtract``
and access chains address: the first index picks a column). In memory a matrix has a column step
and a component step: column-major (``ColMajor``, GLSL's default) puts columns ``MatrixStride``
apart and components next to each other; ``RowMajor`` puts components ``MatrixStride`` apart and
columns next to each other. A matrix member of a buffer block gets its own laid-out copy of the
type (:func:`lay_out`), since one ``OpTypeMatrix`` can sit in blocks of both layouts.

Arithmetic is in the operands' precision (float32 for ``mat4``), one multiply and one add at a
time in component order; a device may fuse or reorder them, so results agree with it to rounding.
"""
from __future__ import annotations

import copy
from typing import Any

import numpy as np

from kernellab.spirvsim.types import Type, _leaves

#: the matrix instructions (pure: no memory access)
OPS = frozenset({"OpMatrixTimesVector", "OpVectorTimesMatrix", "OpMatrixTimesMatrix", "OpMatrixTimesScalar",
                 "OpOuterProduct", "OpTranspose"})
#: GLSL.std.450 instructions on matrices
GLSL = frozenset({"Determinant", "MatrixInverse"})


def finish(t: Type) -> None:
    """Size and leaves of a matrix (``stride``: the column step; the column type's ``stride``:
    the component step, 0 for packed)."""
    col = t.elem
    assert col is not None and col.elem is not None
    if not t.stride:
        t.stride = col.size
    t.leaves = _leaves([(0, t.stride, t.count, col.leaves)])
    t.size = max((off + s.nbytes for off, s in t.leaves), default=0)


def strided_vector(v: Type, step: int) -> Type:
    """A copy of vector type ``v`` whose components are ``step`` bytes apart."""
    assert v.elem is not None
    out = copy.copy(v)
    out.stride = step
    out.leaves = [(i * step, v.elem) for i in range(v.count)]
    out.size = (v.count - 1) * step + v.elem.nbytes
    return out


def lay_out(t: Type, matrix_stride: int, row_major: bool) -> Type:
    """A copy of ``t`` (a matrix, or arrays of them) with a buffer's matrix layout."""
    if t.kind == "matrix":
        col = t.elem
        assert col is not None and col.elem is not None
        out = copy.copy(t)
        if row_major:
            out.elem = strided_vector(col, matrix_stride)
            out.stride = col.elem.nbytes
        else:
            out.elem = strided_vector(col, col.elem.nbytes)
            out.stride = matrix_stride
        finish(out)
        return out
    if t.kind in ("array", "runtime_array") and t.elem is not None:
        out = copy.copy(t)
        out.elem = lay_out(t.elem, matrix_stride, row_major)
        if t.kind == "array":
            out.leaves = _leaves([(0, t.stride, t.count, out.elem.leaves)])
        return out
    return t


def contains_matrix(t: Type) -> bool:
    return t.kind == "matrix" or t.kind in ("array", "runtime_array") and t.elem is not None and contains_matrix(t.elem)


def _mul(a: Any, b: Any, dt: np.dtype) -> np.ndarray:
    return np.asarray(np.multiply(a, b, dtype=dt))


def _dot(xs: tuple[Any, ...], ys: tuple[Any, ...], dt: np.dtype) -> np.ndarray:
    acc = _mul(xs[0], ys[0], dt)
    for x, y in zip(xs[1:], ys[1:]):
        acc = np.asarray(np.add(acc, _mul(x, y, dt), dtype=dt))
    return acc


def _rows(mat: tuple[Any, ...]) -> tuple[tuple[Any, ...], ...]:
    return tuple(zip(*mat))


def evaluate(op: str, args: list[Any], rt: Type) -> Any:
    """The value of a matrix instruction (``rt``: its result type)."""
    leaf = rt
    while leaf.elem is not None:
        leaf = leaf.elem
    dt = leaf.dtype
    if op == "OpMatrixTimesVector":
        mat, vec = args
        return tuple(_dot(row, vec, dt) for row in _rows(mat))
    if op == "OpVectorTimesMatrix":
        vec, mat = args
        return tuple(_dot(vec, col, dt) for col in mat)
    if op == "OpMatrixTimesMatrix":
        a, b = args
        rows = _rows(a)
        return tuple(tuple(_dot(row, col, dt) for row in rows) for col in b)
    if op == "OpMatrixTimesScalar":
        mat, s = args
        return tuple(tuple(_mul(c, s, dt) for c in col) for col in mat)
    if op == "OpOuterProduct":
        a, b = args
        return tuple(tuple(_mul(x, y, dt) for x in a) for y in b)
    if op == "OpTranspose":
        return tuple(tuple(r) for r in _rows(args[0]))
    raise KeyError(op)


def _stack(mat: tuple[Any, ...]) -> tuple[np.ndarray, tuple[int, ...]]:
    """A (lanes, rows, cols) array of a matrix value (lanes broadcast), and the lane shape."""
    leaves = [np.asarray(c) for col in mat for c in col]
    shape = np.broadcast_shapes(*(x.shape for x in leaves))
    n = len(mat)
    cols = np.stack([np.stack([np.broadcast_to(np.asarray(c), shape) for c in col], axis=-1) for col in mat],
                    axis=-1)
    return cols.reshape(-1, n, n), shape


def glsl(name: str, mat: Any, rt: Type) -> Any:
    """GLSL.std.450 Determinant and MatrixInverse, in the matrix's precision."""
    a, shape = _stack(mat)
    dt = a.dtype
    if dt == np.float16:  # NumPy's linalg has no half precision: computed in single, rounded back
        a = a.astype(np.float32)
    n = a.shape[-1]
    if name == "Determinant":
        return _cofactor_det(a).astype(dt).reshape(shape)
    # the adjugate over the determinant, as shader compilers expand it; the inverse of a
    # singular matrix is undefined: such lanes get infinities, as that division by zero gives
    det = _cofactor_det(a)
    singular = det == 0
    rows = np.arange(n)
    adj = np.empty_like(a)
    for r in range(n):
        for c in range(n):
            minor = a[..., rows != c, :][..., rows != r]
            cof = _cofactor_det(minor) if n > 1 else np.ones(a.shape[:-2], a.dtype)
            adj[..., r, c] = cof if (r + c) % 2 == 0 else -cof
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = (adj / np.where(singular, 1, det)[..., None, None]).astype(dt)
    inv = np.where(singular[:, None, None], np.asarray(np.inf, dt), inv)
    return tuple(tuple(inv[:, r, c].reshape(shape) for r in range(n)) for c in range(n))


def _cofactor_det(a: np.ndarray) -> np.ndarray:
    """The determinant by cofactor expansion along the first column, as shader compilers expand
    it (not LU: its rounding misses exact results such as 74 for an integer matrix)."""
    n = a.shape[-1]
    if n == 1:
        return a[..., 0, 0]
    if n == 2:
        return a[..., 0, 0] * a[..., 1, 1] - a[..., 0, 1] * a[..., 1, 0]
    total = np.zeros(a.shape[:-2], a.dtype)
    rows = np.arange(n)
    for i in range(n):
        minor = a[..., rows != i, :][..., 1:]
        term = a[..., i, 0] * _cofactor_det(minor)
        total = total + term if i % 2 == 0 else total - term
    return total
