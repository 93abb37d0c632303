"""Program snapshots, after Codeplay's ``cl_codeplay_program_snapshot`` extension.

:func:`list_snapshot_stages` lists a program's compilation stages in pipeline order;
:func:`request_snapshot` selects one stage (at most one at a time) whose result is handed to a
callback, as text or binary, when that stage completes during :meth:`Program.build`. Errors are
exceptions that mirror the extension's result codes (``err.code``, ``err.value``).

Threading: the callback runs on the thread that compiles. :meth:`Program.build` compiles on the
caller's thread; :meth:`Program.build_async` compiles on a worker thread, so the callback is then
called from that thread and must be thread-safe. ``data`` and ``callback_data`` are only
meaningful during the call (``data`` is an immutable ``bytes`` that may be kept).
"""
from __future__ import annotations

import concurrent.futures
import enum
import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kernellab import tools
from kernellab.compile.cache import ArtifactCache
from kernellab.compile.languages import VULKAN_MODULE_STAGE, all_stages
from kernellab.compile.pipeline import Compiler
from kernellab.compile.stage import Artifact, CompileRequest, Output, Stage
from kernellab.errors import KernellabError
from kernellab.records import dataclass


class SnapshotFormat(enum.IntEnum):
    """``cl_codeplay_program_binary_format``."""

    DEFAULT = 0x0  # CL_PROGRAM_BINARY_FORMAT_DEFAULT_CODEPLAY
    BINARY = 0x1  # CL_PROGRAM_BINARY_FORMAT_BINARY_CODEPLAY
    TEXT = 0x2  # CL_PROGRAM_BINARY_FORMAT_TEXT_CODEPLAY


class SnapshotError(KernellabError):
    """An error of the snapshot API; ``code`` is the OpenCL result code's name, ``value`` its number."""

    code = "CL_INVALID_VALUE"
    value = -30


class InvalidProgram(SnapshotError):
    code, value = "CL_INVALID_PROGRAM", -44


class InvalidDevice(SnapshotError):
    code, value = "CL_INVALID_DEVICE", -33


class InvalidArgValue(SnapshotError, ValueError):
    code, value = "CL_INVALID_ARG_VALUE", -50
    exit_status = 2


class InvalidProgramExecutable(SnapshotError):
    code, value = "CL_INVALID_PROGRAM_EXECUTABLE", -45


class InvalidValue(SnapshotError, ValueError):
    code, value = "CL_INVALID_VALUE", -30


@dataclass(frozen=True)
class Device:
    """A device a program is compiled for. ``name`` selects the OpenCL device for device-specific
    stages (a substring of its name; empty = the first non-simulator device) and keys their cache
    entries; ``backend`` is ``vulkan`` or ``opencl``."""

    name: str = ""
    backend: str = "vulkan"

    @classmethod
    def from_info(cls, info: Any) -> Device:
        """The device a backend enumerated (``kernellab.backends.base.DeviceInfo``)."""
        return cls(str(info.name), str(info.backend))


#: a program's device when none is given: Vulkan (whose stages do not depend on the device) for
#: GLSL and SPIR-V, the default OpenCL device for OpenCL C
def default_device(language: str) -> Device:
    return Device("", "opencl" if language == "opencl-c" else "vulkan")


@dataclass(frozen=True)
class SnapshotInfo:
    """``callback_data``: what the runtime knows about the snapshot being delivered."""

    program: Program
    device: Device
    stage: str
    format: SnapshotFormat
    #: the artifact's content key (what the artifact cache files it under)
    key: str


SnapshotCallback = Callable[[int, bytes, SnapshotInfo, Any], None]


@dataclass
class _Selection:
    device: Device
    stage: str
    format: SnapshotFormat
    callback: SnapshotCallback
    user_data: Any


class Program:
    """A kernel to compile for one or more devices.

    ``Program.from_binary`` makes a program from a device binary: it has no compilation stages,
    so querying them fails with ``CL_INVALID_VALUE`` as the extension says.
    """

    def __init__(self, request: CompileRequest, devices: Sequence[Device] | None = None,
                 cache: ArtifactCache | None = None):
        self.request = request
        self.devices: tuple[Device, ...] = tuple(devices) if devices else (default_device(request.language),)
        self.cache = cache
        self.binary: bytes | None = None
        self.built = False
        self._selection: _Selection | None = None
        self._compilers: dict[Device, Compiler] = {}

    @classmethod
    def from_binary(cls, binary: bytes, device: Device) -> Program:
        prog = cls(CompileRequest(Path("<binary>"), "binary"), [device])
        prog.binary = bytes(binary)
        return prog

    def compiler(self, device: Device) -> Compiler:
        c = self._compilers.get(device)
        if c is None:
            req = self.request
            if device.name != req.device:
                req = req.replace(device=device.name)
            c = self._compilers[device] = Compiler(req, self.cache, on_stage=functools.partial(self._completed, device))
        return c

    def target_stage(self, device: Device) -> str:
        """The stage whose artifact a build makes: the device binary for OpenCL devices, else the
        SPIR-V module Vulkan runs."""
        stages = self.compiler(device).stages
        if device.backend == "opencl" and "device-binary" in stages:
            return "device-binary"
        return VULKAN_MODULE_STAGE.get(self.request.language, list(stages)[-1])

    def build(self, device: Device | None = None) -> Artifact:
        """Compile for ``device`` (default: the program's first), delivering the selected snapshot."""
        if self.binary is not None:
            raise InvalidProgramExecutable("the program was created from a binary: it is already built")
        device = device or self.devices[0]
        if device not in self.devices:
            raise InvalidDevice(f"{device} is not a device of this program")
        compiler = self.compiler(device)
        target = compiler.artifact(self.target_stage(device))
        sel = self._selection
        if sel is not None and sel.device == device:
            compiler.artifact(sel.stage)  # a stage past the target (spirv-opt, device-llvm-ir) runs too
        self.built = True
        return target

    def build_async(self, device: Device | None = None) -> concurrent.futures.Future[Artifact]:
        """Compile on a worker thread (the snapshot callback is then called from that thread)."""
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="kernellab-build")
        try:
            return pool.submit(self.build, device)
        finally:
            pool.shutdown(wait=False)

    def _completed(self, device: Device, art: Artifact) -> None:
        sel = self._selection
        if sel is None or sel.device != device or art.stage != sel.stage:
            return
        stage = self.compiler(device).stages[art.stage]
        data = snapshot_bytes(stage, art, sel.format)
        sel.callback(len(data), data, SnapshotInfo(self, device, art.stage, sel.format, art.key), sel.user_data)


