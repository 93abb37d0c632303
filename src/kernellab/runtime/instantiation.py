"""Running kernel-instantiation files (GPUVerify JSON) on an OpenCL device.

Each instantiation is one ``clEnqueueNDRangeKernel``: the kernel is built with the file's
``compiler_flags``, every argument is made from its record (hex scalars decoded with the file's
endianness and the parameter's type, arrays from their ``.bin`` files, ``__local`` arrays of
``size`` bytes), and the launch uses the file's sizes and offset. Arguments the file leaves
unconstrained are filled deterministically from the seed and reported. A launch runs as a scenario
in memory through the one executor (:func:`as_scenario`), directly where the model cannot hold it yet.
"""
from __future__ import annotations

import math
import mmap
import os
import re
import shutil
import sys
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernellab import compiler_options
from kernellab import model as m
from kernellab.backends import opencl_abi as abi
from kernellab.backends.base import Backend, BackendOptions, Buffer, Program, ProgramSpec, SpecConstant, choose_device
from kernellab.backends.feature_specs import Image, KernelArg
from kernellab.backends.registry import backend_class
from kernellab.compile.pipeline import driver_source
from kernellab.errors import BackendError, CompileError, InputError, KernellabError, Problem
from kernellab.formats import gpuverify
from kernellab.formats.gpuverify import (
    ArrayArgument,
    ImageArgument,
    KernelArgument,
    KernelInstantiation,
    SamplerArgument,
    ScalarArgument,
)
from kernellab.native import launch_guard
from kernellab.opencl_types import dtype_size
from kernellab.outputs import OutputSet
from kernellab.records import dataclass

if TYPE_CHECKING:  # NumPy only where values are generated or swapped: verify's launches run without it
    import numpy as np

    from kernellab.backends.base import KernelLaunchFeature

Report = Callable[[str], None]


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr)


@dataclass
class ArrayValue:
    """A ``__global``/``__constant`` argument before any device holds it: its initial bytes in
    the device's order (a mapped file where it came from one) and the flags it is created with."""

    size: int
    data: Any
    flags: tuple[str, ...]
    #: element type code for byte-order conversion (None = bytes)
    dtype: str | None
    #: the kernel cannot write it (__constant, CL_MEM_READ_ONLY): its final bytes are these (a
    #: Path: the file's, copied as they are), no read-back needed; None when it may change
    unchanged: Any = None


@dataclass(frozen=True)
class ImageValue:
    """An image argument before any device holds it: RGBA float texels of ``shape``."""

    shape: tuple[int, ...]
    texels: Any
    access: str


@dataclass(frozen=True)
class SamplerValue:
    """A sampler argument: unnormalized coordinates, clamp-to-edge, nearest filtering."""


@dataclass
class PreparedLaunch:
    """One instantiation made concrete on a backend: the program, the argument values, and which
    buffers are outputs."""

    inst: KernelInstantiation
    program: Program
    #: the program's parameters, in order, as the driver reports them
    params: list[KernelArg]
    args: list[Any]
    #: argument index -> device buffer, for every global/constant array (written as arg<N>.bin)
    arrays: dict[int, Buffer] = field(default_factory=dict)
    #: argument index -> element type code for byte-order conversion (None = bytes)
    array_dtypes: dict[int, str | None] = field(default_factory=dict)
    #: arrays the kernel cannot write (__constant, CL_MEM_READ_ONLY): their bytes as uploaded
    unchanged: dict[int, Any] = field(default_factory=dict)
    #: one sentence per argument filled from the seed
    filled: list[str] = field(default_factory=list)
    #: (sizeof, alignof) of the by-value types only the compiler can size
    layout: dict[str, tuple[int, int]] = field(default_factory=dict)

    def launch(self, backend: Backend) -> None:
        """Enqueue the launch directly (its arguments made on ``backend`` by :func:`prepare`)."""
        i = self.inst
        try:
            launches(backend).launch(self.program, self.args, i.global_size, i.local_size, i.global_offset,
                           label=f"{i.entry_point}#{i.index}")
        except BackendError as exc:
            named = self.named(exc)
            if named is exc:
                raise
            raise named from exc

    def named(self, exc: BackendError) -> KernellabError:
        """A driver's refusal of an argument's size as bad input at its value; other errors as they are."""
        found = re.match(r"clSetKernelArg\(\w+, (\d+)\)", exc.call)
        if not found or exc.code != "CL_INVALID_ARG_SIZE":
            return exc
        n = int(found.group(1))
        arg = self.params[n]
        return InputError([_problem(self.inst, ["kernel_arguments", n, "value"],
                                    f"the driver rejected this value's size for parameter {n} "
                                    f"({arg.type_name} {arg.name}): kernellab cannot know the size of "
                                    "this type, so write the value with all its bytes (two hex digits "
                                    "per byte, leading zeros kept)")])


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


