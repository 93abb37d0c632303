"""How OpenCL C kernel arguments are laid out when a scenario carries them (the clspv mapping).

Pure Python and NumPy, no driver: the OpenCL backend, the converters between scenarios and other
workload formats, and the kernel-instantiation runner share it, so they cannot drift apart.

* binding ``(set 0, id B)`` is the B-th ``__global``/``__constant`` pointer argument, counting
  only those, in parameter order;
* by-value arguments (scalars, vectors, structs) are the push-constant bytes, packed in argument
  order as a C struct, each at its natural alignment, padded to a multiple of 4 bytes; a struct's
  size and alignment come from the compiler (a :data:`Layout`);
* the work-group size is specialization constants 0, 1, 2, else the kernel's
  ``reqd_work_group_size``; ``__local`` pointer arguments take their element counts (of the
  declared pointee type) from specialization constants 3, 4, ... in argument order; on Vulkan
  they reach clspv as bytes / the element size of the array clspv declares
  (:func:`clspv_spec_values`);
* a work-group size left to the runtime becomes :func:`default_local_size`, since a scenario
  dispatch counts whole work-groups.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from kernellab.errors import InputError
from kernellab.records import dataclass

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any, Protocol
else:  # the protocols are the checker's: at run time nothing is checked against them
    Protocol = object

if TYPE_CHECKING:  # for hints only: the formats that share this module load no backend code
    from kernellab.backends.base import LocalArgument

#: by-value type name -> (sizeof, alignof), asked of the compiler for types kernellab cannot size
Layout = Mapping[str, tuple[int, int]]

#: specialization constants holding the work-group size, and the first one holding a
#: ``__local`` argument's element count
LOCAL_SIZE_SPEC_IDS = (0, 1, 2)
FIRST_LOCAL_ARGUMENT_SPEC_ID = 3

#: push constants are a whole number of 32-bit words
PUSH_CONSTANT_UNIT = 4


class ValueType(Protocol):
    @property
    def size(self) -> int | None: ...

    @property
    def alignment(self) -> int: ...


class Argument(Protocol):
    """A kernel parameter as the OpenCL runtime reports it (``backends.opencl.KernelArg``)."""

    @property
    def index(self) -> int: ...

    @property
    def name(self) -> str: ...

    @property
    def type_name(self) -> str: ...

    @property
    def type(self) -> ValueType: ...

    @property
    def kind(self) -> str: ...


@dataclass(frozen=True)
class LocalMemory:
    """A ``__local`` pointer argument of ``size`` bytes."""

    size: int


def align_up(offset: int, alignment: int) -> int:
    return -(-offset // alignment) * alignment


def unsized_types(args: Iterable[Argument]) -> list[str]:
    """Type names of the by-value parameters whose size only the compiler knows (structs)."""
    return [a.type_name for a in args if a.kind == "scalar" and a.type.size is None]


def value_size(arg: Argument, layout: Layout | None = None) -> tuple[int, int]:
    """(size, alignment) of a by-value parameter; :class:`InputError` if nobody knows its size."""
    if arg.type.size is not None:
        return arg.type.size, arg.type.alignment
    if layout and arg.type_name in layout:
        return layout[arg.type_name]
    raise InputError(f"argument {arg.index} ({arg.type_name} {arg.name}): its size is unknown")


def value_slots(args: Iterable[Argument], layout: Layout | None = None) -> dict[int, tuple[int, int]]:
    """Parameter index -> (offset, size) of each by-value parameter in the push-constant bytes."""
    slots: dict[int, tuple[int, int]] = {}
    offset = 0
    for a in args:
        if a.kind != "scalar":
            continue
        size, alignment = value_size(a, layout)
        offset = align_up(offset, alignment)
        slots[a.index] = (offset, size)
        offset += size
    return slots


def pack_values(values: Iterable[tuple[bytes, int]]) -> bytes:
    """``(bytes, alignment)`` pairs in argument order, packed as a C struct and padded to whole words."""
    out = bytearray()
    for data, alignment in values:
        out += bytes(align_up(len(out), alignment) - len(out))
        out += data
    out += bytes(align_up(len(out), PUSH_CONSTANT_UNIT) - len(out))
    return bytes(out)


def pack_push_constants(args: Sequence[Argument], values: Mapping[int, bytes], layout: Layout | None = None) -> bytes:
    """By-value arguments (``values`` by parameter index) packed as a C struct (natural
    alignment), padded to a multiple of 4."""
    def alignment(a: Argument) -> int:
        return value_size(a, layout)[1] if a.type.size is None and layout else a.type.alignment

    return pack_values((values[a.index], alignment(a)) for a in args if a.kind == "scalar")


def unpack_push_constants(args: Sequence[Argument], data: bytes, layout: Layout | None = None) -> dict[int, bytes]:
    """The bytes of each by-value argument, by parameter index; missing bytes read as zeros."""
    return {index: bytes(data[offset:offset + size]).ljust(size, b"\0")
            for index, (offset, size) in value_slots(args, layout).items()}


def buffer_bindings(args: Iterable[Argument]) -> dict[int, int]:
    """Parameter index -> binding id (set 0) of each buffer parameter."""
    return {a.index: n for n, a in enumerate(a for a in args if a.kind == "buffer")}


def local_size(spec_values: Mapping[int, int], compile_work_group_size: Sequence[int]) -> tuple[int, int, int]:
    """A dispatch's work-group size: specialization constants 0-2 if any is set (1 for those
    not set), else the kernel's ``reqd_work_group_size``, else 1x1x1."""
    if any(i in spec_values for i in LOCAL_SIZE_SPEC_IDS):
        x, y, z = (max(1, int(spec_values.get(i, 1))) for i in LOCAL_SIZE_SPEC_IDS)
    elif any(compile_work_group_size):
        x, y, z = (max(1, int(n)) for n in compile_work_group_size)
    else:
        x, y, z = 1, 1, 1
    return x, y, z


