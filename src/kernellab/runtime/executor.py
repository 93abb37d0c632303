"""Runs a scenario on a backend: resources -> commands -> outputs.

Nothing here knows which file format the workload came from, nor which backend runs it; the
phases (setup, pipeline creation, run, save) are timed for ``--perf-counters-dump-path``.
"""
from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from kernellab import logs, parsed_options
from kernellab import model as m
from kernellab.backends import base
from kernellab.backends.base import (
    DYNAMIC_BUFFER_TYPES,
    SOURCE,
    TEXEL_BUFFER_TYPES,
    Backend,
    BackendOptions,
    BindingSlot,
    Buffer,
    BufferArray,
    DynamicBuffer,
    ImageBinding,
    KernelInterface,
    Limits,
    Program,
    ProgramSpec,
    SpecConstant,
    TexelBuffer,
    UnsupportedError,
    choose_device,
)
from kernellab.backends.registry import backend_class
from kernellab.compile.cache import ArtifactCache, default_cache
from kernellab.compile.pipeline import Compiler, CompileRequest, dump_stages
from kernellab.compile.stage import placed, target_env_for_api
from kernellab.compile.stage import shader_request as file_shader_request
from kernellab.errors import CompileError, FileSystemError, InputError, KernellabError, Problem, json_pointer
from kernellab.formats import npy, npy_arm
from kernellab.formats.paths import escaped_name
from kernellab.outputs import OutputSet
from kernellab.runtime.interface import (
    check_dispatch,
    check_local_arguments,
    check_spec_constants,
    clspv_specialization,
    reflect_module,
    stage_problem,
    workgroup_memory,
)
from kernellab.runtime.limits import LocalSize, check_limits
from kernellab.shader_languages import LANGUAGE_OF_SHADER_TYPE as LANGUAGE_OF_TYPE

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from contextlib import AbstractContextManager
    from typing import Any, overload

    from kernellab.backends.base import CommandTiming, SubgroupSizing
    from kernellab.backends.feature_specs import Image, ImageSpec
    from kernellab.compile.pipeline_cache import PipelineCacheFile
    from kernellab.runtime.collaborators import BackendLease, InputSource, ModuleCache, OutputSink

log = logs.getLogger("kernellab.run")


class RunOptions:
    """How a scenario runs: device, repeats, dumps and checks. (A plain class: every run imports
    and makes one, and its dataclass of eighteen fields cost more to build than the class.)"""

    __slots__ = ("arm_log", "backend", "cache_dir", "capture_frames", "clear_pipeline_cache", "debug_markers",
                 "device", "device_limits", "dry_run", "dump_stages", "fail_on_cache_miss", "finish", "guard_bands",
                 "iteration_counters", "progress", "repeat", "robust_buffer_access", "strict", "timestamps")

    def __init__(self, device: str | None = None, backend: str = "vulkan", dry_run: bool = False, repeat: int = 1,
                 capture_frames: Path | None = None, dump_stages: Path | None = None, cache_dir: Path | None = None,
                 robust_buffer_access: bool = False, fail_on_cache_miss: bool = False,
                 clear_pipeline_cache: bool = False, debug_markers: bool = False, arm_log: bool = False,
                 timestamps: bool = False, iteration_counters: bool = False, strict: bool = False,
                 progress: Callable[[int, int], None] | None = None, guard_bands: bool = False,
                 device_limits: bool = True, finish: Callable[[RunReport, OutputSet], None] | None = None):
        self.device = device
        self.backend = backend
        self.dry_run = dry_run
        self.repeat = repeat
        self.capture_frames = capture_frames
        self.dump_stages = dump_stages
        #: folder of Arm's pipeline-cache file ``<stem>.cache`` (``--pipeline-caching``); None = no cache
        self.cache_dir = cache_dir
        self.robust_buffer_access = robust_buffer_access
        self.fail_on_cache_miss = fail_on_cache_miss
        self.clear_pipeline_cache = clear_pipeline_cache
        #: label each command with VK_EXT_debug_utils (``--enable-gpu-debug-markers``)
        self.debug_markers = debug_markers
        #: write Arm's log lines for the steps Arm's tests match on (:func:`arm_say`)
        self.arm_log = arm_log
        self.timestamps = timestamps
        #: keep Arm's per-iteration perf counters (``--perf-counters-dump-path``); without it a long
        #: ``--repeat`` keeps no per-repeat record and its memory stays flat
        self.iteration_counters = iteration_counters
        #: problems that are legal but suspect (a specialization id the shader lacks) are errors, not warnings
        self.strict = strict
        #: called after each repeat with (done, total) for a progress bar
        self.progress = progress
        #: allocate each buffer a dispatch may write with a guard band after it, and warn (in
        #: :attr:`RunReport.warnings`) when a dispatch wrote into it; only where such writes reach
        #: memory (:attr:`Backend.writes_past_end_reach_memory`, no robust buffer access)
        self.guard_bands = guard_bands
        #: check every number against the device's limits before anything runs; off for ``verify``,
        #: where the driver's refusal of a launch is what the checker (Oclgrind's API checks) reports
        self.device_limits = device_limits
        #: stages more files (profiling dumps) into the run's outputs once every output is written,
        #: so they are committed with them, or not at all
        self.finish = finish

    def __repr__(self) -> str:
        return "RunOptions(" + ", ".join(f"{name}={getattr(self, name)!r}" for name in _RUN_OPTION_NAMES) + ")"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in _RUN_OPTION_NAMES)

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass was


#: RunOptions' fields in the order its constructor takes them
_RUN_OPTION_NAMES = ("device", "backend", "dry_run", "repeat", "capture_frames", "dump_stages", "cache_dir",
                     "robust_buffer_access", "fail_on_cache_miss", "clear_pipeline_cache", "debug_markers", "arm_log",
                     "timestamps", "iteration_counters", "strict", "progress", "guard_bands", "device_limits", "finish")


def arm_say(level: str, message: str) -> None:
    """One of Arm's runner's log lines on standard output, for the steps scripts and Arm's tests
    match on: Arm logs ``<time> [Scenario-Runner] LEVEL: message``; kernellab writes the same
    words (without the time) for the steps it shares with Arm (pipeline-cache loads and stores,
    compute dispatches) when the run asks for them (``RunOptions.arm_log``)."""
    print(f"[Scenario-Runner] {level}: {message}", file=sys.stdout, flush=True)


