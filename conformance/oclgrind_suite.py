"""Oclgrind's own kernel tests (``tests/kernels``) as kernel-instantiation launches, checked with
``kernellab verify``.

A test is ``NAME.sim`` (the kernel file, kernel name, NDRange, work-group size and one ``<...>``
header per argument with its data), the kernel ``NAME.cl`` and ``NAME.ref``, whose ``ERROR`` lines
are the diagnostics Oclgrind must print. A test expecting a data race, work-group divergence (of a
barrier or an async copy) or an out-of-bounds access expects ``defects``; one expecting nothing, or
only diagnostics that are warnings in kernellab (uninitialized values, read-only/write-only buffers,
alignment, events), expects ``verified``.

    python conformance/oclgrind_suite.py run --suite /work/ext/oclgrind-tests/tests/kernels
"""
from __future__ import annotations

import re
import struct
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``conformance`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from conformance import common  # noqa: E402

DEFAULT_SUITE = Path("/work/ext/oclgrind-tests/tests/kernels")
DEFAULT_OUT = Path("/work/ext/oclgrind-launches")

#: Oclgrind's diagnostic (a substring of an ERROR line) -> kernellab's kind
DIAGNOSTIC_KINDS = (
    ("data race", "data-race"),
    ("divergence detected (barrier)", "barrier-divergence"),
    # issue 12: an async copy reached by part of a work-group is barrier divergence
    ("divergence detected (async copy)", "barrier-divergence"),
    ("Invalid read of size", "out-of-bounds"),
    ("Invalid write of size", "out-of-bounds"),
    ("exceeds static array size", "out-of-bounds"),
    ("Uninitialized", "uninitialized-read"),
    ("Invalid write to read-only buffer", "write-to-read-only"),
    ("Invalid read from write-only buffer", "read-from-write-only"),
    ("not aligned", "misaligned-access"),
    ("Unaligned address", "misaligned-access"),
    ("finished without waiting for events", "unwaited-event"),
    ("Invalid wait event", "invalid-wait-event"),
)

#: tests whose verdict in GPUVerify's meaning differs from what their .ref implies (test -> verdict, why);
#: a .ref lists the messages Oclgrind prints, which is not a verdict
VERDICTS: dict[str, tuple[str, str]] = {
    "async_copy/async_copy_unwaited": (
        "defects", "the copy is never waited for, so it is in flight while every work-item writes its source "
                   "(data[3 - i]): a data race in OpenCL C (and GPUVerify's async_work_group_copy/fail/test1 is the "
                   "same shape on the destination); Oclgrind never performs an unwaited copy, so its .ref has only "
                   "the unwaited-event message"),
}

#: Oclgrind's .sim element types: struct format and size
_TYPES = {"char": "b", "uchar": "B", "short": "h", "ushort": "H", "int": "i", "uint": "I", "long": "q",
          "ulong": "Q", "float": "f", "double": "d"}


@dataclass
class SimArg:
    """One ``<...>`` argument header and the data values after it."""
    size: int | None = None
    type: str | None = None
    fill: str | None = None
    range: str | None = None
    hex: bool = False
    noinit: bool = False
    null: bool = False
    read_only: bool = False
    write_only: bool = False
    values: list[str] = field(default_factory=list)


@dataclass
class SimFile:
    kernel_file: str
    kernel: str
    global_size: list[int]
    local_size: list[int]
    args: list[SimArg]
    #: from ``# ARGS:`` comments: options of Oclgrind's test driver
    driver_args: list[str]


def read_sim(text: str) -> SimFile:
    """Parse a .sim file: tokens after the ``#`` comments are stripped, headers are ``<...>``."""
    driver: list[str] = []
    body = []
    for line in text.splitlines():
        code, _, comment = line.partition("#")
        m = re.match(r"\s*ARGS:\s*(.*)", comment)
        if m:
            driver += m.group(1).split()
        body.append(code)
    tokens = re.findall(r"<[^>]*>|[^\s<>]+", "\n".join(body))
    if len(tokens) < 8:
        raise ValueError("expected kernel file, kernel name, NDRange and work-group size")
    try:
        glob = [int(t) for t in tokens[2:5]]
        local = [int(t) for t in tokens[5:8]]
    except ValueError as exc:
        raise ValueError(f"NDRange and work-group size must be integers: {exc}") from None
    args: list[SimArg] = []
    for tok in tokens[8:]:
        if tok.startswith("<"):
            args.append(_header(tok[1:-1]))
        elif args:
            args[-1].values.append(tok)
        else:
            raise ValueError(f"value {tok!r} before the first argument header")
    return SimFile(tokens[0], tokens[1], glob, local, args, driver)


def _header(text: str) -> SimArg:
    a = SimArg()
    for tok in text.split():
        key, _, value = tok.partition("=")
        if key == "size":
            a.size = int(value)
        elif key in _TYPES:
            a.type = key
        elif key in ("fill", "range"):
            setattr(a, key, value)
        elif key in ("hex", "noinit", "null"):
            setattr(a, key, True)
        elif key == "ro":
            a.read_only = True
        elif key == "wo":
            a.write_only = True
        elif key != "dump":
            raise ValueError(f"unknown argument descriptor {tok!r}")
    return a


def default_type(param: common.Param) -> str | None:
    """Oclgrind's default element type: the parameter's type name by prefix (``int4`` is int)."""
    words = [w for w in param.type_name.replace("*", " ").split()
             if w not in ("const", "volatile", "restrict", "global", "__global", "local", "__local",
                          "constant", "__constant", "private", "__private", "unsigned")]
    name = words[-1] if words else ""
    if "unsigned" in param.type_name.split() and name in ("char", "short", "int", "long"):
        name = "u" + name
    for t in sorted(_TYPES, key=len, reverse=True):
        if name.startswith(t):
            return t
    return "uchar" if name == "void" else None


def arg_bytes(arg: SimArg, elem: str) -> bytes:
    """The bytes Oclgrind would store for an argument of element type ``elem``."""
    assert arg.size is not None
    code = _TYPES[elem]
    width = struct.calcsize(code)
    if arg.size % width:
        raise ValueError(f"size {arg.size} is not a multiple of the {elem} size {width}")
    count = arg.size // width

    def value(tok: str) -> int | float:
        if code in "fd":
            return float(tok)
        v = int(tok, 16 if arg.hex else 10) if not tok.lower().startswith(("0x", "-0x")) else int(tok, 16)
        return v & ((1 << (8 * width)) - 1) if code.isupper() else v

    if arg.fill is not None:
        values = [value(arg.fill)] * count
    elif arg.range is not None:
        start, inc, end = (value(t) for t in arg.range.split(":"))
        values = [start + i * inc for i in range(count)]
        if values and values[-1] != end:
            raise ValueError(f"range {arg.range} does not give {count} values")
    else:
        values = [value(t) for t in arg.values]
        if len(values) != count:
            raise ValueError(f"expected {count} values of type {elem}, got {len(values)}")
    return struct.pack("<" + code * count, *values)


def expected_kinds(ref: str) -> list[str]:
    kinds = []
    for line in ref.splitlines():
        if not line.startswith("ERROR"):
            continue
        kind = next((k for text, k in DIAGNOSTIC_KINDS if text in line), "other")
        if kind not in kinds:
            kinds.append(kind)
    return kinds


@dataclass
class Entry:
    id: str
    expected: str
    expected_kinds: list[str]
    launch: str | None = None
    category: str | None = None
    reason: str = ""
    notes: list[str] = field(default_factory=list)


def make_launch(test_id: str, sim: SimFile, source: str) -> tuple[common.Launch, list[str]]:
    name, params = common.kernel_params(source, sim.kernel)
    if len(params) != len(sim.args):
        raise ValueError(f"the .sim file gives {len(sim.args)} arguments for {len(params)} parameters")
    records: list[dict[str, Any]] = []
    data: dict[int, bytes] = {}
    notes: list[str] = []
    for n, (p, a) in enumerate(zip(params, sim.args)):
        if a.null:
            raise common.LeftOut("null-buffer", f"argument {n} ({p.name}) is a null buffer, which the "
                                         "kernel-instantiation format cannot express")
        if a.size is None:
            raise ValueError(f"argument {n} ({p.name}) has no size")
        if p.kind == "local":
            records.append({"type": "array", "size": a.size, "address_space": "local"})
            continue
        elem = a.type or default_type(p)
        if elem is None:
            raise ValueError(f"argument {n} ({p.type_name} {p.name}) needs an element type")
        if p.kind == "buffer" and a.size == 0:
            # the simulator takes an empty buffer; clCreateBuffer (and the format) cannot
            a = SimArg(size=struct.calcsize(_TYPES[elem]), type=elem, fill="0")
            notes.append(f"argument {n} ({p.name}) has size 0 in Oclgrind's test; given one {elem}, as "
                         "OpenCL cannot create an empty buffer")
        if p.kind == "buffer":
            rec: dict[str, Any] = {"type": "array", "size": a.size, "address_space": p.address_space}
            if a.read_only or a.write_only:
                rec["flags"] = ["CL_MEM_READ_ONLY" if a.read_only else "CL_MEM_WRITE_ONLY"]
            if a.noinit:
                notes.append(f"argument {n} ({p.name}) is uninitialized in Oclgrind's test; the format "
                             "cannot say so, kernellab fills it from the seed")
            else:
                data[n] = arg_bytes(a, elem)
            records.append(rec)
        elif p.kind == "scalar":
            raw = arg_bytes(a, elem)
            records.append({"type": "scalar", "value": f"0x{int.from_bytes(raw, 'little'):X}"})
        else:
            raise common.LeftOut("argument-kind",
                                 f"argument {n} ({p.name}) is an {p.kind}, which .sim files do not describe")
    flags = []
    it = iter(sim.driver_args)
    for opt in it:
        if opt == "--build-options":
            flags.append(next(it, ""))
    launch = common.Launch(test_id, source, name, sim.global_size, sim.local_size, records, data, " ".join(flags))
    return launch, notes


def convert(suite: Path, out: Path) -> list[Entry]:
    listed = (suite / "TESTS").read_text().split() if (suite / "TESTS").is_file() else \
        sorted(str(p.relative_to(suite).with_suffix("")) for p in suite.rglob("*.sim"))
    entries = []
    for test_id in listed:
        sim_path = suite / (test_id + ".sim")
        ref_path = suite / (test_id + ".ref")
        ref = ref_path.read_text(errors="replace") if ref_path.is_file() else ""
        kinds = expected_kinds(ref)
        expected = "defects" if any(k in common.DEFECT_KINDS for k in kinds) else "verified"
        if test_id in VERDICTS:
            expected = VERDICTS[test_id][0]
        entry = Entry(test_id, expected, kinds)
        try:
            sim = read_sim(sim_path.read_text(errors="replace"))
            if "-i" in sim.driver_args:
                raise common.LeftOut("interactive", "drives Oclgrind's interactive debugger; its .ref is "
                                                    "the debugger's output, not diagnostics")
            source = (sim_path.parent / sim.kernel_file).read_text(errors="replace")
            launch, entry.notes = make_launch(test_id, sim, source)
            if test_id in VERDICTS:
                entry.notes.append(f"expected verdict {VERDICTS[test_id][0]}: {VERDICTS[test_id][1]}")
            entry.launch = str(common.write_launch(out, launch).relative_to(out))
        except common.LeftOut as exc:
            entry.category, entry.reason = exc.category, exc.reason
        except (ValueError, OSError) as exc:
            entry.category, entry.reason = "unreadable", f"{sim_path.name}: {exc}"
        entries.append(entry)
    common.write_json(out / "manifest.json", {"suite": str(suite), "tests": [asdict(e) for e in entries]})
    return entries


def run(out: Path, kernellab: Path = common.DEFAULT_KERNELLAB, only: str | None = None, timeout: float = 600,
        batch: int = 1, jobs: int = 1) -> list[dict[str, Any]]:
    def record(row: dict[str, Any], o: common.Outcome) -> None:
        reported = set(o.defect_kinds) | set(o.other_kinds)
        row.update(match=o.verdict == row["expected"],
                   kinds_reported=all(k in reported for k in row["expected_kinds"]))
        print(f"{'ok ' if row['match'] else 'BAD'} {row['id']:45} want {row['expected']:9} "
              f"{','.join(row['expected_kinds']) or '-':35} got {o.verdict:9} "
              f"[{','.join(o.defect_kinds) or '-'}; warnings {','.join(o.other_kinds) or '-'}]"
              + (f" {o.message}" if o.message else ""), flush=True)
    return common.run_manifest(out, record, kernellab, only, timeout, batch, jobs)


def markdown(results: list[dict[str, Any]], commit: str) -> str:
    ran = [r for r in results if "verdict" in r]
    head = (f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, kernellab {commit}: {len(results)} tests, "
            f"{len(ran)} launched, verdict as expected on {sum(r['match'] for r in ran)}, every expected "
            f"diagnostic reported (as a defect or a warning) on {sum(r['kinds_reported'] for r in ran)}.")
    table = common.md_table(
        ["test", "Oclgrind expects", "expected verdict", "kernellab verdict", "defect kinds", "warnings", "match",
         "note"],
        [[r["id"], ", ".join(r["expected_kinds"]) or "-", r["expected"], r["verdict"],
          ", ".join(r["defect_kinds"]) or "-", ", ".join(r["other_kinds"]) or "-",
          "yes" if r["match"] else "**no**", "; ".join(filter(None, [r.get("message", "")] + r["notes"]))]
         for r in ran])
    left = common.md_table(["left out", "category", "reason"],
                           [[r["id"], r["category"], r["reason"]] for r in results if r.get("category")])
    return f"{head}\n\n{table}\n\n{left}\n"


def main(argv: list[str] | None = None) -> int:
    args = common.convert_from_cli(argv, "oclgrind_suite.py", __doc__ or "", DEFAULT_SUITE, DEFAULT_OUT, convert)
    if isinstance(args, int):
        return args
    results = run(args.out, args.kernellab, args.only, args.timeout, args.batch, args.jobs)
    commit = common.kernellab_commit()
    ran = [r for r in results if "verdict" in r]
    where = common.write_results(args.out, bool(args.only), {"commit": commit, "tests": results},
                                 markdown(results, commit))
    print(f"\nverdict as expected: {sum(r['match'] for r in ran)}/{len(ran)}; {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