def launches(backend: Backend) -> KernelLaunchFeature:
    """The backend's launches by position, or an error naming the backend that has none."""
    return backend.need(backend.kernel_launches(), "kernel_launches")


def open_backend(device: str | None, options: BackendOptions = BackendOptions()) -> Backend:
    """The OpenCL backend on ``device`` (index or name substring; None = best), through the registry."""
    cls = backend_class("opencl")
    return cls(choose_device(cls.devices(), device), options)


def build(backend: Backend, inst: KernelInstantiation,
          options: compiler_options.Options | None = None, source: bytes | None = None) -> Program:
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
        return backend.create_program(spec)
    except CompileError as exc:
        text = str(exc)
        where = ["entry_point"] if "no kernel named" in text else ["kernel_file"]
        err = InputError([_problem(inst, where, text)])
        raise err from exc


def is_uniform(inst: KernelInstantiation) -> bool:
    """Every work-group full: the local size divides the global size in every dimension."""
    return inst.local_size is None or all(g % l == 0 for g, l in zip(inst.global_size, inst.local_size))


def non_uniform_refusal(backend: Backend) -> str | None:
    """Why the device cannot run work-groups that do not divide the global size (None: it can).

    They are legal from OpenCL C 2.0 (optional again in 3.0, where the device says); Oclgrind
    runs them although it reports OpenCL C 1.2."""
    device = launches(backend)
    if device.is_simulator:
        return None
    version = device.language_version()
    name = backend.device.name
    if version is None or version < (2, 0):
        have = f"OpenCL C {version[0]}.{version[1]}" if version else "no OpenCL C version"
        return (f"work-groups of unequal size need OpenCL C 2.0 and {name} supports {have} "
                "(run it on Oclgrind: --device Oclgrind)")
    if version >= (3, 0):
        if not device.non_uniform_work_groups():
            return f"work-groups of unequal size are optional in OpenCL 3.0 and {name} does not support them"
    return None


def non_uniform_options(backend: Backend, inst: KernelInstantiation) -> compiler_options.Options:
    """The build options for ``inst`` (its file's, through the door): work-groups of unequal size
    need the kernel built as OpenCL C 2.0 or later, unless the file's flags choose a standard."""
    options = file_options(inst)
    if is_uniform(inst) or options.has(compiler_options.STD):
        return options
    device = launches(backend)
    version = None if device.is_simulator else device.language_version()
    std = f"CL{version[0]}.{version[1]}" if version and version >= (2, 0) else "CL2.0"
    return options + compiler_options.own(f"-cl-std={std}")


def check_work_groups(backend: Backend, insts: Sequence[KernelInstantiation]) -> None:
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


