"""What the conformance runners share: reading an OpenCL C kernel's parameters, writing a launch as a
kernel-instantiation file, running ``kernellab verify --json`` on it and summarising the answer.

The runners turn third-party test suites (kept outside the repository, under /work/ext) into
concrete launches; nothing here knows a particular suite.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

#: the verdict kinds of issue 12: everything else is a warning unless asked for with --check
DEFECT_KINDS = ("data-race", "barrier-divergence", "out-of-bounds")

#: Oclgrind's largest work-group and its __local memory (CL_DEVICE_MAX_WORK_GROUP_SIZE, _LOCAL_MEM_SIZE)
DEVICE_MAX_WORK_GROUP = 1024
DEVICE_LOCAL_MEM = 32768

DEFAULT_KERNELLAB = Path(__file__).resolve().parent.parent / ".venv" / "bin" / "kernellab"

_SCALAR_SIZES = {"char": 1, "uchar": 1, "bool": 1, "short": 2, "ushort": 2, "half": 2, "int": 4, "uint": 4,
                 "float": 4, "long": 8, "ulong": 8, "double": 8, "size_t": 8, "ptrdiff_t": 8, "intptr_t": 8,
                 "uintptr_t": 8, "unsigned": 4, "signed": 4}
_ADDRESS_SPACES = {"global": "global", "__global": "global", "local": "local", "__local": "local",
                   "constant": "constant", "__constant": "constant", "private": "private",
                   "__private": "private"}
_QUALIFIERS = {"const", "__const", "volatile", "restrict", "__restrict", "__restrict__", "read_only",
               "__read_only", "write_only", "__write_only", "read_write", "__read_write", "unsigned",
               "signed"}


@dataclass(frozen=True)
class Param:
    """One kernel parameter as written: ``kind`` is ``buffer`` (a __global/__constant pointer),
    ``local`` (a __local pointer), ``scalar``, ``image`` or ``sampler``."""
    name: str
    kind: str
    type_name: str
    address_space: str = "private"

    @property
    def element_size(self) -> int | None:
        """Bytes of one element (pointee for pointers); None for structs and unknown typedefs."""
        base = self.type_name.replace("*", " ").split()
        words = [w for w in base if w not in _QUALIFIERS and w not in _ADDRESS_SPACES and w != "struct"]
        if not words:
            return None
        word = words[-1]
        if "unsigned" in base and word in ("char", "short", "int", "long"):
            word = "u" + word
        m = re.fullmatch(r"([a-z_]+?)(2|3|4|8|16)?", word)
        if not m or m.group(1) not in _SCALAR_SIZES:
            return None
        count = int(m.group(2) or 1)
        return _SCALAR_SIZES[m.group(1)] * (4 if count == 3 else count)


def strip_comments(source: str) -> str:
    """The source without comments (string literals are rare in kernels and kept as they are)."""
    source = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), source, flags=re.S)
    return re.sub(r"//[^\n]*", "", source)


_KERNEL = re.compile(r"(?:__kernel|\bkernel)\b(?:\s+__attribute__\s*\(\(.*?\)\))*\s+void\s+"
                     r"(?:__attribute__\s*\(\(.*?\)\)\s*)*([A-Za-z_]\w*)\s*\(", re.S)


def kernel_names(source: str) -> list[str]:
    return [m.group(1) for m in _KERNEL.finditer(strip_comments(source))]


def kernel_params(source: str, name: str | None = None) -> tuple[str, list[Param]]:
    """The first kernel (or the one called ``name``) and its parameters, read from the source text.

    Raises ValueError when no such kernel is found."""
    text = strip_comments(source)
    for m in _KERNEL.finditer(text):
        if name is not None and m.group(1) != name:
            continue
        depth, i = 1, m.end()
        while depth and i < len(text):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        inside = text[m.end():i - 1]
        return m.group(1), [_param(p) for p in _split_top(inside) if p.strip() not in ("", "void")]
    raise ValueError(f"no kernel{' named ' + name if name else ''} in the source")


def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def _param(text: str) -> Param:
    text = re.sub(r"__attribute__\s*\(\(.*?\)\)", " ", " ".join(text.split()))
    text = re.sub(r"([A-Za-z_]\w*)\s*\[\s*\w*\s*\]", r"* \1", text)  # int a[] is int *a
    m = re.search(r"([A-Za-z_]\w*)\s*$", text)
    name = m.group(1) if m else ""
    type_name = text[:m.start()].strip() if m else text
    words = type_name.replace("*", " * ").split()
    space = next((_ADDRESS_SPACES[w] for w in words if w in _ADDRESS_SPACES), "private")
    base = [w for w in words if w not in _QUALIFIERS and w not in _ADDRESS_SPACES]
    if any(w.startswith("image") and w.endswith("_t") for w in base):
        return Param(name, "image", type_name)
    if "sampler_t" in base:
        return Param(name, "sampler", type_name)
    if "*" in words:
        return Param(name, "local" if space == "local" else "buffer", type_name,
                     space if space != "private" else "global")
    return Param(name, "scalar", type_name)


class LeftOut(Exception):
    """A test a launch cannot show, with its category and reason."""

    def __init__(self, category: str, reason: str):
        super().__init__(reason)
        self.category, self.reason = category, reason


# --- writing launches -------------------------------------------------------------------------

def write_atomic(path: Path, data: bytes | str) -> None:
    """Write ``path`` through a temporary file in the same folder and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode() if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix="." + path.name + ".", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, obj: Any) -> None:
    write_atomic(path, json.dumps(obj, indent=1) + "\n")


