"""``verify --prove`` on files: each launch of a kernel-instantiation file (OpenCL C, compiled by
clspv) and each ``dispatch_compute`` of a scenario (GLSL, SPIR-V, or OpenCL C) proven by the
engine, its counterexamples replayed by the dynamic ``verify``, and the outcome as
:mod:`kernellab.verify.model`'s records (``checker`` ``"proof"``, each launch with ``method``
``"proof"`` and its proof verdict).
"""
from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kernellab import compiler_options
from kernellab.errors import InputError
from kernellab.verify.model import Access, Finding, Launch, Location, VerifyResult, checked_kinds, ordered
from kernellab.verify.prove import limit

log = logging.getLogger(__name__)

#: what the proof checks: GPUVerify's three kinds and the annotations' assertions
PROVED_KINDS = frozenset({"data-race", "barrier-divergence", "out-of-bounds", "assertion"})


def require_solver() -> None:
    """The proofs are z3's, an optional dependency (``kernellab[prove]``): without it, one line
    saying what to install, before any file is read."""
    try:
        import z3  # noqa: F401 - loaded here as every proof's first step would
    except ImportError:
        from kernellab.errors import MissingToolError

        raise MissingToolError("verify --prove needs the z3 solver: pip install 'kernellab[prove]' "
                               "(or pip install z3-solver)") from None


def prove_files(paths: Sequence[str | Path], *, formats: Sequence[str] | None = None, index: int | None = None,
                timeout: float | None = None, jobs: int = 1, prove_sizes: bool = False,
                replay: bool = True) -> list[VerifyResult]:
    """Prove every launch of every file; one result per file, in the order given. ``jobs``: files
    proven in that many processes at once."""
    require_solver()
    files = [Path(p) for p in paths]
    formats = list(formats) if formats else ["kernel-instantiation"] * len(files)
    args = [(f, fmt, index, timeout, prove_sizes, replay) for f, fmt in zip(files, formats)]
    if jobs > 1 and len(files) > 1:
        from concurrent.futures import ProcessPoolExecutor
        with ProcessPoolExecutor(min(jobs, len(files))) as pool:
            return list(pool.map(_prove_file, args))
    return [_prove_file(a) for a in args]


def _prove_file(a: tuple[Path, str, int | None, float | None, bool, bool]) -> VerifyResult:
    path, fmt, index, timeout, sizes, replay = a
    from kernellab.verify.prove.engine import DEFAULT_TIMEOUT
    limit = timeout or DEFAULT_TIMEOUT
    if fmt == "scenario":
        return _prove_scenario(path, index, limit, sizes, replay)
    return _prove_instantiations(path, index, limit, sizes, replay)


# --- kernel-instantiation files ------------------------------------------------------------------

