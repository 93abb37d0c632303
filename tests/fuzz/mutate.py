"""A deterministic mutation fuzzer for kernellab's readers (our own: seeded, no library).

A *seed* is a folder of files (a workload and what it references) and the command that reads it.
Each case copies the seed, applies one to three mutations to one of its files — JSON files are
mutated in structure (values swapped for hostile ones, keys dropped, nesting deepened), binary files
in bytes (flips, truncation, insertion) — runs the command in-process with a time limit, and judges
the outcome: exit 0 or 2 with no traceback, no internal error, within the time limit, nothing
written outside the case's output folder and no staged file left anywhere.
"""
from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import random
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: values that broke readers before, or sit on a boundary of a 32/64-bit field
HOSTILE: list[Any] = [
    0, -1, 1, 31, 32, 33, 2**15, 2**16, 32768, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**53, 2**63, 2**64,
    -(2**63), 10**40, 1e308, -0.0, 0.5, float("inf"), "", "x" * 5000, "../../escape.npy", "/etc/passwd",
    "/dev/zero", "a\u0000b", "\ud800", "-Xclang -load -Xclang ./evil.so", "-o /tmp/owned", "--depfile x",
    True, False, None, [], {}, [0] * 40, [2**32 - 1, 2**32 - 1, 2**32 - 1], {"x": 1},
]

#: a file no case may create: hostile options and names below point at it
OWNED = Path(tempfile.gettempdir()) / "kernellab-fuzz-owned"

#: option strings of issue 18: quoting the driver splits again, newlines that become source lines
#: on the clspv path, options that write or read files (clang's internal ones too), response files
HOSTILE_OPTIONS: list[str] = [
    "-DA='0 -I/ -DB=0'", '-DA="x y"', "-DA=0\\ -I/", '-DX=1\n#include "/etc/passwd"', "-DX=1\n#pragma once",
    f"-dependency-file {OWNED} -MT x", f"-MD -MF {OWNED}", "-Xclang -load -Xclang ./evil.so", f"@{OWNED}",
    "-include /etc/passwd", "-I/", "-I..", "-I ../..", '-D X="a\\"b"', "-DX=#", "-cl-std=CL2.0 -o x",
    "-DX=\x1b[31m",
]
#: names and references of issue 18: folders in uids, control and direction characters, escapes
HOSTILE_NAMES: list[str] = [
    "..", "../../x", "a/b", str(OWNED), "x\x1b]0;owned\x07", "\u202ex.npy", "-rf", ".hidden", "x" * 300, "a\nb",
    "../" * 20 + "etc/passwd", "%2e%2e", "..\\..\\x",
]
HOSTILE += HOSTILE_OPTIONS + HOSTILE_NAMES

#: include lines hidden from a line-based pattern (comments, continuations, digraphs, trigraphs,
#: macros, inactive branches), each naming a file outside the case's folder, a device, or the FIFO
#: and the symbolic link :func:`mutate_files` makes
HIDDEN_INCLUDES: list[str] = [
    '/* c */ #include "{outside}"', '# /* c */ include "{outside}"', '#\\\ninclude "{outside}"',
    '#inc\\\nlude "{outside}"', '%:include "{outside}"', '??=include "{outside}"', '#include "/dev/zero"',
    '#include "fifo.h"', '#include "link.h"', '#if 0\n#include "{outside}"\n#endif', "#include <{outside}>",
    '#include_next "{outside}"', "#define H <{outside}>\n#include H", '#if __has_include("{outside}")\n#endif',
]
#: kernel sources an include line may be planted in
SOURCE_SUFFIXES = (".comp", ".cl", ".frag", ".vert", ".glsl", ".h")


