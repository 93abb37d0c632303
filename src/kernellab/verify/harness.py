"""Running launches on Oclgrind with its checkers on, in this process or a child.

Oclgrind reads its ``OCLGRIND_*`` settings when an OpenCL context is created, so they are set
(:func:`oclgrind_environment`) before the launches' context is made. Oclgrind writes its
diagnostics to the process's stderr (file descriptor 2); :func:`run_launches` writes marker lines
into the same stream around each launch (``@@kernellab <event> <json>``) so the reader can tell
which file and launch each diagnostic belongs to.

Run by hand to see the raw log: ``python -m kernellab.verify.harness K.json [K2.json ...]
[--index N] [--seed S] [--uninitialized]``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kernellab.records import dataclass

MARK = "@@kernellab"

#: Oclgrind's cap on messages (its default), counted per launch here (see reset_error_count): a
#: racy line can produce thousands of reports, all the same defect
MAX_REPORTS = 1000
#: Oclgrind settings: races, API checks; races need optimizations off (below)
OCLGRIND_ENV = {
    "OCLGRIND_DATA_RACES": "1",
    "OCLGRIND_CHECK_API": "1",
    "OCLGRIND_MAX_ERRORS": str(MAX_REPORTS),
    "PYOPENCL_NO_CACHE": "1",
}
#: the uninitialized-value tracker: slow, and only asked for with ``--check uninitialized``
OCLGRIND_UNINITIALIZED = {"OCLGRIND_UNINITIALIZED": "1"}
#: the optimizer could fold a racing load/store pair away
BUILD_OPTIONS = ("-cl-opt-disable",)

KEEP_ENV = {"OCLGRIND_NUM_THREADS", "OCLGRIND_PCH_DIR", "OCLGRIND_DISABLE_PCH"}


def mark(event: str, **data: Any) -> None:
    # straight to file descriptor 2, where Oclgrind writes (sys.stderr may be replaced, e.g. by pytest)
    sys.stderr.flush()
    os.write(2, f"{MARK} {event} {json.dumps(data)}\n".encode())


@contextmanager
def oclgrind_environment(uninitialized: bool) -> Iterator[None]:
    """Our ``OCLGRIND_*`` settings for the contexts made inside; the caller's are put back after.

    A user's own settings could send the log elsewhere (OCLGRIND_LOG) or skip work-groups
    (OCLGRIND_QUICK); only the thread count and header locations are kept."""
    saved = {k: v for k, v in os.environ.items() if k.startswith("OCLGRIND_") or k == "PYOPENCL_NO_CACHE"}
    for key in saved:
        if key not in KEEP_ENV:
            del os.environ[key]
    os.environ.update(OCLGRIND_ENV)
    if uninitialized:
        os.environ.update(OCLGRIND_UNINITIALIZED)
    try:
        yield
    finally:
        for key in [k for k in os.environ if k.startswith("OCLGRIND_") or k == "PYOPENCL_NO_CACHE"]:
            del os.environ[key]
        os.environ.update(saved)


def _build(backend: Any, inst: Any) -> tuple[Any, list[int], str | None]:
    """The instantiation's program with async copies modelled (see :mod:`kernellab.verify.asynccopy`):
    (program, lines of the copies, a note when the model could not be applied)."""
    from kernellab.backends.base import ProgramSpec
    from kernellab.compile.pipeline import driver_source
    from kernellab.compiler_options import own
    from kernellab.errors import CompileError
    from kernellab.runtime.instantiation import build, file_options, non_uniform_options
    from kernellab.verify import asynccopy
    # what the driver builds: the kernel with its includes inlined and checked (#line keeps lines)
    inlined = driver_source(inst.kernel_path, inst.file, (str(inst.file), inst.pointer("kernel_file")),
                            options=file_options(inst))
    source = inlined.decode("utf-8", "surrogateescape")
    # build() inlines the includes itself, so it needs the file's -I folders (it drops them after)
    options = non_uniform_options(backend, inst) + own(*BUILD_OPTIONS)
    modelled = asynccopy.instrument(source)
    note = None
    if modelled is not None:
        spec = ProgramSpec(uid=f"{inst.kernel_file}:{inst.entry_point}:async", language="opencl-c",
                           code=modelled.encode("utf-8", "surrogateescape"), entry=inst.entry_point,
                           options=options.without_include_dirs())
        try:
            return backend.create_program(spec), asynccopy.call_lines(source), None
        except CompileError as exc:  # fall back to Oclgrind's own model of the copies
            note = f"async copies not modelled (the rewritten kernel did not build: {str(exc).splitlines()[-1]})"
    return build(backend, inst, options, inlined), [], note  # includes inlined once, not twice


def _buffers(launch: Any) -> list[dict[str, Any]]:
    """Oclgrind numbers global buffers 1, 2, ... in creation order: the arrays and images in
    argument order (a launch run as a scenario creates its buffers in that order too)."""
    from kernellab.runtime.instantiation import ArrayValue
    out = []
    for n, (p, value) in enumerate(zip(launch.params, launch.args)):
        if isinstance(value, ArrayValue) or p.kind == "image":
            out.append({"argument": n, "name": p.name, "type": p.type_name, "element_size": p.type.size})
    return out


def reset_error_count() -> bool:
    """Start Oclgrind's message count from 0 for the next launch.

    Oclgrind stops logging after OCLGRIND_MAX_ERRORS messages counted for the whole process (a
    static counter), so without this one racy launch would silence every later launch of a
    multi-launch call. The counter is reached through the loaded library's exported symbol, found
    once per process; False when it cannot be (the launch's notes then say so)."""
    counter = _error_counter()
    if counter is None:
        return False
    counter.value = 0
    return True


def _error_counter() -> Any:
    """Oclgrind's message counter as a ctypes ``c_uint`` (None when the library is not loaded yet
    or has no such symbol); found once: reading the process's maps costs ~1 ms a launch."""
    if _counter:
        return _counter[0]
    import ctypes
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            paths = {p for p in (line.split()[-1] for line in maps if "liboclgrind-" in line)
                     if os.path.basename(p).startswith("liboclgrind-") and
                     not os.path.basename(p).startswith("liboclgrind-rt")}
        for path in sorted(paths):
            lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD)
            _counter.append(ctypes.c_uint.in_dll(lib, "_ZN8oclgrind6Logger11m_numErrorsE"))
            return _counter[0]
    except (OSError, ValueError, AttributeError):
        pass
    return None  # not loaded yet (no context made): looked for again next time


