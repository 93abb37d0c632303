"""``kernellab validate``: check a workload file without a device."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser("validate", help="check a scenario file (no device needed)",
                       description="Check a scenario file: types, required fields, references, files. "
                                   "Every problem is reported with the file and its JSON path; exit 2 if any.")
    p.add_argument("file", type=Path)
    p.add_argument("--output", type=Path, help="folder that relative dst paths resolve against")
    p.add_argument("--strict", action="store_true", help="treat unknown fields as errors")
    p.set_defaults(func=validate)


def validate(args: argparse.Namespace) -> int:
    from kernellab.formats.scenario import load_scenario

    if _validate_instantiations(args):
        return 0

    scenario, warnings = load_scenario(args.file, args.output, strict=args.strict)
    for w in warnings:
        print(w, file=sys.stderr)
    print(f"{args.file}: valid scenario ({len(scenario.resources)} resources, {len(scenario.commands)} commands"
          + (f", {len(warnings)} warnings" if warnings else "") + ")")
    return 0


def _validate_instantiations(args: argparse.Namespace) -> bool:
    """Issue 3: a JSON array is a kernel-instantiation file (a scenario is an object); checked
    without a device (what needs the kernel built is checked by `kernellab run`/`verify`)."""
    from kernellab.errors import InputError, Problem
    from kernellab.formats import gpuverify
    from kernellab.formats.jsonfile import load_json

    data = load_json(args.file)
    if not isinstance(data, list):
        return False
    insts, warnings = gpuverify.parse(data, args.file)
    if args.strict and warnings:
        raise InputError([Problem(w.file, w.where, w.message) for w in warnings])
    for w in warnings:
        print(w, file=sys.stderr)
    print(f"{args.file}: valid kernel-instantiation file ({len(insts)} instantiation{'s' if len(insts) != 1 else ''}"
          + (f", {len(warnings)} warnings" if warnings else "") + ")")
    return True