def local_element_size(arg: Argument) -> int:
    """Bytes of one element of a ``__local`` pointer parameter (1 when the type is unknown)."""
    return arg.type.size or 1


def local_counts(args: Iterable[Argument], spec_values: Mapping[int, int]) -> dict[int, int]:
    """Parameter index -> element count of each ``__local`` parameter (default 1 element)."""
    locals_ = [a for a in args if a.kind == "local"]
    return {a.index: max(1, int(spec_values.get(FIRST_LOCAL_ARGUMENT_SPEC_ID + n, 1))) for n, a in enumerate(locals_)}


def clspv_spec_values(spec_values: Mapping[int, int], local_arguments: Iterable[LocalArgument],
                      pointee_size: Callable[[str], int | None], file: str = "",
                      pointer: str = "") -> dict[int, int]:
    """``spec_values`` as a clspv module takes them: each ``__local`` argument's count, given in
    elements of its declared pointee type (as on the OpenCL backend), becomes a count of the
    elements of the array clspv declares for it, which may be another type (``__local long *``
    may be a ``uint`` array: the declared count would give it half the bytes). A size that is not
    a whole number of clspv's elements is an :class:`InputError` at ``file``/``pointer``.
    ``pointee_size`` sizes a type name (``backends.opencl.parse_type``); unknown types are 1 byte,
    as :func:`local_element_size` has them on the OpenCL backend."""
    out = dict(spec_values)
    for a in local_arguments:
        if a.spec_id not in spec_values or a.element_size <= 0:
            continue
        pointee = a.type_name[:-1].strip() if a.type_name.endswith("*") else ""
        declared = (pointee_size(pointee) or 1) if pointee else a.element_size
        nbytes = int(spec_values[a.spec_id]) * declared
        if nbytes % a.element_size:
            raise InputError.at(file, pointer, f"__local argument {a.index} ({a.type_name or '?'}): specialization constant "
                             f"{a.spec_id} = {spec_values[a.spec_id]} elements is {nbytes} bytes, which clspv's array "
                             f"of {a.element_size}-byte elements cannot hold exactly: give a size that is a multiple "
                             f"of {a.element_size} bytes")
        out[a.spec_id] = nbytes // a.element_size
    return out