def arm_quiet(level: str, message: str) -> None:
    """The same steps, said nowhere."""


class PerfCounter:
    """One of Arm's perf counters (its src/perf_counter.hpp): a named host-side time (written out
    by runtime/arm_dumps.py, which a run loads only when a dump is asked for). (A plain class:
    every run imports it, and its dataclass cost more to build than the class.)"""

    __slots__ = ("category", "inference", "name", "seconds")

    def __init__(self, name: str, category: str, seconds: float, inference: bool = True):
        self.name = name
        self.category = category
        self.seconds = seconds
        #: counted in "Time to Inference" (Arm: everything up to the first submission)
        self.inference = inference

    def __repr__(self) -> str:
        return (f"PerfCounter(name={self.name!r}, category={self.category!r}, seconds={self.seconds!r}, "
                f"inference={self.inference!r})")

    @property
    def microseconds(self) -> int:
        return int(self.seconds * 1e6)


if TYPE_CHECKING:
    _TimingsBase = Sequence[list[CommandTiming]]
else:
    _TimingsBase = object  # a sequence by its methods: an ABC's subclass costs each run twice a class


class RepeatTimings(_TimingsBase):
    """Per repeat, the timings of its commands. Only repeats that have timings (profiling) hold
    anything, so ``--repeat 100000`` without profiling keeps a counter, not 100000 lists.
    (``len``, indexing, slicing, iteration, ``in`` and ``reversed`` as a sequence's.)"""

    def __init__(self) -> None:
        self._count = 0
        self._kept: dict[int, list[CommandTiming]] = {}

    def append(self, timings: list[CommandTiming]) -> None:
        if timings:
            self._kept[self._count] = timings
        self._count += 1

    def __len__(self) -> int:
        return self._count

    if TYPE_CHECKING:
        @overload
        def __getitem__(self, index: int) -> list[CommandTiming]: ...

        @overload
        def __getitem__(self, index: slice) -> list[list[CommandTiming]]: ...

    def __getitem__(self, index: int | slice) -> list[CommandTiming] | list[list[CommandTiming]]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._count))]
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError("repeat index out of range")
        return self._kept.get(index, [])

    def __iter__(self) -> Iterator[list[CommandTiming]]:
        return (self._kept.get(i, []) for i in range(self._count))

    def __repr__(self) -> str:
        return f"RepeatTimings({list(self)!r})"


class RunReport:
    """What a run did: the device, phase times, command timings and outputs. (A plain class:
    every run imports and makes one, and its dataclass cost more to build than the class.)"""

    __slots__ = ("counters", "device", "outputs", "phases_ms", "session_memory", "steps", "timestamp_period",
                 "timings", "warnings")

    def __init__(self, device: str = "", phases_ms: dict[str, float] | None = None,
                 timings: RepeatTimings | None = None, outputs: list[Path] | None = None,
                 counters: list[PerfCounter] | None = None, timestamp_period: float = 1.0,
                 session_memory: list[tuple[str, int]] | None = None,
                 steps: list[tuple[str, float, float]] | None = None, warnings: list[str] | None = None):
        self.device = device
        self.phases_ms: dict[str, float] = {} if phases_ms is None else phases_ms
        #: per repeat, the timings of the commands of each frame
        self.timings: RepeatTimings = RepeatTimings() if timings is None else timings
        self.outputs: list[Path] = [] if outputs is None else outputs
        #: Arm's perf counters (written out by runtime/arm_dumps.py), in the order they were taken
        self.counters: list[PerfCounter] = [] if counters is None else counters
        #: VkPhysicalDeviceLimits::timestampPeriod, to turn timings back into raw timestamps
        self.timestamp_period = timestamp_period
        #: (command name, bytes) of each data-graph pipeline's session memory
        self.session_memory: list[tuple[str, int]] = [] if session_memory is None else session_memory
        #: (step, start, end) in ``time.perf_counter()`` seconds of the steps a caller may show on a
        #: time line: ``load`` (resources), ``programs``, ``commands`` (once per repeat), ``save``
        self.steps: list[tuple[str, float, float]] = [] if steps is None else steps
        #: what the run noticed that does not fail it (a write past a buffer's end), one sentence each
        self.warnings: list[str] = [] if warnings is None else warnings

    def __repr__(self) -> str:
        return (f"RunReport(device={self.device!r}, phases_ms={self.phases_ms!r}, outputs={self.outputs!r}, "
                f"warnings={self.warnings!r})")

    def step(self, name: str, start: float) -> None:
        """Note that step ``name`` ran from ``start`` until now."""
        self.steps.append((name, start, time.perf_counter()))

    def count(self, name: str, category: str, start: float, inference: bool = True) -> None:
        """One of Arm's perf counters: the time since ``start`` under ``name``."""
        self.counters.append(PerfCounter(name, category, time.perf_counter() - start, inference))

    def add_phase(self, name: str, start: float) -> float:
        """Add the time since ``start`` to phase ``name``; the milliseconds added."""
        ms = (time.perf_counter() - start) * 1e3
        self.phases_ms[name] = self.phases_ms.get(name, 0.0) + ms
        return ms


def shader_request(scenario: m.Scenario, shader: m.Shader, target_env: str = "", device: str = "") -> CompileRequest:
    """The compile request of a scenario's shader: its ``build_options`` go through the door
    (:mod:`kernellab.compiler_options`) and a refusal names their place in the scenario."""
    assert shader.src_path is not None
    # a shader not among the resources is a VGF's embedded GLSL: its file is the place
    index = next((i for i, r in enumerate(scenario.resources) if r is shader), None)
    if index is not None:
        return file_shader_request(Path(scenario.file or shader.src_path), index, shader, target_env, device=device)
    return CompileRequest(source=shader.src_path, language=LANGUAGE_OF_TYPE[shader.type], entry=shader.entry,
                          build_options=shader.build_options, include_dirs=shader.include_paths,
                          target_env=target_env, device=device,
                          # a VGF's module is kernellab's own temporary file, read from its folder
                          roots=(shader.src_path.parent,), options_place=(str(shader.src_path), "build options"),
                          shader_stage=shader.stage)


