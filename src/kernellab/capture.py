"""Capture every kernel launch a pyopencl program makes, as a kernel-instantiation file.

``with kernellab.capture(DIR):`` around pyopencl code (or ``kernellab capture -o DIR -- python
prog.py ...``) records, for each ``clEnqueueNDRangeKernel``: the kernel source (and a
preprocessed ``.pre.cl`` copy when a C preprocessor is installed), the sizes and offset, every
argument (buffer contents *at launch* as ``.bin``, ``__local`` sizes, scalars as hex), and
``host_api_calls`` naming the Python call sites of program creation, build, kernel creation,
argument setting and the enqueue. ``kernellab run DIR/capture.json`` replays it.

pyopencl is hooked at the points every launch passes through: ``Program`` creation and build,
``Program.<kernel>``/``all_kernels``, ``Kernel.set_arg``/``set_args``/``__call__`` and
``enqueue_nd_range_kernel``. Kernels made with ``cl.Kernel(prg, name)`` directly are captured
too, without a ``clCreateKernel`` call site.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shlex
import struct
import sys
import threading
import types
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import field
from pathlib import Path
from typing import Any

import numpy as np

from kernellab import tools
from kernellab.formats.gpuverify import hex_value
from kernellab.opencl_types import parse_type, source_typedefs
from kernellab.outputs import write_bytes, write_text
from kernellab.records import dataclass

_HERE = os.path.dirname(os.path.abspath(__file__))
CAPTURE_FILE = "capture.json"


def _call_site(api: str) -> dict[str, Any] | None:
    """The first frame outside pyopencl, numpy and kernellab: where the user's program called ``api``."""
    frame = sys._getframe(2)
    while frame is not None:
        fname = frame.f_code.co_filename
        if not (fname.startswith(_HERE) or "/pyopencl/" in fname or "/numpy/" in fname or fname.startswith("<")):
            return {"function_name": api, "compilation_unit": os.path.abspath(fname), "line_number": frame.f_lineno}
        frame = frame.f_back  # type: ignore[assignment]
    return None


