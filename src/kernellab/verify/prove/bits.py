"""A value's bits read as another type (``OpBitcast``), as SPIR-V defines it: the same bits,
component 0 of a vector in the lowest ones (docs/verify-prove.md, "OpenCL C front end").

clspv writes ``OpBitcast`` between vectors of other component counts (``float4`` as ``uint2`` of
64-bit halves, ``double2`` as ``v4uint``) where it moves a vector through memory or a builtin.
The engine holds integers and floats alike as bit-vectors of their width (a float's value is
not modelled, its bits are), and a vector as a tuple of its components, so the cast is exact:
the components concatenated, then split at the target's widths.
"""
from __future__ import annotations

from typing import Any

import z3


def reinterpret(value: Any, kind: str, width: int, count: int) -> Any | None:
    """``value`` (a bit-vector, or a tuple of them: a vector) as ``count`` components of ``width``
    bits (``kind`` "vector"), or as one (``kind`` "int" or "float"); None where the bits do not
    match (a bool, or another total width)."""
    parts = list(value) if isinstance(value, tuple) else [value]
    if not parts or not all(z3.is_bv(p) for p in parts) or kind not in ("vector", "int", "float"):
        return None
    whole = parts[0] if len(parts) == 1 else z3.Concat(*reversed(parts))
    total = width * (count if kind == "vector" else 1)
    if whole.size() != total:
        return None
    if kind != "vector":
        return whole
    return tuple(z3.simplify(z3.Extract(k * width + width - 1, k * width, whole)) for k in range(count))
