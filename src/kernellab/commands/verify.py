"""``kernellab verify``: check launches for data races, barrier divergence and out-of-bounds on Oclgrind."""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kernellab.errors import KernellabError, UsageError


def register(sub: Any) -> None:
    p = sub.add_parser("verify", help="check launches for data races, barrier divergence and out-of-bounds "
                                      "accesses (Oclgrind, or the SPIR-V checker for Vulkan shaders)",
                       description="Check kernel-instantiation files and scenarios' OpenCL C dispatches on "
                                   "Oclgrind, and scenarios' GLSL and SPIR-V dispatches and AmberScript files "
                                   "(OpenCL C too with --vulkan) on kernellab's SPIR-V checker. Data races, "
                                   "barrier divergence and out-of-bounds accesses are defects; other findings "
                                   "are warnings unless --check names them. Exit 0 when every launch is "
                                   "verified, 1 when defects are found, 2 for bad input (--prove: 3 unknown).")
    p.add_argument("file", type=Path, nargs="+",
                   help="kernel-instantiation JSON (K.json), scenario (S.json) or AmberScript (T.amber); "
                        "several are verified together")
    p.add_argument("--json", action="store_true", help="print the findings as JSON")
    p.add_argument("--index", type=int, help="check only instantiation N of each file (default: all)")
    p.add_argument("--seed", type=int, help="seed for unconstrained arguments (default 0)")
    p.add_argument("--format", choices=["kernel-instantiation", "scenario"],
                   help="input format (default: detected from the content)")
    p.add_argument("--check", action="append", default=[], metavar="KIND[,KIND]",
                   help="also count these kinds as defects: uninitialized (runs Oclgrind's slow "
                        "uninitialized-value tracker), misaligned-access, unwaited-event, api-error, ... or all")
    p.add_argument("--jobs", "-j", type=int, default=1,
                   help="run the launches in N Oclgrind processes at once (default 1: in this process)")
    p.add_argument("--timeout", metavar="SECONDS",
                   help="time limit of each launch on Oclgrind and of each dispatch in the SPIR-V checker "
                        "(default: the tool limit, --tool-timeout or KERNELLAB_TOOL_TIMEOUT, 300 s; 0 for none). "
                        "With one job a launch past it ends verify with status 1; with --jobs it is reported as "
                        "not finished and the others still run")
    p.add_argument("--vulkan", action="store_true", help="check scenarios' OpenCL C dispatches as Vulkan runs them "
                   "(clspv) with the SPIR-V checker; GLSL and SPIR-V shaders always are (docs/verify-vulkan.md)")
    p.add_argument("--prove", action="store_true",
                   help="prove each launch free of races, barrier divergence, out-of-bounds accesses and failing "
                        "annotations for every value of its unconstrained arguments and buffer contents (z3; "
                        "docs/verify-prove.md). Exit 0 proven, 1 defects (or possible defects), 3 unknown")
    p.add_argument("--prove-sizes", action="store_true",
                   help="with --prove: the work-group size and the number of work-groups symbolic too, within the "
                        "device's limits (Oclgrind's for kernel-instantiation files, the Vulkan device's for "
                        "scenarios) and what the shader fixes (local_size_x, reqd_work_group_size); the launch's "
                        "number of dimensions is kept")
    p.add_argument("--subgroup-size", type=_subgroup_size, metavar="N|all",
                   help="the subgroup size the SPIR-V checker runs Vulkan shaders with (default: the Vulkan device's "
                        "subgroupSize; 8, lavapipe's, where no device opens); 'all': each size the device allows "
                        "(VK_EXT_subgroup_size_control's range; 4 to 128 without a device), as separate checks")
    p.set_defaults(func=run)


def _subgroup_size(text: str) -> int | str:
    if text == "all":
        return text
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1 or n > 128 or n & (n - 1):
        raise argparse.ArgumentTypeError(f"{text!r} is not a power of two from 1 to 128, nor 'all'")
    return n


def detect(path: Path) -> str:
    """A JSON array is a kernel-instantiation file, an object a scenario (the harness checks the rest)."""
    from kernellab.errors import InputError
    from kernellab.formats.detect import detect as detect_format

    found = detect_format(path, among=("scenario", "kernel-instantiation", "pyschedcl", "amber"), otherwise="scenario")
    if found == "pyschedcl":  # its fields would otherwise be read as a scenario's unknown ones
        raise InputError("verify takes scenarios and kernel-instantiation files, not PySchedCL kernel specs: "
                         f"`kernellab import {path} -o DIR` makes a scenario of it that verify checks", file=path)
    return found