def subgroup_sizing(shader: m.Shader, limits: Limits | None = None) -> SubgroupSizing | None:
    """The backend's form of the shader's ``subgroup`` (kernellab's extension, docs/scenario.md);
    a ``required_size_bound`` becomes the device's min/maxSubgroupSize from ``limits``, and
    :class:`UnsupportedError` where the device reports no range (no subgroup size control)."""
    g = shader.subgroup
    if g is None:
        return None
    size = g.required_size or 0
    if g.required_size_bound is not None:
        sizes = limits.subgroup_size_range if limits is not None else None
        if sizes is None:
            raise UnsupportedError(f"shader {shader.uid!r} asks for the device's {g.required_size_bound}imum "
                                   "subgroup size, and the device reports none (it lacks "
                                   "VK_EXT_subgroup_size_control's subgroupSizeControl)")
        size = sizes[0] if g.required_size_bound == "min" else sizes[1]
    return base.SubgroupSizing(size, g.full_subgroups, g.varying_size)


def driver_options(scenario: m.Scenario, shader: m.Shader) -> parsed_options.Options:
    """The options an OpenCL driver builds a scenario's OpenCL C shader with: its file's, through
    the door, less include folders (the driver gets the source with its includes inlined)."""
    return _rare().driver_options_of(shader_request(scenario, shader))

# --- the executor's collaborators: what a caller may change without subclassing it -----------
# (their protocols, the checker's, are in runtime/collaborators.py; these are the defaults)


class OnItsOwn:
    """A run's three default collaborators in one: initial data from the files the scenario
    names (``src``), no memory of modules between runs (each run compiles its modules; the
    compiler's artifact cache may still answer) and a backend opened for the run and closed after
    it. (One class, not three: every run makes its defaults, and each class costs its start-up
    its making, issue 23.)"""

    def fill_buffer(self, backend: Backend, r: m.Buffer, buf: Buffer, element: str) -> bool:
        if r.src_path is None:
            return False
        fh, hdr = npy.open_data(r.src_path)
        with fh:
            if backend.capabilities.mapped_buffers and not hdr.fortran_order:
                # read the file straight into the mapped device memory: no intermediate copy
                got = fh.readinto(backend.buffer_view_bytes(buf)[:hdr.nbytes])  # type: ignore[attr-defined]  # a BufferedReader
                if got != hdr.nbytes:
                    raise InputError(f"truncated .npy file: expected {hdr.nbytes} data bytes, read {got}",
                                     file=r.src_path)
                return True
        backend.write_buffer(buf, npy.load_bytes(r.src_path))
        return True

    def fill_image(self, backend: Backend, r: m.Image, image: Image) -> None:
        if r.src_path is not None:
            _images().fill_image(backend, r, image, log)

    def raw_data(self, r: m.RawData) -> bytes | None:
        return npy.read_bytes(r.src_path) if r.src_path is not None else None

    def vulkan_module(self, compiler: Compiler) -> bytes:
        return compiler.vulkan_module().data

    def lease(self, own: Callable[[], Backend], needs_own_device: bool) -> AbstractContextManager[Backend]:
        return own()

    def alloc_buffer(self, backend: Backend, size: int, uid: str) -> Buffer:
        return backend.alloc_buffer(size, uid)

    def create_program(self, backend: Backend, spec: ProgramSpec) -> Program:
        return backend.create_program(spec)


#: the defaults by the collaborator each stands for: initial data from files, each run compiling
#: its modules, a backend of the run's own
FileInputs = CompileEach = OwnBackend = OnItsOwn


class UntilExit(OnItsOwn):
    """A backend of the run's own left open for the process's end to release, for a command whose
    process ends with it (``cli.program``'s quick exit, which skips the interpreter's teardown for
    the same reason): destroying the device's pipelines, layouts, buffers and memory one call at a
    time is work (about 1.2 M instructions of a ``tiny`` run, issue 23) whose result the exit gives
    anyway. Every output is written and committed, and every submission waited for, before."""

    def lease(self, own: Callable[[], Backend], needs_own_device: bool) -> AbstractContextManager[Backend]:
        return _Open(own())


class _Open:
    """``with`` over a backend that stays open after the block."""

    __slots__ = ("backend",)

    def __init__(self, backend: Backend):
        self.backend = backend

    def __enter__(self) -> Backend:
        return self.backend

    def __exit__(self, *exc: object) -> None:
        pass


