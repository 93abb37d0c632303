"""Expectations sidecars: the outputs a workload must produce, beside the file Arm reads.

``add.json`` is expected to produce what ``add.expect.json`` lists (the workload file itself is
never changed, so Arm's runner still reads it)::

    {
      "outputs": {
        "c":   {"reference": "add.c.npy", "rtol": 1e-5, "atol": 1e-6},
        "img": {"reference": "add.img.npy", "ulps": 2, "nan": "ignore"}
      }
    }

Each key names an output: a resource uid with a ``dst`` for scenarios, else the path of a file
the run writes (relative to the output folder). ``reference`` is a ``.npy`` file (relative to
the sidecar) whose dtype and shape say how the output's bytes are read. With no tolerance the
comparison is exact; ``atol``/``rtol`` pass an element when ``|a - e| <= atol + rtol * |e|``,
``ulps`` when the two floats are at most that many representable values apart (an element
passes when it meets any of the element-wise criteria given); ``rmse`` bounds the root mean
square error of the whole array (checked in addition). ``nan``: ``equal`` (default, a NaN
matches only a NaN), ``ignore`` (where the reference is NaN anything goes) or ``never`` (any NaN
in the output fails). ``defaults`` gives tolerances shared by every output.
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import field, replace
from pathlib import Path
from typing import Any

from kernellab.errors import InputError, Problem, json_pointer
from kernellab.formats.paths import path_problem
from kernellab.outputs import escapes
from kernellab.records import dataclass

SIDECAR_SUFFIX = ".expect.json"
#: AmberScript files: workloads that carry their own expectations (EXPECT), found by suites as they are
AMBER_SUFFIX = ".amber"
NAN_MODES = ("equal", "ignore", "never")
TOLERANCE_FIELDS = ("atol", "rtol", "ulps", "rmse", "nan")
OUTPUT_FIELDS = ("reference", "dtype", *TOLERANCE_FIELDS)
TOP_FIELDS = ("$schema", "workload", "outputs", "defaults", "description", "checks")


@dataclass(frozen=True)
class Tolerance:
    """How close an output must be to its reference; all None = exact."""

    atol: float | None = None
    rtol: float | None = None
    ulps: int | None = None
    rmse: float | None = None
    nan: str = "equal"

    @property
    def exact(self) -> bool:
        return self.atol is None and self.rtol is None and self.ulps is None and self.rmse is None

    @property
    def elementwise(self) -> bool:
        return self.atol is not None or self.rtol is not None or self.ulps is not None or self.exact

    def describe(self) -> str:
        parts = [f"{k}={getattr(self, k):g}" for k in ("atol", "rtol", "ulps", "rmse") if getattr(self, k) is not None]
        if self.nan != "equal":
            parts.append(f"nan={self.nan}")
        return ", ".join(parts) if parts else "exact"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: getattr(self, k) for k in ("atol", "rtol", "ulps", "rmse")
                               if getattr(self, k) is not None}
        if self.nan != "equal":
            out["nan"] = self.nan
        return out


@dataclass(frozen=True)
class OutputExpectation:
    name: str
    reference: Path
    tolerance: Tolerance = Tolerance()
    #: NumPy dtype name the output is read as (must agree with the reference's)
    dtype: str | None = None
    #: JSON pointer of this entry in the sidecar, for messages
    where: str = ""


@dataclass
class Expectations:
    """A parsed sidecar: which workload, and what each of its outputs must be."""

    sidecar: Path
    workload: Path
    outputs: dict[str, OutputExpectation] = field(default_factory=dict)
    description: str = ""
    #: value probes and output comparisons (an imported AmberScript file's EXPECTs)
    checks: list[Any] = field(default_factory=list)

    def output_names(self) -> list[str]:
        """Every output the expectations read: those with references, then those the checks name."""
        names = list(self.outputs)
        for c in self.checks:
            for name in (c.output, getattr(c, "other", "")):
                if name and name not in names:
                    names.append(name)
        return names

    def to_json(self) -> dict[str, Any]:
        base = self.sidecar.parent
        data: dict[str, Any] = {}
        if self.description:
            data["description"] = self.description
        if self.workload != default_workload(self.sidecar):
            data["workload"] = _relative(self.workload, base)
        data["outputs"] = {}
        if self.checks and not self.outputs:
            del data["outputs"]
        for name, e in self.outputs.items():
            entry: dict[str, Any] = {"reference": _relative(e.reference, base)}
            if e.dtype:
                entry["dtype"] = e.dtype
            entry.update(e.tolerance.to_json())
            data["outputs"][name] = entry
        if self.checks:
            data["checks"] = [c.to_json() for c in self.checks]
        return data


def references_outside(expectations: Expectations, names: Iterable[str]) -> list[Problem]:
    """The outputs among ``names`` whose reference lands outside the sidecar's folder (``..``, an
    absolute path, a symlink out), each at its JSON path: ``bless`` writes references, and a
    sidecar is a file like any other, so it does not choose where."""
    folder = expectations.sidecar.parent
    problems = []
    for name in names:
        e = expectations.outputs.get(name)
        if e is None:
            continue
        try:
            outside = escapes(e.reference, folder)
        except (OSError, RuntimeError) as exc:  # a symlink loop, a name too long
            outside, why = True, f"cannot be resolved ({exc})"
        else:
            why = f"resolves to {e.reference.resolve()}"
        if outside:
            problems.append(Problem(str(expectations.sidecar), f"{e.where}/reference",
                                    f"reference {why}, outside the sidecar's folder {folder}: bless writes "
                                    "references only there"))
        elif (flaw := path_problem(str(e.reference.relative_to(folder) if e.reference.is_relative_to(folder)
                                       else e.reference.name), written=True)) is not None:
            problems.append(Problem(str(expectations.sidecar), f"{e.where}/reference", flaw))
    return problems


def _relative(path: Path, base: Path) -> str:
    try:
        return path.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return str(path)


def sidecar_for(workload: str | Path) -> Path:
    """``add.json`` -> ``add.expect.json`` (same folder)."""
    workload = Path(workload)
    stem = workload.name[:-5] if workload.name.endswith(".json") else workload.name
    return workload.with_name(stem + SIDECAR_SUFFIX)


def default_workload(sidecar: str | Path) -> Path:
    sidecar = Path(sidecar)
    return sidecar.with_name(sidecar.name[: -len(SIDECAR_SUFFIX)] + ".json")


def is_sidecar(path: str | Path) -> bool:
    return Path(path).name.endswith(SIDECAR_SUFFIX)


def _number(problems: list[Problem], file: str, loc: tuple[str | int, ...], value: Any, *,
            integer: bool = False) -> Any:
    ok = not isinstance(value, bool) and isinstance(value, (int if integer else (int, float)))
    if not ok or not math.isfinite(value) or value < 0:
        kind = "an integer" if integer else "a number"
        problems.append(Problem(file, json_pointer(loc), f"expected {kind} >= 0, got {json.dumps(value)}"))
        return None
    return int(value) if integer else float(value)


def _tolerance(problems: list[Problem], file: str, loc: tuple[str | int, ...], data: Mapping[str, Any],
               base: Tolerance) -> Tolerance:
    t = base
    for key in ("atol", "rtol", "rmse"):
        if key in data:
            t = replace(t, **{key: _number(problems, file, loc + (key,), data[key])})
    if "ulps" in data:
        t = replace(t, ulps=_number(problems, file, loc + ("ulps",), data["ulps"], integer=True))
    if "nan" in data:
        if data["nan"] not in NAN_MODES:
            problems.append(Problem(file, json_pointer(loc + ("nan",)),
                                    f"expected one of {'|'.join(NAN_MODES)}, got {json.dumps(data['nan'])}"))
        else:
            t = replace(t, nan=data["nan"])
    return t


def _unknown(problems: list[Problem], file: str, loc: tuple[str | int, ...], data: Mapping[str, Any],
             known: tuple[str, ...]) -> None:
    for key in data:
        if key not in known:
            problems.append(Problem(file, json_pointer(loc + (key,)),
                                    f"unknown field \"{key}\" (known: {', '.join(known)})"))


def parse_expectations(data: Any, sidecar: Path) -> Expectations:
    """Check a sidecar's JSON; every problem is reported at once with its JSON pointer."""
    file = str(sidecar)
    problems: list[Problem] = []
    if not isinstance(data, dict):
        raise InputError.at(sidecar, "/", "expected an object with \"outputs\"")
    _unknown(problems, file, (), data, TOP_FIELDS)
    workload = default_workload(sidecar)
    if "workload" in data:
        if not isinstance(data["workload"], str) or not data["workload"]:
            problems.append(Problem(file, "/workload", "expected a non-empty string (the workload file)"))
        else:
            workload = sidecar.parent / data["workload"]
    defaults = Tolerance()
    if "defaults" in data:
        if not isinstance(data["defaults"], dict):
            problems.append(Problem(file, "/defaults", "expected an object of tolerances"))
        else:
            _unknown(problems, file, ("defaults",), data["defaults"], TOLERANCE_FIELDS)
            defaults = _tolerance(problems, file, ("defaults",), data["defaults"], defaults)
    outputs: dict[str, OutputExpectation] = {}
    checks: list[Any] = []
    if "checks" in data:
        try:
            checks = parse_checks(data["checks"], file)
        except InputError as exc:
            problems.extend(exc.problems)
    raw = data.get("outputs")
    if checks and (raw is None or raw == {}):
        raw = {}
    elif not isinstance(raw, dict) or not raw:
        problems.append(Problem(file, "/outputs" if "outputs" in data else "/",
                                "expected \"outputs\": an object with at least one output"
                                if "outputs" in data else "missing required field \"outputs\""))
        raw = {}
    for name, entry in raw.items():
        output = _output(problems, file, sidecar, name, entry, defaults)
        if output is not None:
            outputs[name] = output
    if problems:
        raise InputError(problems)
    desc = data.get("description", "")
    return Expectations(sidecar, workload, outputs, desc if isinstance(desc, str) else "", checks)


