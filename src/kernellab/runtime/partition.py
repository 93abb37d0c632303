"""One OpenCL kernel split across two devices (or one device), from a PySchedCL spec.

Partition P (0..10) splits dimension 0 of the NDRange: work-items ``[0, s)`` run on the GPU-class
device and ``[s, G0)`` on the CPU-class device, where ``s`` is P/10 of ``G0`` rounded to a multiple
of the local size (PySchedCL's order: the GPU takes the first share). Buffers follow the spec:

* ``break: 1`` buffers are split with the NDRange: a part sees only its rows (``size / G0``
  elements per work-item of dimension 0). On one device the parts bind ranges of one buffer
  (sub-buffers, no copies) when the split is aligned for the device, else buffers of their own
  rows; on two devices each part gets a buffer of its rows only.
* ``break: 0`` buffers are given whole to both parts; what the parts write to them is merged
  element by element (a part's changes win over the initial contents; two parts writing different
  values to one element is an error).

Two split modes: ``subbuffer`` (default, PySchedCL's model: each part's work-item ids start at 0
and ``partition_round(dataset, size_percent)`` is its element count) and ``offset`` (each part is
launched with a global work offset over whole-size buffers, so ``get_global_id`` is absolute).

This module keeps the split policy (:func:`plan_parts`, which buffers are bound as ranges), the
merge and the sweep; the parts run as scenarios through the one executor
(:func:`~kernellab.runtime.spec_scenario.run_split`) on the OpenCL backend, one backend per device
(one context; devices of two platforms cannot share one). On two devices each part runs on its
own backend in a thread of its own; on one device the parts are dispatches of one scenario with
no barrier between them, which the backend runs on two queues of its context
(:meth:`~kernellab.backends.base.Backend.open_queues`): either way the parts run concurrently,
PySchedCL's queue per part. Every command is profiled, transfers included
(:meth:`~kernellab.backends.base.Backend.transfer_timings`); :class:`PartTiming` carries the
device times of a part's writes, kernel and reads.
"""
from __future__ import annotations

import functools
import json
import logging
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import Any

import numpy as np

from kernellab import compiler_options
from kernellab.backends.base import Backend, BackendOptions, DeviceInfo, ProgramSpec, UnknownEntryError
from kernellab.backends.feature_specs import KernelArg
from kernellab.backends.registry import backend_class
from kernellab.compile.pipeline import driver_source
from kernellab.errors import DeviceError, InputError, KernellabError, Problem, UsageError
from kernellab.formats.pyschedcl.kernel import ResolvedBuffer, ResolvedKernel
from kernellab.formats.pyschedcl.spec import load_spec
from kernellab.native.devices import GPU_KINDS, select, selector_kind
from kernellab.outputs import write_text
from kernellab.records import dataclass
from kernellab.runtime.host_data import fill_inputs, write_outputs
from kernellab.runtime.spec_scenario import Part, SpecScenario, SplitRun, program_specs, run_split
from kernellab.runtime.split_modes import SPLIT_MODES

log = logging.getLogger("kernellab.partition")

_GPU_KINDS = GPU_KINDS


# --- devices ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    info: DeviceInfo

    @property
    def label(self) -> str:
        return f"{self.info.index}: {self.info.name}"


def _pick(found: Sequence[DeviceInfo], wanted: str, role: str) -> Target:
    w = wanted.strip()
    matches = select(found, w)
    if matches:
        return Target(matches[0])
    kind = selector_kind(w)
    if kind == "index":
        raise UsageError(f"--devices: no OpenCL device with index {w} for the {role} part "
                         f"(have {', '.join(str(i.index) for i in found)})")
    if kind == "kind":
        have = "; ".join(f"{i.index}: {i.name} ({i.kind})" for i in found)
        raise UsageError(f"--devices: no OpenCL device of kind {w.upper()} (have {have})")
    have = "; ".join(f"{i.index}: {i.name}" for i in found)
    raise UsageError(f"--devices: no OpenCL device name contains {w!r} (have {have})")