def make_arguments(backend: Backend, inst: KernelInstantiation, program: Program, seed: int = 0
                   ) -> PreparedLaunch:
    """Every argument of ``inst``, none on a device yet (arrays as :class:`ArrayValue`, images
    and samplers as :class:`ImageValue`/:class:`SamplerValue`; ``backend`` sizes the structs);
    all mismatches with the kernel's parameters are reported together as bad input."""
    device = launches(backend)
    params = device.kernel_arguments(program)
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
    launch = PreparedLaunch(inst, program, params, [])
    # structs and other by-value types numpy cannot size: the compiler says how big they are
    layout = device.type_layout(program, abi.unsized_types(params))
    sizes = {name: size for name, (size, _) in layout.items()}
    for n, (arg, rec) in enumerate(zip(params, records)):
        if rec is None:  # whole list unconstrained: make a record of the parameter's kind
            rec = _UNCONSTRAINED[arg.kind]()
        launch.args.append(maker.argument(n, arg, rec, sizes.get(arg.type_name)))
    if not maker.problems:
        from kernellab.runtime.limits import local_memory_problems
        local = [(inst.pointer("kernel_arguments", n), a.size) for n, a in enumerate(launch.args)
                 if isinstance(a, abi.LocalMemory)]
        maker.problems += local_memory_problems(str(inst.file), inst.entry_point, (
            inst.pointer("kernel_file"), device.static_local_memory(program)), local, backend.limits)
    if maker.problems:
        raise InputError(maker.problems)
    launch.filled = maker.filled
    launch.layout = dict(layout)
    return launch


def prepare(backend: Backend, inst: KernelInstantiation, program: Program, seed: int = 0
            ) -> PreparedLaunch:
    """Make every argument of ``inst`` on ``backend`` (arrays allocated and written); all
    mismatches with the kernel's parameters are reported together as bad input."""
    return realize(backend, make_arguments(backend, inst, program, seed))


def realize(backend: Backend, launch: PreparedLaunch) -> PreparedLaunch:
    """``launch`` with its arrays, images and samplers created on ``backend`` (in argument order:
    Oclgrind numbers memory objects by creation, and verify names an argument by that number)."""
    device = launches(backend)
    for n, value in enumerate(launch.args):
        if isinstance(value, ImageValue):
            launch.args[n] = device.make_image(value.shape, value.texels, value.access)
        elif isinstance(value, SamplerValue):
            launch.args[n] = device.make_sampler()
        elif isinstance(value, ArrayValue):
            buf = device.alloc_with_flags(value.size, value.flags, uid=f"arg{n}")
            backend.write_buffer(buf, value.data)
            launch.args[n] = launch.arrays[n] = buf
            launch.array_dtypes[n] = value.dtype
            if value.unchanged is not None:
                launch.unchanged[n] = value.unchanged
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

    backend: Backend
    inst: KernelInstantiation
    seed: int
    filled: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    def _fill_note(self, n: int, text: str) -> None:
        self.filled.append(f"{self.inst.file}: {self.inst.pointer('kernel_arguments', n)}: {text}")

    def argument(self, n: int, arg: KernelArg, rec: KernelArgument, size: int | None) -> Any:
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
            return self.local(n, arg, rec) if arg.kind == "local" else self.array(n, arg, rec)
        if isinstance(rec, SamplerArgument):
            self._fill_note(n, f"sampler argument {n} ({arg.name}) uses unnormalized coordinates, "
                               "clamp-to-edge, nearest filtering")
            return SamplerValue()
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

    def array(self, n: int, arg: KernelArg, rec: ArrayArgument) -> ArrayValue:
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
        data = _to_device_order(data, arg.type.dtype, inst.byteorder)
        value = ArrayValue(size, data, tuple(rec.flags or ()), arg.type.dtype)
        if arg.address_space == "constant" or "CL_MEM_READ_ONLY" in value.flags:
            # the kernel cannot change it: its final bytes are its initial bytes, no read-back needed
            as_file = isinstance(data, mmap.mmap) and rec.data_path is not None and len(data) == size
            value.unchanged = rec.data_path if as_file else data
        return value

    def image(self, n: int, arg: KernelArg) -> ImageValue | None:
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
        return ImageValue(tuple(shape), values.reshape(tuple(reversed(shape)) + (4,)), arg.access)


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


