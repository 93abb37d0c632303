"""``kernellab validate``: check a workload file without a device."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser("validate", help="check a workload file (no device needed)",
                       description="Check a scenario, kernel-instantiation file or kernel spec: types, required "
                                   "fields, references, files. Every problem is reported with the file and its "
                                   "JSON path; exit 2 if any.")
    p.add_argument("file", type=Path)
    p.add_argument("--output", type=Path, help="folder that relative dst paths resolve against")
    p.add_argument("--strict", action="store_true", help="treat unknown fields as errors")
    p.add_argument("--allow-outside", action="append", type=Path, default=[], metavar="PATH",
                   help="let include folders and #include targets lie in PATH too (default: only the workload's "
                        "folder)")
    p.add_argument("--allow-absolute-dst", action="store_true",
                   help="accept absolute dst paths (written where they point, as Arm's runner does)")
    p.add_argument("--set", action="append", default=None, metavar="NAME=VALUE",
                   help="kernel specs: a variable of the spec's expressions, so sizes can be checked too")
    p.set_defaults(func=validate)


def validate(args: argparse.Namespace) -> int:
    from kernellab.formats.detect import detect
    from kernellab.formats.scenario import load_scenario

    fmt = detect(args.file)
    if fmt == "kernel-instantiation":
        _validate_instantiations(args)
        return 0
    if fmt == "pyschedcl":
        from kernellab.formats.pyschedcl.kernel import parse_assignments
        from kernellab.formats.pyschedcl.spec import validate_spec
        print(validate_spec(args.file, parse_assignments(args.set)))
        return 0

    scenario, warnings = load_scenario(args.file, args.output, strict=args.strict,
                                       allow_absolute_dst=args.allow_absolute_dst, allow_outside=args.allow_outside)
    for w in warnings:
        print(w, file=sys.stderr)
    print(f"{args.file}: valid scenario ({len(scenario.resources)} resources, {len(scenario.commands)} commands"
          + (f", {len(warnings)} warnings" if warnings else "") + ")")
    return 0


def _validate_instantiations(args: argparse.Namespace) -> None:
    """Checked without a device (what needs the kernel built is checked by `kernellab run`/`verify`)."""
    from kernellab.errors import InputError, Problem
    from kernellab.formats import gpuverify

    insts, warnings = gpuverify.load(args.file)
    if args.strict and warnings:
        raise InputError([Problem(w.file, w.where, w.message) for w in warnings])
    for w in warnings:
        print(w, file=sys.stderr)
    print(f"{args.file}: valid kernel-instantiation file ({len(insts)} instantiation{'s' if len(insts) != 1 else ''}"
          + (f", {len(warnings)} warnings" if warnings else "") + ")")