def _prove_instantiations(path: Path, index: int | None, timeout: float, sizes: bool, replay: bool) -> VerifyResult:
    from kernellab.formats import gpuverify
    from kernellab.verify.prove import engine, opencl

    insts, problems = gpuverify.load(path)
    if problems:
        raise InputError(problems)
    result = VerifyResult(path, [], checked=checked_kinds(()) | PROVED_KINDS, checker="proof")
    for inst in insts:
        if index is not None and inst.index != index:
            continue
        launch = Launch(inst.index, inst.entry_point, method="proof")
        result.launches.append(launch)
        if inst.language != "OpenCL":
            raise InputError.at(str(path), f"/{inst.index}/language", "verify --prove takes OpenCL C kernels")
        if inst.local_size is None:
            _unknown(launch, "the launch gives no local size (GPUVerify needs one too)")
            continue
        local = _dims(inst.local_size)
        source = _checked_source(path, path.parent / inst.kernel_file, inst.pointer("kernel_file"))
        specs = _argument_specs(inst)
        from kernellab.spirvsim.module import Unsupported
        # the file's options through the door, as every build of them
        flags = compiler_options.read("opencl-c", inst.compiler_flags or "", path.parent,
                                      compiler_options.allowed_roots(path.parent),
                                      (str(path), inst.pointer("compiler_flags")))
        watch = limit.Stopwatch(timeout)
        try:
            with limit.time_limit(watch):
                watch.step = "compiling the kernel (clspv)"
                compiled = _compiled(path, inst, source, flags, local, specs)
                la = opencl.launch(compiled, tuple(inst.global_size), local, specs,
                                   _dims(inst.global_offset or (0,), 0), symbolic_sizes=sizes)
                if sizes:  # the replay runs on Oclgrind: its limits
                    la.size_space = _size_space(launch, "opencl", len(inst.global_size))
                watch.step = "encoding and solving"
                outcome = _within(watch, engine.prove(compiled.module, la, timeout=watch.left()))
                if outcome.verdict == "proven":
                    # the source's undefined values and the accesses clspv deleted, made explicit
                    # (opencl.compile_kept): a module that differs is proven in its place
                    watch.step = "checking that clspv kept every access (clang, clspv)"
                    spirv, ir = opencl.compile_kept(source, flags, roots=(path.resolve().parent,), global_offset=True,
                                                    first=compiled.spirv)
                    if spirv != compiled.spirv:
                        compiled = opencl.load_kernel(spirv, source, inst.entry_point, local, specs,
                                                      work_dim=len(inst.global_size),
                                                      global_offset=_dims(inst.global_offset or (0,), 0))
                        la = opencl.launch(compiled, tuple(inst.global_size), local, specs,
                                           _dims(inst.global_offset or (0,), 0), symbolic_sizes=sizes)
                        watch.step = "encoding and solving (every access kept)"
                        outcome = _within(watch, engine.prove(compiled.module, la, timeout=watch.left()))
                    outcome = opencl.guarded(outcome, ir, compiled.module, inst.entry_point)
        except Unsupported as exc:
            _unknown(launch, f"unsupported construct: {exc.problems[0].message if exc.problems else exc}")
            continue
        except limit.TimeLimit:
            launch.seconds = round(watch.elapsed(), 3)
            _unknown(launch, watch.reason())
            continue
        launch.seconds = round(watch.elapsed(), 3)
        findings = [_finding(c, inst.entry_point, inst.index, compiled.module, source) for c in outcome.findings]
        if outcome.verdict == "unknown":
            _unknown(launch, outcome.reason or "", outcome.line)
            continue
        if not findings:
            launch.proof = "proven"
            continue
        for c, f in zip(outcome.findings, findings):
            example = _instantiation_example(path, inst, compiled, c)
            f.examples[0]["counterexample"] = example
        confirmed = _replay_instantiation(path, inst, findings) if replay else None
        _settle(launch, findings, confirmed, outcome.findings)
        result.findings += findings
    result.findings = ordered(result.findings)
    result.raw_messages = len(result.findings)
    return result


def _size_space(launch: Launch, api: str, dims: int) -> Any:
    """What ``--prove-sizes`` lets the sizes of a launch be: the limits of ``api``'s device, the
    launch's number of dimensions; the launch notes them."""
    from kernellab.verify.prove import sizes

    limits = sizes.device_limits(api)
    count = f", work-group count up to {list(limits.max_count)}" if limits.max_count else ""
    launch.filled.append(f"sizes symbolic (--prove-sizes): work-group size up to {list(limits.max_size)}, "
                         f"{limits.max_invocations} invocations{count} ({limits.source}'s limits)"
                         + (f", {dims} dimension(s)" if dims < 3 else ""))
    return sizes.Space(limits, dims)


def _dims(values: Sequence[int], pad: int = 1) -> tuple[int, int, int]:
    v = list(values)[:3] + [pad] * (3 - len(values))
    return (v[0], v[1], v[2])