def choose_targets(devices: str | Sequence[str] | None = None) -> tuple[Target, Target]:
    """(CPU-class target, GPU-class target). ``devices`` is ``"CPU,GPU"``-style: two selectors
    (a kind ``cpu``/``gpu``, an index, or a name substring), CPU-class part first; one selector
    means both parts on that device. By default the best CPU device and the best GPU if there is
    one, else the CPU device twice (two queues). Simulators (Oclgrind) are used only when named."""
    try:
        found = backend_class("opencl").devices()
    except DeviceError:
        found = []
    if not found:
        raise DeviceError("no OpenCL device found: pip install pocl-binary-distribution (a CPU device) "
                          "or install your GPU vendor's OpenCL driver")
    if devices:
        parts = [p for p in (devices.split(",") if isinstance(devices, str) else devices) if p.strip()]
        if not 1 <= len(parts) <= 2:
            raise UsageError(f"--devices: expected CPU_DEVICE,GPU_DEVICE (one or two selectors), got {devices!r}")
        cpu = _pick(found, parts[0], "CPU-class")
        gpu = _pick(found, parts[-1], "GPU-class")
        return cpu, gpu
    usable = [i for i in found if i.kind != "other"] or list(found)
    cpus = [i for i in usable if i.kind == "cpu"]
    gpus = [i for i in usable if i.kind in _GPU_KINDS]
    first = min(cpus or usable, key=lambda i: (i.rank, i.index))
    second = min(gpus, key=lambda i: (i.rank, i.index)) if gpus else first
    return Target(first), Target(second)


# --- sessions: a backend per device, the kernel built and checked once ---------------------


@dataclass
class Lane:
    """Where one part runs: a device and the backend on it (its context and its one queue)."""

    role: str  # "gpu" | "cpu"
    target: Target
    backend: Backend
    #: sub-buffer origins must be multiples of this many bytes on this device
    align: int
    #: held while a run uses the backend (two lanes of one device share it, and its queue)
    lock: threading.Lock


