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

    scenario, warnings = load_scenario(args.file, args.output, strict=args.strict)
    for w in warnings:
        print(w, file=sys.stderr)
    print(f"{args.file}: valid scenario ({len(scenario.resources)} resources, {len(scenario.commands)} commands"
          + (f", {len(warnings)} warnings" if warnings else "") + ")")
    return 0
