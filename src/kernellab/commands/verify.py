"""``kernellab verify``: check one launch for races, divergence, out-of-bounds and more on Oclgrind."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from kernellab.errors import UsageError


def register(sub: Any) -> None:
    p = sub.add_parser("verify", help="check a launch for data races, barrier divergence, out-of-bounds "
                                      "and uninitialized accesses (Oclgrind)",
                       description="Run a kernel-instantiation file (or a scenario's OpenCL C dispatches) on "
                                   "Oclgrind with every check on. Exit 0 when verified, 1 when defects are "
                                   "found, 2 for bad input.")
    p.add_argument("file", type=Path, help="kernel-instantiation JSON (K.json) or scenario (S.json)")
    p.add_argument("--json", action="store_true", help="print the findings as JSON")
    p.add_argument("--index", type=int, help="check only instantiation N (default: all)")
    p.add_argument("--seed", type=int, default=0, help="seed for unconstrained arguments (default 0)")
    p.add_argument("--format", choices=["kernel-instantiation", "scenario"],
                   help="input format (default: detected from the content)")
    p.set_defaults(func=run)


def detect(path: Path) -> str:
    """A JSON array is a kernel-instantiation file, an object a scenario (the child checks the rest)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        from kernellab.formats.jsonfile import load_json
        data = load_json(path)  # raises the error with the line and column
    return "scenario" if isinstance(data, dict) else "kernel-instantiation"


def run(args: argparse.Namespace) -> int:
    from kernellab.verify import verify
    from kernellab.verify.report import render
    if args.index is not None and args.index < 0:
        raise UsageError(f"--index must be >= 0, got {args.index}")
    fmt = args.format or detect(args.file)
    result = verify(args.file, fmt=fmt, index=args.index, seed=args.seed)
    if args.json:
        json.dump(result.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(render(result))
    return result.exit_status