class Session:
    """A backend for each device of the two parts, and built kernels, reused across runs.

    One device: one backend with two queues on its context, which runs the two parts at once
    over shared buffers. Two devices: a backend each (buffers then cannot be shared), run
    concurrently."""

    def __init__(self, cpu: Target, gpu: Target, profiling: bool = True):
        cls = backend_class("opencl")
        options = BackendOptions(timestamps=profiling)
        opened: dict[int, tuple[Backend, threading.Lock]] = {}
        try:
            for target in (gpu, cpu):
                if target.info.index not in opened:
                    opened[target.info.index] = (cls(target.info, options), threading.Lock())
        except BaseException:
            for backend, _ in opened.values():
                backend.close()
            raise
        self.lanes = {role: Lane(role, target, *self._aligned(opened[target.info.index]))
                      for role, target in (("gpu", gpu), ("cpu", cpu))}
        self.shared_context = len(opened) == 1
        #: queues of the one device: its two parts run at once on two queues of one context, as
        #: on two devices (1 where the backend has one queue: they take turns)
        self.queues = opened[gpu.info.index][0].open_queues(2) if self.shared_context else 1
        self._built: dict[tuple[str, str, str], tuple[bytes, compiler_options.Options]] = {}
        self._checked: set[tuple[int, tuple[str, str, str]]] = set()
        self._lock = threading.Lock()

    @staticmethod
    def _aligned(opened: tuple[Backend, threading.Lock]) -> tuple[Backend, int, threading.Lock]:
        backend, lock = opened
        return backend, backend.limits.buffer_range_alignment or 1, lock

    @property
    def description(self) -> str:
        g, c = self.lanes["gpu"].target, self.lanes["cpu"].target
        if self.shared_context:
            return f"{g.label} ({'two queues' if self.queues > 1 else 'one queue'})"
        return f"GPU-class {g.label}; CPU-class {c.label}"

    def program(self, kernel: ResolvedKernel, roles: Sequence[str] = ("gpu", "cpu")) -> tuple[bytes, compiler_options.Options]:
        """The kernel's source as the driver gets it and its options, built and checked against the
        spec on the backends of ``roles`` (once per backend and kernel)."""
        spec = kernel.spec
        folder = Path(spec.file).parent
        # the spec's macros become -D options: through the door like any file's options
        read = compiler_options.read("opencl-c", kernel.build_options, folder, compiler_options.allowed_roots(folder),
                                     (str(spec.file), "/macros"))
        key = (str(spec.file), spec.name, read.key())
        with self._lock:
            if key not in self._built:
                # the driver gets the kernel with its includes inlined and checked (an InputError names the include)
                source = driver_source(spec.src, Path(spec.file), (str(spec.file), "/src"), options=read)
                self._built[key] = (source, read.without_include_dirs())
            code, options = self._built[key]
            for role in roles:
                backend = self.lanes[role].backend
                if (id(backend), key) not in self._checked:
                    _check_kernel(backend, kernel, code, options)
                    self._checked.add((id(backend), key))
        return code, options

    def check_fits(self, kernel: ResolvedKernel) -> None:
        """Refuse, before allocating anything, buffers, local memory or workgroups larger than a
        device of this session allows (each problem names its place in the spec)."""
        problems: list[Problem] = []
        spec = kernel.spec
        seen = set()
        for lane in self.lanes.values():
            if id(lane.backend) in seen:
                continue
            seen.add(id(lane.backend))
            limits, name = lane.backend.limits, lane.target.info.name
            largest = limits.max_allocation_size
            for b in kernel.buffers:
                if largest is not None and b.nbytes > largest:
                    problems.append(Problem(spec.file, b.spec.size.where,
                                            f"{b.count} {b.spec.type.name} elements ({b.nbytes} bytes) exceed the largest "
                                            f"buffer {name} allows ({largest} bytes)"))
            total = sum(b.nbytes for b in kernel.buffers)
            if limits.memory_heap_size is not None and total > limits.memory_heap_size:
                problems.append(Problem(spec.file, "/", f"the buffers need {total} bytes, more than the "
                                                        f"{limits.memory_heap_size} bytes of {name}"))
            local = sum(kernel.local_bytes.values())
            if limits.max_shared_memory_size is not None and local > limits.max_shared_memory_size:
                where = next(a.where for a in spec.local_args)
                problems.append(Problem(spec.file, where, f"the local arguments need {local} bytes, more than the "
                                                          f"{limits.max_shared_memory_size} bytes of local memory "
                                                          f"of {name}"))
            if kernel.local_size and limits.max_workgroup_invocations is not None:
                items = 1
                for n in kernel.local_size:
                    items *= n
                if items > limits.max_workgroup_invocations:
                    where = kernel.spec.local_work_size.where if kernel.spec.local_work_size else "/localWorkSize"
                    problems.append(Problem(spec.file, where, f"a workgroup of {items} work-items "
                                                              f"({'x'.join(map(str, kernel.local_size))}) is larger than "
                                                              f"the {limits.max_workgroup_invocations} {name} allows"))
        if problems:
            raise InputError(problems)

    def close(self) -> None:
        closed = set()
        for lane in self.lanes.values():
            if id(lane.backend) not in closed:
                closed.add(id(lane.backend))
                lane.backend.close()  # closing after a device error logs, and does not hide that error

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _check_kernel(backend: Backend, kernel: ResolvedKernel, code: bytes, options: compiler_options.Options) -> None:
    """Build the kernel on ``backend`` and check it against the spec: a kernel of the spec's name,
    taking the arguments the spec describes (a build error names the kernel's file)."""
    spec = kernel.spec
    program = ProgramSpec(uid=str(spec.src), code=code, language="opencl-c", entry=spec.name, options=options)
    try:
        known = backend.program_interface(program)
    except UnknownEntryError as exc:
        raise InputError([Problem(spec.file, "/name", f"{spec.src.name} defines no kernel named "
                                                      f"{spec.name!r} (it defines: {', '.join(exc.names) or 'none'})")]) from None
    _check_signature(known.parameters if known is not None else (), kernel)