def _output(problems: list[Problem], file: str, sidecar: Path, name: str, entry: Any,
            defaults: Tolerance) -> OutputExpectation | None:
    """One entry of ``outputs``; None (its problems added) when it is unusable."""
    loc: tuple[str | int, ...] = ("outputs", name)
    if not isinstance(entry, dict):
        problems.append(Problem(file, json_pointer(loc), "expected an object with \"reference\""))
        return None
    _unknown(problems, file, loc, entry, OUTPUT_FIELDS)
    ref = entry.get("reference")
    if not isinstance(ref, str) or not ref:
        problems.append(Problem(file, json_pointer(loc + ("reference",)) if "reference" in entry
                                else json_pointer(loc), "expected \"reference\": a .npy file"))
        return None
    dtype = entry.get("dtype")
    if dtype is not None:
        dtype = _dtype_name(problems, file, loc + ("dtype",), dtype)
    tol = _tolerance(problems, file, loc, entry, defaults)
    if tol.atol is None and tol.rtol is not None:
        tol = replace(tol, atol=0.0)
    if tol.rtol is None and tol.atol is not None:
        tol = replace(tol, rtol=0.0)
    return OutputExpectation(name, sidecar.parent / ref, tol, dtype, json_pointer(loc))


def _dtype_name(problems: list[Problem], file: str, loc: tuple[str | int, ...], value: Any) -> str | None:
    import numpy as np

    try:
        if not isinstance(value, str):
            raise TypeError
        return np.dtype(value).name
    except TypeError:
        problems.append(Problem(file, json_pointer(loc), f"expected a NumPy dtype name such as \"float32\", "
                                                         f"got {json.dumps(value)}"))
        return None


