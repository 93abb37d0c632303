"""One OpenCL kernel split across two devices (or two queues of one device), from a PySchedCL spec.

Partition P (0..10) splits dimension 0 of the NDRange: work-items ``[0, s)`` run on the GPU-class
device and ``[s, G0)`` on the CPU-class device, where ``s`` is P/10 of ``G0`` rounded to a multiple
of the local size (PySchedCL's order: the GPU takes the first share). Buffers follow the spec:

* ``break: 1`` buffers are split with the NDRange: a part sees only its rows (``size / G0``
  elements per work-item of dimension 0). On one context the parts get sub-buffers of one buffer
  (no copies) when the split is aligned for the device, else a private buffer filled by a
  device-side copy; on two contexts each part gets a buffer of its rows only.
* ``break: 0`` buffers are given whole to both parts; what the parts write to them is merged
  element by element (a part's changes win over the initial contents; two parts writing different
  values to one element is an error).

Two split modes: ``subbuffer`` (default, PySchedCL's model: each part's work-item ids start at 0
and ``partition_round(dataset, size_percent)`` is its element count) and ``offset`` (each part is
launched with a global work offset over whole-size buffers, so ``get_global_id`` is absolute).

Every command is profiled; :class:`PartTiming` carries the events' device times.
"""
from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kernellab import compiler_options
from kernellab.backends import opencl_abi as abi
from kernellab.backends.base import DeviceInfo
from kernellab.compile.pipeline import driver_source
from kernellab.errors import BackendError, CompileError, DeviceError, InputError, Problem, ToolFailure, UsageError
from kernellab.formats.pyschedcl.kernel import ResolvedBuffer, ResolvedKernel
from kernellab.formats.pyschedcl.spec import load_spec
from kernellab.native import cl as ncl
from kernellab.native.devices import GPU_KINDS, select, selector_kind
from kernellab.outputs import write_text
from kernellab.runtime.host_data import fill_inputs, write_outputs
from kernellab.runtime.split_modes import SPLIT_MODES

log = logging.getLogger("kernellab.partition")

_GPU_KINDS = GPU_KINDS


def _opencl() -> tuple[Any, Any, Any]:
    """pyopencl, the OpenCL backend's device list and its guarded-call helper (shared so that
    device indices and error messages are the same as ``kernellab devices`` shows)."""
    return ncl.load(), ncl.devices, ncl.guarded


# --- devices ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    info: DeviceInfo
    device: Any  # pyopencl.Device

    @property
    def label(self) -> str:
        return f"{self.info.index}: {self.info.name}"


def _pick(found: Sequence[tuple[DeviceInfo, Any]], wanted: str, role: str) -> Target:
    w = wanted.strip()
    matches = select([info for info, _ in found], w)
    if matches:
        return Target(matches[0], next(d for i, d in found if i is matches[0]))
    kind = selector_kind(w)
    if kind == "index":
        raise UsageError(f"--devices: no OpenCL device with index {w} for the {role} part "
                         f"(have {', '.join(str(i.index) for i, _ in found)})")
    if kind == "kind":
        have = "; ".join(f"{i.index}: {i.name} ({i.kind})" for i, _ in found)
        raise UsageError(f"--devices: no OpenCL device of kind {w.upper()} (have {have})")
    have = "; ".join(f"{i.index}: {i.name}" for i, _ in found)
    raise UsageError(f"--devices: no OpenCL device name contains {w!r} (have {have})")


def choose_targets(devices: str | Sequence[str] | None = None) -> tuple[Target, Target]:
    """(CPU-class target, GPU-class target). ``devices`` is ``"CPU,GPU"``-style: two selectors
    (a kind ``cpu``/``gpu``, an index, or a name substring), CPU-class part first; one selector
    means both parts on that device. By default the best CPU device and the best GPU if there is
    one, else the CPU device twice (two queues). Simulators (Oclgrind) are used only when named."""
    _, enumerate_devices, _ = _opencl()
    found = enumerate_devices()
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
    usable = [(i, d) for i, d in found if i.kind != "other"] or list(found)
    cpus = [(i, d) for i, d in usable if i.kind == "cpu"]
    gpus = [(i, d) for i, d in usable if i.kind in _GPU_KINDS]
    first = min(cpus or usable, key=lambda m: (m[0].rank, m[0].index))
    second = min(gpus, key=lambda m: (m[0].rank, m[0].index)) if gpus else first
    return Target(*first), Target(*second)