def _paths(node: Any, here: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield here
    if isinstance(node, dict):
        for key, child in node.items():
            yield from _paths(child, here + (key,))
    elif isinstance(node, list):
        for i, child in enumerate(node):
            yield from _paths(child, here + (i,))


def _get(node: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        node = node[key]
    return node


def _nested(depth: int) -> str:
    """A marker that :func:`dump_json` turns into ``depth`` nested arrays (json.dumps would recurse)."""
    return f"@@deep{depth}@@"


class _LongInt(int):
    """An integer of 4,400 digits, past what int() converts by default; written by :func:`dump_json`."""


_LONG_INT = _LongInt(7)


def dump_json(doc: Any) -> str:
    text = json.dumps(_mark_long(doc))
    text = text.replace('"@@long@@"', "9" * 4400)
    for depth in (70, 1200, 2000):
        text = text.replace(f'"@@deep{depth}@@"', "[" * depth + "1" + "]" * depth)
    return text


def _mark_long(node: Any) -> Any:
    if isinstance(node, _LongInt):
        return "@@long@@"
    if isinstance(node, dict):
        return {k: _mark_long(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_mark_long(v) for v in node]
    return node


def mutate_json(doc: Any, rng: random.Random) -> Any:
    doc = copy.deepcopy(doc)
    paths = list(_paths(doc))
    path = rng.choice(paths)
    if not path:
        return rng.choice([[], {}, None, 7, "x", [doc, doc], _nested(2000)])
    parent, key = _get(doc, path[:-1]), path[-1]
    action = rng.randrange(8)
    if action <= 2:
        parent[key] = rng.choice(HOSTILE)
    elif action == 3:
        del parent[key]
    elif action == 4 and isinstance(parent, list):
        parent.insert(key, copy.deepcopy(parent[key]))
    elif action == 4:
        parent[key + "_unknown"] = parent[key]
    elif action == 5:
        parent[key] = [parent[key]]
    elif action == 6:
        parent[key] = _nested(rng.choice([70, 1200]))
    else:
        value = parent[key]
        if isinstance(value, int) and not isinstance(value, bool):
            parent[key] = value + rng.choice([-1, 1, 2**32, -(2**32), _LONG_INT if rng.random() < 0.05 else 7])
        elif isinstance(value, str):
            parent[key] = value + rng.choice(["x", "/..", "\u0000", " -DX", "[", "*2**64"])
        else:
            parent[key] = rng.choice(HOSTILE)
    return doc


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    buf = bytearray(data)
    action = rng.randrange(5)
    if not buf or action == 0:
        return bytes(buf[: rng.randrange(len(buf) + 1)])
    if action == 1:
        for _ in range(rng.randint(1, 8)):
            buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
    elif action == 2:
        at = rng.randrange(min(len(buf), 160))  # headers live at the front
        buf[at:at + 4] = rng.choice([b"\xff\xff\xff\xff", b"\x00\x00\x00\x00", b"\x00\x00\x00\x80", b"9999"])
    elif action == 3:
        at = rng.randrange(len(buf))
        buf[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
    else:
        text = buf[:128].decode("latin-1")
        for a, b in (("'<f4'", "'<f8'"), ("(", "(99999999999, "), ("False", "True"), ("'descr'", "'d'")):
            if a in text and rng.random() < 0.5:
                text = text.replace(a, b, 1)
        buf[:128] = text.encode("latin-1")
    return bytes(buf)


def mutate_files(folder: Path, targets: tuple[str, ...], rng: random.Random) -> str:
    """A file-system attack on the case's folder (what no byte mutation makes): an include line
    hidden from a pattern planted in a kernel source, or a data file the workload names replaced by
    a FIFO, a symbolic link to ``/dev/zero`` or one to a file outside the folder (which a workload
    may read: it is data it names). Returns the file changed and how ("" when there is none)."""
    outside = folder.parent / f"{folder.name}-outside.h"
    outside.write_text("#error read from outside the workload's folder\n")
    os.mkfifo(folder / "fifo.h")
    os.symlink(outside, folder / "link.h")
    sources = sorted(p.name for p in folder.iterdir()
                     if p.suffix in SOURCE_SUFFIXES and p.is_file() and not p.is_symlink())
    data = [t for t in targets if not t.endswith(".json")]
    if sources and (not data or rng.random() < 0.6):
        name = rng.choice(sources)
        lines = (folder / name).read_text(errors="surrogateescape").split("\n")
        at = rng.randrange(1 if lines[0].startswith("#version") else 0, len(lines) + 1)
        hidden = rng.choice(HIDDEN_INCLUDES)
        lines.insert(at, hidden.format(outside=outside))
        (folder / name).write_text("\n".join(lines), errors="surrogateescape")
        return f"{name} ({hidden!r} at line {at + 1})"  # the same words in every run (no temp folder)
    if not data:
        return ""
    name = rng.choice(data)
    (folder / name).unlink()
    kind = rng.choice(["a FIFO", "a link to /dev/zero", "a link outside"])
    if kind == "a FIFO":
        os.mkfifo(folder / name)
    else:
        os.symlink("/dev/zero" if kind == "a link to /dev/zero" else outside, folder / name)
    return f"{name} ({kind})"


@dataclass(frozen=True)
class Seed:
    name: str
    folder: Path
    #: the files that may be mutated, relative to the folder
    targets: tuple[str, ...]
    #: the command line, with {dir} for the case's folder and {out} for its output folder
    argv: tuple[str, ...]


@dataclass
class Outcome:
    seed: str
    case: int
    target: str
    status: int | str
    detail: str = ""

    @property
    def bad(self) -> bool:
        return self.status not in (0, 2)


class _Timeout(BaseException):
    pass


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    def expire(signum: int, frame: Any) -> None:
        raise _Timeout()
    old = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _files(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*")}


#: the share of cases that attack the file system (:func:`mutate_files`) instead of a file's content
FILE_ATTACKS = 0.12


def _mutate_content(path: Path, target: str, rng: random.Random) -> None:
    for _ in range(rng.randint(1, 3)):
        if target.endswith(".json"):
            try:
                doc = json.loads(path.read_text(encoding="utf-8", errors="surrogatepass"))
            except (ValueError, RecursionError):
                break
            text = dump_json(mutate_json(doc, rng))
            path.write_bytes(text.encode("utf-8", "surrogatepass"))
        else:
            path.write_bytes(mutate_bytes(path.read_bytes(), rng))


def run_case(seed: Seed, case: int, work: Path, main: Callable[[list[str]], int], *,
             time_limit: float = 10.0, base_seed: int = 0) -> Outcome:
    rng = random.Random(f"{base_seed}:{seed.name}:{case}")
    folder = work / f"{seed.name}-{case}"
    shutil.copytree(seed.folder, folder, symlinks=True)
    out = folder / "out"
    target = rng.choice(seed.targets)
    path = folder / target
    if rng.random() < FILE_ATTACKS:
        target = mutate_files(folder, seed.targets, rng) or target
    else:
        _mutate_content(path, target, rng)
    before = _files(folder)
    argv = [a.format(dir=folder, out=out) for a in seed.argv]
    crashed: list[str] = []
    stderr = io.StringIO()
    started = time.monotonic()
    try:
        with _time_limit(time_limit), contextlib.redirect_stderr(stderr), \
                contextlib.redirect_stdout(io.StringIO()), _record_crashes(crashed):
            status: int | str = main(argv)
    except _Timeout:
        status = "hang"
    except SystemExit as exc:  # argparse
        status = exc.code if isinstance(exc.code, int) else 2
    except BaseException as exc:  # noqa: BLE001 - a traceback that escaped the CLI is the finding
        status = f"traceback: {type(exc).__name__}: {str(exc)[:200]}"
    detail = ""
    if crashed:
        status, detail = "internal error", crashed[0]
    elif "Traceback" in stderr.getvalue():
        status, detail = "traceback", stderr.getvalue()[-400:]
    leftovers = sorted(str(p.relative_to(folder)) for p in _files(folder) - before
                       if p.name.endswith(".tmp") or not _inside(p, out))
    if leftovers and status in (0, 2):
        status, detail = "leftover files", ", ".join(leftovers[:5])
    if os.path.lexists(OWNED):  # an option or a name wrote where it pointed
        status, detail = "wrote outside", str(OWNED)
        os.unlink(OWNED)
    if "\x1b" in stderr.getvalue() and status in (0, 2):  # cli.main escapes what it prints
        status, detail = "raw control character", stderr.getvalue()[-200:]
    with contextlib.suppress(FileNotFoundError):
        (folder.parent / f"{folder.name}-outside.h").unlink()
    if status in (0, 2):
        shutil.rmtree(folder, ignore_errors=True)
    else:
        detail = f"{detail} [{time.monotonic() - started:.1f}s; kept in {folder}]"
    return Outcome(seed.name, case, target, status, detail)


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


@contextlib.contextmanager
def _record_crashes(crashed: list[str]) -> Iterator[None]:
    """The CLI's last line of defence writes a traceback file: count that as a finding."""
    from kernellab import cliextra

    original = cliextra.write_traceback

    def record() -> str:
        import traceback
        crashed.append(traceback.format_exc()[-600:])
        return "(recorded by the fuzzer)"
    cliextra.write_traceback = record
    try:
        yield
    finally:
        cliextra.write_traceback = original


def fuzz(seeds: list[Seed], cases: int, work: Path, *, base_seed: int = 0,
         time_limit: float = 10.0) -> list[Outcome]:
    from kernellab.cli import main

    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
    outcomes = []
    for i in range(cases):
        seed = seeds[i % len(seeds)]
        outcomes.append(run_case(seed, i, work, main, time_limit=time_limit, base_seed=base_seed))
    return outcomes


#: what one fuzzing process may map: a reader whose memory grows with a number in the file hits it
MEMORY_LIMIT = 3 * 1024**3


def run_child(seed_root: Path, cases: int, work: Path, base_seed: int, first: int = 0,
              mode: str = "validate") -> list[Outcome]:
    """Fuzz in a child process under a memory limit, so a blow-up or a signal is a finding, not the
    end of the test run. A child that dies takes its current case with it: that case is reported
    and the rest of the batch goes on in a new child. ``mode`` picks the seeds' command (see
    ``test_fuzz_readers.seeds``): ``validate``, or ``run`` on the device."""
    import subprocess
    import sys

    outcomes: list[Outcome] = []
    while first < cases:
        child = subprocess.run(
            [sys.executable, "-m", "fuzz.mutate", str(seed_root), str(cases), str(work), str(base_seed), str(first),
             mode],
            capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1], timeout=3600)
        done = [Outcome(**json.loads(line)) for line in child.stdout.splitlines() if line.startswith("{")]
        outcomes.extend(done)
        first += len(done)
        if child.returncode != 0 and first < cases:
            status = f"signal {-child.returncode}" if child.returncode < 0 else f"exit {child.returncode}"
            outcomes.append(Outcome("?", first, "?", status, child.stderr[-400:]))
            first += 1
    return outcomes


def _child_main(argv: list[str]) -> None:
    import resource
    import sys

    from fuzz.test_fuzz_readers import seeds

    seed_root, cases, work, base_seed, first = Path(argv[0]), int(argv[1]), Path(argv[2]), int(argv[3]), int(argv[4])
    mode = argv[5] if len(argv) > 5 else "validate"
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    import logging
    logging.disable(logging.CRITICAL)
    from kernellab.cli import main
    all_seeds = seeds(seed_root, mode)
    for i in range(first, cases):
        seed = all_seeds[i % len(all_seeds)]
        outcome = run_case(seed, i, work, main, base_seed=base_seed)
        print(json.dumps(outcome.__dict__), flush=True)
    sys.exit(0)


if __name__ == "__main__":
    import sys
    _child_main(sys.argv[1:])
