"""The OpenCL boundary: loading pyopencl, the status-name table, and the one place a failed
call becomes a :class:`~kernellab.errors.BackendError` (pyopencl's guarded-call / clean-up split).

:func:`guarded` runs one call and turns ``pyopencl.Error`` into a kernellab error naming the call
and the ``CL_`` status; :func:`build` does it for program builds, keeping the compiler's log;
:func:`release` is the clean-up path, where a failure is logged and the remaining releases run.
The device list (:func:`devices`) is enumerated here, once per process, for every user: the
backend, the partition runner and the device-binary compile stage see the same indices.
"""
from __future__ import annotations

import _thread
import contextlib
import functools
import os
import sys
from collections.abc import Callable
from typing import Any

from kernellab import compiler_options, config
from kernellab.errors import BackendError
from kernellab.native import build_limit
from kernellab.native.devices import DeviceInfo
from kernellab.native.failure import cleanup_failed, failure


def load(direct: bool = False) -> Any:
    """pyopencl, or with ``direct`` :mod:`kernellab.native.oclgrind` (Oclgrind's runtime called
    directly: the same interface for the part the backend uses, without pyopencl's imports)."""
    if direct:
        from kernellab.native import oclgrind
        return oclgrind
    # pyopencl loads every ICD when first imported; keep that off the import path of kernellab
    os.environ.setdefault("PYOPENCL_NO_CACHE", "1")
    import pyopencl as cl
    return cl


def status_names() -> dict[int, str]:
    """``cl_int`` status -> ``CL_`` name: CL/cl.h's, and pyopencl's table once it is loaded."""
    from kernellab.native.oclgrind import STATUS_NAMES
    return {**STATUS_NAMES, **_pyopencl_status_names()} if "pyopencl" in sys.modules else STATUS_NAMES


@functools.lru_cache(maxsize=1)
def _pyopencl_status_names() -> dict[int, str]:
    codes = load().status_code
    return {getattr(codes, n): "CL_" + n for n in dir(codes)
            if not n.startswith("_") and isinstance(getattr(codes, n), int)}


def _is_cl_error(exc: BaseException) -> bool:
    """Whether ``exc`` is a failed OpenCL call of either binding (pyopencl only if already loaded)."""
    from kernellab.native.oclgrind import Error
    pyopencl = sys.modules.get("pyopencl")
    return isinstance(exc, Error) or (pyopencl is not None and isinstance(exc, pyopencl.Error))


def status_name(code: int) -> str:
    return status_names().get(code, f"CL error {code}")  # an ICD may return a code pyopencl does not know


def _detail(exc: BaseException) -> str:
    what = getattr(exc, "what", None)
    return str(what.what()) if what is not None and hasattr(what, "what") else str(exc)


def error(call: str, exc: BaseException) -> BackendError:
    """The kernellab error for a ``pyopencl.Error`` raised by ``call``."""
    code = getattr(exc, "code", None)
    name = status_name(code) if isinstance(code, int) else "unknown"
    return failure(call, name, _detail(exc))