#: the counter once found (the library stays loaded for the life of the process)
_counter: list[Any] = []


#: exit status of a harness process that stopped a launch past its time limit
TIMEOUT_STATUS = 124


@dataclass(frozen=True)
class Overrun:
    """A launch that ran past its time limit: what the message and the report name."""
    file: str
    file_number: int
    index: int | None
    kernel: str
    seconds: float


#: (seconds, handler) while run_launches runs with a limit; empty: no limit
_limit: list[tuple[float, Callable[[Overrun], None]]] = []


@contextmanager
def _watched(inst: Any, path: str, file_number: int) -> Iterator[None]:
    """A daemon timer over one launch (build and run): a native Oclgrind call cannot be
    interrupted, so on expiry the handler ends the whole process (it never returns)."""
    if not _limit:
        yield
        return
    seconds, expire = _limit[0]
    overrun = Overrun(path, file_number, inst.index, inst.entry_point, seconds)
    timer = threading.Timer(seconds, expire, args=(overrun,))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def exit_marked(overrun: Overrun) -> None:
    """The harness process's handler: a ``timeout`` marker for the parent, then exit."""
    mark("timeout", file=overrun.file_number, index=overrun.index, kernel=overrun.kernel, seconds=overrun.seconds)
    os._exit(TIMEOUT_STATUS)


def _run_file(path: str, index: int | None, seed: int, file_number: int) -> None:
    from kernellab.formats import gpuverify
    from kernellab.runtime.instantiation import select

    insts, _ = gpuverify.load(path, non_uniform=True)
    chosen = select(insts, index, Path(path))
    from kernellab.native.build_limit import disarmed
    for inst in chosen:
        # verify's launch limit (--timeout) covers the build too, and its message names the
        # launch; the tool limit's message would go to the log verify keeps of fd 2
        with _watched(inst, path, file_number), disarmed():
            _run_one(inst, seed, file_number)


