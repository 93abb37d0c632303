"""``kernellab validate``: check a workload file without a device."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from kernellab.commands import add_allow_outside


def register(sub: Any) -> None:
    p = sub.add_parser("validate", help="check a workload file (no device needed)",
                       description="Check a scenario, kernel-instantiation file, kernel spec or AmberScript file: "
                                   "types, required fields, references, files. Every problem is reported with the "
                                   "file and its JSON path (an AmberScript file's: its line); exit 2 if any.")
    p.add_argument("file", type=Path, help="the workload: a scenario, kernel-instantiation file, PySchedCL spec or AmberScript file")
    p.add_argument("--output", type=Path, help="folder that relative dst paths resolve against")
    p.add_argument("--strict", action="store_true", help="treat unknown fields as errors")
    add_allow_outside(p)
    p.add_argument("--allow-absolute-dst", action="store_true",
                   help="accept absolute dst paths (written where they point, as Arm's runner does)")
    p.add_argument("--set", action="append", default=None, metavar="NAME=VALUE",
                   help="kernel specs: a variable of the spec's expressions, so sizes can be checked too")
    p.set_defaults(func=validate)


def validate(args: argparse.Namespace) -> int:
    from kernellab.formats.detect import detect
    from kernellab.formats.scenario import load_scenario

    fmt = detect(args.file)
    if fmt == "amber":
        return _validate_amber(args)
    if fmt == "kernel-instantiation":
        _validate_instantiations(args)
        return 0
    if fmt == "pyschedcl":
        from kernellab import compiler_options
        from kernellab.errors import InputError
        from kernellab.formats.pyschedcl.kernel import parse_assignments
        from kernellab.formats.pyschedcl.spec import load_spec, validate_spec
        summary = validate_spec(args.file, parse_assignments(args.set))
        # its kernel's #includes, as run, partition-sweep and schedule check them
        problems = _include_problems([(load_spec(args.file).src, Path(args.file), (str(args.file), "/src"), (),
                                       compiler_options.own(), "opencl-c")])
        if problems:
            raise InputError(problems)
        print(summary)
        return 0

    scenario, warnings = load_scenario(args.file, args.output, strict=args.strict,
                                       allow_absolute_dst=args.allow_absolute_dst, allow_outside=args.allow_outside)
    _check_scenario_entries(args.file, scenario)
    _check_includes(args.file, scenario)
    skipped = _compile_shaders(args.file, scenario)
    for w in warnings:
        print(w, file=sys.stderr)
    for note in skipped:
        print(f"note: {args.file}: {note}", file=sys.stderr)
    from kernellab.suite.wording import plural
    print(f"{args.file}: valid scenario ({plural(len(scenario.resources), 'resource')}, "
          f"{plural(len(scenario.commands), 'command')}"
          + (f", {plural(len(warnings), 'warning')}" if warnings else "") + ")")
    return 0


def _validate_amber(args: argparse.Namespace) -> int:
    """An AmberScript file: read (its statements, limits, names and FILEs), made into the scenarios
    ``run`` would run and each of those checked as a scenario is; every problem at the script's
    line (``formats.amber.places``), as ``run`` and ``verify`` tell it."""
    from kernellab.compile.amber import prepare
    from kernellab.errors import KernellabError
    from kernellab.formats.amber.places import error_in_script
    from kernellab.formats.scenario import load_scenario
    from kernellab.suite.wording import plural

    skipped: list[str] = []
    try:
        script, checkpoints = prepare(args.file)
        for checkpoint in checkpoints:
            scenario, _ = load_scenario(checkpoint.scenario)
            _check_scenario_entries(checkpoint.scenario, scenario)
            skipped += [n for n in _compile_shaders(checkpoint.scenario, scenario) if n not in skipped]
    except KernellabError as exc:
        told = error_in_script(exc)
        if told is exc:
            raise
        raise told from None
    for note in skipped:
        print(f"note: {args.file}: {note}", file=sys.stderr)
    print(f"{args.file}: valid AmberScript file ({plural(len(script.pipelines), 'pipeline')}, "
          f"{plural(len(script.commands), 'command')})")
    return 0


#: the stage ``validate`` compiles each language to: the compiler's front end, no device needed
#: (OpenCL C: clang's, as the OpenCL drivers and clspv have; SPIR-V: spirv-val on the module)
VALIDATE_STAGE = {"glsl": "spirv", "spirv": "spirv", "opencl-c": "llvm-ir"}
#: the SPIR-V environment shaders are checked for: the newest `run` compiles for
VALIDATE_TARGET_ENV = "vulkan1.3"


def _compile_shaders(path: Path, scenario: Any) -> list[str]:
    """Compile each shader as far as its compiler's front end (cached, as `run`'s compiles are),
    raising every compile error with the shader's JSON path; the notes of what was not compiled
    for want of a tool."""
    from kernellab.compile.languages import all_stages
    from kernellab.compile.pipeline import Compiler
    from kernellab.compile.sources import language_of, shader_request
    from kernellab.errors import CompileError, InputError, MissingToolError

    problems = []
    skipped: dict[str, list[str]] = {}
    for n, r in enumerate(scenario.resources):
        if getattr(r, "kind", "") != "shader" or r.src_path is None or r.type not in ("GLSL", "SPIR-V", "OpenCL-C"):
            continue
        req = shader_request(Path(path), n, r, VALIDATE_TARGET_ENV)
        if req.language == "spirv" and r.src_path.suffix.lower() == ".spvasm":
            req = req.replace(language=language_of(r.src_path))
        stage = VALIDATE_STAGE.get(req.language)
        if stage is None or stage not in all_stages(req.language):
            continue
        every = all_stages(req.language)
        needed = [t for name in _chain(every, stage) for t in every[name].tools if not _found(t)]
        if req.language == "spirv":
            needed = [] if _found("spirv-val") else ["spirv-val"]
        if needed:
            skipped.setdefault(", ".join(dict.fromkeys(needed)), []).append(r.uid)
            continue
        try:
            Compiler(req).artifact(stage)
        except CompileError as exc:
            problems += exc.problems
        except MissingToolError as exc:
            skipped.setdefault(str(exc).split(":")[0], []).append(r.uid)
    if problems:
        raise InputError(problems)
    return [f"shaders {', '.join(uids)} not compiled: no {tool} found (compiling was skipped)"
            for tool, uids in skipped.items()]


def _chain(every: Any, stage: str) -> list[str]:
    """The stages that run a tool on the way to ``stage`` (``every``: the language's stages)."""
    order = list(every)
    names = []
    while every[stage].run is not None:
        names.append(stage)
        stage = every[stage].after or order[order.index(stage) - 1]
    return names


def _found(tool: str) -> bool:
    from kernellab import tools

    return tools.find(tool) is not None


def _validate_instantiations(args: argparse.Namespace) -> None:
    """Checked without a device (what needs the kernel built is checked by `kernellab run`/`verify`)."""
    from kernellab import compiler_options
    from kernellab.errors import InputError, Problem
    from kernellab.formats import gpuverify

    # work-groups of unequal size are legal from OpenCL C 2.0: whether the device has them is
    # known only to `run` (which refuses them with the reason) and `verify` (Oclgrind runs them)
    insts, warnings = gpuverify.load(args.file, non_uniform=True)
    problems = [Problem(str(i.file), i.pointer("entry_point"), why) for i in insts
                if (why := _undefined_entry(i.kernel_path, i.entry_point, Path(args.file))) is not None]
    problems += _include_problems((i.kernel_path, args.file, (str(i.file), i.pointer("kernel_file")), (),
                                   compiler_options.parsed_or_none("opencl-c", i.compiler_flags or "", Path(args.file).parent,
                                                                  compiler_options.allowed_roots(Path(args.file).parent)), "opencl-c")
                                  for i in insts)
    # what run/verify/import refuse at /N/compiler_flags, validate reports too (the door's refusals)
    roots = compiler_options.allowed_roots(Path(args.file).parent)
    problems += [Problem(str(i.file), i.pointer("compiler_flags"), str(r)) for i in insts
                 for r in compiler_options.check("opencl-c", i.compiler_flags or "", Path(args.file).parent, roots)]
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


def _include_problems(kernels: Iterable[tuple[Path, Path, tuple[str, str], Sequence[Path], Any, str]]) -> list[Any]:
    """Each kernel's #includes, checked as every compiling command checks them (compile.preprocess):
    (source, workload file, place, include folders, options, language) -> the problems."""
    from kernellab.compile.pipeline import driver_source
    from kernellab.errors import InputError

    problems = []
    for source, workload, place, dirs, options, language in kernels:
        if options is None:
            continue  # the option checks report these; no include can be looked for with them
        try:
            driver_source(source, workload, place, include_dirs=dirs, options=options, language=language)
        except InputError as exc:
            problems += exc.problems
    return problems


def _check_includes(path: Path, scenario: Any) -> None:
    from kernellab import compiler_options
    from kernellab.errors import InputError

    languages = {"GLSL": "glsl", "OpenCL-C": "opencl-c"}
    problems = _include_problems(
        (r.src_path, path, (str(path), f"/resources/{n}/shader/src"), r.include_paths,
         compiler_options.parsed_or_none(languages[r.type], r.build_options, Path(path).parent,
                                         compiler_options.allowed_roots(Path(path).parent, r.include_paths)), languages[r.type])
        for n, r in enumerate(scenario.resources)
        if getattr(r, "kind", "") == "shader" and r.type in languages and r.src_path is not None)
    if problems:
        raise InputError(problems)


def _undefined_entry(source: Path | None, entry: str, workload: Path) -> str | None:
    """Why ``entry`` is not a kernel of the OpenCL C file ``source`` (None: it is, or cannot be told
    without a compiler, or the file is unreadable, which the loaders report themselves). The source
    is read through the boundary every build passes (docs/security.md): a symlink to a file outside
    the workload's folder was read and its kernels' names listed in the message, and a FIFO would
    have held validate forever."""
    from kernellab import compiler_options
    from kernellab.compile.source_files import read_checked
    from kernellab.runtime.kernel_names import undefined_entry
    if source is None:
        return None
    try:
        _, data = read_checked(source, compiler_options.allowed_roots(Path(workload).parent))
    except ValueError:
        return None  # refused or unreadable: the boundary's own check names it
    return undefined_entry(data.decode("utf-8", errors="replace"), entry)


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
        why = _undefined_entry(r.src_path, r.entry, path)
        if why is not None:
            index, given = at.get(r.uid, (None, True))
            where = "/resources" if index is None else f"/resources/{index}/shader" + ("/entry" if given else "")
            problems.append(Problem(str(path.resolve()), where, why + ("" if given else
                                                                  ' ("entry" defaults to "main")')))
    if problems:
        raise InputError(problems)