def load_expectations(sidecar: str | Path) -> Expectations:
    from kernellab.formats.jsonfile import load_json

    sidecar = Path(sidecar)
    return parse_expectations(load_json(sidecar), sidecar)


def find_expectations(workload: str | Path, sidecar: str | Path | None = None) -> Expectations:
    """The expectations of ``workload``: the sidecar given, else the one beside it."""
    path = Path(sidecar) if sidecar is not None else sidecar_for(workload)
    if not path.is_file():
        raise InputError(f"no expectations: {path} does not exist (write it with `kernellab bless {workload}`)",
                         file=path)
    return load_expectations(path)


def json_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of sidecar files, for editors."""
    tolerances: dict[str, Any] = {
        "atol": {"type": "number", "minimum": 0, "description": "absolute tolerance: |a - e| <= atol + rtol*|e|"},
        "rtol": {"type": "number", "minimum": 0, "description": "relative tolerance: |a - e| <= atol + rtol*|e|"},
        "ulps": {"type": "integer", "minimum": 0,
                 "description": "floats: at most this many units in the last place apart"},
        "rmse": {"type": "number", "minimum": 0,
                 "description": "bound on the root mean square error of the whole output"},
        "nan": {"enum": list(NAN_MODES), "default": "equal",
                "description": "equal: a NaN matches only a NaN; ignore: skip where the reference is NaN; "
                               "never: any NaN in the output fails"},
    }
    output = {"type": "object", "additionalProperties": False, "required": ["reference"],
              "properties": {"reference": {"type": "string", "minLength": 1,
                                           "description": ".npy file (relative to this file); its dtype and shape "
                                                          "say how the output's bytes are read"},
                             "dtype": {"type": "string", "description": "NumPy dtype the output is read as"},
                             **tolerances}}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "kernellab expectations sidecar",
        "description": "Expected outputs of the workload beside it (NAME.expect.json for NAME.json).",
        "type": "object",
        "additionalProperties": False,
        "anyOf": [{"required": ["outputs"]}, {"required": ["checks"]}],
        "properties": {
            "$schema": {"type": "string"},
            "description": {"type": "string"},
            "workload": {"type": "string", "minLength": 1,
                         "description": "the workload file, relative to this file (default: NAME.json)"},
            "defaults": {"type": "object", "additionalProperties": False, "properties": tolerances},
            "outputs": {"type": "object", "minProperties": 1, "additionalProperties": output,
                        "description": "per output (a resource uid, or a file the run writes): "
                                       "reference and comparison"},
            "checks": {"type": "array", "items": {"type": "object"},
                       "description": "value probes ({output, comparator, components, values, tolerance}) and "
                                      "output comparisons ({output, comparison, other, dtype, tolerance}): an "
                                      "imported AmberScript file's EXPECTs"},
        },
    }


#: comparators of value probes (AmberScript's ``EXPECT buf IDX x CMP values``)
PROBE_COMPARATORS = ("EQ", "NE", "LT", "LE", "GT", "GE")
#: comparisons of one output with another (AmberScript's buffer comparators)
OUTPUT_COMPARISONS = ("EQ_BUFFER", "RMSE_BUFFER", "EQ_HISTOGRAM_EMD_BUFFER")


@dataclass(frozen=True)
class ProbeExpectation:
    """Values at byte offsets of one output, each compared with ``comparator``: ``components``
    gives each value's byte offset and NumPy dtype. ``tolerance`` (value, percent) applies to
    ``EQ`` only, as in Amber: within ``value`` (absolute) or ``value``% of the expected value."""

    output: str
    comparator: str
    components: tuple[tuple[int, str], ...]
    values: tuple[int | float, ...]
    tolerance: tuple[float, bool] | None = None
    #: where it is written (``t.amber:12``) and its text, for the failure message
    where: str = ""
    text: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"output": self.output, "comparator": self.comparator,
                               "components": [list(c) for c in self.components], "values": list(self.values)}
        if self.tolerance is not None:
            out["tolerance"] = {"value": self.tolerance[0], "percent": self.tolerance[1]}
        out.update({"where": self.where, "text": self.text})
        return out


@dataclass(frozen=True)
class OutputComparison:
    """One output against another, both read as ``dtype``: ``EQ_BUFFER`` (every value equal),
    ``RMSE_BUFFER`` (root mean square error <= ``tolerance``), ``EQ_HISTOGRAM_EMD_BUFFER`` (the
    earth mover's distance of their 8-bit histograms <= ``tolerance``)."""

    output: str
    comparison: str
    other: str
    dtype: str
    tolerance: float | None = None
    where: str = ""
    text: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"output": self.output, "comparison": self.comparison, "other": self.other,
                               "dtype": self.dtype}
        if self.tolerance is not None:
            out["tolerance"] = self.tolerance
        out.update({"where": self.where, "text": self.text})
        return out