# --- a launch as a scenario: the one executor runs it ------------------------------------------


def expressible(launch: PreparedLaunch) -> bool:
    """Whether a scenario holds the launch exactly: buffers, ``__local`` arrays of whole elements
    and by-value arguments whose size is known. Images, samplers and values only the driver can
    size are launched directly (docs/architecture.md, "Kernel instantiations run as scenarios")."""
    for arg, value in zip(launch.params, launch.args):
        if arg.kind in ("image", "sampler"):
            return False
        if arg.kind == "local" and (value.size == 0 or value.size % abi.local_element_size(arg)):
            return False
        if arg.kind == "scalar" and arg.type.size is None and arg.type_name not in launch.layout:
            return False
    return True


def _access(flags: Sequence[str], space: str) -> str:
    if space == "constant" or "CL_MEM_READ_ONLY" in flags:
        return "readonly"
    return "writeonly" if "CL_MEM_WRITE_ONLY" in flags else "readwrite"


@dataclass
class LaunchScenario:
    """One launch as a scenario in memory: a shader, a buffer per array argument, the by-value
    bytes as push data, and a dispatch with the launch's offset and sizes in work-items."""

    scenario: m.Scenario
    #: the program as built for the launch's parameters, with its specialization (local sizes)
    program: ProgramSpec
    #: buffer uid -> its argument's initial bytes and flags
    values: dict[str, ArrayValue]
    push: dict[str, bytes]
    #: argument index -> buffer uid
    arrays: dict[int, str]
    #: the launch's instantiation, where the executor's problems are placed
    inst: KernelInstantiation | None = None
    #: argument indices of the ``__local`` parameters, in order (specialization ids 3, 4, ...)
    local_arguments: list[int] = field(default_factory=list)

    def place(self, where: str) -> str:
        """The place in the instantiation file of a problem the executor found at ``where`` (a
        JSON pointer into the scenario): the field the scenario's took its value from."""
        inst = self.inst
        assert inst is not None
        parts = [p for p in where.split("/") if p]
        argument = {uid: n for n, uid in self.arrays.items()}
        if parts[:1] == ["resources"] and len(parts) >= 2 and parts[1].isdigit():
            r = self.scenario.resources[int(parts[1])]
            field_ = parts[3] if len(parts) > 3 else ""
            if isinstance(r, m.Buffer):
                return inst.pointer("kernel_arguments", argument[r.uid], *(["size"] if field_ == "size" else []))
            if isinstance(r, m.Shader):
                if field_ == "specialization_constants":
                    constant = r.specialization_constants[int(parts[4])].id if len(parts) > 4 else 0
                    if constant in abi.LOCAL_SIZE_SPEC_IDS:
                        return inst.pointer("local_size")
                    return inst.pointer("kernel_arguments", self.local_arguments[constant - abi.FIRST_LOCAL_ARGUMENT_SPEC_ID],
                                        "size")
                return inst.pointer({"entry": "entry_point", "build_options": "compiler_flags"}.get(field_,
                                                                                                   "kernel_file"))
            return inst.pointer("kernel_arguments")
        if parts[:1] == ["commands"]:
            rest = parts[3:]
            if rest[:1] == ["rangeND"]:
                return inst.pointer("global_size", *[int(k) for k in rest[1:2]])
            if rest[:1] == ["global_offset"]:
                return inst.pointer("global_offset")
            if rest[:1] == ["bindings"] and len(rest) > 1:
                command = self.scenario.commands[0]
                assert isinstance(command, m.DispatchCompute)
                return inst.pointer("kernel_arguments", argument[command.bindings[int(rest[1])].resource_ref])
        return inst.pointer()



