"""Running kernel-instantiation files (GPUVerify JSON) on an OpenCL device.

Each instantiation is one ``clEnqueueNDRangeKernel``: the kernel is built with the file's
``compiler_flags``, every argument is made from its record (hex scalars decoded with the file's
endianness and the parameter's type, arrays from their ``.bin`` files, ``__local`` arrays of
``size`` bytes), and the launch uses the file's sizes and offset. Arguments the file leaves
unconstrained are filled deterministically from the seed and reported.
"""
from __future__ import annotations

import math
import mmap
import os
import re
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernellab import compiler_options
from kernellab.backends import opencl_abi as abi
from kernellab.backends.base import BackendOptions, ProgramSpec
from kernellab.backends.opencl import KernelArg, OpenCLBackend, OpenCLBuffer, OpenCLProgram
from kernellab.compile.pipeline import driver_source
from kernellab.errors import BackendError, CompileError, InputError, Problem
from kernellab.formats import gpuverify
from kernellab.opencl_types import dtype_size
from kernellab.formats.gpuverify import (ArrayArgument, ImageArgument, KernelArgument, KernelInstantiation,
                                         SamplerArgument, ScalarArgument)
from kernellab.native import launch_guard
from kernellab.outputs import OutputSet

if TYPE_CHECKING:  # NumPy only where values are generated or swapped: verify's launches run without it
    import numpy as np

Report = Callable[[str], None]


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr)


@dataclass
class PreparedLaunch:
    """One instantiation made concrete on a backend: the program, the argument values, and which
    buffers are outputs."""

    inst: KernelInstantiation
    program: OpenCLProgram
    args: list[Any]
    #: argument index -> device buffer, for every global/constant array (written as arg<N>.bin)
    arrays: dict[int, OpenCLBuffer] = field(default_factory=dict)
    #: argument index -> element type code for byte-order conversion (None = bytes)
    array_dtypes: dict[int, str | None] = field(default_factory=dict)
    #: arrays the kernel cannot write (__constant, CL_MEM_READ_ONLY): their bytes as uploaded
    unchanged: dict[int, Any] = field(default_factory=dict)
    #: one sentence per argument filled from the seed
    filled: list[str] = field(default_factory=list)

    def launch(self, backend: OpenCLBackend) -> None:
        i = self.inst
        try:
            backend.launch(self.program, self.args, i.global_size, i.local_size, i.global_offset,
                           label=f"{i.entry_point}#{i.index}")
        except BackendError as exc:
            m = re.match(r"clSetKernelArg\(\w+, (\d+)\)", exc.call)
            if m and exc.code == "CL_INVALID_ARG_SIZE":
                n = int(m.group(1))
                arg = self.program.args[n]
                raise InputError([_problem(i, ["kernel_arguments", n, "value"],
                                           f"the driver rejected this value's size for parameter {n} "
                                           f"({arg.type_name} {arg.name}): kernellab cannot know the size of "
                                           "this type, so write the value with all its bytes (two hex digits "
                                           "per byte, leading zeros kept)")]) from exc
            raise


def _problem(inst: KernelInstantiation, parts: Sequence[str | int], message: str) -> Problem:
    return Problem(str(inst.file), inst.pointer(*parts), message)


def _rng(seed: int, inst: KernelInstantiation, arg: int) -> np.random.Generator:
    import numpy as np
    return np.random.default_rng([seed, inst.index, arg])


#: elements generated per step: the values are made in the array's own type, a chunk at a time, so
#: a large unconstrained array costs its own size and not eight bytes per element on top
_SEED_CHUNK = 1 << 20


def seeded_values(dtype: str | None, count: int, rng: np.random.Generator) -> bytes:
    """``count`` elements of ``dtype`` from ``rng``: floats in [0, 1), integers in [0, 128), so a
    filled size or index stays small and a filled float stays finite."""
    import numpy as np
    if dtype is None:
        return rng.integers(0, 256, size=count, dtype=np.uint8).tobytes()
    dt = np.dtype("<" + dtype)
    out = bytearray(count * dt.itemsize)
    view = np.frombuffer(out, dtype=dt) if count else np.zeros(0, dt)
    for start in range(0, count, _SEED_CHUNK):
        n = min(_SEED_CHUNK, count - start)
        # one stream whatever the chunking: the generator continues where the last chunk stopped
        view[start:start + n] = rng.random(n) if dt.kind == "f" else rng.integers(0, 128, size=n)
    return bytes(out)