class Executor:
    """Runs one scenario. Its collaborators say where data comes from (``inputs``, default the
    scenario's files), where saved resources go (``sink`` for the resources ``saved``, besides the
    ``dst`` files unless ``write_files`` is False), which modules are remembered (``modules``) and
    whose backend it runs on (``lease``)."""

    def __init__(self, scenario: m.Scenario, options: RunOptions, *, inputs: InputSource | None = None,
                 sink: OutputSink | None = None, saved: Sequence[str] = (), write_files: bool = True,
                 modules: ModuleCache | None = None, lease: BackendLease | None = None,
                 programs: Mapping[str, ProgramSpec] | None = None):
        self.scenario = scenario
        #: the program of each shader the caller has already built (a kernel instantiation's,
        #: built to learn its parameters), by uid: the executor does not make it again
        self.given_programs: Mapping[str, ProgramSpec] = programs or {}
        self.options = options
        own = OnItsOwn()
        self.inputs: InputSource = inputs or own
        self.sink = sink
        self.saved = list(saved)
        self.write_files = write_files
        self.module_cache: ModuleCache = modules or own
        self.lease: BackendLease = lease or own
        self.report = RunReport()
        self.buffers: dict[str, Buffer] = {}
        #: uid -> (the allocation with a guard band after the buffer's bytes, guard bytes)
        self.guards: dict[str, tuple[Buffer, int]] = {}
        #: views of buffer ranges that bindings name (in-memory split dispatches)
        self._ranges: dict[tuple[str, tuple[int, int]], Buffer] = {}
        self.images: dict[str, Image] = {}
        self.programs: dict[tuple[str, tuple[BindingSlot, ...]], Program] = {}
        self.push_data: dict[str, bytes] = {}
        self.backend: Backend | None = None
        #: each dispatched shader's program, before its dispatches' slots are known
        self.specs: dict[str, ProgramSpec] = {}
        #: what each dispatched shader's entry point expects (None: the backend cannot tell)
        self.interfaces: dict[str, KernelInterface | None] = {}
        #: id of a dispatch -> (the dispatch, its slots), once its shaders are reflected
        self._known_slots: dict[int, tuple[m.Command, tuple[BindingSlot, ...]]] = {}
        self.modules: _VulkanModules | None = None
        #: uids of the images some dispatch binds as a storage image (found on first use)
        self._storage_images: set[str] | None = None
        self.pipeline_cache: PipelineCacheFile | None = None
        self.fail_on_miss = False
        self.say = arm_say if options.arm_log else arm_quiet
        #: tensors, memory groups and graphs; None when the scenario has none (nothing ML is imported)
        self.ml: Any = None
        # kinds, not classes (here and below): a run of buffers builds no tensor, graph or image class
        if any(r.kind in ("tensor", "graph") for r in scenario.resources) or \
                any(isinstance(r, m.DataResource) and r.memory_group is not None for r in scenario.resources):
            from kernellab.runtime.ml import MlResources

            self.ml = MlResources(scenario)
        #: optical-flow pipelines; None when the scenario has no dispatch_optical_flow
        self.optical_flows: Any = None
        if any(c.kind == "dispatch_optical_flow" for c in scenario.commands):
            from kernellab.runtime.optical_flow import OpticalFlows

            self.optical_flows = OpticalFlows(scenario)

    # --- setup ---------------------------------------------------------------------------------
    def open_backend(self) -> Backend:
        cls = backend_class(self.options.backend)
        draws = [i for i, c in enumerate(self.scenario.commands) if c.kind == "dispatch_fragment"]
        if draws and not cls.capabilities.graphics:
            raise InputError.at(str(self.scenario.file or ""), f"/commands/{draws[0]}/dispatch_fragment",
                                f"dispatch_fragment draws with a graphics pipeline; the {cls.capabilities.title} "
                                "backend runs compute only (use --backend vulkan)")
        device = choose_device(cls.devices(), self.options.device)
        self.report.device = device.name
        cache_data = _rare().load_pipeline_cache(self, device) if self.options.cache_dir is not None else None
        # optical flow is a data-graph pipeline: it needs VK_ARM_data_graph (and its own extension)
        ml = any(r.kind in ("tensor", "graph") for r in self.scenario.resources) or \
            self.optical_flows is not None
        # Arm fails on a miss only when a cache was loaded: a file not there yet is no miss
        self.fail_on_miss = self.options.fail_on_cache_miss and cache_data is not None
        opts = BackendOptions(robust_buffer_access=self.options.robust_buffer_access,
                              timestamps=self.options.timestamps, pipeline_cache_data=cache_data,
                              fail_on_pipeline_cache_miss=self.fail_on_miss, debug_markers=self.options.debug_markers,
                              ml=ml, graphics=bool(draws), optical_flow=self.optical_flows is not None,
                              custom_border_color=any(r.kind == "image" for r in self.scenario.resources))
        return cls(device, opts)

    def save_pipeline_cache(self, backend: Backend, counter: str) -> None:
        """Arm stores the cache twice: once the pipelines exist, and again at the end."""
        if self.pipeline_cache is None:
            return
        t = time.perf_counter()
        try:
            _rare().store_pipeline_cache(self, backend)
        finally:
            self.report.add_phase("save_pipeline_cache", t)
            self.report.count(counter, "Save Pipeline Cache", t, inference=False)

    def load_resources(self, backend: Backend) -> None:
        grouped: dict[str, Any] = {}
        if self.ml is not None:
            self.ml.check_backend(backend)
            # resources sharing memory are created together, before the others; their sources
            # are still written in resource order, so where they overlap the later one wins
            self.ml.alloc_groups(backend, self._image_spec)
            grouped = self.ml.grouped
        guarded = _guard_bands().guarded_uids(self) if self.wants_guard_bands(backend) else set()
        for r in self.scenario.resources:
            t = time.perf_counter()
            if isinstance(r, m.Buffer):
                buf = grouped.get(r.uid) or (_guard_bands().guarded_buffer(self, backend, r) if r.uid in guarded else
                                             self.lease.alloc_buffer(backend, r.size, r.uid))
                self.buffers[r.uid] = buf
                if not self.inputs.fill_buffer(backend, r, buf, self.declared_element(r.uid)) and \
                        r.uid not in grouped:
                    # device memory is not born zeroed; Arm's runner starts such buffers at zero
                    backend.clear_buffer(buf)
            elif isinstance(r, m.RawData):
                if (data := self.inputs.raw_data(r)) is not None:
                    self.push_data[r.uid] = data
            elif r.kind == "image":
                self.images[r.uid] = _images().load_image(self, backend, r, grouped.get(r.uid))
            elif r.kind == "tensor":
                self.ml.load_tensor(backend, r)
            if r.kind in ("buffer", "image", "tensor", "raw_data"):
                self.report.count(f"Load Resource: {r.uid}", "Scenario Setup", t)

    def wants_guard_bands(self, backend: Backend) -> bool:
        """Guard bands where asked for and where a write past a buffer's end reaches memory (not
        memory groups, tensor or optical-flow scenarios: their buffers share or alias memory)."""
        return self.options.guard_bands and not self.options.robust_buffer_access and \
            backend.writes_past_end_reach_memory and self.ml is None and self.optical_flows is None

    def _image_spec(self, r: m.Image) -> ImageSpec:
        return _images().spec_for(self, r)

    def check_guards(self, backend: Backend) -> None:
        """A warning for each guard band a dispatch changed (runtime/guard_bands.py)."""
        if self.guards:
            _guard_bands().check(self, backend)

    def declared_element(self, uid: str) -> str:
        """The NumPy type code of the scalars every dispatch binding buffer ``uid`` reads it as
        (known once :meth:`check` reflected the shaders); "" when unknown or when they differ."""
        codes = set()
        for c in self.scenario.commands:
            if not isinstance(c, m.DispatchCompute):
                continue
            known = self.interfaces.get(c.shader_ref)
            for b in c.bindings:
                if b.resource_ref == uid:
                    d = known.interface.descriptors.get((b.set, b.id)) if known is not None else None
                    codes.add(d.element if d is not None else "")
        return codes.pop() if len(codes) == 1 else ""

    def compiler(self, shader: m.Shader, target_env: str, cache: ArtifactCache | None) -> Compiler:
        """The compiler of ``shader``'s Vulkan module for this run's device."""
        return Compiler(shader_request(self.scenario, shader, target_env, self.report.device), cache)

    def create_programs(self, backend: Backend) -> None:
        modules = self._modules(backend, self._cache())
        for c in self.scenario.commands:
            if c.kind == "dispatch_fragment":
                _images().create_graphics_program(self, backend, c, modules)
                continue
            if not isinstance(c, m.DispatchCompute):
                continue
            shader = self.scenario.by_uid[c.shader_ref]
            assert isinstance(shader, m.Shader)
            key = (shader.uid, self._slots(c))
            if key not in self.programs:
                spec = self.specs.get(shader.uid) or self._program_spec(backend, shader, (), modules)
                t = time.perf_counter()
                try:
                    self.programs[key] = self.lease.create_program(backend, spec.replace(slots=key[1]))
                except base.PipelineCacheMiss as exc:
                    self.say("ERROR", str(exc))
                    raise
                self.report.count(f"Create Pipeline: {shader.uid}", "Pipeline Setup", t)
        if self.ml is not None or self.optical_flows is not None:
            _rare().create_ml_programs(self, backend, modules)

    def _cache(self) -> ArtifactCache | None:
        # None: the compiler keeps artifacts in the user's cache (compile/pipeline.py); Arm's
        # --cache-path folder holds the pipeline-cache file alone
        return None

    def _modules(self, backend: Backend, cache: ArtifactCache | None) -> _VulkanModules:
        if self.modules is None:
            self.modules = _VulkanModules(self, target_env_for_api(backend.device.api_version), cache)
        return self.modules

    # --- checks before anything runs --------------------------------------------------------
    def check(self, backend: Backend) -> None:
        """Every dispatch against its shader's interface and every number against the device's
        limits; all problems together as one :class:`InputError`, before any resource exists."""
        file = str(self.scenario.file or "")
        problems: list[Problem] = []
        modules = self._modules(backend, self._cache())
        local_sizes: dict[str, LocalSize] = {}
        dispatches = [(i, c) for i, c in enumerate(self.scenario.commands)
                      if isinstance(c, m.DispatchCompute)
                      or c.kind == "dispatch_fragment" and isinstance(c, m.DispatchFragment)]
        for _, c in dispatches:
            for shader in self._shaders(c):
                if shader.uid in self.specs:
                    continue
                spec = self.specs[shader.uid] = self.given_programs.get(shader.uid) or \
                    self._program_spec(backend, shader, (), modules)
                problems += self._shader_interface(backend, shader, spec, local_sizes, file)
        for i, c in dispatches:
            for shader in self._shaders(c):
                known = self.interfaces.get(shader.uid)
                if known is not None:
                    problems += check_dispatch(self.scenario, i, c, shader, known.interface, file,
                                               spec_constants=False)
        problems += _check_ranges(dispatches, backend, file)
        if self.options.device_limits:
            problems += self._limit_problems(backend, file, dispatches, local_sizes)
        for uid, known in self.interfaces.items():
            reflected = self.scenario.by_uid[uid]
            assert isinstance(reflected, m.Shader)
            if known is not None:
                # an id the module lacks is legal Vulkan (ignored), so Arm runs it: a warning unless --strict
                for p in check_spec_constants(self.scenario, reflected, known.interface, file,
                                              warning=not self.options.strict):
                    if p.warning:
                        log.warning("%s", p)
                    else:
                        problems.append(p)
        if problems:
            raise InputError(list(dict.fromkeys(problems)))  # a shader dispatched twice: its problems once
        log.info("check: %d dispatch(es) match their shaders' interfaces and the device's limits", len(dispatches))

    def _limit_problems(self, backend: Backend, file: str,
                        dispatches: Sequence[tuple[int, m.DispatchCompute | m.DispatchFragment]],
                        local_sizes: dict[str, LocalSize]) -> list[Problem]:
        return check_limits(self.scenario, backend.limits, file,
                            slots={i: self._slots(c) for i, c in dispatches}, local_sizes=local_sizes,
                            shared_memory={uid: workgroup_memory(self.scenario.by_uid[uid], known)  # type: ignore[arg-type]
                                           for uid, known in self.interfaces.items() if known is not None})

    def _shader_interface(self, backend: Backend, shader: m.Shader, spec: ProgramSpec,
                          local_sizes: dict[str, LocalSize], file: str) -> list[Problem]:
        """Reflect ``shader`` into :attr:`interfaces` and :attr:`local_sizes`; the problems found on the way."""
        index = self.scenario.resources.index(shader)
        at = ("resources", index, "shader")
        spec_values = {c.id: c.value for c in shader.specialization_constants}
        try:
            if spec.language == "spirv":
                interface, facts = reflect_module(spec.code, spec.entry, str(shader.src_path or ""), default_cache())
                if wrong := stage_problem(self.scenario, shader, facts, file):
                    return wrong
                known: KernelInterface | None = KernelInterface(interface, facts.local_arguments)
                size = facts.local_size(spec_values)  # type: ignore[arg-type]
                given_size = any(t.spec_id in spec_values for t in facts.workgroup_size or ())
            else:  # OpenCL C on OpenCL: the size is specialization ids 0-2 when given, else the driver's
                known, size, given_size = _rare().driver_interface(backend, shader, spec, spec_values)
        except base.UnknownEntryError as exc:
            return [Problem(file, json_pointer(at + ("entry",)), f"shader {shader.uid!r}: {exc}")]
        except CompileError as exc:  # the driver's build of OpenCL C: named by the shader's src
            raise placed(exc, (str(file), json_pointer(at + ("src",))), shader.src_path) from exc.__cause__
        self.interfaces[shader.uid] = known
        if size is not None:
            local_sizes[shader.uid] = LocalSize(size, at + (("specialization_constants",) if given_size else ("src",)))
        return check_local_arguments(self.scenario, shader, known.local_arguments, file) if known else []

    def _program_spec(self, backend: Backend, shader: m.Shader, slots: tuple[BindingSlot, ...],
                      modules: _VulkanModules) -> ProgramSpec:
        """The program for ``shader`` in the form the backend declares it takes: the source as is
        (OpenCL C to an OpenCL driver, issue 3) or the Vulkan SPIR-V module compiled from it."""
        language = LANGUAGE_OF_TYPE[shader.type]
        form = backend.capabilities.program_form(language)
        specialization = tuple(SpecConstant(s.id, s.value) for s in shader.specialization_constants)
        if form is None:
            raise _rare().refuse_language(self, backend, shader)
        if form == SOURCE:
            return _rare().source_program(self, shader, language, specialization, slots,
                                          shader_request(self.scenario, shader))
        code = modules.spirv(shader)
        if shader.type == "OpenCL-C":  # clspv may size a __local array in other elements than declared
            specialization = tuple(SpecConstant(i, v) for i, v in
                                   clspv_specialization(self.scenario, shader, code, modules.cache).items())
        return ProgramSpec(uid=shader.uid, code=code, language="spirv", entry=shader.entry,
                           specialization=specialization, push_constants_size=shader.push_constants_size,
                           slots=slots, subgroup=subgroup_sizing(shader, backend.limits))

    def _shaders(self, c: m.DispatchCompute | m.DispatchFragment) -> list[m.Shader]:
        """The shaders a dispatch runs: its compute shader, or a draw's vertex and fragment shaders."""
        uids = [c.shader_ref] if isinstance(c, m.DispatchCompute) else [c.vertex_shader_ref, c.fragment_shader_ref]
        shaders = [self.scenario.by_uid[uid] for uid in uids]
        assert all(isinstance(s, m.Shader) for s in shaders)
        return shaders  # type: ignore[return-value]

    def _slots(self, c: m.DispatchCompute | m.DispatchFragment) -> tuple[BindingSlot, ...]:
        """The descriptor slots of a dispatch's bindings (known once for each dispatch whose shaders
        were reflected: a run asks for them at each step of each dispatch)."""
        kept = self._known_slots.get(id(c))
        if kept is not None and kept[0] is c:
            return kept[1]
        slots = []
        declared = {}
        shaders = self._shaders(c)
        for shader in shaders:
            known = self.interfaces.get(shader.uid)
            declared.update(known.interface.descriptors if known is not None else {})
        for b in c.bindings:
            r = self.scenario.by_uid[b.resource_ref]
            if isinstance(r, m.Buffer):
                # a shader's uniform block takes the buffer as a uniform buffer (Arm binds every
                # buffer as storage, which Vulkan forbids for a uniform block)
                uniform = getattr(declared.get((b.set, b.id)), "type", "") == "UNIFORM_BUFFER"
                kind = "uniform-buffer" if uniform else "storage-buffer"
                kind = {**DYNAMIC_BUFFER_TYPES, **TEXEL_BUFFER_TYPES}.get(b.descriptor_type, kind)
                # bindings filling elements of one array of buffers make one slot of that many
                count = 1 + max(a.array_element for a in c.bindings if (a.set, a.id) == (b.set, b.id))
                if b.array_element == 0:
                    slots.append(BindingSlot(b.set, b.id, kind, count))
            elif isinstance(r, m.Image) and b.descriptor_type in _EXPLICIT_IMAGE_SLOTS:
                slots.append(BindingSlot(b.set, b.id, _EXPLICIT_IMAGE_SLOTS[b.descriptor_type]))
            elif isinstance(r, m.Image):
                sampled = r.shader_access in ("readonly", "readwrite") and \
                    b.descriptor_type != "VK_DESCRIPTOR_TYPE_STORAGE_IMAGE"
                slots.append(BindingSlot(b.set, b.id, "combined-image-sampler" if sampled else "storage-image"))
            elif isinstance(r, m.Tensor):
                slots.append(BindingSlot(b.set, b.id, "tensor"))
        found = tuple(sorted(slots))
        if all(shader.uid in self.interfaces for shader in shaders):
            self._known_slots[id(c)] = (c, found)  # the command is kept: its id stays its own
        return found

    def _bound(self, c: m.DispatchCompute | m.DispatchFragment
               ) -> dict[tuple[int, int], Buffer | ImageBinding]:
        bound: dict[tuple[int, int], Buffer | ImageBinding] = {}
        declared = self._slots(c)
        slots = {(s.set, s.id): s.descriptor for s in declared}
        counts = {(s.set, s.id): s.count for s in declared}
        arrays: dict[tuple[int, int], dict[int, Buffer]] = {}
        for b in c.bindings:
            if b.resource_ref in self.buffers:
                buf = self.buffers[b.resource_ref] if b.buffer_range is None else \
                    self._buffer_range(b.resource_ref, (b.buffer_range[0], b.buffer_range[1]))
                if b.descriptor_type in DYNAMIC_BUFFER_TYPES:
                    buf = DynamicBuffer(buf, b.dynamic_offset)
                elif b.descriptor_type in TEXEL_BUFFER_TYPES:
                    buf = TexelBuffer(buf, b.texel_format)
                if counts[(b.set, b.id)] > 1:
                    arrays.setdefault((b.set, b.id), {})[b.array_element] = buf
                    continue
                bound[(b.set, b.id)] = buf
            elif b.resource_ref in self.images:
                # a storage descriptor sees one level: the lod asked for, else level 0
                lod = b.lod if b.lod is not None or slots[(b.set, b.id)] != "storage-image" else 0
                bound[(b.set, b.id)] = ImageBinding(self.images[b.resource_ref], lod)
            elif self.ml is not None and b.resource_ref in self.ml.tensors:
                bound[(b.set, b.id)] = self.ml.tensors[b.resource_ref]
        for key, elements in arrays.items():
            bound[key] = BufferArray(tuple(elements[i] for i in sorted(elements)))
        return bound

    def _buffer_range(self, uid: str, rng: tuple[int, int]) -> Buffer:
        """The view of a binding's range of a buffer, made once per run (it lives as long as the buffer)."""
        key = (uid, rng)
        view = self._ranges.get(key)
        if view is None:
            assert self.backend is not None
            view = self._ranges[key] = self.backend.sub_buffer(self.buffers[uid], rng[0], rng[1])
        return view

    def free_buffers(self) -> None:
        """Release this run's buffers and their views on the backend it ran on, for a caller that
        lent a backend it keeps for many runs and whose lease made the buffers for this run alone
        (a PySchedCL sweep): views first, then the buffers."""
        _rare().free_buffers(self)

    # --- run -----------------------------------------------------------------------------------
    def run_commands(self, backend: Backend, outputs: OutputSet, capture: bool) -> list[CommandTiming]:
        """Record the scenario's commands in order, submitting at each frame boundary and at the
        end; the timings of every submission."""
        timings: list[CommandTiming] = []
        frame = 0
        for index, c in enumerate(self.scenario.commands):
            if isinstance(c, m.MarkBoundary):
                timings += self._mark_boundary(backend, outputs, capture, c, frame)
                frame += 1
            else:
                self._record(backend, index, c)
        timings += backend.submit()
        return timings

    def _record(self, backend: Backend, index: int, c: m.Command) -> None:
        """One command other than a frame boundary, recorded on the backend (the reader accepts
        no other kind)."""
        if isinstance(c, m.DispatchCompute):
            self._dispatch_compute(backend, index, c)
        elif c.kind == "dispatch_fragment":
            _images().dispatch_fragment(self, backend, index, c)
        elif c.kind == "dispatch_barrier" and isinstance(c, m.DispatchBarrier):
            self._dispatch_barrier(backend, index, c)
        else:
            _rare().record_graph(self, backend, index, c)

    def _implicit_barrier(self, backend: Backend, index: int,
                          c: m.DispatchCompute | m.DispatchOpticalFlow | m.DispatchGraph | m.DispatchDataGraph) -> None:
        """The memory barrier a dispatch asks for after itself."""
        if c.implicit_barrier:
            backend.barrier(memory=True, label=f"{index}:implicit_barrier")

    def _dispatch_compute(self, backend: Backend, index: int, c: m.DispatchCompute) -> None:
        shader = self.scenario.by_uid[c.shader_ref]
        assert isinstance(shader, m.Shader)
        program = self.programs[(shader.uid, self._slots(c))]
        self.say("INFO", "Dispatch compute")
        backend.dispatch(program, c.workgroups, self._bound(c), self.push_data.get(c.push_data_ref, b""),
                         label=f"{index}:dispatch_compute:{shader.uid}", offset=c.global_offset or (),
                         global_size=c.global_size)
        self._implicit_barrier(backend, index, c)

    def _dispatch_barrier(self, backend: Backend, index: int, c: m.DispatchBarrier) -> None:
        """A barrier command: its buffer ranges and memory in one barrier, then its tensors', then
        one layout transition per image barrier."""
        ranges = []
        for uid in c.buffer_barrier_refs:
            bb = self.scenario.by_uid[uid]
            assert isinstance(bb, m.BufferBarrier)
            ranges.append((self.buffers[bb.buffer_resource], bb.offset, bb.size))
        if ranges or c.memory_barrier_refs:
            backend.barrier(ranges, memory=bool(c.memory_barrier_refs), label=f"{index}:dispatch_barrier")
        if c.tensor_barrier_refs:
            self.ml.tensor_barriers(backend, c.tensor_barrier_refs)
        if c.image_barrier_refs:
            _images().image_barriers(self, backend, index, c)

    def _mark_boundary(self, backend: Backend, outputs: OutputSet, capture: bool, c: m.MarkBoundary,
                       frame: int) -> list[CommandTiming]:
        """The end of a frame: submit what was recorded, then save the resources it names when
        frames are captured (``frame``: the boundaries before this one, when it has no frame id)."""
        timings = backend.submit()
        if capture and self.options.capture_frames is not None:
            n = c.frame_id if c.frame_id is not None else frame
            for uid in c.resources:
                self._save(backend, outputs, uid, self.options.capture_frames / f"{escaped_name(uid)}.frame{n}.npy")
        return timings

    def save_outputs(self, backend: Backend, outputs: OutputSet) -> None:
        for r in self.scenario.resources:
            if isinstance(r, m.DataResource) and r.dst_path is not None:  # a buffer, an image or a tensor
                try:
                    self._save(backend, outputs, r.uid, r.dst_path)
                except OSError as exc:  # a full disk fails the write or the close: name the file
                    raise FileSystemError.from_os(exc, exc.filename or r.dst_path) from None

    def _save(self, backend: Backend, outputs: OutputSink, uid: str, path: Path) -> None:
        """Write a resource as Arm's runner does: a buffer as a 1-D int8 array of its raw bytes,
        an image's level 0 as DDS or [1, H, W, C] .npy by the file's extension."""
        if uid in self.buffers:
            data = backend.read_buffer_bytes(self.buffers[uid])
            with outputs.open(path) as fh:
                npy_arm.write(fh, data, *npy_arm.buffer_bytes(data))
            return
        if self.ml is not None and uid in self.ml.tensors:
            r = self.scenario.by_uid[uid]
            assert isinstance(r, m.Tensor)
            self.ml.save_tensor(backend, outputs, r, path)
            return
        r = self.scenario.by_uid[uid]
        assert isinstance(r, m.Image)
        _images().save_image(backend, outputs.open, r, self.images[uid], path)

    def run(self) -> RunReport:
        opts = self.options
        t = time.perf_counter()
        # tensors, graphs and optical flow need a device with extensions only a run of their own enables
        own_device = self.ml is not None or self.optical_flows is not None
        with self.lease.lease(self.open_backend, own_device) as backend:
            self.report.step("open", t)  # a session's device opens on its first workload
            self.report.device = backend.device.name
            self.backend = backend
            if own_device:
                _rare().check_ml_backend(self, backend)
            ms = self.report.add_phase("setup", t)
            log.info("setup: opened %s on the %s backend (%.1f ms)", self.report.device, backend.name, ms)
            # compiled and checked before any resource exists: a bad number must not reach the driver
            t = time.perf_counter()
            # the shaders are compiled (or found in the caches) and checked here, before any resource
            self.check(backend)
            self.report.step("compile", t)
            ms = self.report.add_phase("pipeline_creation", t)
            t = time.perf_counter()
            self.load_resources(backend)
            self.report.step("load", t)
            ms_load = self.report.add_phase("setup", t)
            log.info("setup: %d buffers and %d images created and filled (%.1f ms)", len(self.buffers),
                     len(self.images), ms_load)
            t = time.perf_counter()
            self.create_programs(backend)
            self.report.step("programs", t)
            ms += self.report.add_phase("pipeline_creation", t)
            log.info("pipeline creation: %d programs from %d shaders (%.1f ms)", len(self.programs), len(self.specs),
                     ms)
            self.report.timestamp_period = float(getattr(backend, "timestamp_period", 1.0))
            self.save_pipeline_cache(backend, "Save Pipeline Cache (setup)")
            # dst folders below the output folder are reached without following a symlink swapped in since
            with OutputSet(self.scenario.output_dir) as outputs:
                if not opts.dry_run:
                    self._run_repeats(backend, outputs)
                    self.check_guards(backend)
                    t = time.perf_counter()
                    if self.sink is not None:
                        for uid in self.saved:
                            self._save(backend, self.sink, uid, Path(f"{uid}.npy"))
                    if self.write_files:
                        self.save_outputs(backend, outputs)
                    self.report.step("save", t)
                    ms = self.report.add_phase("save", t)
                    self.report.count("Save Resources", "Save Results", t, inference=False)
                    log.info("save: %d outputs written (%.1f ms)", len(outputs.paths), ms)
                else:
                    log.info("dry run: nothing executed")
                self.save_pipeline_cache(backend, "Save Pipeline Cache")
                if opts.finish is not None:
                    opts.finish(self.report, outputs)
                # every dst file and every dump together, or none of them
                self.report.outputs = outputs.commit()
                folders: dict[Path, list[str]] = {}
                for path in self.report.outputs:
                    folders.setdefault(path.parent, []).append(path.name)
                for folder, names in folders.items():
                    log.info("outputs: %s in %s", ", ".join(names), folder)
        return self.report

    def _run_repeats(self, backend: Backend, outputs: OutputSet) -> None:
        opts = self.options
        t = time.perf_counter()
        for rep in range(opts.repeat):
            t_rep = time.perf_counter()
            # frames are captured on the last repeat only, so files hold the final state
            self.report.timings.append(self.run_commands(backend, outputs, capture=rep == opts.repeat - 1))
            self.report.step("commands", t_rep)
            if opts.iteration_counters:
                self.report.count(f"Submit Commands. Iteration: {rep + 1}", "Run Scenario", t_rep, inference=False)
            if opts.progress:
                opts.progress(rep + 1, opts.repeat)
        ms = self.report.add_phase("run", t)
        log.info("run: %d commands x %d repeats (%.1f ms)", len(self.scenario.commands), opts.repeat, ms)


