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
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Union

import numpy as np

from kernellab.errors import UsageError
from kernellab.records import dataclass

if TYPE_CHECKING:
    from kernellab import model as m
    from kernellab.backends.base import Backend, Buffer, CommandTiming, Program, ProgramSpec
    from kernellab.backends.feature_specs import Image
    from kernellab.compile.pipeline import Compiler
    from kernellab.runtime.executor import RunOptions

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
    #: per repeat, the commands' GPU timings (nanoseconds on the device clock; empty without
    #: ``timestamps=True``)
    gpu_timings: Sequence[list[CommandTiming]] = field(default_factory=list)


class _SharedBackend:
    """The session's backend as the workloads' lease: each workload runs on the one device
    (closing it is the session's business), pipelines are reused, buffers go back to a pool when
    the workload ends. Tensors, graphs and optical flow get a device of their own."""

    def __init__(self, backend: Backend):
        self.backend = backend
        self._free: dict[int, list[Buffer]] = defaultdict(list)
        self._lent: list[Buffer] = []
        self._programs: dict[ProgramSpec, Program] = {}
        self.pooled_bytes = 0

    def lease(self, own: Callable[[], Backend], needs_own_device: bool) -> AbstractContextManager[Backend]:
        return own() if needs_own_device else nullcontext(self.backend)

    def alloc_buffer(self, backend: Backend, size: int, uid: str) -> Buffer:
        if backend is not self.backend:
            return backend.alloc_buffer(size, uid)
        free = self._free.get(size)
        if free:
            buf = free.pop()
            self.pooled_bytes -= size
            buf.uid = uid
            backend.clear_buffer(buf)  # a workload never sees another's data
        else:
            buf = backend.alloc_buffer(size, uid)
        self._lent.append(buf)
        return buf

    def create_program(self, backend: Backend, spec: ProgramSpec) -> Program:
        if backend is not self.backend:
            return backend.create_program(spec)
        program = self._programs.get(spec)
        if program is None:
            program = self._programs[spec] = backend.create_program(spec)
        return program

    def workload_done(self) -> None:
        for buf in self._lent:
            self._free[buf.size].append(buf)
            self.pooled_bytes += buf.size
        self._lent.clear()


class _SessionModules:
    """Vulkan modules remembered by the session: the same text with the same options compiles once."""

    def __init__(self) -> None:
        self._spirv: dict[tuple[Any, ...], bytes] = {}

    def vulkan_module(self, compiler: Compiler) -> bytes:
        req = compiler.request
        try:
            text = Path(req.source).read_bytes()
        except OSError:
            return compiler.vulkan_module().data  # let the compiler report it
        key = (os.path.normpath(req.source), text, req.language, req.entry, req.build_options,
               tuple(map(str, req.include_dirs)), req.target_env)
        code = self._spirv.get(key)
        if code is None:
            code = self._spirv[key] = compiler.vulkan_module().data
        return code


class InputTypeError(UsageError, TypeError):
    """An input that is not an array of numbers (a list, a string): its bytes would mean nothing
    the shader expects."""


class ArrayInputs:
    """The initial data of a workload's resources from arrays by uid (``inputs``), checked
    against what takes them; the scenario's files for the rest."""

    def __init__(self, scenario: m.Scenario, values: Mapping[str, Any]):
        from kernellab import model as m
        from kernellab.runtime.executor import FileInputs

        unknown = sorted(set(values) - set(scenario.by_uid))
        if unknown:
            raise UsageError(f"inputs name no resource of the workload: {', '.join(unknown)}")
        for uid in values:
            r = scenario.by_uid[uid]
            if isinstance(r, m.Tensor):
                raise UsageError(f"input {uid!r}: tensors take their data from files (src) for now")
            if not isinstance(r, (m.Buffer, m.Image, m.RawData)):
                raise UsageError(f"input {uid!r} names a {type(r).__name__.lower()}; inputs give the data of "
                                 "buffers, images and raw data (push constants)")
        self.values = dict(values)
        self.files = FileInputs()

    def fill_buffer(self, backend: Backend, r: m.Buffer, buf: Buffer, element: str) -> bool:
        if r.uid not in self.values:
            return self.files.fill_buffer(backend, r, buf, element)
        data = _array(r.uid, self.values[r.uid], f"buffer {r.uid!r}", element)
        if element and data.dtype.itemsize > 1 and data.dtype.kind in "biuf" and \
                data.dtype.newbyteorder("=") != np.dtype(element):
            want = np.dtype(element).name
            raise UsageError(f"input {r.uid!r}: an array of {data.dtype.name}, but the shader reads buffer "
                             f"{r.uid!r} as {want}: convert it (array.astype(np.{want})), or pass its raw "
                             "bytes as uint8/int8")
        raw = data.reshape(-1).view(np.uint8)
        if raw.nbytes > buf.size:
            raise UsageError(f"input {r.uid!r}: {raw.nbytes} bytes do not fit the buffer's {buf.size}")
        backend.clear_buffer(buf)
        backend.write_buffer(buf, raw)
        return True

    def fill_image(self, backend: Backend, r: m.Image, image: Image) -> None:
        if r.uid not in self.values:
            self.files.fill_image(backend, r, image)
            return
        from kernellab.vkregistry import vkformat

        data = _array(r.uid, self.values[r.uid], f"image {r.uid!r}")
        fmt = vkformat.lookup(r.format)
        if fmt is not None and data.dtype.itemsize > 1 and not fmt.npy_dtype_ok(data.dtype):
            raise UsageError(f"input {r.uid!r}: an array of {data.dtype.name}, but image {r.uid!r} is {fmt.name}, "
                             f"whose values are {fmt.dtype.name}: convert it, or pass its raw bytes as uint8")
        backend.write_image(image, data.reshape(-1).view(np.uint8), 1)

    def raw_data(self, r: m.RawData) -> bytes | None:
        if r.uid not in self.values:
            return self.files.raw_data(r)
        return _array(r.uid, self.values[r.uid], f"raw data {r.uid!r}").tobytes()


