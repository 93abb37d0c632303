"""``kernellab export S.json -o DIR``: a scenario's OpenCL C dispatches as a kernel-instantiation file."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser("export", help="write a scenario's OpenCL C dispatches as a kernel-instantiation file",
                       description="Write DIR/instantiations.json, the kernel sources and each dispatch's buffer "
                                   "contents at launch (.bin); the scenario is run on an OpenCL device to learn "
                                   "the contents before each dispatch.")
    p.add_argument("file", type=Path, help="scenario JSON")
    p.add_argument("-o", "--output", type=Path, required=True, help="folder for instantiations.json and its files")
    p.add_argument("--device", help="OpenCL device that runs the scenario (default: the best)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kernellab.convert.gpuverify_scenario import export_scenario
    from kernellab.errors import InputError
    from kernellab.formats.detect import detect

    fmt = detect(args.file, otherwise="scenario")  # one the detector cannot tell: the reader says why
    if fmt != "scenario":
        what = {"amber": "an AmberScript file", "kernel-instantiation": "a kernel-instantiation file",
                "pyschedcl": "a PySchedCL kernel spec"}[fmt]
        raise InputError(f"export takes a scenario JSON, and this is {what}: convert it first with "
                         f"`kernellab import {args.file} -o DIR`, then export DIR's scenario", file=args.file)
    path = export_scenario(args.file, args.output, device=args.device, report=lambda s: print(s, file=sys.stderr))
    print(path)
    return 0