def local_count(nbytes: int, element_size: int) -> int:
    """Elements of ``element_size`` bytes that hold ``nbytes`` (the specialization constant)."""
    return -(-nbytes // element_size)


def default_local_size(global_size: Sequence[int], limit: int = 64) -> tuple[int, ...]:
    """A work-group size for a launch that left it to the runtime: the largest divisor of
    dimension 0 up to ``limit``, 1 in the other dimensions (a scenario must name one)."""
    first = max(d for d in range(1, min(limit, global_size[0]) + 1) if global_size[0] % d == 0)
    return (first,) + (1,) * (len(global_size) - 1)


# --- the argument packer: every OpenCL launch (scenario dispatch, kernel instantiation, PySchedCL
# part) turns its arguments into clSetKernelArg values here, so they cannot drift apart


def scenario_arguments(args: Sequence[Argument], buffers: Callable[[int], Any], push_data: bytes,
                       spec_values: Mapping[int, int], layout: Layout | None, kernel: str) -> list[Any]:
    """A scenario dispatch's kernel arguments in parameter order: the buffer bound at
    ``buffers(binding)`` (None: not bound), a :class:`LocalMemory` sized by specialization
    constants 3, 4, ... and each by-value argument's slice of ``push_data``. A mismatch is a
    :class:`ValueError` naming ``kernel``."""
    slots = value_slots(args, layout)
    counts = local_counts(args, spec_values)
    binding_of = buffer_bindings(args)
    out: list[Any] = []
    for arg in args:
        kind = arg.kind
        if kind == "buffer":
            binding = binding_of[arg.index]
            buf = buffers(binding)
            if buf is None:
                raise ValueError(f"dispatch of {kernel!r}: kernel argument {arg.index} ({arg.name}) is buffer "
                                 f"argument {binding}, but binding (set 0, id {binding}) is not bound")
            out.append(buf)
        elif kind == "local":
            out.append(LocalMemory(counts[arg.index] * local_element_size(arg)))
        elif kind == "scalar":
            offset, size = slots[arg.index]
            chunk = push_data[offset:offset + size]
            if len(chunk) < size:
                raise ValueError(f"dispatch of {kernel!r}: argument {arg.index} ({arg.name}) needs push-constant "
                                 f"bytes {offset}..{offset + size}, only {len(push_data)} given")
            out.append(chunk)
        else:
            raise ValueError(f"dispatch of {kernel!r}: argument {arg.index} ({arg.name}) is an {kind}; scenarios "
                             f"cannot bind {kind}s to OpenCL C kernels")
    return out


def positional_arguments(count: int, values: Mapping[int, bytes], local_bytes: Mapping[int, int],
                         memory: Iterable[Any]) -> list[Any]:
    """``count`` kernel arguments in parameter order: by-value bytes and ``__local`` sizes at their
    positions, the memory objects of ``memory`` in order in the places left."""
    rest: Iterator[Any] = iter(memory)
    return [values[pos] if pos in values else LocalMemory(local_bytes[pos]) if pos in local_bytes else next(rest)
            for pos in range(count)]


def driver_values(args: Sequence[Any], cl: Any, handle: Callable[[Any], Any], raw_bytes: bool = False) -> list[Any]:
    """What clSetKernelArg takes for each argument, through the runtime ``cl`` (pyopencl or
    Oclgrind's direct binding): ``handle(a)`` for a memory object (a backend's buffer wrapper,
    an image, a sampler), a local allocation of at least one byte, by-value bytes as a uint8
    array (as bytes with ``raw_bytes``: the direct binding takes them so)."""
    out: list[Any] = []
    for a in args:
        if isinstance(a, LocalMemory):
            out.append(cl.LocalMemory(max(1, a.size)))
        elif isinstance(a, (bytes, bytearray, memoryview)):
            if raw_bytes:
                out.append(bytes(a))
            else:
                import numpy as np

                out.append(np.frombuffer(bytes(a), dtype=np.uint8))
        else:
            out.append(handle(a))
    return out
