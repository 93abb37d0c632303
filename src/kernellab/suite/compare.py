"""Comparing an output with its reference under a :class:`~kernellab.suite.expectations.Tolerance`.

The output's bytes are read as the reference's dtype and shape (a buffer comes back as raw
bytes, so the reference says what they mean). The result says how many elements failed and
shows the first few with index, expected and actual value and the tolerance that applied.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import Any

import numpy as np

from kernellab.errors import InputError
from kernellab.records import dataclass
from kernellab.suite.expectations import Expectations, OutputExpectation, Tolerance

#: mismatching elements shown per output
SHOWN = 5


@dataclass(frozen=True)
class ElementMismatch:
    index: tuple[int, ...]
    expected: Any
    actual: Any
    #: the allowed difference at this element ("exact", "0.0015", "2 ulps"...)
    allowed: str


@dataclass
class OutputResult:
    name: str
    ok: bool
    tolerance: Tolerance
    compared: int = 0
    failed: int = 0
    first: list[ElementMismatch] = field(default_factory=list)
    #: a problem with the whole output (size, missing output, RMSE over its bound)
    problem: str = ""
    rmse: float | None = None
    #: what was required, where a tolerance does not say it (an AmberScript comparator: "LT", "EQ within 1%")
    criterion: str = ""

    def report(self) -> str:
        if self.ok:
            return f"{self.name}: ok ({self.compared} elements, {self.tolerance.describe()})"
        lines = []
        if self.problem:
            lines.append(f"{self.name}: {self.problem}")
        if self.failed:
            lines.append(f"{self.name}: {self.failed} of {self.compared} elements differ "
                         f"({self.criterion or self.tolerance.describe()})")
            for m in self.first:
                idx = m.index[0] if len(m.index) == 1 else m.index
                lines.append(f"  [{idx}] expected {shown(m.expected)}, actual {shown(m.actual)} "
                             f"(allowed: {m.allowed})")
            if self.failed > len(self.first):
                lines.append(f"  ... and {self.failed - len(self.first)} more")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {"output": self.name, "ok": self.ok, "compared": self.compared, "failed": self.failed,
                "tolerance": self.tolerance.describe(), "problem": self.problem, "rmse": self.rmse,
                "first": [{"index": list(m.index), "expected": _plain(m.expected), "actual": _plain(m.actual),
                           "allowed": m.allowed} for m in self.first]}


@dataclass
class CheckResult:
    """Every output of one workload against its expectations."""

    outputs: list[OutputResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(o.ok for o in self.outputs)

    def report(self) -> str:
        return "\n".join(o.report() for o in self.outputs if not o.ok)


def shown(v: Any) -> str:
    """A value as its own dtype's shortest repr: a float32 250.501 prints as 250.501, not as the
    float64 digits of the same bits (250.50100708007812)."""
    if isinstance(v, np.generic):
        return str(v)
    return repr(v)


def _plain(v: Any) -> Any:
    if isinstance(v, np.floating):
        # the float64 nearest the shortest float32/float16 digits reads back as the same value
        v = float(str(v))
    elif isinstance(v, np.complexfloating):
        v = complex(str(v).strip("()")) if np.isfinite(v) else v.item()
    elif isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not np.isfinite(v):
        return str(v)
    return v


def as_reference_type(actual: np.ndarray, reference: np.ndarray) -> np.ndarray | str:
    """The output's bytes viewed as the reference's dtype and shape, or why they cannot be."""
    raw = np.ascontiguousarray(actual).reshape(-1).view(np.uint8)
    if raw.nbytes != reference.nbytes:
        return (f"size differs: the output has {raw.nbytes} bytes, the reference {reference.nbytes} "
                f"({reference.dtype} {list(reference.shape)})")
    return raw.view(reference.dtype).reshape(reference.shape)


def _ordered(bits: np.ndarray) -> np.ndarray:
    """Float bit patterns mapped to integers that count representable values (for ULPs)."""
    signed = bits.astype(np.int64)
    width = bits.dtype.itemsize * 8
    sign_bit = np.int64(1) << np.int64(width - 1)
    return np.where(signed & sign_bit, -(signed & (sign_bit - 1)), signed & (sign_bit - 1))


def ulp_distance(a: np.ndarray, e: np.ndarray) -> np.ndarray:
    uint = {2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]
    if a.dtype.itemsize == 8:
        # int64 arithmetic would overflow for opposite signs far apart; float128 is not portable
        oa = _ordered(a.view(uint)).astype(object)
        oe = _ordered(e.view(uint)).astype(object)
        return np.abs(oa - oe).astype(np.float64)
    return np.abs(_ordered(a.view(uint)) - _ordered(e.view(uint))).astype(np.float64)


def compare_arrays(name: str, actual: np.ndarray, reference: np.ndarray, tol: Tolerance,
                   where: str = "", sidecar: str | Path = "") -> OutputResult:
    view = as_reference_type(actual, reference)
    result = OutputResult(name, False, tol, compared=int(reference.size))
    if isinstance(view, str):
        result.problem = view
        return result
    is_float = reference.dtype.kind in "fc"
    if tol.ulps is not None and reference.dtype.kind != "f":
        raise InputError.at(sidecar, f"{where}/ulps", f"ulps apply to floating-point outputs; the reference "
                                                      f"is {reference.dtype}")
    a = view.reshape(-1)
    e = reference.reshape(-1)
    bad = np.zeros(a.shape, dtype=bool)
    allowed: np.ndarray | None = None
    checked = np.ones(a.shape, dtype=bool)
    if is_float:
        a_nan, e_nan = np.isnan(a), np.isnan(e)
        if tol.nan == "ignore":
            checked = ~e_nan
        elif tol.nan == "never":
            bad |= a_nan
        bad |= checked & (a_nan != e_nan)
        both = ~(a_nan | e_nan)
    else:
        both = np.ones(a.shape, dtype=bool)
    if tol.elementwise:
        if tol.exact:
            ok = a == e
        else:
            ok = np.zeros(a.shape, dtype=bool)
            if tol.atol is not None:
                wide = np.complex128 if a.dtype.kind == "c" else np.float64
                wide_a, wide_e = a.astype(wide), e.astype(wide)
                with np.errstate(invalid="ignore", over="ignore"):
                    diff = np.abs(wide_a - wide_e)
                    allowed = tol.atol + (tol.rtol or 0.0) * np.abs(wide_e)
                    ok |= (diff <= allowed) | (wide_a == wide_e)  # equal infinities have a NaN difference
            if tol.ulps is not None:
                ok |= ulp_distance(a, e) <= tol.ulps
        bad |= checked & both & ~ok
    result.failed = int(np.count_nonzero(bad))
    if result.failed:
        for flat in np.flatnonzero(bad)[:SHOWN]:
            index = tuple(int(i) for i in np.unravel_index(int(flat), reference.shape)) if reference.ndim else ()
            result.first.append(ElementMismatch(index, e[flat], a[flat], _allowed(tol, allowed, flat)))
    if tol.rmse is not None:
        mask = checked & both
        if np.any(mask):
            d = a[mask].astype(np.float64) - e[mask].astype(np.float64)
            result.rmse = float(np.sqrt(np.mean(np.abs(d) ** 2)))
        else:
            result.rmse = 0.0
        if not result.rmse <= tol.rmse:
            result.problem = f"RMSE {result.rmse:.6g} exceeds rmse={tol.rmse:g}"
    result.ok = result.failed == 0 and not result.problem
    return result


def _allowed(tol: Tolerance, allowed: np.ndarray | None, flat: int) -> str:
    if tol.exact or (tol.atol is None and tol.ulps is None):
        return "exact" if tol.exact or tol.nan == "equal" else f"nan={tol.nan}"
    parts = []
    if allowed is not None:
        parts.append(f"|diff| <= {float(allowed[flat]):.6g}")
    if tol.ulps is not None:
        parts.append(f"{tol.ulps} ulps")
    return " or ".join(parts)


_REFERENCES: dict[tuple[str, int, int], np.ndarray] = {}


def load_reference(e: OutputExpectation, sidecar: Path) -> np.ndarray:
    """The reference array (memoized per file version: a suite re-reads nothing it already has)."""
    try:
        st = e.reference.stat()
    except OSError:
        raise InputError.at(sidecar, f"{e.where}/reference", f"reference file {e.reference} not found "
                                                            f"(write it with `kernellab bless`)") from None
    key = (str(e.reference), st.st_mtime_ns, st.st_size)
    ref = _REFERENCES.get(key)
    if ref is None:
        try:
            ref = np.load(e.reference, allow_pickle=False)
        except (ValueError, OSError) as exc:
            raise InputError.at(sidecar, f"{e.where}/reference", f"{e.reference}: not a .npy file ({exc})") from None
        if e.dtype is not None and ref.dtype.name != e.dtype:
            raise InputError.at(sidecar, f"{e.where}/dtype", f"dtype {e.dtype} but the reference "
                                                             f"{e.reference.name} holds {ref.dtype}")
        if len(_REFERENCES) > 4096:
            _REFERENCES.clear()
        _REFERENCES[key] = ref
    return ref


def check_references(expectations: Expectations) -> None:
    """Read every reference of a sidecar now (missing, not a .npy file, a dtype that disagrees,
    ``ulps`` on integers), raising every problem at once with its JSON path: a bad sidecar is
    bad input, found before anything runs."""
    from kernellab.errors import Problem

    problems: list[Problem] = []
    for e in expectations.outputs.values():
        try:
            ref = load_reference(e, expectations.sidecar)
        except InputError as exc:
            problems.extend(exc.problems)
            continue
        if e.tolerance.ulps is not None and ref.dtype.kind != "f":
            problems.append(Problem(str(expectations.sidecar), f"{e.where}/ulps",
                                    f"ulps apply to floating-point outputs; the reference is {ref.dtype}"))
    if problems:
        raise InputError(problems)


def check_outputs(expectations: Expectations, actual: Mapping[str, np.ndarray | None]) -> CheckResult:
    """Compare every expected output; an output the run did not produce fails."""
    result = CheckResult()
    for name, e in expectations.outputs.items():
        ref = load_reference(e, expectations.sidecar)
        got = actual.get(name)
        if got is None:
            result.outputs.append(OutputResult(name, False, e.tolerance, problem="the run produced no such output"))
            continue
        result.outputs.append(compare_arrays(name, got, ref, e.tolerance, e.where, expectations.sidecar))
    if expectations.checks:
        data = {name: None if actual.get(name) is None else np.ascontiguousarray(actual[name]).tobytes()
                for name in expectations.output_names()}
        result.outputs.extend(check_all(expectations.checks, data).outputs)
    return result


#: Amber's default relative tolerance for EQ on floating-point values (verifier.cc: kEpsilon, a percentage)
_FLOAT_EQ_PERCENT = 0.000001


def _holds(cmp: str, actual: Any, expected: Any, tolerance: tuple[float, bool] | None) -> bool:
    import math

    if cmp in ("EQ", "NE") and (isinstance(expected, float) or tolerance is not None):
        a, e = float(actual), float(expected)
        if math.isnan(a) or math.isnan(e):
            same = math.isnan(a) == math.isnan(e)
        else:
            value, percent = tolerance if tolerance is not None else (_FLOAT_EQ_PERCENT, True)
            same = abs(a - e) <= (value / 100.0 * abs(e) if percent else value)
        return same if cmp == "EQ" else not same
    return {"EQ": actual == expected, "NE": actual != expected, "LT": actual < expected,
            "LE": actual <= expected, "GT": actual > expected, "GE": actual >= expected}[cmp]


def check_probe(probe: Any, data: bytes | None) -> OutputResult:
    """One :class:`~kernellab.suite.expectations.ProbeExpectation` against the output's bytes."""
    name = f"{probe.where}: {probe.text}" if probe.where else probe.output
    criterion = probe.comparator if probe.tolerance is None else \
        f"EQ within {probe.tolerance[0]:g}{'%' if probe.tolerance[1] else ''}"
    result = OutputResult(name, False, Tolerance(), compared=len(probe.values), criterion=criterion)
    if data is None:
        result.problem = f"the run produced no output {probe.output!r}"
        return result
    bad = []
    for i, ((offset, dtype), expected) in enumerate(zip(probe.components, probe.values)):
        size = np.dtype(dtype).itemsize
        if offset + size > len(data):
            result.problem = (f"value {i} at byte {offset} lies outside {probe.output!r} "
                              f"({len(data)} bytes)")
            return result
        actual = np.frombuffer(data, dtype=dtype, count=1, offset=offset)[0].item()
        if isinstance(expected, float) and np.dtype(dtype).kind == "f":
            # Amber converts the expected value to the component's type before comparing
            with np.errstate(over="ignore"):
                expected = np.array(expected, dtype=dtype).item()
        if not _holds(probe.comparator, actual, expected, probe.tolerance):
            bad.append(ElementMismatch((i,), expected, actual, criterion))
    result.failed = len(bad)
    result.first = bad[:SHOWN]
    result.ok = not bad
    return result