def element_format(param: Param) -> str:
    """The struct code of one lane of the parameter's (pointee) type; int for unknown types."""
    words = param.type_name.replace("*", " ").split()
    base = next((w for w in reversed(words) if w not in _QUALIFIERS and w not in _ADDRESS_SPACES), "int")
    if "unsigned" in words and base in ("char", "short", "int", "long"):
        base = "u" + base
    base = re.sub(r"(2|3|4|8|16)$", "", base)
    return {"char": "b", "uchar": "B", "bool": "B", "short": "h", "ushort": "H", "half": "H", "int": "i",
            "uint": "I", "float": "f", "long": "q", "ulong": "Q", "double": "d", "size_t": "Q"}.get(base, "i")


def iota(param: Param, size: int) -> bytes:
    """``size`` bytes of lane values 0, 1, 2, ... (chars wrap at 128, halves at 2048): distinct
    values, so a write-write race cannot hide behind equal values, and each value used as an index
    stays within a buffer of the same length."""
    code = element_format(param)
    half = "half" in param.type_name
    dtype = np.dtype("<f2" if half else "<" + code)
    count = size // dtype.itemsize
    values = np.arange(count, dtype=np.int64)
    if code in "bB":
        values %= 128
    elif half:
        values %= 2048
    elif dtype.kind in "iu":
        values %= 1 << (8 * dtype.itemsize - 1)
    return values.astype(dtype).tobytes() + bytes(size - count * dtype.itemsize)


def fill(param: Param, size: int, value: int | float) -> bytes:
    """``size`` bytes of lanes all holding ``value``."""
    code = element_format(param)
    count = size // struct.calcsize(code)
    v = float(value) if code in "fd" else int(value)
    return struct.pack(f"<{count}{code}", *([v] * count)) + bytes(size - count * struct.calcsize(code))


def scalar_hex(value: int, size: int) -> str:
    """A scalar's value as the format's hex string (two's complement in ``size`` bytes)."""
    return f"0x{value & ((1 << (8 * size)) - 1):X}"


@dataclass
class Launch:
    """A launch ready to write: the kernel source, sizes, and per argument a kernel_arguments
    record whose array data is given as bytes (written next to the launch)."""
    test: str
    source: str
    entry_point: str
    global_size: list[int]
    local_size: list[int] | None
    arguments: list[dict[str, Any]]
    data: dict[int, bytes] = field(default_factory=dict)
    compiler_flags: str = ""
    global_offset: list[int] | None = None


def launch_dir_name(test: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "__", test)


def write_launch(out: Path, launch: Launch) -> Path:
    """Write ``out/<test>/kernel.cl``, its data files and ``launch.json``; returns the JSON's path.
    Data files are named by their content in ``out/data``, so launches with the same buffers share
    them and a suite of launches stays small."""
    folder = out / launch_dir_name(launch.test)
    write_atomic(folder / "kernel.cl", launch.source)
    args = []
    for n, rec in enumerate(launch.arguments):
        rec = dict(rec)
        if n in launch.data:
            blob = launch.data[n]
            shared = out / "data" / f"{hashlib.sha1(blob).hexdigest()[:16]}-{len(blob)}.bin"
            if not shared.exists() or shared.stat().st_size != len(blob):
                write_atomic(shared, blob)
            rec["data"] = os.path.relpath(shared, folder)
        args.append(rec)
    inst: dict[str, Any] = {"language": "OpenCL", "endianness": "little", "kernel_file": "kernel.cl",
                            "global_size": launch.global_size, "entry_point": launch.entry_point,
                            "kernel_arguments": args}
    if launch.local_size is not None:
        inst["local_size"] = launch.local_size
    if launch.global_offset:
        inst["global_offset"] = launch.global_offset
    if launch.compiler_flags:
        inst["compiler_flags"] = launch.compiler_flags
    path = folder / "launch.json"
    write_json(path, [inst])
    return path