def _to_device_order(data: bytes, dtype: str | None, byteorder: str) -> bytes:
    """Data in the capture's byte order -> the device's (little-endian) order, per element."""
    if byteorder == "little" or dtype is None or dtype_size(dtype) == 1:
        return data
    import numpy as np
    n = dtype_size(dtype)
    usable = len(data) - len(data) % n
    swapped = np.frombuffer(data[:usable], dtype=">" + dtype).astype("<" + dtype).tobytes()
    return swapped + bytes(data[usable:])


#: the device's order -> the capture's: reversing each element's bytes is its own inverse
_from_device_order = _to_device_order


def file_options(inst: KernelInstantiation) -> compiler_options.Options:
    """The instantiation's ``compiler_flags`` through the door (:mod:`kernellab.compiler_options`):
    an option outside OpenCL C's allow-list is bad input (exit 2) at ``/N/compiler_flags``."""
    folder = inst.file.parent
    return compiler_options.read("opencl-c", inst.compiler_flags or "", folder, compiler_options.allowed_roots(folder),
                                 (str(inst.file), inst.pointer("compiler_flags")))


def build(backend: OpenCLBackend, inst: KernelInstantiation,
          options: compiler_options.Options | None = None, source: bytes | None = None) -> OpenCLProgram:
    """Build the instantiation's kernel with ``options`` (by default its file's, through the door);
    a compile error or a missing entry point is bad input pointing at ``kernel_file``/``entry_point``.
    ``source``: the kernel's :func:`driver_source` where the caller has it already."""
    options = file_options(inst) if options is None else options
    # the driver gets the kernel with its includes inlined and checked (an InputError names the include)
    if source is None:
        source = driver_source(inst.kernel_path, inst.file, (str(inst.file), inst.pointer("kernel_file")),
                               options=options)
    options = options.without_include_dirs()
    spec = ProgramSpec(uid=f"{inst.kernel_file}:{inst.entry_point}", code=source, language="opencl-c",
                       entry=inst.entry_point, options=options)
    try:
        return backend.create_program(spec)  # type: ignore[return-value]
    except CompileError as exc:
        text = str(exc)
        where = ["entry_point"] if "no kernel named" in text else ["kernel_file"]
        err = InputError([_problem(inst, where, text)])
        raise err from exc


def is_uniform(inst: KernelInstantiation) -> bool:
    """Every work-group full: the local size divides the global size in every dimension."""
    return inst.local_size is None or all(g % l == 0 for g, l in zip(inst.global_size, inst.local_size))


def _opencl_c_version(backend: OpenCLBackend) -> tuple[int, int] | None:
    m = re.search(r"OpenCL C (\d+)\.(\d+)", str(getattr(backend.cl_device, "opencl_c_version", "")))
    return (int(m.group(1)), int(m.group(2))) if m else None


#: CL_DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT: optional from OpenCL 3.0
_NON_UNIFORM_QUERY = 0x10AB


def non_uniform_refusal(backend: OpenCLBackend) -> str | None:
    """Why the device cannot run work-groups that do not divide the global size (None: it can).

    They are legal from OpenCL C 2.0 (optional again in 3.0, where the device says); Oclgrind
    runs them although it reports OpenCL C 1.2."""
    if backend.is_oclgrind:
        return None
    version = _opencl_c_version(backend)
    name = backend.device.name
    if version is None or version < (2, 0):
        have = f"OpenCL C {version[0]}.{version[1]}" if version else "no OpenCL C version"
        return (f"work-groups of unequal size need OpenCL C 2.0 and {name} supports {have} "
                "(run it on Oclgrind: --device Oclgrind)")
    if version >= (3, 0):
        try:
            supported = bool(backend.cl_device.get_info(_NON_UNIFORM_QUERY))
        except Exception:  # an ICD without the query: trust the version
            supported = True
        if not supported:
            return f"work-groups of unequal size are optional in OpenCL 3.0 and {name} does not support them"
    return None


def non_uniform_options(backend: OpenCLBackend, inst: KernelInstantiation) -> compiler_options.Options:
    """The build options for ``inst`` (its file's, through the door): work-groups of unequal size
    need the kernel built as OpenCL C 2.0 or later, unless the file's flags choose a standard."""
    options = file_options(inst)
    if is_uniform(inst) or options.has(compiler_options.STD):
        return options
    version = None if backend.is_oclgrind else _opencl_c_version(backend)
    std = f"CL{version[0]}.{version[1]}" if version and version >= (2, 0) else "CL2.0"
    return options + compiler_options.own(f"-cl-std={std}")