def _argument_specs(inst: Any) -> list[Any]:
    from kernellab.formats.gpuverify import ArrayArgument, ScalarArgument
    from kernellab.verify.prove.opencl import ArgumentSpec

    out = []
    for k, arg in enumerate(inst.kernel_arguments or []):
        name = f"argument {k}"
        if isinstance(arg, ScalarArgument):
            value = None
            if arg.value is not None:
                number = int(arg.value, 16)
                value = number.to_bytes(max(8, (number.bit_length() + 7) // 8), "little")
            out.append(ArgumentSpec("scalar", name, value=value))
        elif isinstance(arg, ArrayArgument):
            out.append(ArgumentSpec("local" if arg.address_space == "local" else "buffer", name, size=arg.size))
        else:
            out.append(ArgumentSpec("other", name))
    return out


def _instantiation_example(path: Path, inst: Any, compiled: Any, c: Any) -> dict[str, Any]:
    """The counterexample as a kernel-instantiation (the launch with the scalar values the model
    chose), which the dynamic verify runs."""
    from kernellab.formats import gpuverify
    from kernellab.verify.prove.opencl import scalar_arguments

    doc = gpuverify.to_json(inst)
    doc["kernel_file"] = str((path.parent / inst.kernel_file).resolve())
    values = scalar_arguments(compiled, c.push_bytes, c.buffer_bytes)
    args = doc.get("kernel_arguments") or []
    for ordinal, raw in values.items():
        if ordinal < len(args) and args[ordinal].get("type") == "scalar":
            args[ordinal]["value"] = "0x" + raw[::-1].hex()
    if c.sizes is not None:  # in the launch's dimensions (the proof keeps the others at 1)
        local, groups = c.sizes
        dims = len(inst.global_size)
        doc["local_size"] = list(local)[:dims]
        doc["global_size"] = [l * g for l, g in zip(local, groups)][:dims]
    return doc


#: seconds all of one launch's replays may take together (a real-world launch of 400,000
#: work-items runs minutes on Oclgrind): past them a counterexample is left not replayed
REPLAY_SECONDS = 120.0


def _replay_instantiation(path: Path, inst: Any, findings: list[Finding]) -> list[bool | None] | None:
    """Run each counterexample's launch with the dynamic verify (Oclgrind): whether it shows a
    finding of the same kind (None for one whose replay stopped at :data:`REPLAY_SECONDS` without
    showing it). None: the dynamic verify could not run. The kernel is built with
    GPUVerify's annotations defined away (:func:`~kernellab.verify.prove.annotations.replayed`),
    from a copy beside it (its includes found as from the kernel)."""
    from kernellab.verify.prove.annotations import replayed

    source = (path.parent / inst.kernel_file).resolve()
    try:
        fd, kernel = tempfile.mkstemp(prefix=".kl-replay-", suffix=source.suffix, dir=source.parent)
        with os.fdopen(fd, "w") as fh:
            fh.write(replayed(source.read_text(errors="replace"), str(source)))
    except OSError as exc:
        log.warning("%s: the counterexample could not be replayed: %s", path, exc)
        return None
    import time

    out: list[bool | None] = []
    seen: dict[str, tuple[set[str], bool]] = {}  # the kinds each launch showed, whether it finished
    end = time.monotonic() + REPLAY_SECONDS
    try:
        for f in findings:
            doc = dict(f.examples[0]["counterexample"], kernel_file=kernel)
            key = json.dumps(doc, sort_keys=True)
            if key not in seen and time.monotonic() >= end:
                seen[key] = (set(), False)
            if key in seen:
                out.append(_replayed(f.kind, *seen[key]))
                continue
            fd, name = tempfile.mkstemp(prefix=".kl-prove-", suffix=".json", dir=path.parent)
            try:
                with os.fdopen(fd, "w") as fh:
                    json.dump([doc], fh)
                try:
                    seen[key] = _replay_in_child(name, end - time.monotonic())
                except Exception as exc:  # the replay is evidence, not the verdict: say why it is missing
                    log.warning("%s: the counterexample could not be replayed: %s", path, exc)
                    return None
                out.append(_replayed(f.kind, *seen[key]))
            finally:
                os.unlink(name)
    finally:
        os.unlink(kernel)
    return out


def _replay_in_child(name: str, seconds: float) -> tuple[set[str], bool]:
    """The kinds the dynamic verify shows for the kernel-instantiation file ``name``, and whether
    it finished: run in a child process, stopped after ``seconds`` (Oclgrind's native call cannot
    be interrupted in this one)."""
    import subprocess
    import sys

    try:
        done = subprocess.run([sys.executable, "-m", "kernellab", "verify", "--json", name],
                              capture_output=True, timeout=max(1.0, seconds), check=False)
    except subprocess.TimeoutExpired:
        return set(), False
    if done.returncode == 1 and not done.stdout.strip():  # stopped at its own time limit (one line on stderr)
        return set(), False
    if done.returncode not in (0, 1):
        raise RuntimeError(f"exit {done.returncode}: {done.stderr.decode(errors='replace').strip()[-300:]}")
    doc = json.loads(done.stdout)
    return {f["kind"] for f in doc.get("findings", [])}, True


def _replayed(kind: str, shown: set[str], finished: bool) -> bool | None:
    """A replay's answer for a finding of ``kind``: shown, not shown, or None (stopped first)."""
    return True if kind in shown else (False if finished else None)


# --- scenarios -----------------------------------------------------------------------------------

def _prove_scenario(path: Path, index: int | None, timeout: float, sizes: bool, replay: bool) -> VerifyResult:
    from kernellab import model as m
    from kernellab.formats.scenario import load_scenario
    from kernellab.spirvsim.module import Unsupported
    from kernellab.verify import terms
    from kernellab.verify.prove import engine, images, opencl
    from kernellab.verify.vulkan import _Buffers, _program, _refuse_draws

    scenario, _ = load_scenario(path)
    # what the dynamic checker refuses (a draw, an optical-flow pipeline, a global offset) is not
    # proven either: "proven in 0 launches" said a graphics pipeline was free of defects
    _refuse_draws(scenario, path)
    if not any(isinstance(c, m.DispatchCompute) for c in scenario.commands):
        raise InputError.at(str(path), "/commands", "verify --prove proves dispatch_compute commands; the "
                                                    "scenario has none")
    result = VerifyResult(path, [], checked=checked_kinds(()) | PROVED_KINDS, checker="proof")
    state = _Buffers(scenario, path)
    dispatches = [(ci, c) for ci, c in enumerate(scenario.commands) if isinstance(c, m.DispatchCompute)]
    programs: dict[str, Any] = {}
    with terms.reading_within([path.resolve().parent]):
        for number, (ci, c) in enumerate(dispatches):
            if index is not None and number != index:
                continue
            shader = scenario.by_uid[c.shader_ref]
            assert isinstance(shader, m.Shader)
            launch = Launch(number, f"{shader.uid} ({shader.entry})", command=ci, method="proof")
            result.launches.append(launch)
            try:
                if shader.uid not in programs:
                    programs[shader.uid] = _scenario_module(scenario, shader, path, _program)
                module, source_ir = programs[shader.uid]
            except Unsupported as exc:
                _unknown(launch, f"unsupported construct: {exc.problems[0].message if exc.problems else exc}")
                continue
            la = engine.Launch(module.local_size, _dims(c.workgroups), symbolic_sizes=sizes)
            if sizes:
                la.size_space = _size_space(launch, "vulkan", 3)
            bound = state.bindings(c, ci)
            other = next((b for b in bound.values() if not images.is_image(b) and not hasattr(b, "range")), None)
            if other is not None:  # an array of descriptors: the proof models buffers and images only
                _unknown(launch, "unsupported construct: an array of descriptors bound to the dispatch (the proof "
                                 "models buffers and images; the dynamic verify checks it)")
                continue
            shared = images.shared_image(bound)
            if shared:
                _unknown(launch, f"unsupported construct: {shared}")
                continue
            for key, b in bound.items():
                if images.is_image(b):
                    images.bind_scenario_image(la, module, key, b)
                    continue
                total = len(b.data) - b.offset
                la.buffer_sizes[key] = b.range if b.range is not None else total
                la.names[key] = b.uid
            push = state.push_constants(c)
            la.fixed["push"] = dict(enumerate(push))
            watch = limit.Stopwatch(timeout)
            try:
                with limit.time_limit(watch):
                    watch.step = "encoding and solving"
                    outcome = _within(watch, engine.prove(module, la, timeout=watch.left()))
                    if source_ir is not None:
                        outcome = opencl.guarded(outcome, source_ir, module, shader.entry)
            except limit.TimeLimit:
                launch.seconds = round(watch.elapsed(), 3)
                _unknown(launch, watch.reason())
                continue
            launch.seconds = round(watch.elapsed(), 3)
            if outcome.verdict == "unknown":
                _unknown(launch, outcome.reason or "", outcome.line)
                continue
            findings = [_finding(f, launch.kernel, number, module, shader.src_path) for f in outcome.findings]
            if not findings:
                launch.proof = "proven"
                continue
            confirmed = _replay_scenario(path, scenario, number, findings, outcome.findings, module) \
                if replay else None
            _settle(launch, findings, confirmed, outcome.findings)
            result.findings += findings
    result.findings = ordered(result.findings)
    result.raw_messages = len(result.findings)
    return result


def _scenario_module(scenario: Any, shader: Any, path: Path, program: Any) -> tuple[Any, Any]:
    """A scenario shader's decoded module: GLSL and SPIR-V as the dynamic checker builds them;
    OpenCL C through clspv at -O0 with the annotation header and no fallback to an optimised
    build (which may delete the accesses a defect is made of), with clang's IR of the source to
    check that clspv kept every access (:func:`~kernellab.verify.prove.opencl.guarded`; None for
    the other languages)."""
    if shader.type != "OpenCL-C":
        return program(scenario, shader, path).module(), None
    from kernellab.compile.stage import placed
    from kernellab.errors import CompileError
    from kernellab.runtime.interface import clspv_specialization
    from kernellab.spirvsim.machine import eval_spec_op
    from kernellab.spirvsim.module import load
    from kernellab.verify.prove import opencl

    options = compiler_options.read("opencl-c", shader.build_options, path.parent,
                                    compiler_options.allowed_roots(path.parent, shader.include_paths),
                                    (str(path), f"/resources/{scenario.resources.index(shader)}/shader/build_options"))
    where = f"/resources/{scenario.resources.index(shader)}/shader/src"
    _checked_source(path, shader.src_path, where)
    try:
        spirv, ir = opencl.compile_kept(shader.src_path, options, roots=(path.resolve().parent,))
    except CompileError as exc:  # bad input at the shader's src, as a run's build names it
        raise placed(exc, (str(path), where)) from None
    spec = clspv_specialization(scenario, shader, spirv)
    module = load(spirv, shader.entry, file=str(shader.src_path), spec_constants=spec, eval_spec_op=eval_spec_op)
    module.sources.setdefault("source", shader.src_path.read_text(errors="replace").split("\n"))
    return module, ir


def _replay_scenario(path: Path, scenario: Any, number: int, findings: list[Finding], found: list[Any],
                     module: Any) -> list[bool] | None:
    """The scenario's dispatch run by the SPIR-V checker with the scenario's own data: a
    counterexample needing other buffer contents is not reproduced (then "possible"). A
    counterexample with sizes of its own (``--prove-sizes``) is run at them: the dispatch's
    work-group count, and the specialization constants that give the work-group size."""
    from kernellab.verify.vulkan import verify_scenario
    runs: dict[Any, set[str]] = {}
    out = []
    try:
        for f, c in zip(findings, found):
            if c.sizes not in runs:
                at = scenario if c.sizes is None else _sized_scenario(scenario, number, c.sizes, module)
                runs[c.sizes] = {d.kind for d in verify_scenario(path, scenario=at, index=number).findings}
            out.append(f.kind in runs[c.sizes])
    except Exception as exc:
        log.warning("%s: the counterexample could not be replayed: %s", path, exc)
        return None
    return out


def _sized_scenario(scenario: Any, number: int, sizes: Any, module: Any) -> Any:
    """A copy of ``scenario`` whose ``number``-th dispatch has the counterexample's ``sizes``
    ((local size), (work-group count))."""
    import copy

    from kernellab import model as m
    from kernellab.verify.prove.sizes import local_size_constants

    local, groups = sizes
    out = copy.deepcopy(scenario)
    dispatch = [c for c in out.commands if isinstance(c, m.DispatchCompute)][number]
    dispatch.rangeND = list(groups)
    shader = out.by_uid[dispatch.shader_ref]
    _, spec = local_size_constants(module)
    for cid, d in spec.items():
        spec_id = module.decorated(cid, "SpecId")
        assert spec_id is not None
        kept = [c for c in shader.specialization_constants if c.id != spec_id[0]]
        shader.specialization_constants = kept + [m.SpecializationConstant(id=spec_id[0], value=local[d])]
    return out


def _within(watch: limit.Stopwatch, outcome: Any) -> Any:
    """The engine's outcome, its own deadline's ``unknown`` said as the launch's time limit."""
    reason = outcome.reason or ""
    if outcome.verdict == "unknown" and (reason.startswith("solver time limit")
                                         or (reason.startswith("solver error") and watch.left() <= 0.001)):
        outcome.reason = watch.reason()
    return outcome


# --- findings ------------------------------------------------------------------------------------

def _checked_source(path: Path, named: Path, where: str) -> Path:
    """The kernel source a workload names, resolved, once it passed the boundary every build's
    source passes (docs/security.md): a regular file, bounded, inside the workload's folder or an
    ``--allow-outside`` folder. The proof reads and annotates its own copy of the source, so the
    compiler's check of the copy cannot stand in for this one (``kernel_file: "/etc/passwd"`` was
    read and its first line quoted in clang's error)."""
    from kernellab.compile.source_files import read_checked
    from kernellab.errors import Problem

    try:
        real, _ = read_checked(named, compiler_options.allowed_roots(path.parent))
    except ValueError as exc:
        raise InputError([Problem(str(path), where, f"cannot read the kernel: {exc}")]) from None
    return Path(real)


def _compiled(path: Path, inst: Any, source: Path, flags: Any, local: tuple[int, int, int], specs: Any) -> Any:
    """The launch's kernel built for the proof; a source that does not compile is bad input at the
    instantiation's ``kernel_file``, as a run's build is."""
    from kernellab.compile.stage import placed
    from kernellab.errors import CompileError
    from kernellab.spirvsim.module import Unsupported
    from kernellab.verify.prove import opencl

    try:
        return opencl.compile_kernel(source, inst.entry_point, flags, local, specs, roots=(path.resolve().parent,),
                                     work_dim=len(inst.global_size),
                                     global_offset=_dims(inst.global_offset or (0,), 0))
    except CompileError as exc:
        raise placed(exc, (str(path), inst.pointer("kernel_file"))) from None
    except InputError as exc:  # an include refused: named in the user's file, at the kernel's place
        if isinstance(exc, Unsupported) or any(p.file for p in exc.problems):
            raise  # the proof's own shortfall (an unknown verdict), or placed already
        raise InputError.at(str(path), inst.pointer("kernel_file"), str(exc)) from None


def _unknown(launch: Launch, reason: str, line: tuple[str, int] | None = None) -> None:
    launch.proof = "unknown"
    launch.reason = reason + (f" at line {line[1]}" if line and f"line {line[1]}" not in reason else "")


def _settle(launch: Launch, findings: list[Finding], confirmed: Sequence[bool | None] | None,
            found: list[Any]) -> None:
    """A counterexample the replay confirmed is a defect; one it did not is possible (a warning),
    or, when it came from a loop summarised by invariants (its state perhaps unreachable), makes
    the launch unknown: the invariants were not strong enough."""
    for k, f in enumerate(findings):
        got = confirmed[k] if confirmed is not None else None
        f.severity = "defect" if got else "warning"
        f.detail = (f.detail + "; " if f.detail else "") + (
            "confirmed by a replayed launch" if got else
            "possible: the replayed launch did not reproduce it" if got is False else
            f"possible: not replayed (no replay finished in the replays' {REPLAY_SECONDS:g} s or the "
            "dynamic verify's own time limit)" if confirmed is not None else
            "possible: not replayed")
    launch.proof = "defect" if any(f.severity == "defect" for f in findings) else "possible"
    if launch.proof == "possible" and all(c.abstract for c in found):
        launch.proof = "unknown"
        launch.reason = ("invariant not found: the counterexamples lie in loops summarised by inferred invariants "
                         "and no replayed launch reproduced them")
    elif launch.proof == "possible":
        launch.reason = "no counterexample was reproduced by a replayed launch"


def _finding(c: Any, kernel: str | None, index: int | None, module: Any, source: Path | None) -> Finding:
    from kernellab.verify.prove.opencl import is_named
    accesses = []
    for k, inst in enumerate(c.inst):
        item = c.work_items[min(k, len(c.work_items) - 1)]
        loc: Location | None = None
        if inst.line is not None:
            # an included file's line is its own (the #line markers name it)
            file = str(source) if source is not None and (not inst.line[0] or is_named(str(source), inst.line[0])) \
                else inst.line[0]
            loc = {"file": file, "line": inst.line[1], "column": 0}
        accesses.append(Access(item, loc, module.source_text(inst.line), inst.op))
    example: dict[str, Any] = {"work_items": c.work_items, "address": c.offset, "push_constants": _hex(c.push_bytes),
               "buffers": {f"{s}.{b}": {str(k): v for k, v in sorted(got.items())[:64]}
                           for (s, b), got in c.buffer_bytes.items() if got}}
    if c.sizes is not None:  # --prove-sizes: the sizes the counterexample needs
        example["local_size"], example["num_groups"] = list(c.sizes[0]), list(c.sizes[1])
    return Finding(c.kind, c.message, kernel, index, address_space=c.address_space or None,
                   address=None if c.offset is None else str(c.offset), accesses=accesses, examples=[example],
                   resource=c.resource, detail="counterexample found by the prover")


def _hex(data: dict[int, int]) -> str:
    return bytes(data.get(k, 0) for k in range(max(data, default=-1) + 1)).hex()