def as_scenario(launch: PreparedLaunch, *, whole_groups: bool = False) -> LaunchScenario:
    """The scenario of a launch made by :func:`make_arguments`, laid out as
    :mod:`kernellab.backends.opencl_abi` maps OpenCL C arguments: shader ``kernel<i>``, buffers
    ``i<i>_arg<N>``, push data ``i<i>_push``. ``whole_groups``: for a file, which counts whole
    work-groups (a launch with no ``local_size`` gets :func:`~kernellab.backends.opencl_abi.default_local_size`);
    otherwise the global size is kept in work-items and a missing local size is the driver's
    choice. An image or sampler parameter is bad input naming it."""
    inst, args = launch.inst, launch.params
    i = inst.index
    uid = f"kernel{i}"
    local = inst.local_size or (abi.default_local_size(inst.global_size) if whole_groups else None)
    specs = [{"id": d, "value": int(n)} for d, n in enumerate(local or ())]
    local_args = [(a, v) for a, v in zip(args, launch.args) if a.kind == "local"]
    specs += [{"id": abi.FIRST_LOCAL_ARGUMENT_SPEC_ID + k, "value": abi.local_count(v.size, abi.local_element_size(a))}
              for k, (a, v) in enumerate(local_args)]
    unheld = [Problem(str(inst.file), inst.pointer("kernel_arguments", a.index),
                      f"{a.kind} arguments have no scenario equivalent; this launch cannot be imported")
              for a in args if a.kind in ("image", "sampler")]
    if unheld:
        raise InputError(unheld)
    push = abi.pack_push_constants(args, {a.index: bytes(v) for a, v in zip(args, launch.args) if a.kind == "scalar"},
                                   launch.layout)
    shader = m.Shader(uid=uid, src=inst.kernel_file, type="OpenCL-C", entry=inst.entry_point,
                      build_options=inst.compiler_flags or "", push_constants_size=len(push),
                      specialization_constants=specs, src_path=inst.kernel_path)
    resources: list[m.Resource] = [shader]
    bindings, values, arrays = [], {}, {}
    binding_of = abi.buffer_bindings(args)
    for a, v in zip(args, launch.args):
        if isinstance(v, ArrayValue):
            buffer = f"i{i}_arg{a.index}"
            resources.append(m.Buffer(uid=buffer, size=v.size, shader_access=_access(v.flags, a.address_space)))
            bindings.append({"set": 0, "id": binding_of[a.index], "resource_ref": buffer})
            values[buffer], arrays[a.index] = v, buffer
    offset = {"global_offset": list(inst.global_offset)} if inst.global_offset and any(inst.global_offset) else {}
    groups = [-(-g // n) for g, n in zip(inst.global_size, local)] if local else [1] * len(inst.global_size)
    command = m.DispatchCompute(shader_ref=uid, rangeND=groups, bindings=bindings, **offset)
    if not whole_groups:
        command.global_size = tuple(inst.global_size)
    pushed = {}
    if push:
        # the bytes come from the file's kernel_arguments (a file of them only where one is written)
        resources.append(m.RawData(uid=f"i{i}_push", src=f"{inst.file}#{inst.pointer('kernel_arguments')}"))
        command.push_data_ref = f"i{i}_push"
        pushed[command.push_data_ref] = push
    program = launch.program.spec.replace(push_constants_size=len(push),
                                          specialization=tuple(SpecConstant(c["id"], c["value"]) for c in specs))
    return LaunchScenario(m.Scenario(resources, [command], file=inst.file), program, values, pushed, arrays, inst,
                          [a.index for a, _ in local_args])


class _LaunchInputs:
    """A launch's initial bytes, from memory (mapped files where the file gave them)."""

    def __init__(self, launch: LaunchScenario):
        self.launch = launch

    def fill_buffer(self, backend: Backend, r: m.Buffer, buf: Buffer, element: str) -> bool:
        backend.write_buffer(buf, self.launch.values[r.uid].data)
        return True

    def fill_image(self, backend: Backend, r: m.Image, image: Image) -> None:
        return None

    def raw_data(self, r: m.RawData) -> bytes | None:
        return self.launch.push.get(r.uid)


class _LentBackend:
    """The runner's open backend, lent to the executor; buffers created with their arguments' flags."""

    def __init__(self, backend: Backend, launch: LaunchScenario):
        self.backend, self.launch = backend, launch

    def lease(self, own: Callable[[], Backend], needs_own_device: bool) -> AbstractContextManager[Backend]:
        return nullcontext(self.backend)

    def alloc_buffer(self, backend: Backend, size: int, uid: str) -> Buffer:
        return launches(self.backend).alloc_with_flags(size, self.launch.values[uid].flags, uid=uid)

    def create_program(self, backend: Backend, spec: ProgramSpec) -> Program:
        return backend.create_program(spec)


def _run_as_scenario(be: Backend, launch: PreparedLaunch, device_limits: bool = True) -> dict[int, Any]:
    """Run an :func:`expressible` launch through the executor; argument index -> its buffer."""
    from kernellab.runtime.executor import Executor, RunOptions

    shaped = as_scenario(launch)
    executor = Executor(shaped.scenario, RunOptions(backend=be.name, device_limits=device_limits),
                        inputs=_LaunchInputs(shaped),
                        write_files=False, lease=_LentBackend(be, shaped),
                        programs={shaped.scenario.commands[0].shader_ref: shaped.program})  # type: ignore[attr-defined]
    try:
        executor.run()
    except InputError as exc:  # the executor's checks place problems in the scenario: moved to the file's places
        raise InputError([p.replace(file=str(launch.inst.file), where=shaped.place(p.where))
                          for p in exc.problems]) from exc
    return {n: executor.buffers[uid] for n, uid in shaped.arrays.items()}


def launch_arrays(be: Backend, launch: PreparedLaunch, *, device_limits: bool = True) -> dict[int, Any]:
    """Run one launch: as a scenario where the model holds it, else directly; its array buffers.
    ``device_limits``: sizes past the device's limits are bad input before the launch; without
    (verify), the driver refuses the launch and the checker reports it."""
    if not expressible(launch):
        launch = realize(be, launch)
        launch.launch(be)
        be.submit()
        return dict(launch.arrays)
    try:
        return _run_as_scenario(be, launch, device_limits)
    except BackendError as exc:
        named = launch.named(exc)
        if named is exc:
            raise
        raise named from exc


def run_instantiations(path: str | Path, output_dir: str | Path | None, *, index: int | None = None, seed: int = 0,
                       device: str | None = None, report: Report | None = None,
                       backend: Backend | None = None) -> int:
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
    be = backend or open_backend(device)
    try:
        check_work_groups(be, chosen)
        with OutputSet(output_dir) as outs:
            for inst in chosen:
                program = build(be, inst, non_uniform_options(be, inst))
                launch = make_arguments(be, inst, program, seed)
                for line in launch.filled:
                    report(line)
                with launch_guard.held(f"launch {inst.index} ({inst.entry_point}) of {path}"):
                    arrays = launch_arrays(be, launch)
                if output_dir is not None:
                    dest = output_dir_for(Path(output_dir), inst.index)
                    for n, buf in arrays.items():
                        value = launch.args[n]
                        same = value.unchanged if isinstance(value, ArrayValue) else launch.unchanged.get(n)
                        if isinstance(same, Path):
                            with outs.open(dest / f"arg{n}.bin") as fh:
                                _copy_file(same, fh)
                            continue
                        data = same if same is not None else be.read_buffer(buf).tobytes()
                        outs.bytes(dest / f"arg{n}.bin",
                                   _from_device_order(data, launch.params[n].type.dtype, inst.byteorder))
            written = outs.commit()
        where = f"; {len(written)} output file{'s' if len(written) != 1 else ''} in {output_dir}" \
            if output_dir is not None else ""
        report(f"{path}: ran {len(chosen)} launch{'es' if len(chosen) != 1 else ''} on {be.device.name}{where}")
    finally:
        if own:
            be.close()
    return 0