def _attributed(api: str, call: Callable[[], Any]) -> Any:
    """Run ``call`` and re-issue its warnings at the user's line: pyopencl counts its stack levels
    without our wrapper in between, so a compiler warning would otherwise point into kernellab."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    site = _call_site(api) if caught else None
    for w in caught:
        if site and (w.filename.startswith(_HERE) or "/pyopencl/" in w.filename):
            warnings.warn_explicit(w.message, w.category, site["compilation_unit"], site["line_number"])
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return result


@dataclass
class _ProgramRecord:
    source: str
    options: str = ""
    #: the build's options as words, split once where the program gave them (the user's own)
    words: tuple[str, ...] = ()
    calls: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class _KernelRecord:
    args: dict[int, Any] = field(default_factory=dict)
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)


class Capture:
    """An active capture: hooks installed into pyopencl, launches written under ``directory``."""

    def __init__(self, directory: str | os.PathLike[str]):
        self.directory = Path(directory)
        self.launches: list[dict[str, Any]] = []
        self._programs: dict[int, _ProgramRecord] = {}
        self._kernels: dict[int, _KernelRecord] = {}
        self._sources: dict[str, str] = {}  # source digest -> kernel file name
        self._saved: list[tuple[Any, str, Any]] = []
        self._lock = threading.RLock()
        self.notes: list[str] = []

    # --- hooks ----------------------------------------------------------------------------
    def install(self) -> None:
        # pyopencl is optional for kernellab: only a capture imports it
        import pyopencl as cl
        import pyopencl._cl as _cl

        for owner, name, make in ((cl.Program, "__init__", _program_init),
                                  (cl.Program, "build", _program_build),
                                  (cl.Program, "__getattr__", _program_getattr),
                                  (cl.Program, "all_kernels", _all_kernels),
                                  (_cl.Kernel, "set_arg", _set_arg),
                                  (_cl.Kernel, "set_args", _set_args),
                                  (_cl.Kernel, "__call__", _kernel_call),
                                  (_cl.Kernel, "_set_arg_multi", _set_arg_multi),
                                  (_cl.Kernel, "_set_arg_buf_multi", _set_arg_buf_multi),
                                  (_cl.Kernel, "_set_arg_buf_pack_multi", _set_arg_buf_pack_multi),
                                  (_cl, "enqueue_nd_range_kernel", _enqueue)):
            original = getattr(owner, name)
            self._saved.append((owner, name, original))
            setattr(owner, name, make(self, original))
        # pyopencl re-exports the enqueue function: calls through its public name are seen too
        self._saved.append((cl, "enqueue_nd_range_kernel", cl.enqueue_nd_range_kernel))
        cl.enqueue_nd_range_kernel = _cl.enqueue_nd_range_kernel

    def uninstall(self) -> None:
        for owner, name, original in reversed(self._saved):
            setattr(owner, name, original)
        self._saved.clear()

    def _kernel(self, knl: Any) -> _KernelRecord:
        with self._lock:
            return self._kernels.setdefault(knl.int_ptr, _KernelRecord())

    # --- recording ------------------------------------------------------------------------
    def _kernel_file(self, source: str) -> str:
        digest = hashlib.sha256(source.encode()).hexdigest()
        if digest not in self._sources:
            name = f"kernel{len(self._sources)}.cl"
            self._sources[digest] = name
            write_text(self.directory / name, source, root=self.directory)
        return self._sources[digest]

    def _record_launch(self, queue: Any, kernel: Any, global_size: Any, local_size: Any, global_offset: Any,
                       g_times_l: bool, site: dict[str, Any] | None) -> None:
        with self._lock:
            n = len(self.launches)
            prog = self._programs.get(kernel.program.int_ptr)
            if prog is None:
                raise RuntimeError("its program was built before the capture started or from a binary")
            krec = self._kernel(kernel)
            device = queue.device
            byteorder = "little" if device.endian_little else "big"
            gsize = [int(x) for x in global_size]
            lsize = [int(x) for x in local_size] if local_size is not None else None
            if g_times_l and lsize:
                gsize = [g * l for g, l in zip(gsize, lsize)]
            args = []
            for i in range(kernel.num_args):
                if i not in krec.args:
                    raise RuntimeError(f"argument {i} was never set")
                args.append(self._argument(queue, kernel, i, krec.args[i], byteorder, n))
            inst: dict[str, Any] = {"language": "OpenCL", "endianness": byteorder,
                                    "kernel_file": self._kernel_file(prog.source)}
            if lsize is not None:
                inst["local_size"] = lsize
            inst["global_size"] = gsize
            if global_offset is not None:
                inst["global_offset"] = [int(x) for x in global_offset]
            inst["compiler_flags"] = prog.options
            inst["entry_point"] = kernel.function_name
            inst["kernel_arguments"] = args
            calls = list(prog.calls)
            calls += [krec.calls[k] for k in ("clCreateKernel", "clSetKernelArg") if k in krec.calls]
            if site:
                calls.append(site)
            inst["host_api_calls"] = calls
            self.launches.append(inst)
            self._preprocess(inst["kernel_file"], prog.words)

    def _argument(self, queue: Any, kernel: Any, i: int, value: Any, byteorder: str, launch: int) -> dict[str, Any]:
        import pyopencl as cl
        space = {cl.kernel_arg_address_qualifier.GLOBAL: "global", cl.kernel_arg_address_qualifier.LOCAL: "local",
                 cl.kernel_arg_address_qualifier.CONSTANT: "constant"}.get(
            kernel.get_arg_info(i, cl.kernel_arg_info.ADDRESS_QUALIFIER), "private")
        type_name = kernel.get_arg_info(i, cl.kernel_arg_info.TYPE_NAME).strip()
        if hasattr(value, "base_data") and hasattr(value, "offset"):
            # a pyopencl Array: the kernel gets its whole base buffer (pyopencl passes any offset
            # as a separate argument)
            value = value.base_data
        if isinstance(value, cl.LocalMemory):
            return {"type": "array", "size": int(value.size), "address_space": "local"}
        if isinstance(value, cl.Sampler):
            return {"type": "sampler"}
        if isinstance(value, cl.Image):
            return {"type": "image"}
        if isinstance(value, cl.MemoryObjectHolder):
            size = int(value.size)
            data = np.empty(size, dtype=np.uint8)
            # a MemoryObjectHolder is what pyopencl's stubs call Buffer or Image
            cl.enqueue_copy(queue, data, value, is_blocking=True)  # type: ignore[call-overload]
            name = f"launch{launch}_arg{i}.bin"
            write_bytes(self.directory / name, data.tobytes(), root=self.directory)
            flags = _flag_names(int(value.flags))
            return {"type": "array", "size": size, "address_space": space if space != "private" else "global",
                    "flags": flags, "data": name}
        if value is None:
            return {"type": "array", "address_space": space if space != "private" else "global"}
        # a by-value argument: numpy scalars and arrays carry their bytes; Python numbers take the
        # parameter's declared type
        if isinstance(value, (np.generic, np.ndarray)):
            raw = np.ascontiguousarray(value).tobytes()
        elif isinstance(value, (bytes, bytearray, memoryview)):
            raw = bytes(value)
        else:
            prg = self._programs.get(kernel.program.int_ptr)
            t = parse_type(type_name, source_typedefs(prg.source if prg else ""))
            if t.dtype is None:
                raise RuntimeError(f"argument {i} ({type_name}) is a Python {type(value).__name__}; "
                                   "its bytes are unknown")
            raw = np.array(value, dtype="<" + t.dtype).tobytes()
        # the device receives these bytes as they are: the hex is the number they hold in its byte order
        return {"type": "scalar", "value": hex_value(raw, byteorder)}

    def _preprocess(self, kernel_file: str, words: Sequence[str]) -> None:
        """Write ``kernelN.pre.cl``: the source after the preprocessor, with the build's -D/-I/-U
        (clang -E when installed, else the pure-Python pcpp that pip installs with kernellab)."""
        src = self.directory / kernel_file
        pre = src.with_name(src.stem + ".pre.cl")
        if pre.exists():
            return
        flags: list[tuple[str, str]] = []
        for j, w in enumerate(words):
            if w in ("-D", "-I", "-U") and j + 1 < len(words):
                flags.append((w, words[j + 1]))
            elif w[:2] in ("-D", "-I", "-U") and len(w) > 2:
                flags.append((w[:2], w[2:]))
        tool = tools.find("clang")  # also clang-14 and the like (tools.LLVM_VERSIONED)
        try:
            if tool is not None:
                argv = ["-E", "-P", "-x", "cl", "-cl-std=CL1.2", "-cl-no-stdinc",
                        *[f"{f}{v}" for f, v in flags], str(src)]
                text = tool.run(argv, what=f"preprocessing {src.name}").stdout
            else:
                text = _pcpp(src, flags).encode()
        except Exception as exc:  # the capture itself stays valid without its .pre.cl
            self.notes.append(f"{pre.name} not written: {exc}")
            return
        write_bytes(pre, text, root=self.directory)

    def write(self) -> Path:
        path = self.directory / CAPTURE_FILE
        self.directory.mkdir(parents=True, exist_ok=True)
        write_text(path, json.dumps(self.launches, indent=2) + "\n", root=self.directory)
        return path


# --- the wrappers install() puts around pyopencl's functions ----------------------------------
# Each takes the capture and the original function and returns the replacement; the wrappers
# are called by pyopencl's callers, so _call_site finds the user's frame past them.

def _program_init(cap: Capture, orig: Any) -> Any:
    def __init__(prg: Any, *args: Any, **kwargs: Any) -> None:
        orig(prg, *args, **kwargs)
        src = getattr(prg, "_source", None)
        site = _call_site("clCreateProgramWithSource")
        prg._kernellab_record = _ProgramRecord(src or "", calls=[site] if site else [])
    return __init__


def _program_build(cap: Capture, orig: Any) -> Any:
    def build(prg: Any, options: Any = None, *args: Any, **kwargs: Any) -> Any:
        site = _call_site("clBuildProgram")
        # argument types are needed to write each argument; the flag changes no code
        opts = [] if options is None else ([options] if isinstance(options, str) else list(options))
        result = _attributed("clBuildProgram", lambda: orig(prg, [*opts, "-cl-kernel-arg-info"], *args, **kwargs))
        rec = getattr(prg, "_kernellab_record", None)
        if rec is not None and rec.source:
            rec.options = " ".join(opts)
            rec.words = tuple(w for o in opts for w in (shlex.split(o) if isinstance(o, str) else [str(o)]))
            if site:
                rec.calls.append(site)
            with cap._lock:
                cap._programs[result.int_ptr] = rec
        return result
    return build


def _program_getattr(cap: Capture, orig: Any) -> Any:
    def __getattr__(prg: Any, attr: str) -> Any:
        knl = orig(prg, attr)
        site = _call_site("clCreateKernel")
        if site:
            cap._kernel(knl).calls["clCreateKernel"] = site
        return knl
    return __getattr__


def _all_kernels(cap: Capture, orig: Any) -> Any:
    def all_kernels(prg: Any) -> Any:
        knls = orig(prg)
        site = _call_site("clCreateKernelsInProgram")
        for k in knls:
            if site:
                cap._kernel(k).calls["clCreateKernel"] = site
        return knls
    return all_kernels


def _set_arg(cap: Capture, orig: Any) -> Any:
    def set_arg(knl: Any, index: int, value: Any) -> Any:
        rec = cap._kernel(knl)
        rec.args[index] = value
        site = _call_site("clSetKernelArg")
        if site:
            rec.calls["clSetKernelArg"] = site
        return orig(knl, index, value)
    return set_arg


def _set_args(cap: Capture, orig: Any) -> Any:
    def set_args(knl: Any, *values: Any) -> Any:
        site = _call_site("clSetKernelArg")
        if site:
            cap._kernel(knl).calls["clSetKernelArg"] = site
        return orig(knl, *values)
    return set_args


def _kernel_call(cap: Capture, orig: Any) -> Any:
    def __call__(knl: Any, *args: Any, **kw: Any) -> Any:
        site = _call_site("clSetKernelArg")
        if site:
            cap._kernel(knl).calls["clSetKernelArg"] = site
        return _attributed("clEnqueueNDRangeKernel", lambda: orig(knl, *args, **kw))
    return __call__


# pyopencl's generated argument setters end in these three: they see every argument with its
# OpenCL index, whatever Python objects (Arrays, offsets, packed scalars) the caller passed

def _set_arg_pairs(value_of: Callable[[Any], Any]) -> Callable[[Capture, Any], Any]:
    """The wrapper of a setter taking (index, value) pairs; ``value_of`` is what is recorded."""
    def make(cap: Capture, orig: Any) -> Any:
        def set_arg_pairs(knl: Any, pairs: Any) -> Any:
            rec = cap._kernel(knl)
            for j in range(0, len(pairs), 2):
                rec.args[int(pairs[j])] = value_of(pairs[j + 1])
            return orig(knl, pairs)
        return set_arg_pairs
    return make


_set_arg_multi = _set_arg_pairs(lambda value: value)
_set_arg_buf_multi = _set_arg_pairs(bytes)


def _set_arg_buf_pack_multi(cap: Capture, orig: Any) -> Any:
    def _set_arg_buf_pack_multi(knl: Any, triples: Any) -> Any:
        rec = cap._kernel(knl)
        for j in range(0, len(triples), 3):
            char = triples[j + 1]
            char = char.decode() if isinstance(char, bytes) else str(char)
            rec.args[int(triples[j])] = struct.pack(char, triples[j + 2])
        return orig(knl, triples)
    return _set_arg_buf_pack_multi


def _enqueue(cap: Capture, orig: Any) -> Any:
    # pyopencl's own parameter names, so keyword calls keep working
    def enqueue_nd_range_kernel(queue: Any, kernel: Any, global_work_size: Any, local_work_size: Any,
                                global_work_offset: Any = None, wait_for: Any = None,
                                g_times_l: bool = False, allow_empty_ndrange: bool = False) -> Any:
        site = _call_site("clEnqueueNDRangeKernel")
        try:
            cap._record_launch(queue, kernel, global_work_size, local_work_size, global_work_offset,
                               g_times_l, site)
        except Exception as exc:  # a capture problem must not break the user's program
            cap.notes.append(f"launch of {getattr(kernel, 'function_name', '?')} not captured: {exc}")
        return _attributed("clEnqueueNDRangeKernel", lambda: orig(
            queue, kernel, global_work_size, local_work_size, global_work_offset, wait_for, g_times_l,
            allow_empty_ndrange))
    return enqueue_nd_range_kernel


def _pcpp(src: Path, flags: list[tuple[str, str]]) -> str:
    # the pure-Python preprocessor is the fallback when no clang is installed
    from pcpp import Preprocessor  # type: ignore[import-untyped]
    p = Preprocessor()
    p.line_directive = None
    for flag, value in flags:
        if flag == "-D":
            name, _, val = value.partition("=")
            p.define(f"{name} {val or '1'}")
        elif flag == "-U":
            p.undef(value)
        else:
            p.add_path(value)
    p.add_path(str(src.parent))
    p.parse(src.read_text(), str(src))
    out = io.StringIO()
    p.write(out)
    if p.return_code:
        raise RuntimeError(f"pcpp reported {p.return_code} error(s) preprocessing {src.name}")
    return out.getvalue()


def _flag_names(value: int) -> list[str]:
    import pyopencl as cl
    names = []
    for name in ("READ_WRITE", "WRITE_ONLY", "READ_ONLY", "USE_HOST_PTR", "ALLOC_HOST_PTR", "COPY_HOST_PTR",
                 "HOST_WRITE_ONLY", "HOST_READ_ONLY", "HOST_NO_ACCESS"):
        bit = getattr(cl.mem_flags, name, 0)
        if bit and value & bit:
            names.append("CL_MEM_" + name)
    return names


#: the capture recording now: the program's OpenCL calls reach kernellab through process-wide hooks
_active: Capture | None = None


@contextlib.contextmanager
def capture(directory: str | os.PathLike[str]) -> Iterator[Capture]:
    """Record every pyopencl kernel launch inside the block into ``directory/capture.json``.

    The file is written when the block ends (also when it raises). Captures do not nest.
    """
    global _active
    if _active is not None:
        raise RuntimeError("a kernellab capture is already active")
    cap = Capture(directory)
    cap.directory.mkdir(parents=True, exist_ok=True)
    cap.install()
    _active = cap
    try:
        yield cap
    finally:
        cap.uninstall()
        _active = None
        cap.write()


class _CallableModule(types.ModuleType):
    """Lets ``kernellab.capture`` be both this module and the context manager:
    ``with kernellab.capture(DIR):`` works however the name was reached."""

    def __call__(self, directory: str | os.PathLike[str]) -> contextlib.AbstractContextManager[Capture]:
        return capture(directory)


sys.modules[__name__].__class__ = _CallableModule