def check_work_groups(backend: OpenCLBackend, insts: Sequence[KernelInstantiation]) -> None:
    """Refuse, before anything runs, launches with unequal work-groups the device cannot run."""
    reason = None
    problems = []
    for inst in insts:
        if is_uniform(inst):
            continue
        reason = reason or non_uniform_refusal(backend)
        if reason is None:
            return
        for d, (g, l) in enumerate(zip(inst.global_size, inst.local_size or ())):
            if g % l:
                problems.append(_problem(inst, ["local_size", d], f"{l} does not divide global_size[{d}] = {g}: "
                                         + reason))
    if problems:
        raise InputError(problems)


def prepare(backend: OpenCLBackend, inst: KernelInstantiation, program: OpenCLProgram, seed: int = 0
            ) -> PreparedLaunch:
    """Make every argument of ``inst`` on ``backend``; all mismatches with the kernel's parameters
    are reported together as bad input."""
    params = program.args
    records = inst.kernel_arguments
    maker = _ArgumentMaker(backend, inst, seed)
    if records is None:
        records = [None] * len(params)  # type: ignore[list-item]
        maker.filled.append(f"{inst.file}: {inst.pointer()}: no kernel_arguments; every argument is unconstrained")
    elif len(records) != len(params):
        sig = ", ".join(f"{a.type_name} {a.name}" for a in params)
        raise InputError([_problem(inst, ["kernel_arguments"],
                                   f"has {len(records)} entries but kernel {inst.entry_point}({sig}) "
                                   f"takes {len(params)} arguments")])
    launch = PreparedLaunch(inst, program, [])
    # structs and other by-value types numpy cannot size: the compiler says how big they are
    sizes = {name: size for name, (size, _) in backend.type_layout(program, abi.unsized_types(params)).items()}
    for n, (arg, rec) in enumerate(zip(params, records)):
        if rec is None:  # whole list unconstrained: make a record of the parameter's kind
            rec = _UNCONSTRAINED[arg.kind]()
        launch.args.append(maker.argument(launch, n, arg, rec, sizes.get(arg.type_name)))
    if not maker.problems:
        from kernellab.runtime.limits import local_memory_problems
        local = [(inst.pointer("kernel_arguments", n), a.size) for n, a in enumerate(launch.args)
                 if isinstance(a, abi.LocalMemory)]
        maker.problems += local_memory_problems(str(inst.file), inst.entry_point, (
            inst.pointer("kernel_file"), backend.static_local_memory(program)), local, backend.limits)
    if maker.problems:
        raise InputError(maker.problems)
    launch.filled = maker.filled
    return launch


#: a record for each parameter kind when the file gives none, and the record type each kind needs
_UNCONSTRAINED: dict[str, Callable[[], KernelArgument]] = {
    "scalar": ScalarArgument, "buffer": ArrayArgument, "local": lambda: ArrayArgument(address_space="local"),
    "image": ImageArgument, "sampler": SamplerArgument}
_RECORD_TYPE = {"scalar": "scalar", "buffer": "array", "local": "array", "image": "image", "sampler": "sampler"}