def _check_signature(params: Sequence[KernelArg], kernel: ResolvedKernel) -> None:
    """The spec's argument kinds against the kernel's own (argument info from the compiler)."""
    spec = kernel.spec
    problems: list[Problem] = []
    if not params:
        return  # argument info unavailable on this platform: nothing to check against
    if len(params) != spec.arg_count:
        problems.append(Problem(spec.file, "/", f"kernel {spec.name!r} takes {len(params)} arguments but the spec "
                                                f"describes {spec.arg_count}"))
    for i in range(min(len(params), spec.arg_count)):
        param = params[i]
        space, tname, name = param.address_space, param.type_name, param.name
        pointer = tname.endswith("*")
        buf = spec.buffer(i)
        if buf is not None and not (pointer and space in ("global", "constant")):
            problems.append(Problem(spec.file, buf.where, f"argument {i} ({tname} {name}) of {spec.name} is not a "
                                                          "__global pointer, but the spec describes it as a buffer"))
        elif buf is not None:
            base = tname[:-1].replace("const", "").strip()
            if base and base != buf.type.name and base.replace("unsigned ", "u") != buf.type.name:
                log.warning("%s: %s: buffer type %s but the kernel's argument %d is %s", spec.file, buf.where,
                            buf.type.name, i, tname)
        for a in spec.var_args:
            if a.pos == i and (pointer or space != "private"):
                problems.append(Problem(spec.file, a.where, f"argument {i} ({tname} {name}) of {spec.name} is not "
                                                            "passed by value, but the spec describes it as a varArgument"))
        for la in spec.local_args:
            if la.pos == i and space != "local":
                problems.append(Problem(spec.file, la.where, f"argument {i} ({tname} {name}) of {spec.name} is not "
                                                            "a __local pointer, but the spec describes it as a localArgument"))
    if problems:
        raise InputError(problems)


# --- running ---------------------------------------------------------------------------------


@dataclass
class PartTiming:
    role: str
    device: str
    start: int  # first work-item of dimension 0
    count: int  # work-items of dimension 0
    #: device times of the part's commands, ns: (label, start, end)
    events: list[tuple[str, int, int]] = field(default_factory=list)

    @property
    def kernel_ns(self) -> int:
        return sum(e - s for label, s, e in self.events if label == "kernel")

    @property
    def span_ns(self) -> int:
        if not self.events:
            return 0
        return max(e for _, _, e in self.events) - min(s for _, s, _ in self.events)


@dataclass
class RunResult:
    outputs: dict[int, np.ndarray]  # pos -> flat host array
    parts: list[PartTiming]
    wall_s: float
    partition: int
    split: int
    #: buffer positions handed to the parts as sub-buffers (the others as whole buffers or copies)
    subbuffers: frozenset[int] = frozenset()

    @property
    def device_ns(self) -> int:
        """Makespan by profiling events: the parts run concurrently, so the longest part."""
        return max((p.span_ns for p in self.parts), default=0)

    @property
    def kernel_ns(self) -> int:
        return max((p.kernel_ns for p in self.parts), default=0)


def plan_parts(kernel: ResolvedKernel, partition: int) -> list[tuple[str, int, int]]:
    """[(role, first work-item, count)] for dimension 0; empty parts are left out."""
    total = kernel.global_size[0]
    s = kernel.split_point(partition)
    return [(role, a, b - a) for role, a, b in (("gpu", 0, s), ("cpu", s, total)) if b > a]


def _row_bytes(kernel: ResolvedKernel, b: ResolvedBuffer, rows: int) -> int:
    return b.elements_before(rows, kernel.global_size[0]) * b.spec.type.itemsize