def check_comparison(comparison: Any, data: bytes | None, other: bytes | None) -> OutputResult:
    """One :class:`~kernellab.suite.expectations.OutputComparison` of two outputs' bytes."""
    name = f"{comparison.where}: {comparison.text}" if comparison.where else comparison.output
    result = OutputResult(name, False, Tolerance(), criterion=comparison.comparison)
    if data is None or other is None:
        result.problem = "the run produced no such output"
        return result
    if len(data) != len(other):
        result.problem = f"sizes differ: {len(data)} and {len(other)} bytes"
        return result
    a = np.frombuffer(data, dtype=comparison.dtype)
    e = np.frombuffer(other, dtype=comparison.dtype)
    result.compared = a.size
    if comparison.comparison == "EQ_BUFFER":
        rows_a = a.view(np.uint8).reshape(a.size, -1)
        rows_e = e.view(np.uint8).reshape(e.size, -1)
        differ = np.flatnonzero(np.any(rows_a != rows_e, axis=1))
        result.failed = int(differ.size)
        result.first = [ElementMismatch((int(i),), e[i].item(), a[i].item(), "exact") for i in differ[:SHOWN]]
    elif comparison.comparison == "RMSE_BUFFER":
        result.rmse = float(np.sqrt(np.mean((a.astype(np.float64) - e.astype(np.float64)) ** 2))) if a.size else 0.0
        if not result.rmse <= (comparison.tolerance or 0.0):
            result.problem = f"RMSE {result.rmse:.6g} exceeds {comparison.tolerance:g}"
    else:
        ha = np.bincount(a.view(np.uint8), minlength=256) / max(a.nbytes, 1)
        he = np.bincount(e.view(np.uint8), minlength=256) / max(e.nbytes, 1)
        emd = float(np.sum(np.abs(np.cumsum(ha - he)))) / 255.0
        if not emd <= (comparison.tolerance or 0.0):
            result.problem = f"histogram EMD {emd:.6g} exceeds {comparison.tolerance:g}"
    result.ok = result.failed == 0 and not result.problem
    return result