def _array(uid: str, value: Any, what: str, element: str = "") -> np.ndarray:
    """``value`` as a contiguous array: a NumPy array or scalar as it is, bytes as uint8; a list
    or anything else is an :class:`InputTypeError` (its numbers have no type a shader could read)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return np.frombuffer(value, dtype=np.uint8)
    if isinstance(value, (np.ndarray, np.generic)):
        return np.ascontiguousarray(value)
    hint = f"np.asarray(value, dtype=np.{np.dtype(element).name})" if element else \
        "np.asarray(value, dtype=...) with the type the shader reads"
    raise InputTypeError(f"input {uid!r} is a {type(value).__name__}, not an array: {what} takes the bytes of "
                         f"a NumPy array, so give {hint}")


class _MemoryOutputs:
    """Saved resources kept as the bytes of their files, by name."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}

    def open(self, path: Path) -> IO[bytes]:
        return _MemoryFile(self.files, str(path))


class _MemoryFile(io.BytesIO):
    def __init__(self, files: dict[str, bytes], name: str):
        super().__init__()
        self._files = files
        self._name = name

    def close(self) -> None:
        if not self.closed:
            self._files[self._name] = self.getvalue()
        super().close()


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
        self._modules = _SessionModules()
        self._scenarios: dict[tuple[Any, ...], tuple[m.Scenario, list[Any]]] = {}
        self._closed = False
        self._open()

    @property
    def device(self) -> str:
        """The name of the device the session runs on."""
        return self.device_info.name

    # --- device lifetime ---------------------------------------------------------------------
    def _options(self, **extra: Any) -> RunOptions:
        from kernellab.runtime.executor import RunOptions

        return RunOptions(device=str(self.device_info.index), backend=self.backend_name,
                          robust_buffer_access=self.robust_buffer_access, timestamps=self.timestamps,
                          cache_dir=self.cache_dir, guard_bands=True, **extra)

    def _open(self) -> None:
        from kernellab.backends.base import BackendOptions
        from kernellab.backends.registry import backend_class

        opts = BackendOptions(robust_buffer_access=self.robust_buffer_access, timestamps=self.timestamps)
        self._shared = _SharedBackend(backend_class(self.backend_name)(self.device_info, opts))
        self._runs_on_device = 0

    def _drop_device(self) -> None:
        if self._shared is not None:
            shared, self._shared = self._shared, None
            shared.backend.close()

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
        from kernellab.runtime.executor import Executor

        t0 = time.perf_counter()
        if isinstance(workload, (str, Path)):
            scenario = self.load(workload, output_dir, check_files=not inputs)
        else:
            scenario = workload
        wanted = _outputs_to_read(scenario, outputs)
        source = ArrayInputs(scenario, dict(inputs or {}))
        sink = _MemoryOutputs()
        shared = self._backend()
        executor = Executor(scenario, self._options(), inputs=source, sink=sink, saved=wanted,
                            write_files=write_files, modules=self._modules, lease=shared)
        # making the executor (the first time: importing it) is part of getting the workload ready
        parse = Phase("parse", t0, time.perf_counter())
        try:
            executor.run()
        except BaseException:
            # the device may hold a half-recorded frame: the next workload gets a fresh one
            self._drop_device()
            raise
        finally:
            shared.workload_done()
        self._runs_on_device += 1
        for w in executor.report.warnings:
            log.warning("%s", w)
        arrays = {uid: np.load(io.BytesIO(sink.files[f"{uid}.npy"]), allow_pickle=False) for uid in wanted}
        phases = [Phase(_PHASE_OF_STEP[name], start, end) for name, start, end in executor.report.steps
                  if name in _PHASE_OF_STEP]
        return WorkloadRun(arrays, executor.report.device, [parse, *phases], executor.report.timings)


#: the executor's steps as a workload's phases
_PHASE_OF_STEP = {"open": "setup", "compile": "compile", "load": "setup", "programs": "pipeline_creation",
                  "commands": "run", "save": "read_back"}


def _outputs_to_read(scenario: m.Scenario, outputs: Iterable[str] | None) -> list[str]:
    """The uids of the resources to read back: ``outputs``, else those with a ``dst``."""
    from kernellab import model as m
    from kernellab.errors import UsageError

    if outputs is None:
        return [r.uid for r in scenario.resources if isinstance(r, (m.Buffer, m.Image, m.Tensor))
                and r.dst_path is not None]
    wanted = list(outputs)
    for uid in wanted:
        if not isinstance(scenario.by_uid.get(uid), (m.Buffer, m.Image, m.Tensor)):
            raise UsageError(f"output {uid!r}: the workload has no buffer, image or tensor of that uid")
    return wanted


def run(workload: Workload, inputs: Mapping[str, Any] | None = None, *, device: str | int | None = None,
        backend: str = "vulkan", outputs: Iterable[str] | None = None, output_dir: str | Path | None = None,
        write_files: bool = False) -> dict[str, np.ndarray]:
    """One workload in a session of its own: ``kernellab.run("s.json", inputs={...})``."""
    with Session(device, backend=backend) as session:
        return session.run(workload, inputs, outputs=outputs, output_dir=output_dir, write_files=write_files)


__all__ = ["Session", "WorkloadRun", "Phase", "InputTypeError", "run"]