# --- running kernellab verify -----------------------------------------------------------------

@dataclass
class Outcome:
    """What ``kernellab verify`` said about one launch. ``verdict`` is ``verified``, ``defects``
    or ``error`` (bad input, crash or timeout: the launch said nothing about the kernel)."""
    verdict: str
    #: kinds that made the verdict ``defects``
    defect_kinds: list[str]
    #: kinds reported without changing the verdict (warnings)
    other_kinds: list[str]
    seconds: float
    message: str = ""
    exit_status: int | None = None


#: seconds kernellab gets past its own launch limit to stop the launch and report it
STOP_MARGIN = 30


def launch_limit(timeout: float) -> list[str]:
    """kernellab verify's own launch limit set to the suite's: its default (the tool limit, 300 s)
    stopped a heavy launch that a run given ``--timeout 900`` meant to wait for."""
    return ["--timeout", f"{timeout:g}"]


def run_verify(launch: Path, kernellab: Path = DEFAULT_KERNELLAB, timeout: float = 600,
               extra: Iterable[str] = ()) -> Outcome:
    env = dict(os.environ)
    env.setdefault("XDG_RUNTIME_DIR", "/tmp")
    start = time.monotonic()
    try:
        proc = subprocess.run([str(kernellab), "verify", "--json", *launch_limit(timeout), *extra, str(launch)],
                              capture_output=True, env=env, timeout=timeout + STOP_MARGIN)
    except subprocess.TimeoutExpired:
        return Outcome("error", [], [], time.monotonic() - start, f"timed out after {timeout:.0f} s")
    seconds = time.monotonic() - start
    out, err = proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")
    return interpret(proc.returncode, out, err, seconds)


def run_verify_batch(launches: list[Path], kernellab: Path = DEFAULT_KERNELLAB, timeout: float = 600,
                     jobs: int = 1) -> dict[Path, Outcome]:
    """Verify several launches in one ``kernellab verify`` call (``--jobs`` processes); a call
    that gives no per-file answer (bad input in one file stops it) is redone a file at a time."""
    env = dict(os.environ)
    env.setdefault("XDG_RUNTIME_DIR", "/tmp")
    start = time.monotonic()
    argv = [str(kernellab), "verify", "--json", *launch_limit(timeout), *(["--jobs", str(jobs)] if jobs > 1 else []),
            *map(str, launches)]
    try:
        proc = subprocess.run(argv, capture_output=True, env=env, timeout=timeout * len(launches) + STOP_MARGIN)
        doc = json.loads(proc.stdout.decode(errors="replace")) if proc.returncode in (0, 1) else None
    except (subprocess.TimeoutExpired, ValueError):
        doc = None
    files = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(files, list) or len(files) != len(launches):
        return {p: run_verify(p, kernellab, timeout) for p in launches}
    each = (time.monotonic() - start) / len(launches)
    return {p: _outcome(f, 1 if f.get("verdict") == "defects" else 0, each) for p, f in zip(launches, files)}


def verify_all(launches: list[Path], kernellab: Path = DEFAULT_KERNELLAB, timeout: float = 600,
               batch: int = 1, jobs: int = 1) -> Iterator[tuple[Path, Outcome]]:
    """Each launch's outcome, in order, as soon as it is known: one call per launch, or per
    ``batch`` launches (with ``jobs`` Oclgrind processes)."""
    for i in range(0, len(launches), max(1, batch)):
        chunk = launches[i:i + max(1, batch)]
        if len(chunk) == 1 and jobs <= 1:
            yield chunk[0], run_verify(chunk[0], kernellab, timeout)
        else:
            yield from run_verify_batch(chunk, kernellab, timeout, jobs).items()


def interpret(status: int, stdout: str, stderr: str, seconds: float = 0.0) -> Outcome:
    """The outcome of a ``kernellab verify --json`` run from its exit status and output."""
    if status not in (0, 1):
        lines = [l.strip() for l in (stderr or stdout).strip().splitlines() if l.strip()]
        # a compiler's message ends with the source line and a caret: its "error:" line says more
        first = next((l for l in lines if "error:" in l), lines[-1] if lines else f"exit status {status}")
        return Outcome("error", [], [], seconds, first[:300], status)
    try:
        doc = json.loads(stdout)
    except ValueError:
        lines = [l for l in stderr.strip().splitlines() if l.strip()]
        return Outcome("error", [], [], seconds, f"exit status {status} but no JSON on stdout"
                       + (f": {lines[0][:300]}" if lines else ""), status)
    if isinstance(doc, dict) and isinstance(doc.get("files"), list) and doc["files"]:
        doc = doc["files"][0]  # several files in one call: see run_verify_batch
    return _outcome(doc, status, seconds)