def default_format(stage: Stage) -> SnapshotFormat:
    """Source-like stages (one form for both) default to text; SPIR-V, bitcode and device binaries
    to binary."""
    return SnapshotFormat.TEXT if stage.output is Output.TEXT else SnapshotFormat.BINARY


def snapshot_bytes(stage: Stage, art: Artifact, fmt: SnapshotFormat) -> bytes:
    if fmt == SnapshotFormat.DEFAULT:
        fmt = default_format(stage)
    if fmt == SnapshotFormat.BINARY:
        return art.data
    return stage.to_text(art.data).encode("utf-8")


def _check_program_device(program: Any, device: Any) -> None:
    if not isinstance(program, Program):
        raise InvalidProgram(f"not a valid program: {program!r}")
    if not isinstance(device, Device):
        raise InvalidDevice(f"not a valid device: {device!r}")
    if device not in program.devices:
        have = ", ".join(repr(d) for d in program.devices)
        raise InvalidDevice(f"{device!r} is not associated with the program (its devices: {have})")


def _stages(program: Program, device: Device) -> list[str]:
    if program.binary is not None:
        raise InvalidValue("snapshot stages cannot be queried: the program was created from a binary")
    try:
        return list(program.compiler(device).stages)
    except KernellabError as exc:
        raise InvalidValue(f"snapshot stages cannot be queried: {exc}") from exc


def list_snapshot_stages(program: Program, device: Device, num_stages: int | None = None) -> list[str]:
    """``clRequestProgramSnapshotListCODEPLAY``: the available stages in pipeline order.

    With ``num_stages``, at most that many names (it must then be greater than zero).
    Stages whose tool is missing are left out; :func:`missing_stages` says what provides them.
    """
    _check_program_device(program, device)
    if num_stages is not None and (isinstance(num_stages, bool) or not isinstance(num_stages, int) or num_stages <= 0):
        raise InvalidArgValue(f"num_stages must be a positive integer, not {num_stages!r}")
    names = _stages(program, device)
    return names if num_stages is None else names[:num_stages]


def missing_stages(program: Program) -> dict[str, str]:
    """Stages defined for the program's language that are left out, and what to install for each."""
    if program.binary is not None:
        return {}
    out = {}
    for name, stage in all_stages(program.request.language).items():
        if stage.run is not None and not stage.available():
            need = [t for t in stage.tools if tools.find(t) is None] or list(stage.tools)
            out[name] = "; ".join(f"{t}: {tools.PROVIDERS.get(t, 'install it')}" for t in need)
    return out


def request_snapshot(program: Program, device: Device, stage: str,
                     format: SnapshotFormat | int = SnapshotFormat.DEFAULT,
                     callback: SnapshotCallback | None = None, user_data: Any = None) -> None:
    """``clRequestProgramSnapshotCODEPLAY``: deliver ``stage`` of the next build to ``callback``.

    ``callback(snapshot_size, snapshot_data, callback_data, user_data)`` is called once, when the
    stage completes. A new request replaces the previous one (one stage at a time).
    """
    _check_program_device(program, device)
    if program.built or program.binary is not None:
        raise InvalidProgramExecutable("compilation has already occurred: request snapshots before building")
    names = _stages(program, device)
    if callback is None or not callable(callback):
        raise InvalidArgValue("callback must be a callable, not None" if callback is None
                              else f"callback must be callable, not {type(callback).__name__}")
    if not isinstance(stage, str) or stage not in names:
        missing = missing_stages(program).get(stage) if isinstance(stage, str) else None
        if missing:
            raise InvalidArgValue(f"stage {stage!r} is not available: it needs {missing}")
        raise InvalidArgValue(f"{stage!r} is not a snapshot stage of this program (stages: {', '.join(names)})")
    try:
        fmt = SnapshotFormat(format)
    except ValueError:
        raise InvalidArgValue(f"format {format!r} is not one of DEFAULT (0), BINARY (1), TEXT (2)") from None
    program._selection = _Selection(device, stage, fmt, callback, user_data)
