"""``kernellab capture -o DIR -- python prog.py ...``: record a pyopencl program's kernel launches."""
from __future__ import annotations

import argparse
import importlib.util
import os
import runpy
import sys
import traceback
from pathlib import Path
from typing import Any

from kernellab.errors import UsageError


def register(sub: Any) -> None:
    p = sub.add_parser("capture", help="record every kernel launch of a pyopencl program as a "
                                       "kernel-instantiation file",
                       description="Run a Python program with pyopencl hooked and write DIR/capture.json, the "
                                   "kernel sources and each launch's buffer contents. Replay with "
                                   "`kernellab run DIR/capture.json --output OUT`.")
    p.add_argument("-o", "--output", type=Path, required=True, help="folder for capture.json and its files")
    p.add_argument("program", nargs=argparse.REMAINDER,
                   help="after --: [python] prog.py [args...] or [python] -m module [args...]")
    p.set_defaults(func=run)


def _split(program: list[str]) -> tuple[str, str, list[str]]:
    """("path"|"module", target, argv) from ``[python] prog.py args`` or ``[python] -m mod args``."""
    words = list(program)
    if words and words[0] == "--":
        words = words[1:]
    if words and os.path.basename(words[0]).startswith("python") and not words[0].endswith(".py"):
        words = words[1:]  # the program runs in this interpreter, where the hooks are
    if not words:
        raise UsageError("no program given: kernellab capture -o DIR -- python prog.py [args...]")
    if words[0] == "-m":
        if len(words) < 2:
            raise UsageError("-m needs a module name")
        return "module", words[1], words[1:]
    return "path", words[0], words


def run(args: argparse.Namespace) -> int:
    # pyopencl and numpy come with the capture module: loaded only when the command runs
    from kernellab.capture import capture

    kind, target, argv = _split(args.program)
    if kind == "path" and not Path(target).is_file():
        raise UsageError(f"{target}: no such program")
    status = 0
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = argv
    # as `python prog.py` / `python -m mod` would: the script's folder, or the current one, first
    sys.path.insert(0, str(Path(target).resolve().parent) if kind == "path" else os.getcwd())
    if kind == "module" and importlib.util.find_spec(target.split(".")[0]) is None:
        sys.path[:] = saved_path
        sys.argv = saved_argv
        raise UsageError(f"-m {target}: no module named {target.split('.')[0]!r}")
    with capture(args.output) as cap:
        try:
            if kind == "path":
                runpy.run_path(target, run_name="__main__")
            else:
                runpy.run_module(target, run_name="__main__", alter_sys=True)
        except SystemExit as exc:
            code = exc.code
            status = code if isinstance(code, int) else (0 if code is None else 1)
        except Exception:  # the program's own failure: its traceback, as Python would print it
            traceback.print_exc()
            status = 1
        finally:
            sys.argv, sys.path[:] = saved_argv, saved_path
    for note in cap.notes:
        print(f"kernellab capture: {note}", file=sys.stderr)
    print(f"kernellab capture: {len(cap.launches)} launch{'es' if len(cap.launches) != 1 else ''} "
          f"written to {args.output / 'capture.json'}", file=sys.stderr)
    return status