def execute(session: Session, kernel: ResolvedKernel, host: Mapping[int, np.ndarray], partition: int | None = None,
            split: str = "subbuffer") -> RunResult:
    """Run ``kernel`` split by ``partition`` on the session's lanes; returns outputs and timings."""
    if split not in SPLIT_MODES:
        raise UsageError(f"split mode must be one of {', '.join(SPLIT_MODES)}, got {split!r}")
    p = kernel.partition if partition is None else partition
    if not 0 <= p <= 10:
        raise UsageError(f"--partition must be in 0..10, got {p}")
    t0 = time.perf_counter()
    session.check_fits(kernel)
    parts = [Part(role, start, count) for role, start, count in plan_parts(kernel, p)]
    if len(parts) > 1:
        kernel.check_splittable(p)
    code, options = session.program(kernel, [part.role for part in parts])

    def programs(shaped: SpecScenario) -> Mapping[str, ProgramSpec]:
        return program_specs(shaped, code, options)

    # one backend for all parts (one device): a queue each on its context; else a backend each
    groups = [parts] if session.shared_context or len(parts) == 1 else [[part] for part in parts]
    ranged: frozenset[int] = frozenset()
    if len(groups[0]) > 1 and split == "subbuffer":
        # OpenCL leaves a buffer used concurrently with its own sub-buffers undefined, so a buffer is
        # bound as ranges for every part (each part's rows aligned for its device) or for none
        align = session.lanes[parts[0].role].align
        ranged = frozenset(b.pos for b in kernel.buffers if b.spec.breakable
                           and all(_row_bytes(kernel, b, part.start) % align == 0 for part in parts))
    runs = _run_groups(session, kernel, host, groups, split, ranged, len(parts), programs)
    results = _assemble(kernel, host, parts, runs, split)
    wall = time.perf_counter() - t0
    timings = [PartTiming(part.role, session.lanes[part.role].target.info.name, part.start, part.count,
                          sorted(((kind, a, b) for run in runs for kind, a, b in run.commands.get(part.role, [])),
                                 key=lambda e: (e[1], e[2])))
               for part in parts]
    return RunResult(results, timings, wall, p, kernel.split_point(p), ranged)


def _run_groups(session: Session, kernel: ResolvedKernel, host: Mapping[int, np.ndarray], groups: list[list[Part]],
                split: str, ranged: frozenset[int], of: int,
                programs: Callable[[SpecScenario], Mapping[str, ProgramSpec]]) -> list[SplitRun]:
    """Each group of parts on its lane's backend through the executor; two groups (two devices)
    in a thread each, so that they run concurrently."""
    from kernellab.native import launch_guard  # a crash names the part (schedule, partition-sweep)

    def one(group: list[Part]) -> SplitRun:
        lane = session.lanes[group[0].role]
        what = (f"the {' and '.join(part.role for part in group)} part{'s' if len(group) > 1 else ''} of kernel "
                f"{kernel.spec.name} of {kernel.spec.file} or one before it")
        # held in the thread that runs the group: two lanes' parts at once are named apart
        with lane.lock, launch_guard.held(what):
            return run_split(kernel, host, group, split, lane.backend, ranged, of=of, programs=programs)

    if len(groups) == 1:
        return [one(groups[0])]
    return _concurrently(kernel, [functools.partial(one, g) for g in groups])


def _concurrently(kernel: ResolvedKernel, calls: Sequence[Callable[[], SplitRun]]) -> list[SplitRun]:
    """Each call in a thread of its own; their results in order, or the first failure."""
    runs: list[SplitRun | None] = [None] * len(calls)
    failures: list[BaseException] = []

    def work(i: int) -> None:
        try:
            runs[i] = calls[i]()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(i,), name=f"kernellab-part-{i}") for i in range(len(calls))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if failures:
        exc = failures[0]
        if isinstance(exc, KernellabError):
            raise exc
        raise KernellabError(f"a part of kernel {kernel.spec.name} failed: {exc!r}") from exc
    return [run for run in runs if run is not None]