def _check_ranges(dispatches: Sequence[tuple[int, m.Command]], backend: Backend, file: str) -> list[Problem]:
    """A dispatch's global offset: as many dimensions as its range, on a backend that takes one;
    dynamic and texel buffer descriptors and descriptor arrays only on a backend that has them."""
    problems = []
    for i, c in dispatches:
        for j, b in enumerate(getattr(c, "bindings", ())):
            if (b.descriptor_type.endswith("_BUFFER_DYNAMIC") or b.descriptor_type.endswith("_TEXEL_BUFFER")
                    or b.array_element) and not backend.capabilities.buffer_descriptors:
                problems.append(Problem(file, json_pointer(("commands", i, c.kind, "bindings", j)),
                                        f"the {backend.capabilities.title} backend binds buffers one to a "
                                        "binding, whole or a range: dynamic and texel buffer descriptors and "
                                        "arrays of descriptors are the Vulkan backend's"))
        if not isinstance(c, m.DispatchCompute) or c.global_offset is None:
            continue
        at = json_pointer(("commands", i, c.kind, "global_offset"))
        dims = len(c.global_size or c.rangeND)
        if len(c.global_offset) != dims:
            problems.append(Problem(file, at, f"has {len(c.global_offset)} dimension(s) and the dispatch's range "
                                              f"{dims}: give one offset per dimension"))
        elif any(c.global_offset) and not backend.capabilities.work_items:
            problems.append(Problem(file, at, f"the {backend.capabilities.title} backend dispatches whole "
                                              "work-groups from global id 0 and takes no global offset (a "
                                              "kernellab extension for OpenCL C: run it with --backend opencl)"))
    return problems