# --- sessions: contexts, queues, programs ----------------------------------------------------


@dataclass
class Lane:
    """Where one part runs: a device, its context and its own queue."""

    role: str  # "gpu" | "cpu"
    target: Target
    context: Any
    queue: Any
    #: sub-buffer origins must be multiples of this many bytes on this device
    align: int


class Session:
    """Contexts and queues for the two parts, and built programs, reused across runs.

    One device: one context, two queues. Two devices of one platform: one context holding both.
    Devices of different platforms: a context each (buffers then cannot be shared)."""

    def __init__(self, cpu: Target, gpu: Target, profiling: bool = True):
        cl, _, guarded = _opencl()
        self._cl = cl
        self._guarded = guarded
        props = cl.command_queue_properties.PROFILING_ENABLE if profiling else 0
        same_platform = cpu.device.platform.int_ptr == gpu.device.platform.int_ptr
        if cpu.device.int_ptr == gpu.device.int_ptr:
            contexts = [guarded("clCreateContext", cl.Context, [cpu.device])] * 2
        elif same_platform:
            contexts = [guarded("clCreateContext", cl.Context, [cpu.device, gpu.device])] * 2
        else:
            contexts = [guarded("clCreateContext", cl.Context, [gpu.device]),
                        guarded("clCreateContext", cl.Context, [cpu.device])]
        self.lanes = {
            "gpu": Lane("gpu", gpu, contexts[0], guarded("clCreateCommandQueue", cl.CommandQueue, contexts[0],
                                                         gpu.device, properties=props), gpu.device.mem_base_addr_align // 8),
            "cpu": Lane("cpu", cpu, contexts[1], guarded("clCreateCommandQueue", cl.CommandQueue, contexts[1],
                                                         cpu.device, properties=props), cpu.device.mem_base_addr_align // 8),
        }
        self.shared_context = contexts[0] is contexts[1]
        self._programs: dict[tuple[int, str, str], Any] = {}
        self._lock = threading.Lock()

    @property
    def description(self) -> str:
        g, c = self.lanes["gpu"].target, self.lanes["cpu"].target
        if g.device.int_ptr == c.device.int_ptr:
            return f"{g.label} (two queues)"
        return f"GPU-class {g.label}; CPU-class {c.label}"

    def program(self, context: Any, kernel: ResolvedKernel) -> Any:
        """The built program for ``kernel`` in ``context`` (cached by source and options)."""
        folder = Path(kernel.spec.file).parent
        # the spec's macros become -D options: through the door like any file's options
        options = compiler_options.read("opencl-c", kernel.build_options, folder, compiler_options.allowed_roots(folder),
                                        (str(kernel.spec.file), "/macros")) + compiler_options.own("-cl-kernel-arg-info")
        # the driver gets the kernel with its includes inlined and checked (an InputError names the include)
        source = driver_source(kernel.spec.src, Path(kernel.spec.file), (str(kernel.spec.file), "/src"),
                               options=options).decode("utf-8", "replace")
        options = options.without_include_dirs()
        key = (id(context), source, options.key())
        with self._lock:
            prog = self._programs.get(key)
            if prog is None:
                cl = self._cl
                prog = cl.Program(context, source)
                try:
                    ncl.build(prog, options, what=str(kernel.spec.src), cache_dir=False)
                except ncl.BuildFailure as exc:
                    raise CompileError(f"{kernel.spec.src}: OpenCL C build failed",
                                       ToolFailure("clBuildProgram", ["kernellab", "run", kernel.spec.file], 2, exc.log)) from exc.__cause__
                names = ncl.kernel_names(prog)
                if kernel.spec.name not in names:
                    raise InputError([Problem(kernel.spec.file, "/name", f"{kernel.spec.src.name} defines no kernel named "
                                              f"{kernel.spec.name!r} (it defines: {', '.join(names) or 'none'})")])
                _check_signature(cl, cl.Kernel(prog, kernel.spec.name), kernel)
                self._programs[key] = prog
        return prog

    def check_fits(self, kernel: ResolvedKernel) -> None:
        """Refuse, before allocating anything, buffers, local memory or workgroups larger than a
        device of this session allows (each problem names its place in the spec)."""
        problems: list[Problem] = []
        spec = kernel.spec
        seen = set()
        for lane in self.lanes.values():
            dev = lane.target.device
            if dev.int_ptr in seen:
                continue
            seen.add(dev.int_ptr)
            name = lane.target.info.name
            for b in kernel.buffers:
                if b.nbytes > dev.max_mem_alloc_size:
                    problems.append(Problem(spec.file, b.spec.size.where,
                                            f"{b.count} {b.spec.type.name} elements ({b.nbytes} bytes) exceed the largest "
                                            f"buffer {name} allows ({dev.max_mem_alloc_size} bytes)"))
            total = sum(b.nbytes for b in kernel.buffers)
            if total > dev.global_mem_size:
                problems.append(Problem(spec.file, "/", f"the buffers need {total} bytes, more than the "
                                                        f"{dev.global_mem_size} bytes of {name}"))
            local = sum(kernel.local_bytes.values())
            if local > dev.local_mem_size:
                where = next(a.where for a in spec.local_args)
                problems.append(Problem(spec.file, where, f"the local arguments need {local} bytes, more than the "
                                                          f"{dev.local_mem_size} bytes of local memory of {name}"))
            if kernel.local_size:
                items = 1
                for n in kernel.local_size:
                    items *= n
                if items > dev.max_work_group_size:
                    where = kernel.spec.local_work_size.where if kernel.spec.local_work_size else "/localWorkSize"
                    problems.append(Problem(spec.file, where, f"a workgroup of {items} work-items "
                                                              f"({'x'.join(map(str, kernel.local_size))}) is larger than "
                                                              f"the {dev.max_work_group_size} {name} allows"))
        if problems:
            raise InputError(problems)

    def kernel(self, context: Any, kernel: ResolvedKernel) -> Any:
        # a fresh cl.Kernel per launch: argument state is per object, and launches may overlap
        return self._cl.Kernel(self.program(context, kernel), kernel.spec.name)

    def close(self) -> None:
        for lane in self.lanes.values():
            try:
                lane.queue.finish()
            except Exception:  # closing after a device error must not hide that error
                pass

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _check_signature(cl: Any, k: Any, kernel: ResolvedKernel) -> None:
    """The spec's argument kinds against the kernel's own (argument info from the compiler)."""
    spec = kernel.spec
    problems: list[Problem] = []
    if k.num_args != spec.arg_count:
        problems.append(Problem(spec.file, "/", f"kernel {spec.name!r} takes {k.num_args} arguments but the spec "
                                                f"describes {spec.arg_count}"))
    aq = cl.kernel_arg_address_qualifier
    for i in range(min(k.num_args, spec.arg_count)):
        try:
            space = ncl.guarded("clGetKernelArgInfo", k.get_arg_info, i, cl.kernel_arg_info.ADDRESS_QUALIFIER)
            tname = ncl.guarded("clGetKernelArgInfo", k.get_arg_info, i, cl.kernel_arg_info.TYPE_NAME).strip()
            name = ncl.guarded("clGetKernelArgInfo", k.get_arg_info, i, cl.kernel_arg_info.NAME)
        except BackendError:
            return  # argument info unavailable on this platform: nothing to check against
        pointer = tname.endswith("*")
        buf = spec.buffer(i)
        if buf is not None and not (pointer and space in (aq.GLOBAL, aq.CONSTANT)):
            problems.append(Problem(spec.file, buf.where, f"argument {i} ({tname} {name}) of {spec.name} is not a "
                                                          "__global pointer, but the spec describes it as a buffer"))
        elif buf is not None:
            base = tname[:-1].replace("const", "").strip()
            if base and base != buf.type.name and base.replace("unsigned ", "u") != buf.type.name:
                log.warning("%s: %s: buffer type %s but the kernel's argument %d is %s", spec.file, buf.where,
                            buf.type.name, i, tname)
        for a in spec.var_args:
            if a.pos == i and (pointer or space != aq.PRIVATE):
                problems.append(Problem(spec.file, a.where, f"argument {i} ({tname} {name}) of {spec.name} is not "
                                                            "passed by value, but the spec describes it as a varArgument"))
        for la in spec.local_args:
            if la.pos == i and space != aq.LOCAL:
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


@dataclass
class _Part:
    role: str
    lane: Lane
    start: int
    count: int
    args: list[Any] = field(default_factory=list)
    events: list[tuple[str, Any]] = field(default_factory=list)
    #: (pos, device buffer, byte offset into the host array, nbytes) to read back
    reads: list[tuple[int, Any, int, int]] = field(default_factory=list)
    #: break:0 written buffers of a context of its own: (pos, device buffer), then (pos, host copy)
    merges: list[tuple[int, Any]] = field(default_factory=list)
    #: private copies of sub-regions to copy back into a shared parent after the kernel
    copy_back: list[tuple[Any, Any, int, int]] = field(default_factory=list)
    #: objects that must outlive the enqueued commands (host slices, sub-buffers, kernels)
    keep: list[Any] = field(default_factory=list)


def plan_parts(kernel: ResolvedKernel, partition: int) -> list[tuple[str, int, int]]:
    """[(role, first work-item, count)] for dimension 0; empty parts are left out."""
    total = kernel.global_size[0]
    s = kernel.split_point(partition)
    return [(role, a, b - a) for role, a, b in (("gpu", 0, s), ("cpu", s, total)) if b > a]


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
    parts = [_Part(role, session.lanes[role], start, count) for role, start, count in plan_parts(kernel, p)]
    if len(parts) > 1:
        kernel.check_splittable(p)
    run = _Run(session, kernel, host, split, parts)
    # one context for all parts: one whole buffer per argument, written once
    if run.shared or len(parts) == 1:
        run.upload_whole_buffers()
    for part in parts:
        run.bind_buffers(part)
    # scalar and local arguments, then the launches
    for part in parts:
        run.launch(part)
    run.finish()
    wall = time.perf_counter() - t0
    used = frozenset(pos for pos in run.subbuffers if pos in run.parents and len(parts) > 1 and split == "subbuffer"
                     and any(b.pos == pos and b.spec.breakable for b in kernel.buffers))
    return RunResult(run.results, [_timing(part) for part in parts], wall, p, kernel.split_point(p), used)


class _Run:
    """The device buffers and commands of one partitioned run, built part by part."""

    def __init__(self, session: Session, kernel: ResolvedKernel, host: Mapping[int, np.ndarray], split: str,
                 parts: list[_Part]):
        self.session, self.kernel, self.host, self.split, self.parts = session, kernel, host, split, parts
        self.cl = session._cl
        self.guarded = session._guarded
        self.results: dict[int, np.ndarray] = {
            b.pos: (np.array(host[b.pos], copy=True) if b.spec.written_by_kernel else host[b.pos])
            for b in kernel.buffers}
        self.shared = session.shared_context and len(parts) > 1
        self.zeroed = {b.pos for b in kernel.buffers if b.spec.kind == "output" and not host[b.pos].any()}
        self.parents: dict[int, Any] = {}
        self.first_queue = parts[0].lane.queue
        self.setup_events: list[Any] = []
        # OpenCL leaves a buffer used concurrently with its own sub-buffers undefined, so a buffer is
        # split into sub-buffers for every part (each part's rows aligned for its device) or for none
        self.subbuffers = {b.pos for b in kernel.buffers
                           if all(self.nbytes_rows(b, part.start) % part.lane.align == 0 for part in parts)}

    def nbytes_rows(self, b: ResolvedBuffer, rows: int) -> int:
        return b.elements_before(rows, self.kernel.global_size[0]) * b.spec.type.itemsize

    def upload_whole_buffers(self) -> None:
        cl, guarded = self.cl, self.guarded
        ctx = self.parts[0].lane.context
        for b in self.kernel.buffers:
            mem = guarded(f"clCreateBuffer(arg {b.pos}, {b.nbytes} bytes)", cl.Buffer, ctx, cl.mem_flags.READ_WRITE,
                          b.nbytes)
            self.parents[b.pos] = mem
            if b.pos in self.zeroed:  # an output starting from zeros: filled on the device, nothing to copy
                ev = guarded(f"clEnqueueFillBuffer(arg {b.pos})", cl.enqueue_fill_buffer, self.first_queue, mem,
                             np.zeros(1, np.uint8), 0, b.nbytes)
                label = "fill"
            else:
                ev = guarded(f"clEnqueueWriteBuffer(arg {b.pos})", cl.enqueue_copy, self.first_queue, mem,
                             self.host[b.pos], is_blocking=False)
                label = "write"
            self.setup_events.append(ev)
            self.parts[0].events.append((label, ev))

    def bind_buffers(self, part: _Part) -> None:
        """The part's buffer arguments, in position order: views of the shared whole buffers, or
        buffers of its own context written from the host."""
        for pos in range(self.kernel.spec.arg_count):
            buf = next((b for b in self.kernel.buffers if b.pos == pos), None)
            if buf is None:
                continue
            start_b = self.nbytes_rows(buf, part.start) if buf.spec.breakable else 0
            size_b = (self.nbytes_rows(buf, part.start + part.count) - start_b) if buf.spec.breakable else buf.nbytes
            if pos in self.parents:
                self._bind_shared(part, buf, start_b, size_b)
            else:
                self._bind_private(part, buf, start_b, size_b)

    def _bind_shared(self, part: _Part, buf: ResolvedBuffer, start_b: int, size_b: int) -> None:
        cl, guarded, pos = self.cl, self.guarded, buf.pos
        whole = self.split == "offset" or not buf.spec.breakable
        parent = self.parents[pos]
        if not buf.spec.breakable and buf.spec.written_by_kernel and len(self.parts) > 1:
            # both parts write a whole buffer: one shared buffer would let the second part's writes
            # silently replace the first's, so each part writes a copy of its own, merged afterwards
            # exactly as on two devices
            mem = guarded(f"clCreateBuffer(arg {pos} part)", cl.Buffer, part.lane.context, cl.mem_flags.READ_WRITE,
                          buf.nbytes)
            ev = guarded("clEnqueueCopyBuffer", cl.enqueue_copy, part.lane.queue, mem, parent, byte_count=buf.nbytes,
                         src_offset=0, dst_offset=0, wait_for=self.setup_events or None)
            part.events.append(("copy", ev))
            part.args.append(mem)
            part.merges.append((pos, mem))
        elif whole or (start_b == 0 and size_b == buf.nbytes):
            part.args.append(parent)
        elif pos in self.subbuffers:
            sub = guarded(f"clCreateSubBuffer(arg {pos})", parent.get_sub_region, start_b, size_b)
            part.keep.append(sub)
            part.args.append(sub)
        else:
            # the split is not aligned for sub-buffers: private buffers, copied on the device
            mem = guarded(f"clCreateBuffer(arg {pos} part)", cl.Buffer, part.lane.context, cl.mem_flags.READ_WRITE,
                          size_b)
            ev = guarded("clEnqueueCopyBuffer", cl.enqueue_copy, part.lane.queue, mem, parent, byte_count=size_b,
                         src_offset=start_b, dst_offset=0, wait_for=self.setup_events or None)
            part.events.append(("copy", ev))
            part.args.append(mem)
            if buf.spec.written_by_kernel:
                part.copy_back.append((parent, mem, start_b, size_b))

    def _bind_private(self, part: _Part, buf: ResolvedBuffer, start_b: int, size_b: int) -> None:
        """This part has a context of its own: its own buffer, written from the host."""
        cl, guarded, pos, queue = self.cl, self.guarded, buf.pos, part.lane.queue
        data = self.host[pos]
        flat = data.view(np.uint8).reshape(-1)
        whole = self.split == "offset" or not buf.spec.breakable
        alloc = buf.nbytes if whole else size_b
        mem = guarded(f"clCreateBuffer(arg {pos}, {alloc} bytes)", cl.Buffer, part.lane.context,
                      cl.mem_flags.READ_WRITE, alloc)
        part.args.append(mem)
        if buf.spec.breakable and (self.split == "offset" or pos not in self.zeroed):
            region = flat[start_b:start_b + size_b]
            offset = {"dst_offset": start_b} if self.split == "offset" else {}
            ev = guarded(f"clEnqueueWriteBuffer(arg {pos})", cl.enqueue_copy, queue, mem, region, **offset,
                         is_blocking=False)
            part.keep.append(region)
            part.events.append(("write", ev))
        elif buf.spec.breakable:
            ev = guarded(f"clEnqueueFillBuffer(arg {pos})", cl.enqueue_fill_buffer, queue, mem,
                         np.zeros(1, np.uint8), 0, size_b)
            part.events.append(("fill", ev))
        else:
            ev = guarded(f"clEnqueueWriteBuffer(arg {pos})", cl.enqueue_copy, queue, mem, data, is_blocking=False)
            part.events.append(("write", ev))
            if buf.spec.written_by_kernel:
                part.merges.append((pos, mem))
            return
        if buf.spec.written_by_kernel:
            part.reads.append((pos, mem, start_b, size_b))

    def launch(self, part: _Part) -> None:
        """Set the part's arguments, enqueue its kernel and the commands that bring its results back."""
        cl, guarded, kernel, lane = self.cl, self.guarded, self.kernel, part.lane
        k = self.session.kernel(lane.context, kernel)
        values = {pos: v.tobytes() for pos, v in kernel.arg_values(part.start, part.count).items()}
        args = abi.positional_arguments(kernel.spec.arg_count, values, kernel.local_bytes, part.args)
        for pos, value in enumerate(abi.driver_values(args, cl, lambda mem: mem)):
            guarded(f"clSetKernelArg({kernel.spec.name}, {pos})", k.set_arg, pos, value)
        gsize = (part.count,) + tuple(kernel.global_size[1:])
        offset = (part.start,) + (0,) * (len(gsize) - 1) if self.split == "offset" and part.start else None
        waits = [ev for label, ev in part.events] + (self.setup_events if lane.queue is not self.first_queue else [])
        from kernellab.native import launch_guard  # a crash names this part (schedule, partition-sweep)
        launch_guard.naming(f"the {part.role} part of kernel {kernel.spec.name} of {kernel.spec.file} or one before it")
        ev = guarded(f"clEnqueueNDRangeKernel({kernel.spec.name}, {part.role} part)", cl.enqueue_nd_range_kernel,
                     lane.queue, k, gsize, kernel.local_size, offset, wait_for=waits or None)
        part.events.append(("kernel", ev))
        part.keep.append(k)
        for parent, mem, start_b, size_b in part.copy_back:
            cev = guarded("clEnqueueCopyBuffer", cl.enqueue_copy, lane.queue, parent, mem, byte_count=size_b,
                          src_offset=0, dst_offset=start_b, wait_for=[ev])
            part.events.append(("copy", cev))
        for pos, mem, start_b, size_b in part.reads:
            target = self.results[pos].view(np.uint8).reshape(-1)[start_b:start_b + size_b]
            src_off = start_b if self.split == "offset" else 0
            rev = guarded(f"clEnqueueReadBuffer(arg {pos})", cl.enqueue_copy, lane.queue, target, mem,
                          src_offset=src_off, is_blocking=False, wait_for=[ev])
            part.events.append(("read", rev))
        merged = []
        for pos, mem in part.merges:
            out = np.empty_like(self.host[pos])
            rev = guarded(f"clEnqueueReadBuffer(arg {pos})", cl.enqueue_copy, lane.queue, out, mem,
                          is_blocking=False, wait_for=[ev])
            part.events.append(("read", rev))
            merged.append((pos, out))
        part.merges = merged  # type: ignore[assignment]
        lane.queue.flush()

    def finish(self) -> None:
        """Wait for every part, read back the shared whole buffers and merge the parts' copies."""
        cl, guarded, kernel = self.cl, self.guarded, self.kernel
        for part in self.parts:
            guarded("clFinish", part.lane.queue.finish)
        # the whole written buffers of a shared context, read once after both parts are done
        merged = {pos for part in self.parts for pos, _ in part.merges}
        for pos, parent in self.parents.items():
            buf = next(b for b in kernel.buffers if b.pos == pos)
            if buf.spec.written_by_kernel and pos not in merged:
                rev = guarded(f"clEnqueueReadBuffer(arg {pos})", cl.enqueue_copy, self.first_queue, self.results[pos],
                              parent, is_blocking=True)
                self.parts[0].events.append(("read", rev))
        for pos in merged:
            _merge(kernel, pos, self.host[pos],
                   [(part.role, out) for part in self.parts for q, out in part.merges if q == pos], self.results[pos],
                   self.split)


def _timing(part: _Part) -> PartTiming:
    """The device times of a part's commands (none from a queue without profiling)."""
    evs = []
    for label, ev in part.events:
        try:
            evs.append((label, int(ncl.guarded("clGetEventProfilingInfo", getattr, ev.profile, "start")),
                        int(ncl.guarded("clGetEventProfilingInfo", getattr, ev.profile, "end"))))
        except BackendError:  # a queue without profiling
            pass
    return PartTiming(part.role, part.lane.target.info.name, part.start, part.count, evs)


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
