"""Runs a scenario on a backend: resources -> commands -> outputs.

Nothing here knows which file format the workload came from, nor which backend runs it; the
phases (setup, pipeline creation, run, save) are timed for ``--perf-counters-dump-path``.
"""
from __future__ import annotations

import logging
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from kernellab import model as m
from kernellab.backends.base import (Backend, BackendOptions, BindingSlot, Buffer, CommandTiming, Program,
                                     ProgramSpec, SpecConstant, backend_class, choose_device)
from kernellab.compile.cache import ArtifactCache
from kernellab.compile.pipeline import Compiler, CompileRequest, dump_stages
from kernellab.errors import InputError, KernellabError, UsageError
from kernellab.formats import npy
from kernellab.outputs import OutputSet

log = logging.getLogger("kernellab.run")

LANGUAGE_OF_TYPE = {"GLSL": "glsl", "SPIR-V": "spirv", "OpenCL-C": "opencl-c"}


@dataclass
class RunOptions:
    device: str | None = None
    backend: str = "vulkan"
    dry_run: bool = False
    repeat: int = 1
    capture_frames: Path | None = None
    dump_stages: Path | None = None
    #: content-addressed artifact + pipeline cache (``--pipeline-caching``); None = no cache
    cache_dir: Path | None = None
    robust_buffer_access: bool = False
    fail_on_cache_miss: bool = False
    timestamps: bool = False
    #: called after each repeat with (done, total) for a progress bar
    progress: Callable[[int, int], None] | None = None


@dataclass
class RunReport:
    device: str = ""
    phases_ms: dict[str, float] = field(default_factory=dict)
    #: per repeat, the timings of the commands of each frame
    timings: list[list[CommandTiming]] = field(default_factory=list)
    outputs: list[Path] = field(default_factory=list)

    def add_phase(self, name: str, start: float) -> None:
        self.phases_ms[name] = self.phases_ms.get(name, 0.0) + (time.perf_counter() - start) * 1e3


def _target_env(api_version: str) -> str:
    try:
        major, minor = (int(x) for x in api_version.split(".")[:2])
    except ValueError:
        return "vulkan1.2"
    return f"vulkan1.{min(minor, 3)}" if major == 1 else "vulkan1.3"