def _run_one(inst: Any, seed: int, file_number: int) -> None:
    from kernellab.backends.opencl import OpenCLBackend
    # a context per launch: Oclgrind numbers its buffers from 1 in each, so an address names the
    # argument (contexts are cheap: Oclgrind's costs are the build and the run)
    # Oclgrind's runtime called directly (native/oclgrind.py): pyopencl's imports and the ICD
    # loader opening every driver cost more CPU than all of kernellab's own work
    backend = OpenCLBackend.open("Oclgrind", direct=True)
    counted = reset_error_count() or _launched[0] == 0
    _launched[0] += 1
    try:
        _run_instantiation(backend, inst, seed, file_number, counted)
    finally:
        backend.close()


#: launches run so far in this process (Oclgrind's message count starts at 0 for the first)
_launched = [0]


def _run_instantiation(backend: Any, inst: Any, seed: int, file_number: int, counted: bool = True) -> None:
    from kernellab.errors import BackendError
    from kernellab.runtime.instantiation import is_uniform, launch_arrays, make_arguments
    uniform = is_uniform(inst)
    program, copies, note = _build(backend, inst)
    if not counted:
        note = (note + "; " if note else "") + ("Oclgrind's message count could not be reset, so this launch "
                                                f"may report fewer than {MAX_REPORTS} messages")
    # the launch as `kernellab run` makes it: a scenario in memory run by the one executor where
    # the model holds it (images, samplers: enqueued directly)
    launch = make_arguments(backend, inst, program, seed)
    buffers = _buffers(launch)
    enqueued = [f"{h.compilation_unit}:{h.line_number}" for h in inst.host_api_calls or ()
                if h.function_name == "clEnqueueNDRangeKernel"]
    mark("begin", file=file_number, index=inst.index, kernel=inst.entry_point,
         kernel_file=str(inst.kernel_path), buffers=[b["argument"] for b in buffers],
         buffer_info=buffers, filled=launch.filled + ([note] if note else []),
         enqueued_at=enqueued[-1] if enqueued else None, async_copies=copies, uniform=uniform)
    from kernellab.verify.output import captured_stdout
    with captured_stdout() as printed:  # the kernel's printf: Oclgrind writes it to fd 1
        try:
            launch_arrays(backend, launch, device_limits=False)  # the driver's refusal is a finding
        except BackendError as exc:
            mark("launch-error", file=file_number, index=inst.index, call=exc.call, code=exc.code, message=str(exc))
    if printed[0]:
        mark("output", file=file_number, index=inst.index, text=printed[0])
    mark("end", file=file_number, index=inst.index)  # the buffers go with the launch's context


def run_launches(files: Sequence[tuple[str, int | None]], seed: int, timeout: float | None = None,
                 expire: Callable[[Overrun], None] = exit_marked) -> None:
    """Every instantiation of every file (or only ``index``), one after another in this process;
    bad input in one file is reported for that file and the next file still runs.

    With ``timeout``, a launch running longer calls ``expire`` from a timer thread, which must end
    the process (the launch itself cannot be stopped): only for a process that is ours to end."""
    _limit[:] = [(timeout, expire)] if timeout else []
    try:
        _run_units(files, seed)
    finally:
        _limit.clear()


def _run_units(files: Sequence[tuple[str, int | None]], seed: int) -> None:
    from kernellab.errors import InputError, KernellabError
    for number, (path, index) in enumerate(files):
        try:
            _run_file(path, index, seed, number)
        except InputError as exc:
            mark("input-error", file=number, problems=[{"file": p.file, "where": p.where, "message": p.message}
                                                       for p in exc.problems])
        except KernellabError as exc:
            mark("failure", file=number, message=str(exc))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kernellab.verify.harness")
    p.add_argument("files", nargs="*")
    p.add_argument("--units", help='JSON list of [file, index or null] to run, instead of files')
    p.add_argument("--index", type=int)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--uninitialized", action="store_true", help="run Oclgrind's uninitialized-value tracker")
    p.add_argument("--timeout", type=float, default=0,
                   help=f"seconds a launch may run; past it, a timeout marker and exit {TIMEOUT_STATUS} (0: none)")
    args = p.parse_args(argv)
    from kernellab.errors import KernellabError
    with oclgrind_environment(args.uninitialized):
        try:
            units = [(f, i) for f, i in json.loads(args.units)] if args.units else \
                [(f, args.index) for f in args.files]
            run_launches(units, args.seed, args.timeout or None)
        except KernellabError as exc:  # the device could not be opened
            mark("failure", file=-1, message=str(exc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