@dataclass(frozen=True)
class PixelProbe:
    """AmberScript's ``EXPECT img IDX x y SIZE w h EQ_RGB|EQ_RGBA``: every texel of a rectangle of
    an image output (rows of ``row_texels`` texels of ``format``) within ``tolerances`` of
    ``rgba``/255, each texel read as Amber's verifier reads it (normalized formats in [0, 1],
    the others as stored); ``tolerances`` (value, percent) per R, G, B, A."""

    output: str
    format: str
    row_texels: int
    origin: tuple[int, int]
    size: tuple[int, int]
    rgba: tuple[float, ...]
    tolerances: tuple[tuple[float, bool], ...]
    where: str = ""
    text: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"output": self.output, "pixels": {"format": self.format, "row_texels": self.row_texels,
                                                  "origin": list(self.origin), "size": list(self.size)},
                "rgba": list(self.rgba), "tolerances": [{"value": v, "percent": p} for v, p in self.tolerances],
                "where": self.where, "text": self.text}


Check = ProbeExpectation | OutputComparison | PixelProbe


def parse_checks(data: Any, file: str) -> list[Check]:
    """The ``checks`` of a sidecar (an imported AmberScript file's EXPECTs), every problem at once."""
    problems: list[Problem] = []
    checks: list[Check] = []
    if not isinstance(data, list):
        raise InputError.at(file, "/checks", "expected an array of checks")
    for i, c in enumerate(data):
        loc = ("checks", i)
        try:
            if not isinstance(c, dict):
                raise TypeError("expected an object")
            if "pixels" in c:
                px = c["pixels"]
                checks.append(PixelProbe(str(c["output"]), str(px["format"]), int(px["row_texels"]),
                                         (int(px["origin"][0]), int(px["origin"][1])),
                                         (int(px["size"][0]), int(px["size"][1])),
                                         tuple(float(v) for v in c["rgba"]),
                                         tuple((float(t["value"]), bool(t["percent"])) for t in c["tolerances"]),
                                         str(c.get("where", "")), str(c.get("text", ""))))
            elif "comparator" in c:
                if c["comparator"] not in PROBE_COMPARATORS:
                    raise TypeError(f"comparator: expected one of {'|'.join(PROBE_COMPARATORS)}")
                tol = c.get("tolerance")
                probe = ProbeExpectation(
                    str(c["output"]), c["comparator"], tuple((int(o), str(d)) for o, d in c["components"]),
                    tuple(c["values"]), None if tol is None else (float(tol["value"]), bool(tol["percent"])),
                    str(c.get("where", "")), str(c.get("text", "")))
                if len(probe.components) != len(probe.values):
                    raise TypeError("components and values differ in length")
                checks.append(probe)
            else:
                if c.get("comparison") not in OUTPUT_COMPARISONS:
                    raise TypeError(f"comparison: expected one of {'|'.join(OUTPUT_COMPARISONS)}")
                tol = c.get("tolerance")
                checks.append(OutputComparison(str(c["output"]), c["comparison"], str(c["other"]), str(c["dtype"]),
                                               None if tol is None else float(tol), str(c.get("where", "")),
                                               str(c.get("text", ""))))
        except (TypeError, KeyError, ValueError) as exc:
            problems.append(Problem(file, json_pointer(loc), f"not a check: {exc}"))
    if problems:
        raise InputError(problems)
    return checks