def _outcome(doc: dict[str, Any], status: int, seconds: float) -> Outcome:
    # a launch that did not run (refused at the enqueue, a time limit) checked nothing, whatever
    # the file's verdict says: counting it "verified" made a TN of a kernel the device refused
    idle = [l for l in doc.get("launches", []) if isinstance(l, dict) and l.get("ran") is False]
    if idle:
        return Outcome("error", [], [], seconds, f"launch {idle[0].get('instantiation')} did not run: "
                       f"{str(idle[0].get('error', ''))[:300]}", status)
    defects, others = [], []
    for f in doc.get("findings", []) + doc.get("warnings", []):
        kind = str(f.get("kind", "other"))
        severity = f.get("severity")
        counts = severity in ("defect", "error") if severity is not None else f in doc.get("findings", [])
        (defects if counts else others).append(kind)
    verdict = doc.get("verdict") or ("defects" if status == 1 or defects else "verified")
    if verdict == "defects" and not defects:  # an engine that gives no severities: all findings count
        defects, others = others, []
    return Outcome(verdict, sorted(set(defects)), sorted(set(others) - set(defects)), seconds, "", status)


def run_manifest(out: Path, record: Callable[[dict[str, Any], Outcome], None], kernellab: Path = DEFAULT_KERNELLAB,
                 only: str | None = None, timeout: float = 600, batch: int = 1, jobs: int = 1
                 ) -> list[dict[str, Any]]:
    """Verify every launch of ``out/manifest.json`` (ids containing ``only``): each test's row gets
    the verdict, kinds, time and message, then ``record`` adds the suite's comparison and prints."""
    manifest = json.loads((out / "manifest.json").read_text())
    results = [dict(e) for e in manifest["tests"] if not only or only in e["id"]]
    by_launch = {out / r["launch"]: r for r in results if r["launch"]}
    for path, o in verify_all(list(by_launch), kernellab, timeout, batch, jobs):
        row = by_launch[path]
        row.update(verdict=o.verdict, defect_kinds=o.defect_kinds, other_kinds=o.other_kinds,
                   seconds=round(o.seconds, 2), message=o.message)
        record(row, o)
    return results


def convert_from_cli(argv: list[str] | None, prog: str, doc: str, suite: Path, out: Path,
                     convert: Callable[[Path, Path], list[Any]]) -> argparse.Namespace | int:
    """The runners' shared command line: ``convert`` or ``run`` with --suite, --out and the run
    options. Converts the suite, then returns the arguments for ``run`` or an exit status."""
    p = argparse.ArgumentParser(prog=prog, description=doc.split("\n\n")[0])
    p.add_argument("command", choices=["convert", "run"], help="convert: write launches; run: convert, then verify")
    p.add_argument("--suite", type=Path, default=suite, help=f"the test suite (default {suite})")
    p.add_argument("--out", type=Path, default=out, help=f"where launches and results go (default {out})")
    add_run_options(p)
    args = p.parse_args(argv)
    if not args.suite.is_dir():
        print(f"{prog}: {args.suite}: no such folder (fetch the suite first, see CONFORMANCE.md)", file=sys.stderr)
        return 2
    entries = convert(args.suite, args.out)
    left = sum(e.category is not None for e in entries)
    print(f"{len(entries)} tests: {len(entries) - left} launches, {left} left out -> {args.out}")
    return 0 if args.command == "convert" else args


def add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kernellab", type=Path, default=DEFAULT_KERNELLAB, help="the kernellab command to check")
    p.add_argument("--only", help="only tests whose id contains this (results go to results-partial.*)")
    p.add_argument("--timeout", type=float, default=180, help="seconds per launch (default 180)")
    p.add_argument("--batch", type=int, default=1, help="launches per kernellab call (default 1)")
    p.add_argument("--jobs", type=int, default=1, help="kernellab verify --jobs (with --batch)")


def write_results(out: Path, partial: bool, doc: dict[str, Any], md: str) -> str:
    """Write ``results.json``/``.md`` (``results-partial.*`` for a partial run, so it keeps the full
    record) and say where."""
    stem = "results-partial" if partial else "results"
    write_json(out / f"{stem}.json", doc)
    write_atomic(out / f"{stem}.md", md)
    return f"results: {out / (stem + '.json')}, {out / (stem + '.md')}"


# --- reporting --------------------------------------------------------------------------------

def md_table(header: list[str], rows: Iterable[Iterable[Any]]) -> str:
    def cell(v: Any) -> str:
        return str(v).replace("|", "\\|").replace("\n", " ")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def kernellab_commit(repo: Path | None = None) -> str:
    repo = repo or Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=30).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + (" + uncommitted changes" if dirty else "") if head else "unknown"
