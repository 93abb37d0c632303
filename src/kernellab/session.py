"""The Python API: a :class:`Session` holds one open device and runs many workloads on it.

    import numpy as np, kernellab
    with kernellab.Session(device="llvmpipe") as session:
        out = session.run("examples/vector_add/scenario.json",
                          inputs={"a": np.arange(1000, dtype=np.float32)})
        c = out["c"].view(np.float32)

``run`` takes and returns NumPy arrays; each output is exactly what ``np.load`` would give for
the ``dst`` file ``kernellab run`` writes (a buffer: its raw bytes as int8; an image: [1, H, W, C]
of its format's type; a tensor: its dims), so ``.view(dtype)`` says what a buffer holds.

What a session keeps between workloads, and why it is safe: the device; compiled SPIR-V keyed by
the shader's text and options (headers it includes are read once per session); pipelines keyed
by their complete description; device buffers, handed to a later workload of the same size only
after zeroing. Workloads with tensors or graphs get a device of their own (the ML extensions are
enabled per device). After an error, or every ``recycle_after`` workloads, the device is closed
and opened afresh so nothing a workload left behind can leak into the next.
"""
from __future__ import annotations

import io
import logging
import os
import time
from collections import defaultdict
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union
from collections.abc import Iterable, Mapping

import numpy as np

if TYPE_CHECKING:
    from kernellab import model as m
    from kernellab.backends.base import Backend, Buffer, CommandTiming, Program, ProgramSpec

log = logging.getLogger("kernellab.session")

#: a workload: a scenario file, or a scenario already loaded with kernellab.formats.scenario
Workload = Union[str, Path, "m.Scenario"]


@dataclass(frozen=True)
class Phase:
    """A host phase of one workload, in ``time.perf_counter()`` seconds."""

    name: str
    start: float
    end: float


@dataclass
class WorkloadRun:
    """Everything one run measured: outputs, host phases, and GPU time per command (if asked)."""

    outputs: dict[str, np.ndarray]
    device: str
    phases: list[Phase] = field(default_factory=list)
    #: per submit, the commands' GPU timings (nanoseconds on the device clock)
    gpu_timings: list[list[CommandTiming]] = field(default_factory=list)


class _SharedBackend:
    """The session's backend as one workload sees it: closing is a no-op, pipelines are reused,
    buffers go back to a pool when the workload ends."""

    def __init__(self, backend: Backend):
        self._backend = backend
        self._free: dict[int, list[Buffer]] = defaultdict(list)
        self._lent: list[Buffer] = []
        self._programs: dict[ProgramSpec, Program] = {}
        self.pooled_bytes = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)

    def __enter__(self) -> _SharedBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def alloc_buffer(self, size: int, uid: str = "") -> Buffer:
        free = self._free.get(size)
        if free:
            buf = free.pop()
            self.pooled_bytes -= size
            buf.uid = uid
            self._backend.clear_buffer(buf)  # a workload never sees another's data
        else:
            buf = self._backend.alloc_buffer(size, uid)
        self._lent.append(buf)
        return buf

    def create_program(self, spec: ProgramSpec) -> Program:
        program = self._programs.get(spec)
        if program is None:
            program = self._programs[spec] = self._backend.create_program(spec)
        return program

    def workload_done(self) -> None:
        for buf in self._lent:
            self._free[buf.size].append(buf)
            self.pooled_bytes += buf.size
        self._lent.clear()