class Executor:
    def __init__(self, scenario: m.Scenario, options: RunOptions):
        self.scenario = scenario
        self.options = options
        self.report = RunReport()
        self.buffers: dict[str, Buffer] = {}
        self.programs: dict[tuple[str, tuple[BindingSlot, ...]], Program] = {}
        self.push_data: dict[str, bytes] = {}
        self.backend: Backend | None = None

    # --- setup ---------------------------------------------------------------------------------
    def _unsupported(self) -> None:
        """Images, tensors and graphs parse and validate, but this runner executes buffers only."""
        for r in self.scenario.resources:
            if isinstance(r, (m.Image, m.Tensor, m.Graph)):
                raise InputError.at(self.scenario.file or "", "/resources",
                                    f"{r.kind} \"{r.uid}\": {r.kind}s are validated but not yet executed by "
                                    f"kernellab's runner; run `kernellab validate` to check the file")

    def open_backend(self) -> Backend:
        cls = backend_class(self.options.backend)
        device = choose_device(cls.devices(), self.options.device)
        self.report.device = device.name
        pipeline_cache = None
        if self.options.cache_dir is not None:
            import hashlib
            ident = hashlib.sha256(f"{device.name}|{device.driver}|{device.api_version}".encode()).hexdigest()[:16]
            pipeline_cache = str(ArtifactCache(self.options.cache_dir).pipeline_cache_file(ident))
        opts = BackendOptions(robust_buffer_access=self.options.robust_buffer_access,
                              timestamps=self.options.timestamps, pipeline_cache_file=pipeline_cache)
        return cls(device, opts)

    def load_resources(self, backend: Backend) -> None:
        for r in self.scenario.resources:
            if isinstance(r, m.Buffer):
                buf = backend.alloc_buffer(r.size, r.uid)
                self.buffers[r.uid] = buf
                if r.src_path is not None:
                    self._fill(backend, buf, r.src_path)
            elif isinstance(r, m.RawData) and r.src_path is not None:
                self.push_data[r.uid] = bytes(npy.load_bytes(r.src_path))

    @staticmethod
    def _fill(backend: Backend, buf: Buffer, path: Path) -> None:
        hdr = npy.read_header(path)
        view = getattr(backend, "buffer_view", None)
        if view is not None and not hdr.fortran_order:
            # read the file straight into the mapped device memory: no intermediate copy
            target = memoryview(view(buf))[:hdr.nbytes]
            with open(path, "rb") as fh:
                fh.seek(hdr.data_offset)
                got = fh.readinto(target)
            if got != hdr.nbytes:
                raise InputError(f"truncated .npy file: expected {hdr.nbytes} data bytes, read {got}", file=path)
        else:
            backend.write_buffer(buf, npy.load_bytes(path))

    def _compiler(self, shader: m.Shader, target_env: str, cache: ArtifactCache | None) -> Compiler:
        assert shader.src_path is not None
        req = CompileRequest(source=shader.src_path, language=LANGUAGE_OF_TYPE[shader.type], entry=shader.entry,
                             build_options=shader.build_options, include_dirs=shader.include_paths,
                             target_env=target_env, device=self.report.device)
        return Compiler(req, cache)

    def create_programs(self, backend: Backend) -> None:
        cache = ArtifactCache(self.options.cache_dir) if self.options.cache_dir is not None else None
        pipeline_cache = backend.options.pipeline_cache_file
        if self.options.fail_on_cache_miss:
            if cache is None:
                raise UsageError("--fail-on-pipeline-cache-miss needs --pipeline-caching")
            if pipeline_cache and not Path(pipeline_cache).is_file():
                raise KernellabError(f"pipeline cache miss: no pipeline cache for this device at {pipeline_cache}")
        target_env = _target_env(backend.device.api_version)
        modules: dict[str, bytes] = {}
        for c in self.scenario.commands:
            if not isinstance(c, m.DispatchCompute):
                continue
            shader = self.scenario.by_uid[c.shader_ref]
            assert isinstance(shader, m.Shader)
            if shader.uid not in modules:
                compiler = self._compiler(shader, target_env, cache)
                modules[shader.uid] = compiler.vulkan_module().data
                if self.options.dump_stages is not None:
                    dump_stages(compiler, self.options.dump_stages, shader.uid)
            slots = self._slots(c)
            key = (shader.uid, slots)
            if key not in self.programs:
                spec = ProgramSpec(uid=shader.uid, code=modules[shader.uid], language="spirv", entry=shader.entry,
                                   specialization=tuple(SpecConstant(s.id, s.value)
                                                        for s in shader.specialization_constants),
                                   push_constants_size=shader.push_constants_size, slots=slots,
                                   build_options=shader.build_options)
                self.programs[key] = backend.create_program(spec)
        if self.options.fail_on_cache_miss and cache is not None and cache.misses:
            raise KernellabError(f"pipeline cache miss: {len(cache.misses)} compiled artifacts were not in "
                                 f"{self.options.cache_dir} (first: {cache.misses[0]})")

    def _slots(self, c: m.DispatchCompute) -> tuple[BindingSlot, ...]:
        return tuple(sorted(BindingSlot(b.set, b.id, "storage-buffer") for b in c.bindings
                            if isinstance(self.scenario.by_uid[b.resource_ref], m.Buffer)))

    # --- run -----------------------------------------------------------------------------------
    def run_commands(self, backend: Backend, outputs: OutputSet, capture: bool) -> list[CommandTiming]:
        timings: list[CommandTiming] = []
        frame = 0
        for index, c in enumerate(self.scenario.commands):
            if isinstance(c, m.DispatchCompute):
                shader = self.scenario.by_uid[c.shader_ref]
                assert isinstance(shader, m.Shader)
                program = self.programs[(shader.uid, self._slots(c))]
                bound = {(b.set, b.id): self.buffers[b.resource_ref] for b in c.bindings
                         if b.resource_ref in self.buffers}
                backend.dispatch(program, c.workgroups, bound, self.push_data.get(c.push_data_ref, b""),
                                 label=f"{index}:dispatch_compute:{shader.uid}")
                if c.implicit_barrier:
                    backend.barrier(memory=True, label=f"{index}:implicit_barrier")
            elif isinstance(c, m.DispatchBarrier):
                ranges = []
                for uid in c.buffer_barrier_refs:
                    bb = self.scenario.by_uid[uid]
                    assert isinstance(bb, m.BufferBarrier)
                    ranges.append((self.buffers[bb.buffer_resource], bb.offset, bb.size))
                backend.barrier(ranges, memory=bool(c.memory_barrier_refs), label=f"{index}:dispatch_barrier")
            elif isinstance(c, m.MarkBoundary):
                timings += backend.submit()
                if capture and self.options.capture_frames is not None:
                    n = c.frame_id if c.frame_id is not None else frame
                    for uid in c.resources:
                        outputs.npy(self.options.capture_frames / f"{uid}.frame{n}.npy",
                                    backend.read_buffer(self.buffers[uid]).view(np.int8))
                frame += 1
            elif isinstance(c, m.DispatchGraph):
                raise InputError.at(self.scenario.file or "", f"/commands/{index}",
                                    "dispatch_graph is validated but not yet executed by kernellab's runner")
        timings += backend.submit()
        return timings

    def save_outputs(self, backend: Backend, outputs: OutputSet) -> None:
        for r in self.scenario.resources:
            if isinstance(r, m.Buffer) and r.dst_path is not None:
                # Arm's runner writes a buffer as a 1-D int8 array of its raw bytes
                outputs.npy(r.dst_path, backend.read_buffer(self.buffers[r.uid]).view(np.int8))

    def run(self) -> RunReport:
        self._unsupported()
        opts = self.options
        with ExitStack() as stack:
            t = time.perf_counter()
            backend = stack.enter_context(self.open_backend())
            self.backend = backend
            self.load_resources(backend)
            self.report.add_phase("setup", t)
            t = time.perf_counter()
            self.create_programs(backend)
            self.report.add_phase("pipeline_creation", t)
            if opts.dry_run:
                return self.report
            outputs = stack.enter_context(OutputSet())
            t = time.perf_counter()
            for rep in range(opts.repeat):
                # frames are captured on the last repeat only, so files hold the final state
                self.report.timings.append(self.run_commands(backend, outputs, capture=rep == opts.repeat - 1))
                if opts.progress:
                    opts.progress(rep + 1, opts.repeat)
            self.report.add_phase("run", t)
            t = time.perf_counter()
            self.save_outputs(backend, outputs)
            self.report.outputs = outputs.commit()
            self.report.add_phase("save", t)
        return self.report


def execute(scenario: m.Scenario, options: RunOptions) -> RunReport:
    return Executor(scenario, options).run()


__all__ = ["Executor", "RunOptions", "RunReport", "execute", "KernellabError", "Any"]
