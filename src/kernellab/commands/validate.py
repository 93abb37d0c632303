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
    _check_scenario_entries(args.file, scenario)
    for w in warnings:
        print(w, file=sys.stderr)
    from kernellab.suite.wording import plural
    print(f"{args.file}: valid scenario ({plural(len(scenario.resources), 'resource')}, "
          f"{plural(len(scenario.commands), 'command')}"
          + (f", {plural(len(warnings), 'warning')}" if warnings else "") + ")")
    return 0


def _validate_instantiations(args: argparse.Namespace) -> None:
    """Checked without a device (what needs the kernel built is checked by `kernellab run`/`verify`)."""
    from kernellab.errors import InputError, Problem
    from kernellab.formats import gpuverify

    # work-groups of unequal size are legal from OpenCL C 2.0: whether the device has them is
    # known only to `run` (which refuses them with the reason) and `verify` (Oclgrind runs them)
    insts, warnings = gpuverify.load(args.file, non_uniform=True)
    problems = [Problem(str(i.file), i.pointer("entry_point"), why) for i in insts
                if (why := _undefined_entry(i.kernel_path, i.entry_point)) is not None]
    if args.strict and warnings:
        problems += [Problem(w.file, w.where, w.message) for w in warnings]
    if problems:
        raise InputError(problems)
    for w in warnings:
        print(w, file=sys.stderr)
    for i in insts:
        if i.local_size and any(g % l for g, l in zip(i.global_size, i.local_size)):
            print(f"note: {args.file}: {i.pointer('local_size')}: {list(i.local_size)} does not divide global_size "
                  f"{list(i.global_size)}: work-groups of unequal size need an OpenCL C 2.0 device or Oclgrind",
                  file=sys.stderr)
    print(f"{args.file}: valid kernel-instantiation file ({len(insts)} instantiation{'s' if len(insts) != 1 else ''}"
          + (f", {len(warnings)} warnings" if warnings else "") + ")")


def _undefined_entry(source: Path | None, entry: str) -> str | None:
    """Why ``entry`` is not a kernel of the OpenCL C file ``source`` (None: it is, or cannot be told
    without a compiler, or the file is unreadable, which the loaders report themselves)."""
    from kernellab.runtime.kernel_names import undefined_entry
    if source is None:
        return None
    try:
        text = source.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return undefined_entry(text, entry)


def _check_scenario_entries(path: Path, scenario: Any) -> None:
    """An OpenCL C shader's ``entry`` must be a kernel its source defines."""
    import json
    from kernellab.errors import InputError, Problem
    try:
        raw = json.loads(path.read_text(encoding="utf-8")).get("resources", [])
    except (OSError, ValueError, AttributeError):
        raw = []
    at = {}
    for n, r in enumerate(raw if isinstance(raw, list) else []):
        shader = r.get("shader") if isinstance(r, dict) else None
        if isinstance(shader, dict):
            at[shader.get("uid")] = (n, "entry" in shader)
    problems = []
    for r in scenario.resources:
        if getattr(r, "kind", "") != "shader" or r.type != "OpenCL-C":
            continue
        why = _undefined_entry(r.src_path, r.entry)
        if why is not None:
            n, given = at.get(r.uid, (None, True))
            where = "/resources" if n is None else f"/resources/{n}/shader" + ("/entry" if given else "")
            problems.append(Problem(str(path.resolve()), where, why + ("" if given else
                                                                  ' ("entry" defaults to "main")')))
    if problems:
        raise InputError(problems)