def run(args: argparse.Namespace) -> int:
    if args.index is not None and args.index < 0:
        raise UsageError(f"--index must be >= 0, got {args.index}")
    jobs = getattr(args, "jobs", 1)
    if jobs < 1:
        raise UsageError(f"--jobs must be >= 1, got {jobs}")
    files = args.file if isinstance(args.file, list) else [args.file]
    check = [name for arg in getattr(args, "check", []) or [] for name in arg.split(",")]
    formats = [args.format or detect(f) for f in files]
    amber: dict[int, Any] = {}  # file number -> the AmberScript file read: (script, checkpoints)
    if "amber" in formats:  # an AmberScript file is checked as the scenario it becomes
        from kernellab.compile.amber import prepare

        amber = {n: prepare(f) for n, (f, fmt) in enumerate(zip(files, formats)) if fmt == "amber"}
        files = [amber[n][1][-1].scenario if n in amber else f for n, f in enumerate(files)]
        formats = ["scenario" if fmt == "amber" else fmt for fmt in formats]
    from kernellab import config
    from kernellab.verify.checkers import verify_many  # Vulkan scenarios to the SPIR-V checker, the rest to Oclgrind
    from kernellab.verify.run import ending_process_on_timeout
    text = getattr(args, "timeout", None)
    if getattr(args, "prove_sizes", False) and not getattr(args, "prove", False):
        raise UsageError("--prove-sizes needs --prove")
    if getattr(args, "prove", False):
        _refuse_launch_options(args)
    if getattr(args, "prove", False):  # the proof's own limit: 60 s a launch unless --timeout says
        from kernellab.verify.prove.files import prove_files
        limit = None if text is None else config.parse_tool_timeout(str(text), "--timeout")
        with _told_in_script(bool(amber)):
            results = prove_files(files, formats=formats, index=args.index, timeout=limit or None, jobs=jobs,
                                  prove_sizes=args.prove_sizes)
        return _report(args, _in_script(results, amber))
    timeout = config.get().tool_timeout if text is None else config.parse_tool_timeout(str(text), "--timeout")
    simulated: dict[int, list[dict[str, bytes]]] = {}
    with ending_process_on_timeout(), _told_in_script(bool(amber)):  # this process is the command's own: a launch past its limit may end it
        results = verify_many(files, formats=formats, index=args.index, seed=args.seed or 0, check=check, jobs=jobs,
                              vulkan=getattr(args, "vulkan", False), timeout=timeout,
                              simulated=simulated if amber else None,
                              **({"subgroup_size": args.subgroup_size} if getattr(args, "subgroup_size", None) else {}))
    results = _in_script(results, amber)
    for r in results:
        for launch in r.unfinished:
            print(f"kernellab verify: error: {launch.error}", file=sys.stderr)
    references = {n: _reference(read[0], read[1], simulated[n]) for n, read in amber.items() if simulated.get(n)}
    return _report(args, results, references)


def _in_script(results: list[Any], amber: dict[int, Any]) -> list[Any]:
    """The results of the AmberScript inputs in the script's words (files and lines)."""
    if not amber:
        return results
    from kernellab.verify.amber import result_in_script

    return [result_in_script(r) if n in amber else r for n, r in enumerate(results)]


@contextlib.contextmanager
def _told_in_script(amber: bool) -> Iterator[None]:
    """With an AmberScript input, a refusal naming the files made from it names the script's line."""
    try:
        yield
    except KernellabError as exc:
        if not amber:
            raise
        from kernellab.formats.amber.places import error_in_script

        told = error_in_script(exc)
        if told is exc:
            raise
        raise told from None


#: the options of the launch-based check, which a proof for every input and size has no use for
_LAUNCH_OPTIONS = {"seed": ("--seed", "it fills unconstrained arguments for one launch; the proof covers every value"),
                   "check": ("--check", "it counts Oclgrind's other findings; the proof checks races, barrier "
                                        "divergence, bounds and assertions"),
                   "subgroup_size": ("--subgroup-size", "the SPIR-V checker runs with it; the proof refuses "
                                                        "subgroup operations"),
                   "vulkan": ("--vulkan", "the proof compiles OpenCL C with clspv always")}


def _refuse_launch_options(args: argparse.Namespace) -> None:
    """A launch-based option given with --prove (or --prove-sizes) would be silently ignored: refused."""
    flag = "--prove-sizes" if getattr(args, "prove_sizes", False) else "--prove"
    for name, (option, why) in _LAUNCH_OPTIONS.items():
        if getattr(args, name, None):
            raise UsageError(f"{flag} does not take {option}: {why}")


def _reference(script: Any, checkpoints: list[Any], simulated: list[dict[str, bytes]]) -> dict[str, Any]:
    """An AmberScript file's EXPECTs against the buffers the SPIR-V checker computed (the
    specification's semantics, as a second device would give them): apart from the findings,
    it changes no verdict and no exit status (docs/verify-vulkan.md, "A reference device")."""
    from kernellab.suite.amber import checks_of
    from kernellab.suite.compare import check_all

    failures: list[str] = []
    count = held = 0
    for checkpoint in checkpoints:
        checks = checks_of(script, checkpoint.expects)
        if not checks:
            continue
        # checkpoint k's scenario holds the dispatches up to it: the state after that many
        dispatches = checkpoint.scenario.read_text().count('"dispatch_compute"')
        state = simulated[min(dispatches, len(simulated) - 1)]
        data = {}
        for name, b in script.buffers.items():
            size = len(b.values) // len(b.element.components) * b.element.size
            data[name] = state[name][:size] if name in state else None
        result = check_all(checks, data)
        count += len(result.outputs)
        held += sum(o.ok for o in result.outputs)
        if not result.ok:
            failures.append(result.report())
    return {"device": "the SPIR-V checker's simulation (specification semantics)", "expects": count,
            "hold": held, "failures": failures}


def _reference_text(ref: dict[str, Any]) -> str:
    head = (f"reference: {ref['hold']} of {ref['expects']} EXPECTs hold on {ref['device']}; "
            "not a verdict on the shader")
    return "\n".join([head, *ref["failures"]])


def _report(args: argparse.Namespace, results: list[Any], references: dict[int, dict[str, Any]] | None = None) -> int:
    from kernellab.verify.report import render
    references = references or {}
    if args.json:
        files = [r.to_json() for r in results]
        for n, ref in references.items():
            files[n]["reference"] = ref
        doc: Any = files[0] if len(results) == 1 else {
            "verdict": next((v for v in ("defects", "not finished", "possible", "unknown")
                             if any(r.verdict == v for r in results)), "verified"),
            "files": files}
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print("\n\n".join(render(r) + (f"\n{_reference_text(references[n])}" if n in references else "")
                            for n, r in enumerate(results)))
    return max(r.exit_status for r in results)