def _assemble(kernel: ResolvedKernel, host: Mapping[int, np.ndarray], parts: Sequence[Part],
              runs: Sequence[SplitRun], split: str) -> dict[int, np.ndarray]:
    """The written buffers' final contents from the parts' runs: the shared buffers as they are,
    each part's rows in place, the ``break: 0`` copies merged."""
    results: dict[int, np.ndarray] = {b.pos: host[b.pos] for b in kernel.buffers}

    def own(pos: int) -> np.ndarray:
        if results[pos] is host[pos]:  # the parts' bytes go into a copy, never into the host data
            results[pos] = np.array(host[pos], copy=True)
        return results[pos]

    start = {part.role: part.start for part in parts}
    merges: dict[int, dict[str, np.ndarray]] = {}
    for run in runs:
        for pos, final in run.outputs.items():
            results[pos] = final
        for pos, copies in run.copies.items():
            b = next(r for r in kernel.buffers if r.pos == pos)
            if not b.spec.breakable:
                merges.setdefault(pos, {}).update(copies)
                continue
            flat = own(pos).view(np.uint8).reshape(-1)
            for role, rows in copies:
                first = _row_bytes(kernel, b, start[role])
                flat[first:first + rows.nbytes] = rows.view(np.uint8).reshape(-1)
    for pos, by_role in merges.items():
        _merge(kernel, pos, host[pos], [(part.role, by_role[part.role]) for part in parts if part.role in by_role],
               own(pos), split)
    return results


def _merge(kernel: ResolvedKernel, pos: int, initial: np.ndarray, copies: list[tuple[str, np.ndarray]],
           out: np.ndarray, split: str = "subbuffer") -> None:
    """Combine the parts' copies of a whole (``break: 0``) written buffer: an element a part changed
    takes that part's value; two parts changing one element to different values is refused."""
    width = kernel.spec.buffer(pos).type.width  # type: ignore[union-attr]
    init = initial.reshape(-1, width) if width > 1 else initial
    result = init.copy()
    owner = np.full(init.shape[0], -1)
    for i, (_role, copy) in enumerate(copies):
        c = copy.reshape(-1, width) if width > 1 else copy
        changed = (c.view(np.uint8).reshape(c.shape[0], -1) != init.view(np.uint8).reshape(init.shape[0], -1)).any(axis=1)
        clash = changed & (owner >= 0)
        if clash.any():
            differs = (c[clash] != result[clash]).reshape(int(clash.sum()), -1).any(axis=1)
            if differs.any():
                where = int(np.flatnonzero(clash)[np.flatnonzero(differs)[0]])
                spec = kernel.spec.buffer(pos)
                hint = ("each part's work-item ids start at 0 in the subbuffer split, so parts that index it by "
                        "global id write the same elements: use --split offset, " if split == "subbuffer" else "")
                raise InputError([Problem(kernel.spec.file, f"{spec.where}/break",  # type: ignore[union-attr]
                                          f"argument {pos} has break: 0 and both parts wrote different values to "
                                          f"element {where}; the result would be wrong, so "
                                          f"it is refused: {hint}give it break: 1, or run it with partition 0 or 10")])
        result[changed] = c[changed]
        owner[changed] = i
    out[...] = result.reshape(out.shape)


# --- the ``kernellab run SPEC.json`` entry point ---------------------------------------------


def run_spec(path: str | Path, output_dir: str | Path | None, *, variables: Mapping[str, Any] | None = None,
             partition: int | None = None, devices: str | Sequence[str] | None = None, seed: int = 0,
             inputs: Mapping[int, str | Path] | None = None, split: str = "subbuffer", quiet: bool = False,
             profiling_path: str | Path | None = None) -> int:
    """Run a PySchedCL kernel spec: ``kernellab run SPEC.json --set dataset=N [--partition P]
    [--devices CPU,GPU] [--seed S] [--input POS=FILE.npy] --output DIR``. Returns the exit status.
    ``profiling_path`` receives every command's device times as JSON (``--profiling-dump-path``)."""
    spec = load_spec(path)
    kernel = spec.resolve(variables or {}, partition)
    cpu, gpu = choose_targets(devices)
    with Session(cpu, gpu) as session:
        session.check_fits(kernel)  # before the host data is made: a huge size fails here, cheaply
        host = fill_inputs(kernel, seed, inputs)
        result = execute(session, kernel, host, kernel.partition, split)
        written = write_outputs(kernel, result.outputs, output_dir) if output_dir is not None else []
        if profiling_path is not None:
            write_text(profiling_path, json.dumps(profile_document(kernel, session, result), indent=2) + "\n")
        if not quiet:
            parts = ", ".join(f"{t.role} part {t.count} work-items on {t.device} ({t.kernel_ns / 1e3:.1f} us)"
                              for t in result.parts)
            print(f"{spec.name}: NDRange {list(kernel.global_size)}, partition {result.partition}: {parts}; "
                  f"{len(written)} output file{'s' if len(written) != 1 else ''} in {output_dir}", file=sys.stderr)
    return 0