@dataclass
class _ArgumentMaker:
    """Makes the argument values of one instantiation, noting what it fills from the seed and
    every problem."""

    backend: OpenCLBackend
    inst: KernelInstantiation
    seed: int
    filled: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    def _fill_note(self, n: int, text: str) -> None:
        self.filled.append(f"{self.inst.file}: {self.inst.pointer('kernel_arguments', n)}: {text}")

    def argument(self, launch: PreparedLaunch, n: int, arg: KernelArg, rec: KernelArgument,
                 size: int | None) -> Any:
        """The value of parameter ``n`` (None when it is refused: the problem is noted)."""
        inst = self.inst
        want = _RECORD_TYPE[arg.kind]
        if rec.type != want:
            self.problems.append(_problem(inst, ["kernel_arguments", n, "type"],
                                          f'is "{rec.type}" but parameter {n} of {inst.entry_point} is '
                                          f'"{arg.type_name} {arg.name}" (expected "{want}")'))
            return None
        if isinstance(rec, ScalarArgument):
            return self.scalar(n, arg, rec, size)
        if isinstance(rec, ArrayArgument):
            declared = "local" if arg.kind == "local" else arg.address_space
            if rec.address_space is not None and rec.address_space != declared:
                self.problems.append(_problem(inst, ["kernel_arguments", n, "address_space"],
                                              f'is "{rec.address_space}" but parameter {n} ({arg.type_name} '
                                              f'{arg.name}) is declared __{declared}'))
                return None
            return self.local(n, arg, rec) if arg.kind == "local" else self.array(launch, n, arg, rec)
        if isinstance(rec, SamplerArgument):
            self._fill_note(n, f"sampler argument {n} ({arg.name}) uses unnormalized coordinates, "
                               "clamp-to-edge, nearest filtering")
            return self.backend.make_sampler()
        return self.image(n, arg)

    def scalar(self, n: int, arg: KernelArg, rec: ScalarArgument, size: int | None) -> bytes | None:
        inst, seed = self.inst, self.seed
        size = arg.type.size or size
        if rec.value is None:
            if size is None:
                self.problems.append(_problem(inst, ["kernel_arguments", n],
                                              f"argument {n} ({arg.type_name} {arg.name}) has no value and its "
                                              "size is unknown, so it cannot be filled; give a value"))
                return None
            count = (4 if arg.type.count == 3 else arg.type.count) if arg.type.dtype else size
            data = seeded_values(arg.type.dtype, count, _rng(seed, inst, n))
            self._fill_note(n, f"argument {n} ({arg.type_name} {arg.name}) is unconstrained; filled from seed "
                               f"{seed} with {gpuverify.hex_value(data, 'little')}")
            return data
        digits = rec.value[2:].lstrip("0")
        if size is None:  # a struct or a typedef we cannot resolve: the hex string gives the width
            size = max(1, (len(rec.value) - 2 + 1) // 2)
        try:
            raw = gpuverify.hex_bytes(rec.value, size, inst.byteorder)
        except OverflowError:
            self.problems.append(_problem(inst, ["kernel_arguments", n, "value"],
                                          f"{rec.value} needs {(len(digits) + 1) // 2} bytes but parameter {n} "
                                          f"({arg.type_name} {arg.name}) has {size}"))
            return None
        return _to_device_order(raw, arg.type.dtype, inst.byteorder)

    def _default_items(self, local: bool) -> int:
        # one element per work-item (offset included), so an unconstrained launch stays in bounds
        inst = self.inst
        reach = [g + o for g, o in zip(inst.global_size, inst.global_offset or (0,) * len(inst.global_size))]
        return math.prod(inst.local_size if local and inst.local_size else reach)

    def local(self, n: int, arg: KernelArg, rec: ArrayArgument) -> abi.LocalMemory:
        size = rec.size
        if size is None:
            size = self._default_items(True) * abi.local_element_size(arg)
            self._fill_note(n, f"__local argument {n} ({arg.name}) has no size; using {size} bytes "
                               "(one element per work-item)")
        return abi.LocalMemory(size)

    def array(self, launch: PreparedLaunch, n: int, arg: KernelArg, rec: ArrayArgument) -> OpenCLBuffer:
        inst = self.inst
        data: Any = None
        if rec.data_path is not None:
            # mapped, not read: the driver copies straight from the page cache (copy-on-write, so
            # the mapping is writable and a ctypes driver call takes its address without a copy)
            data = _mapped(rec.data_path)
        elem = arg.type.size or 1
        size = rec.size if rec.size is not None else (len(data) if data is not None and len(data) else
                                                      self._default_items(False) * elem)
        if data is None:
            unit = dtype_size(arg.type.dtype) if arg.type.dtype else 1
            data = seeded_values(arg.type.dtype, -(-size // unit), _rng(self.seed, inst, n))[:size]
            self._fill_note(n, f"array argument {n} ({arg.type_name} {arg.name}) has no data; filled {size} "
                               f"bytes from seed {self.seed}")
        elif len(data) < size:
            data = bytes(data) + bytes(size - len(data))
        buf = self.backend.alloc_with_flags(size, rec.flags or (), uid=f"arg{n}")
        data = _to_device_order(data, arg.type.dtype, inst.byteorder)
        self.backend.write_buffer(buf, data)
        launch.arrays[n] = buf
        launch.array_dtypes[n] = arg.type.dtype
        if arg.address_space == "constant" or "CL_MEM_READ_ONLY" in (rec.flags or ()):
            # the kernel cannot change it: its final bytes are its initial bytes, no read-back needed
            as_file = isinstance(data, mmap.mmap) and rec.data_path is not None and len(data) == size
            launch.unchanged[n] = rec.data_path if as_file else data
        return buf

    def image(self, n: int, arg: KernelArg) -> Any:
        inst = self.inst
        base = arg.type_name.replace("const", "").strip()
        dims = {"image1d_t": 1, "image2d_t": 2, "image3d_t": 3}.get(base)
        if dims is None or dims > len(inst.global_size):
            self.problems.append(_problem(inst, ["kernel_arguments", n],
                                          f"image argument {n} ({arg.type_name} {arg.name}): the file gives no "
                                          "image description and its shape cannot be taken from the launch "
                                          "(supported: image1d_t/image2d_t/image3d_t with at least as many "
                                          "global_size dimensions)"))
            return None
        import numpy as np
        shape = inst.global_size[:dims]
        texels = math.prod(shape) * 4
        values = np.frombuffer(seeded_values("f4", texels, _rng(self.seed, inst, n)), dtype=np.float32)
        self._fill_note(n, f"image argument {n} ({arg.name}) is an RGBA float image of "
                           f"{'x'.join(map(str, shape))} texels (the global size) filled from seed {self.seed}")
        return self.backend.make_image(shape, values.reshape(tuple(reversed(shape)) + (4,)), arg.access)


def _mapped(path: Path) -> mmap.mmap | bytes:
    """The file's bytes, mapped (b"" for an empty file, which cannot be mapped)."""
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        return mmap.mmap(fh.fileno(), size, access=mmap.ACCESS_COPY) if size else b""


def _copy_file(src: Path, fh: Any) -> None:
    """Copy a whole file into an open file in the kernel (no trip through Python's memory)."""
    with open(src, "rb") as inp:
        remaining = os.fstat(inp.fileno()).st_size
        try:
            while remaining > 0:
                done = os.copy_file_range(inp.fileno(), fh.fileno(), remaining)
                if done == 0:
                    break
                remaining -= done
        except (AttributeError, OSError):  # no copy_file_range here (or across filesystems)
            fh.seek(0)
            fh.truncate()
            inp.seek(0)
            shutil.copyfileobj(inp, fh, 1 << 22)


def output_dir_for(output_dir: Path, index: int) -> Path:
    """``DIR`` for instantiation 0, ``DIR/<i>`` for instantiation i > 0."""
    return output_dir if index == 0 else output_dir / str(index)


def select(insts: list[KernelInstantiation], index: int | None, file: Path) -> list[KernelInstantiation]:
    if index is None:
        return insts
    if not 0 <= index < len(insts):
        raise InputError([Problem(str(file), "/", f"--index {index}: the file holds {len(insts)} "
                                  f"instantiation{'s' if len(insts) != 1 else ''} (0..{len(insts) - 1})")])
    return [insts[index]]


def run_instantiations(path: str | Path, output_dir: str | Path | None, *, index: int | None = None, seed: int = 0,
                       device: str | None = None, report: Report | None = None,
                       backend: OpenCLBackend | None = None) -> int:
    """Run the instantiations of a kernel-instantiation file and write every global/constant
    array argument's final bytes to ``DIR/arg<N>.bin`` (``DIR/<i>/arg<N>.bin`` for i > 0).

    ``index`` picks one instantiation (None = all, in order), ``seed`` fills unconstrained
    arguments, ``device`` picks the OpenCL device (index or name substring). Returns 0; bad input
    raises :class:`InputError` (exit 2) before anything is written.
    """
    report = report or _stderr
    path = Path(path)
    insts, warnings = gpuverify.load(path, non_uniform=True)
    for w in warnings:
        report(str(w))
    chosen = select(insts, index, path)
    own = backend is None
    be = backend or OpenCLBackend.open(device, BackendOptions())
    try:
        check_work_groups(be, chosen)
        with OutputSet(output_dir) as outs:
            for inst in chosen:
                program = build(be, inst, non_uniform_options(be, inst))
                launch = prepare(be, inst, program, seed)
                for line in launch.filled:
                    report(line)
                launch_guard.naming(f"launch {inst.index} ({inst.entry_point}) of {path}")
                launch.launch(be)
                be.submit()
                if output_dir is not None:
                    dest = output_dir_for(Path(output_dir), inst.index)
                    for n, buf in launch.arrays.items():
                        same = launch.unchanged.get(n)
                        if isinstance(same, Path):
                            with outs.open(dest / f"arg{n}.bin") as fh:
                                _copy_file(same, fh)
                            continue
                        data = same if same is not None else be.read_buffer(buf)
                        outs.bytes(dest / f"arg{n}.bin",
                                   _from_device_order(data, launch.array_dtypes.get(n), inst.byteorder))
            written = outs.commit()
        where = f"; {len(written)} output file{'s' if len(written) != 1 else ''} in {output_dir}" \
            if output_dir is not None else ""
        report(f"{path}: ran {len(chosen)} launch{'es' if len(chosen) != 1 else ''} on {be.device.name}{where}")
    finally:
        if own:
            be.close()
    return 0