def guarded(call: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run one OpenCL call; a failure becomes an error naming the call and the CL status."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:
        if _is_cl_error(exc):
            raise error(call, exc) from exc
        raise


class BuildFailure(BackendError):
    """``clBuildProgram`` failed; ``log`` is pyopencl's text (the compiler's messages in it)."""

    def __init__(self, code: str, log: str):
        self.log = log
        super().__init__("clBuildProgram", code)


def build_overrun_message(what: str, seconds: float) -> str:
    return (f"{what}: the OpenCL C build did not finish within the {seconds:g} s tool time limit and was "
            "stopped; if it only needs longer, raise the limit with --tool-timeout SECONDS or "
            "KERNELLAB_TOOL_TIMEOUT=SECONDS (0: no limit)")


#: where the process's own standard error is while a build has fd 2 pointed elsewhere
_stderr_fd = 2


def _expire(what: str, seconds: float) -> None:
    from kernellab import outputs
    outputs.discard_all()
    with contextlib.suppress(OSError):
        os.write(_stderr_fd, f"kernellab: error: {build_overrun_message(what, seconds)}\n".encode(errors="replace"))
    os._exit(1)


class _CompilerChatter:
    """fd 2 into a private file while a driver's compiler runs. PoCL's clang prints its summary
    ("1 error generated.") straight to the process's standard error: after a failed build that
    text is dropped (the message kernellab words from the build log holds every diagnostic), after
    a build that succeeded it is passed on as it was. kernellab's own late message (the build time
    limit's) goes to the saved descriptor meanwhile.

    fd 2 is the process's, and builds run in threads at once (the parts of ``partition-sweep``, a
    snapshot's ``build_async``): the redirection is one for all, made by the first build to start
    and undone by the last to end (a build undoing it by itself, with another's sink saved as
    "the" standard error, left fd 2 in a deleted file for the rest of the process); the chatter
    of builds that overlapped is passed on when none of them failed."""

    _lock = _thread.allocate_lock()
    _builds = 0  # the builds under the redirection now
    _saved = -1  # the process's fd 2, while redirected
    _sink: Any = None
    _failed = False

    def __enter__(self) -> _CompilerChatter:
        global _stderr_fd
        cls = _CompilerChatter
        with cls._lock:
            cls._builds += 1
            if cls._builds > 1 or cls._sink is not None:
                return self
            try:
                import tempfile
                sys.stderr.flush()
                cls._sink = tempfile.TemporaryFile()
                cls._saved = os.dup(2)
                os.dup2(cls._sink.fileno(), 2)
                _stderr_fd = cls._saved
            except (OSError, ValueError, AttributeError):
                cls._restore()  # no stream, no temp folder: the chatter stays where it was
        return self

    @classmethod
    def _restore(cls) -> None:
        global _stderr_fd
        if cls._saved >= 0:
            with contextlib.suppress(OSError, ValueError, AttributeError):
                sys.stderr.flush()
            os.dup2(cls._saved, 2)
            os.close(cls._saved)
            cls._saved = -1
        _stderr_fd = 2

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        cls = _CompilerChatter
        with cls._lock:
            cls._builds -= 1
            cls._failed = cls._failed or kind is not None
            if cls._builds:
                return
            cls._restore()
            sink, failed, cls._sink, cls._failed = cls._sink, cls._failed, None, False
            if sink is None:
                return
            with sink:  # passed on before another build may redirect fd 2 again
                if not failed:
                    sink.seek(0)
                    text = sink.read(1 << 20)
                    if text:
                        with contextlib.suppress(OSError):
                            os.write(2, text)


def build(program: Any, options: compiler_options.Options, *, what: str, **kwargs: Any) -> Any:
    """Build ``program`` with ``options`` (the door's typed list, rendered here into the one
    string ``clBuildProgram`` takes) under the tool time limit; ``what`` names the kernel for the
    messages. Raises :class:`BuildFailure` carrying the log (callers word the error)."""
    if not isinstance(options, compiler_options.Options):
        raise TypeError("build options reach a driver only as compiler_options.Options (the door)")
    text = options.driver_text()
    limit = config.get().tool_timeout
    watchdog = None
    if build_limit.armed and limit:
        import threading
        watchdog = threading.Timer(limit, _expire, (what, limit))
        watchdog.daemon = True
        watchdog.start()
    try:
        with _CompilerChatter():
            return program.build(options=text, **kwargs)
    except Exception as exc:
        if not _is_cl_error(exc):
            raise
        code = getattr(exc, "code", None)
        raise BuildFailure(status_name(code) if isinstance(code, int) else "unknown", str(exc)) from exc
    finally:
        if watchdog is not None:
            watchdog.cancel()


def kernel_names(program: Any) -> list[str]:
    """The kernels a built program defines, by name (``CL_PROGRAM_KERNEL_NAMES``).

    Asked as a string rather than with ``clCreateKernelsInProgram`` (pyopencl's ``all_kernels``):
    kernel objects made for a listing keep their program alive in the driver after every
    Python reference is gone (Oclgrind keeps ~80 KB a program), and cost a kernel each."""
    from kernellab.native.oclgrind import program_info  # the same value in pyopencl
    text = guarded("clGetProgramInfo(CL_PROGRAM_KERNEL_NAMES)", program.get_info, program_info.KERNEL_NAMES)
    return [name for name in str(text).split(";") if name]


def release(call: str, fn: Callable[..., Any], *args: Any) -> None:
    """Run one clean-up call; a failure is logged (call and status), not raised."""
    try:
        fn(*args)
    except Exception as exc:
        if not _is_cl_error(exc):
            raise
        cleanup_failed(call, error(call, exc).code)


def platform_devices(direct: bool = False) -> list[tuple[Any, Any]]:
    """(platform, device) of every device of every platform; no ICD at all is an empty list."""
    cl = load(direct)
    try:
        platforms = cl.get_platforms()
    except cl.Error:  # clGetPlatformIDs fails with PLATFORM_NOT_FOUND_KHR when no ICD is installed
        return []
    found = []
    for platform in platforms:
        try:
            found += [(platform, d) for d in platform.get_devices()]
        except cl.Error:  # a platform without devices (DEVICE_NOT_FOUND): skip it
            continue
    return found


def _device_kind(cl: Any, platform: Any, device: Any) -> str:
    if "oclgrind" in platform.name.lower():
        # a simulator: never the default device, only chosen by name (verify does that)
        return "other"
    t = device.type
    if t & cl.device_type.GPU:
        return "integrated-gpu" if getattr(device, "host_unified_memory", False) else "discrete-gpu"
    if t & cl.device_type.CPU:
        return "cpu"
    return "other"


@functools.lru_cache(maxsize=2)
def _enumerated(direct: bool) -> tuple[tuple[DeviceInfo, Any], ...]:
    cl = load(direct)
    found: list[tuple[DeviceInfo, Any]] = []
    for platform, dev in platform_devices(direct):
        info = DeviceInfo(
            backend="opencl", index=len(found), name=f"{dev.name.strip()} ({platform.name.strip()})",
            kind=_device_kind(cl, platform, dev), driver=dev.driver_version.strip(),
            api_version=dev.version.strip(),
            details={"platform": platform.name.strip(), "vendor": dev.vendor.strip(),
                     "max_work_group_size": int(dev.max_work_group_size),
                     "global_mem_size": int(dev.global_mem_size),
                     "local_mem_size": int(dev.local_mem_size),
                     "little_endian": bool(dev.endian_little)})
        found.append((info, dev))
    return tuple(found)


def devices(direct: bool = False) -> list[tuple[DeviceInfo, Any]]:
    """Every OpenCL device as (its record, the binding's device), enumerated once per process and
    binding (both see the same ICD loader, so the same devices in the same order)."""
    return list(_enumerated(direct))