def check_pixels(probe: Any, data: bytes | None) -> OutputResult:
    """One :class:`~kernellab.suite.expectations.PixelProbe` against an image output's bytes."""
    from kernellab.formats.texels import decode
    from kernellab.vkregistry import vkformat

    name = f"{probe.where}: {probe.text}" if probe.where else probe.output
    (x, y), (w, h) = probe.origin, probe.size
    result = OutputResult(name, False, Tolerance(), compared=w * h, criterion=probe.text.split()[-len(probe.rgba) - 1])
    fmt = vkformat.lookup(probe.format)
    if data is None or fmt is None:
        result.problem = f"the run produced no image output {probe.output!r}"
        return result
    stored = np.frombuffer(data, dtype=fmt.dtype)
    rows = stored.size // (probe.row_texels * fmt.channels)
    if y + h > rows:
        result.problem = f"pixels up to row {y + h - 1} lie outside {probe.output!r} ({rows} rows)"
        return result
    texels = stored[:rows * probe.row_texels * fmt.channels].reshape(rows, probe.row_texels, fmt.channels)
    actual = decode(fmt, texels[y:y + h, x:x + w])
    # the format's channels as R, G, B, A (B8G8R8A8 keeps blue first)
    order = [fmt.components.index(c) if c in fmt.components else -1 for c in "RGBA"[:len(probe.rgba)]]
    bad = np.zeros((h, w), bool)
    for k, index in enumerate(order):
        if index < 0:
            continue
        expected = probe.rgba[k] / 255.0
        value, percent = probe.tolerances[k] if len(probe.tolerances) > k else probe.tolerances[0]
        allowed = value / 100.0 * abs(expected) if percent else value
        bad |= ~(np.abs(actual[..., index] - expected) <= allowed)
    where = np.argwhere(bad)
    result.failed = int(where.shape[0])
    scale = 255.0 if fmt.numeric in ("UNORM", "SNORM", "SRGB") else 1.0
    result.first = [ElementMismatch((int(x + j), int(y + i)), tuple(probe.rgba),
                                    tuple(round(float(actual[i, j, c]) * scale, 3) for c in order if c >= 0),
                                    f"{probe.tolerances[0][0]:g}{'%' if probe.tolerances[0][1] else ''}")
                    for i, j in where[:SHOWN]]
    result.ok = result.failed == 0
    return result


def check_all(checks: list[Any], outputs: Mapping[str, bytes | None]) -> CheckResult:
    """Every check (probes and output comparisons) against the outputs' bytes, in order."""
    from kernellab.suite.expectations import PixelProbe, ProbeExpectation

    result = CheckResult()
    for c in checks:
        if isinstance(c, PixelProbe):
            result.outputs.append(check_pixels(c, outputs.get(c.output)))
        elif isinstance(c, ProbeExpectation):
            result.outputs.append(check_probe(c, outputs.get(c.output)))
        else:
            result.outputs.append(check_comparison(c, outputs.get(c.output), outputs.get(c.other)))
    return result