class _MemoryOutputs:
    """Stands in for :class:`kernellab.outputs.OutputSet`: 'files' are kept as bytes."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}

    def open(self, path: str | Path) -> Any:
        outputs = self

        class _File(io.BytesIO):
            def close(self) -> None:
                outputs.files[str(path)] = self.getvalue()
                super().close()

        return _File()

    def npy(self, path: str | Path, array: np.ndarray) -> None:
        buf = io.BytesIO()
        np.save(buf, array)
        self.files[str(path)] = buf.getvalue()

    def bytes(self, path: str | Path, data: bytes | memoryview) -> None:
        self.files[str(path)] = bytes(data)


class Session:
    """One device, opened once, for many workloads. Use as a context manager or call :meth:`close`.

    ``device`` is an index or a name substring as for ``kernellab run --device``; ``backend`` is
    ``"vulkan"`` or ``"opencl"``; ``timestamps`` records each command's GPU time.
    """

    def __init__(self, device: str | int | None = None, *, backend: str = "vulkan", timestamps: bool = False,
                 robust_buffer_access: bool = False, strict: bool = False, cache_dir: str | Path | None = None,
                 recycle_after: int = 1000):
        from kernellab.backends.base import choose_device
        from kernellab.backends.registry import backend_class

        self.backend_name = backend
        self.wanted_device = None if device is None else str(device)
        self.timestamps = timestamps
        self.robust_buffer_access = robust_buffer_access
        self.strict = strict
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.recycle_after = recycle_after
        cls = backend_class(backend)
        self.device_info = choose_device(cls.devices(), self.wanted_device)
        self._shared: _SharedBackend | None = None
        self._runs_on_device = 0
        self._spirv: dict[tuple[Any, ...], bytes] = {}
        self._scenarios: dict[tuple[Any, ...], tuple[m.Scenario, list[Any]]] = {}
        self._closed = False
        self._open()

    @property
    def device(self) -> str:
        """The name of the device the session runs on."""
        return self.device_info.name

    # --- device lifetime ---------------------------------------------------------------------
    def _options(self, **extra: Any) -> Any:
        from kernellab.runtime.executor import RunOptions

        return RunOptions(device=str(self.device_info.index), backend=self.backend_name,
                          robust_buffer_access=self.robust_buffer_access, timestamps=self.timestamps,
                          cache_dir=self.cache_dir, **extra)

    def _open(self) -> None:
        from kernellab.backends.base import BackendOptions
        from kernellab.backends.registry import backend_class

        opts = BackendOptions(robust_buffer_access=self.robust_buffer_access, timestamps=self.timestamps)
        self._shared = _SharedBackend(backend_class(self.backend_name)(self.device_info, opts))
        self._runs_on_device = 0

    def _drop_device(self) -> None:
        if self._shared is not None:
            shared, self._shared = self._shared, None
            shared._backend.close()

    def _backend(self) -> _SharedBackend:
        if self._closed:
            raise RuntimeError("the session is closed")
        if self._shared is None or self._runs_on_device >= self.recycle_after or \
                self._shared.pooled_bytes > 512 << 20:
            self._drop_device()
            self._open()
        assert self._shared is not None
        return self._shared

    def close(self) -> None:
        if not self._closed:
            self._drop_device()
            self._closed = True

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: the driver may be gone already
            pass

    # --- workloads -----------------------------------------------------------------------------
    def load(self, path: str | Path, output_dir: str | Path | None = None, *, check_files: bool = True) -> m.Scenario:
        """A scenario file, parsed once per version of the file."""
        from kernellab.formats.scenario import load_scenario

        path = Path(path)
        try:
            st = path.stat()
            key: tuple[Any, ...] = (str(path.resolve()), st.st_mtime_ns, st.st_size, str(output_dir), check_files)
        except OSError:
            key = ()
        hit = self._scenarios.get(key) if key else None
        if hit is None:
            hit = load_scenario(path, output_dir, strict=self.strict, check_files=check_files)
            for w in hit[1]:
                log.warning("%s", w)
            if key:
                if len(self._scenarios) > 4096:
                    self._scenarios.clear()
                self._scenarios[key] = hit
        return hit[0]

    def run(self, workload: Workload, inputs: Mapping[str, Any] | None = None, *,
            outputs: Iterable[str] | None = None, output_dir: str | Path | None = None,
            write_files: bool = False) -> dict[str, np.ndarray]:
        """Run ``workload`` and return its outputs by uid.

        ``inputs`` replaces the ``src`` of buffers, raw data (push constants) and images with arrays
        (their bytes are used as they are). ``outputs`` names the resources to read back (default:
        those with a ``dst``). With ``write_files`` the ``dst`` files are written too, as by
        ``kernellab run`` (relative paths under ``output_dir``, default the workload's folder).
        """
        return self.run_workload(workload, inputs, outputs=outputs, output_dir=output_dir,
                                 write_files=write_files).outputs

    def run_workload(self, workload: Workload, inputs: Mapping[str, Any] | None = None, *,
                     outputs: Iterable[str] | None = None, output_dir: str | Path | None = None,
                     write_files: bool = False) -> WorkloadRun:
        """Like :meth:`run`, with the host phases and GPU timings of the run."""
        t0 = time.perf_counter()
        if isinstance(workload, (str, Path)):
            scenario = self.load(workload, output_dir, check_files=not inputs)
        else:
            scenario = workload
        wanted = list(outputs) if outputs is not None else None
        executor = _session_executor()(scenario, self._options(), self, dict(inputs or {}), wanted, write_files)
        # making the executor (the first time: importing it) is part of getting the workload ready
        parse = Phase("parse", t0, time.perf_counter())
        try:
            executor.run()
        except BaseException:
            # the device may hold a half-recorded frame: the next workload gets a fresh one
            self._drop_device()
            raise
        finally:
            if self._shared is not None:
                self._shared.workload_done()
        self._runs_on_device += 1
        return WorkloadRun(executor.arrays, executor.report.device, [parse, *executor.phases],
                           executor.report.timings)

    def spirv(self, key: tuple[Any, ...], build: Any) -> bytes:
        code = self._spirv.get(key)
        if code is None:
            code = self._spirv[key] = build()
        return code


class _MemoCompiler:
    """A Compiler whose Vulkan module is remembered by the session (same text, same options)."""

    def __init__(self, compiler: Any, session: Session):
        self._compiler = compiler
        self._session = session

    def __getattr__(self, name: str) -> Any:
        return getattr(self._compiler, name)

    def vulkan_module(self) -> Any:
        from kernellab.compile.pipeline import Artifact

        req = self._compiler.request
        try:
            text = Path(req.source).read_bytes()
        except OSError:
            return self._compiler.vulkan_module()  # let the compiler report it
        key = (os.path.normpath(req.source), text, req.language, req.entry, req.build_options,
               tuple(map(str, req.include_dirs)),
               req.target_env)
        data = self._session.spirv(key, lambda: self._compiler.vulkan_module().data)
        return Artifact("spirv", data, "")


_EXECUTOR_CLASS: list[type] = []


def _session_executor() -> type:
    """The executor subclass, made on first use so importing this module does not import Vulkan."""
    if not _EXECUTOR_CLASS:
        _EXECUTOR_CLASS.append(_make_session_executor())
    return _EXECUTOR_CLASS[0]


def _make_session_executor() -> type:
    # long only because it holds a class body (each method is short): defining the class here keeps
    # `import kernellab` from importing the executor, numpy and Vulkan
    from kernellab.runtime.executor import Executor

    class SessionExecutor(Executor):  # type: ignore[misc, valid-type]
        """The executor on a session's device, with arrays in and out instead of files."""

        def __init__(self, scenario: m.Scenario, options: Any, session: Session, inputs: dict[str, Any],
                     wanted: list[str] | None, write_files: bool):
            super().__init__(scenario, options)
            self.session = session
            self.inputs = inputs
            self.wanted = wanted
            self.write_files = write_files
            self.arrays: dict[str, np.ndarray] = {}
            self.phases: list[Phase] = []
            unknown = sorted(set(inputs) - set(scenario.by_uid))
            if unknown:
                from kernellab.errors import UsageError
                raise UsageError(f"inputs name no resource of the workload: {', '.join(unknown)}")

        def _timed(self, name: str) -> Any:
            phases = self.phases

            class _Timer:
                def __enter__(self) -> None:
                    self.start = time.perf_counter()

                def __exit__(self, *exc: object) -> None:
                    phases.append(Phase(name, self.start, time.perf_counter()))
            return _Timer()

        def open_backend(self) -> Any:
            if self.ml is not None:
                return super().open_backend()  # tensors/graphs: a device with the ML extensions
            with self._timed("setup"):  # the session's device opens on its first workload
                shared = self.session._backend()
            self.report.device = shared.device.name
            return nullcontext(shared)

        def _compiler(self, shader: Any, target_env: str, cache: Any) -> Any:
            compiler = super()._compiler(shader, target_env, cache)
            return compiler if self.options.dump_stages is not None else _MemoCompiler(compiler, self.session)

        def _fill(self, backend: Any, buf: Any, path: Path) -> None:  # type: ignore[override]
            if buf.uid in self.inputs:
                return  # written from the array below
            super()._fill(backend, buf, path)

        def check(self, backend: Any) -> None:
            # the shaders are compiled (or found in the caches) and checked here, before any resource
            with self._timed("compile"):
                super().check(backend)

        def load_resources(self, backend: Any) -> None:
            with self._timed("setup"):
                super().load_resources(backend)
                for uid, value in self.inputs.items():
                    self._write_input(backend, uid, value)

        def _write_input(self, backend: Any, uid: str, value: Any) -> None:
            from kernellab.errors import UsageError

            data = np.ascontiguousarray(value)
            raw = data.reshape(-1).view(np.uint8)
            if uid in self.buffers:
                buf = self.buffers[uid]
                if raw.nbytes > buf.size:
                    raise UsageError(f"input {uid!r}: {raw.nbytes} bytes do not fit the buffer's {buf.size}")
                backend.clear_buffer(buf)
                backend.write_buffer(buf, raw)
            elif uid in self.images:
                backend.write_image(self.images[uid], raw, 1)
            elif self.ml is not None and uid in self.ml.tensors:
                raise UsageError(f"input {uid!r}: tensors take their data from files (src) for now")
            else:
                self.push_data[uid] = raw.tobytes()

        def create_programs(self, backend: Any) -> None:
            with self._timed("pipeline_creation"):
                super().create_programs(backend)

        def run_commands(self, backend: Any, outputs: Any, capture: bool) -> list[Any]:
            with self._timed("run"):
                return super().run_commands(backend, outputs, capture)

        def save_outputs(self, backend: Any, outputs: Any) -> None:
            with self._timed("read_back"):
                names = self.wanted if self.wanted is not None else [
                    r.uid for r in self.scenario.resources if getattr(r, "dst_path", None) is not None]
                memory = _MemoryOutputs()
                for uid in names:
                    if uid in self.buffers:
                        # what np.load gives for Arm's dst file: the raw bytes as int8
                        self.arrays[uid] = np.array(backend.read_buffer(self.buffers[uid]), copy=True).view(np.int8)
                    elif uid in self.images or (self.ml is not None and uid in self.ml.tensors):
                        self._save(backend, memory, uid, Path(f"{uid}.npy"))  # type: ignore[arg-type]  # same interface
                        self.arrays[uid] = np.load(io.BytesIO(memory.files.pop(f"{uid}.npy")), allow_pickle=False)
                    else:
                        from kernellab.errors import UsageError
                        raise UsageError(f"output {uid!r}: the workload has no buffer, image or tensor of that uid")
                if self.write_files:
                    super().save_outputs(backend, outputs)

    return SessionExecutor


def run(workload: Workload, inputs: Mapping[str, Any] | None = None, *, device: str | int | None = None,
        backend: str = "vulkan", outputs: Iterable[str] | None = None, output_dir: str | Path | None = None,
        write_files: bool = False) -> dict[str, np.ndarray]:
    """One workload in a session of its own: ``kernellab.run("s.json", inputs={...})``."""
    with Session(device, backend=backend) as session:
        return session.run(workload, inputs, outputs=outputs, output_dir=output_dir, write_files=write_files)


__all__ = ["Session", "WorkloadRun", "Phase", "run"]