def profile_document(kernel: ResolvedKernel, session: Session, result: RunResult) -> dict[str, Any]:
    """A partitioned run's timings: each part's commands with their device times (ns)."""
    return {"kind": "kernellab.partition-profile", "kernel": kernel.spec.name, "spec": kernel.spec.file,
            "global_size": list(kernel.global_size), "partition": result.partition, "split": result.split,
            "wall_s": result.wall_s, "makespan_ns": result.device_ns,
            "parts": [{"role": t.role, "device": t.device, "first_item": t.start, "items": t.count,
                       "kernel_ns": t.kernel_ns,
                       "commands": [{"command": label, "start_ns": a, "end_ns": b} for label, a, b in t.events]}
                      for t in result.parts]}


# --- the partition sweep ---------------------------------------------------------------------


@dataclass
class SweepPoint:
    partition: int
    split: int
    #: per repeat: makespan by profiling events (ns), the parts' kernel times (ns), host wall (s)
    makespans_ns: list[int] = field(default_factory=list)
    kernels_ns: list[dict[str, int]] = field(default_factory=list)
    walls_s: list[float] = field(default_factory=list)
    #: outputs equal to those of the first partition swept (floats within 1e-5 relative: two
    #: different devices may round differently); ``identical`` when bit for bit
    consistent: bool = True
    identical: bool = True

    @staticmethod
    def _median(values: Sequence[float]) -> float:
        s = sorted(values)
        n = len(s)
        return float(s[n // 2]) if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2.0

    @property
    def makespan_ns(self) -> float:
        return self._median(self.makespans_ns)

    @property
    def wall_s(self) -> float:
        return self._median(self.walls_s)

    def kernel_ns(self, role: str) -> float:
        return self._median([k.get(role, 0) for k in self.kernels_ns])

    def as_json(self) -> dict[str, Any]:
        return {"partition": self.partition, "split": self.split, "makespan_ns": self.makespan_ns,
                "gpu_kernel_ns": self.kernel_ns("gpu"), "cpu_kernel_ns": self.kernel_ns("cpu"),
                "wall_s": self.wall_s, "makespans_ns": self.makespans_ns, "consistent": self.consistent,
                "identical": self.identical}


def sweep(session: Session, kernel: ResolvedKernel, host: Mapping[int, np.ndarray],
          partitions: Sequence[int] = tuple(range(11)), warmup: int = 1, repeats: int = 5,
          split: str = "subbuffer", progress: Any = None) -> list[SweepPoint]:
    """Time each partition: ``warmup`` untimed runs, then ``repeats`` timed ones (medians)."""
    if repeats < 1 or warmup < 0:
        raise UsageError("--repeats must be >= 1 and --warmup >= 0")
    points = []
    reference: dict[int, np.ndarray] | None = None
    for p in partitions:
        point = SweepPoint(p, kernel.split_point(p))
        for i in range(warmup + repeats):
            result = execute(session, kernel, host, p, split)
            if reference is None:
                reference = result.outputs
            elif i == 0:
                point.identical = all(np.array_equal(reference[k], v) for k, v in result.outputs.items())
                point.consistent = point.identical or all(
                    np.allclose(reference[k], v, rtol=1e-5, atol=1e-6, equal_nan=True) if v.dtype.kind == "f"
                    else np.array_equal(reference[k], v) for k, v in result.outputs.items())
            if i >= warmup:
                point.makespans_ns.append(result.device_ns)
                point.kernels_ns.append({t.role: t.kernel_ns for t in result.parts})
                point.walls_s.append(result.wall_s)
            if progress is not None:
                progress()
        points.append(point)
    return points


def best_partition(points: Sequence[SweepPoint]) -> SweepPoint:
    return min(points, key=lambda pt: (pt.makespan_ns, pt.partition))