class _VulkanModules:
    """The SPIR-V module of each shader, compiled once per run (GL_ARM_tensors GLSL by Arm's glslc)."""

    def __init__(self, executor: Executor, target_env: str, cache: ArtifactCache | None):
        self.executor = executor
        self.target_env = target_env
        self.cache = cache
        self.modules: dict[str, bytes] = {}

    def spirv(self, shader: m.Shader) -> bytes:
        if shader.uid not in self.modules:
            ex = self.executor
            code = None
            if ex.ml is not None:
                from kernellab.runtime.ml import tensor_shader_spirv

                code = tensor_shader_spirv(shader, self.target_env)
            if code is None:
                compiler = ex.compiler(shader, self.target_env, self.cache)
                if ex.options.dump_stages is not None:  # every stage of this compile, so no memory
                    code = compiler.vulkan_module().data
                    dump_stages(compiler, ex.options.dump_stages, shader.uid)
                else:
                    code = ex.module_cache.vulkan_module(compiler)
            self.modules[shader.uid] = code
        return self.modules[shader.uid]


#: the descriptor kind of an image binding that names its descriptor type (kernellab's extension)
_EXPLICIT_IMAGE_SLOTS = {"VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE": "sampled-image", "VK_DESCRIPTOR_TYPE_SAMPLER": "sampler",
                         "VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER": "combined-image-sampler"}


def image_extent(r: m.Image) -> tuple[int, int]:
    """(width, height): Arm writes image dims as [1, width, height, 1]; [width, height] is also read."""
    return _images().image_extent(r)


def _rare() -> Any:
    """The steps a run of buffers and SPIR-V compute shaders never takes (runtime/rare_steps.py)."""
    from kernellab.runtime import rare_steps

    return rare_steps


def _guard_bands() -> Any:
    """The guard-band code (runtime/guard_bands.py): loaded when a run asks for guard bands."""
    from kernellab.runtime import guard_bands

    return guard_bands


def _images() -> Any:
    """The image and draw code (runtime/images.py): loaded on a run's first image or draw, so a run
    of buffers builds no image class and imports no image format."""
    from kernellab.runtime import images

    return images


def execute(scenario: m.Scenario, options: RunOptions, lease: BackendLease | None = None) -> RunReport:
    return Executor(scenario, options, lease=lease).run()


__all__ = ["Executor", "RunOptions", "RunReport", "execute", "KernellabError"]
