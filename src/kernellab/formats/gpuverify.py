"""GPUVerify's kernel-instantiation JSON (../shared/specs/kernel-instantiation-json.rst).

:func:`load` reads and checks a file, reporting every problem at once with the file and the JSON
pointer of the offending value; :func:`dump` writes one. What needs the kernel itself (argument
count, parameter types, hex widths) is checked later, when the kernel is built
(:mod:`kernellab.runtime.instantiation`), with the same kind of message.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeGuard, TypeVar

from kernellab.errors import InputError, Problem, Problems, json_pointer
from kernellab.formats.jsonfile import load_json
from kernellab.formats.paths import path_problem
from kernellab.records import dataclass

#: cl_mem_flags names a capture may record (with or without the CL_MEM_ prefix)
MEM_FLAGS = ("READ_WRITE", "WRITE_ONLY", "READ_ONLY", "USE_HOST_PTR", "ALLOC_HOST_PTR", "COPY_HOST_PTR",
             "HOST_WRITE_ONLY", "HOST_READ_ONLY", "HOST_NO_ACCESS", "KERNEL_READ_AND_WRITE")
ADDRESS_SPACES = ("global", "local", "constant")
TOP_FIELDS = ("language", "endianness", "kernel_file", "local_size", "global_size", "global_offset",
              "compiler_flags", "entry_point", "kernel_arguments", "host_api_calls")
_HEX = re.compile(r"^0[xX][0-9a-fA-F]+$")
_IDENT = re.compile(r"^[A-Za-z_]\w*$")
_T = TypeVar("_T")


@dataclass(frozen=True)
class ScalarArgument:
    #: hex string as written (``0xA208``); None = unconstrained
    value: str | None = None
    type: str = "scalar"


@dataclass(frozen=True)
class ArrayArgument:
    size: int | None = None
    address_space: str | None = None
    flags: tuple[str, ...] | None = None
    #: the data file as written in the JSON (relative to it) and resolved
    data: str | None = None
    data_path: Path | None = None
    type: str = "array"


@dataclass(frozen=True)
class ImageArgument:
    type: str = "image"


@dataclass(frozen=True)
class SamplerArgument:
    type: str = "sampler"


KernelArgument = ScalarArgument | ArrayArgument | ImageArgument | SamplerArgument


@dataclass(frozen=True)
class HostApiCall:
    function_name: str
    compilation_unit: str
    line_number: int


@dataclass
class KernelInstantiation:
    #: the JSON file and this instantiation's position in it (for error messages)
    file: Path
    index: int
    kernel_file: str
    global_size: tuple[int, ...]
    entry_point: str
    language: str = "OpenCL"
    endianness: str | None = None
    local_size: tuple[int, ...] | None = None
    global_offset: tuple[int, ...] | None = None
    compiler_flags: str | None = None
    kernel_arguments: list[KernelArgument] | None = None
    host_api_calls: list[HostApiCall] | None = None

    @property
    def kernel_path(self) -> Path:
        return (self.file.parent / self.kernel_file).resolve()

    @property
    def preprocessed_path(self) -> Path:
        """Where the spec puts a preprocessed copy: ``foo.cl`` -> ``foo.pre.cl``."""
        p = self.kernel_path
        return p.with_name(p.stem + ".pre" + p.suffix) if p.suffix else p.with_name(p.name + ".pre")

    @property
    def byteorder(self) -> str:
        return self.endianness or "little"

    def pointer(self, *parts: str | int) -> str:
        return json_pointer([self.index, *parts])


def looks_like(data: Any) -> bool:
    """Whether parsed JSON is a kernel-instantiation file rather than a scenario (format detection)."""
    if not isinstance(data, list):
        return False
    objs = [d for d in data if isinstance(d, dict)]
    return bool(objs) and all(("kernel_file" in d or "entry_point" in d or d.get("language") == "OpenCL")
                              for d in objs)


class _Checker(Problems):
    non_uniform = False  # see load()

    def string(self, obj: dict, key: str, at: list[str | int], required: bool = False) -> str | None:
        if key not in obj:
            if required:
                self.add(at, f'"{key}" is required')
            return None
        v = obj[key]
        if not isinstance(v, str):
            self.add([*at, key], f"must be a string, got {_describe(v)}")
            return None
        return v

    def sizes(self, obj: dict, key: str, at: list[str | int], minimum: int, required: bool = False
              ) -> tuple[int, ...] | None:
        if key not in obj:
            if required:
                self.add(at, f'"{key}" is required')
            return None
        v = obj[key]
        if not isinstance(v, list):
            self.add([*at, key], f"must be an array of 1 to 3 numbers, got {_describe(v)}")
            return None
        if not 1 <= len(v) <= 3:
            self.add([*at, key], f"must have 1 to 3 entries (one per dimension), got {len(v)}")
            return None
        ok = True
        for i, x in enumerate(v):
            if not _is_int(x):
                self.add([*at, key, i], f"must be an integer, got {_describe(x)}")
                ok = False
            elif x < minimum:
                self.add([*at, key, i], f"must be {'>= 0' if minimum == 0 else '> 0'}, got {x}")
                ok = False
        return tuple(int(x) for x in v) if ok else None


def _is_int(x: Any) -> TypeGuard[int]:
    return isinstance(x, int) and not isinstance(x, bool)


def _describe(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return f"the number {v}"
    if isinstance(v, str):
        return f"the string {v!r}"
    if isinstance(v, list):
        return "an array"
    return "an object"


def _argument(c: _Checker, v: Any, at: list[str | int], base: Path) -> KernelArgument | None:
    if not isinstance(v, dict):
        c.add(at, f"a kernel argument must be an object, got {_describe(v)}")
        return None
    if "type" not in v:
        c.add(at, '"type" is required (one of "scalar", "array", "image", "sampler")')
        return None
    kind = v["type"]
    if kind not in ("scalar", "array", "image", "sampler"):
        c.add([*at, "type"], f'must be "scalar", "array", "image" or "sampler", got {_describe(kind)}')
        return None
    allowed = {"scalar": {"type", "value"}, "array": {"type", "size", "address_space", "flags", "data"},
               "image": {"type"}, "sampler": {"type"}}[kind]
    for key in v:
        if key not in allowed:
            c.warn([*at, key], f"unknown field for a {kind} argument (ignored)")
    if kind == "scalar":
        return _scalar(c, v, at)
    if kind == "array":
        return _array(c, v, at, base)
    return ImageArgument() if kind == "image" else SamplerArgument()


def _scalar(c: _Checker, v: dict, at: list[str | int]) -> ScalarArgument:
    value = v.get("value")
    if "value" in v:
        if not isinstance(value, str):
            c.add([*at, "value"], f'must be a hexadecimal string such as "0xA208", got {_describe(value)}')
            value = None
        elif not _HEX.match(value):
            c.add([*at, "value"], f'must be a hexadecimal string starting with 0x (e.g. "0xA208"), got {value!r}')
            value = None
    return ScalarArgument(value)


def _array(c: _Checker, v: dict, at: list[str | int], base: Path) -> ArrayArgument:
    size = v.get("size")
    if "size" in v and (not _is_int(size) or size <= 0):
        c.add([*at, "size"], f"must be a number of bytes > 0, got {_describe(size)}")
        size = None
    space = v.get("address_space")
    if "address_space" in v and space not in ADDRESS_SPACES:
        c.add([*at, "address_space"], f'must be "global", "local" or "constant", got {_describe(space)}')
        space = None
    flags = _mem_flags(c, v["flags"], [*at, "flags"]) if "flags" in v else None
    data, data_path = _array_data(c, v, at, base, space, size) if "data" in v else (None, None)
    return ArrayArgument(size, space, flags, data, data_path)


def _mem_flags(c: _Checker, raw: Any, at: list[str | int]) -> tuple[str, ...] | None:
    """The cl_mem_flags names an array argument lists, each with its CL_MEM_ prefix."""
    if not isinstance(raw, list):
        c.add(at, f"must be an array of cl_mem_flags names, got {_describe(raw)}")
        return None
    good = []
    for i, f in enumerate(raw):
        name = f.upper().removeprefix("CL_MEM_") if isinstance(f, str) else None
        if name not in MEM_FLAGS:
            c.add([*at, i], f"unknown cl_mem_flags name {_describe(f)} (have: "
                  + ", ".join("CL_MEM_" + m for m in MEM_FLAGS) + ")")
        else:
            good.append("CL_MEM_" + name)
    exclusive = {"CL_MEM_READ_WRITE", "CL_MEM_READ_ONLY", "CL_MEM_WRITE_ONLY"} & set(good)
    if len(exclusive) > 1:
        c.add(at, f"{' and '.join(sorted(exclusive))} cannot be combined")
    return tuple(good)


def _array_data(c: _Checker, v: dict, at: list[str | int], base: Path, space: Any,
                size: Any) -> tuple[str | None, Path | None]:
    """An array argument's data file: as written, and resolved next to the JSON file when it is there."""
    data = v["data"]
    if not isinstance(data, str) or not data:
        c.add([*at, "data"], f"must be the name of a binary file, got {_describe(data)}")
        return None, None
    if space == "local":
        c.add([*at, "data"], "a local array cannot have data: __local memory starts undefined")
        return None, None
    if (why := path_problem(data)) is not None:
        c.add([*at, "data"], why)
        return None, None
    data_path = (base / data).resolve()
    if not data_path.is_file():
        c.add([*at, "data"], f"data file {data!r} {_missing(data_path.exists())} (looked at {str(data_path)!r})")
        return data, None
    if _is_int(size) and size > 0 and data_path.stat().st_size > size:
        c.add([*at, "data"], f"data file {data!r} has {data_path.stat().st_size} bytes, more than "
              f"the array's size of {size} bytes")
    return data, data_path


def _host_call(c: _Checker, v: Any, at: list[str | int]) -> HostApiCall | None:
    if not isinstance(v, dict):
        c.add(at, f"a host API call must be an object, got {_describe(v)}")
        return None
    name = c.string(v, "function_name", at, required=True)
    unit = c.string(v, "compilation_unit", at, required=True)
    line = v.get("line_number")
    if "line_number" not in v:
        c.add(at, '"line_number" is required')
    elif not _is_int(line) or line <= 0:
        c.add([*at, "line_number"], f"must be a line number > 0, got {_describe(line)}")
        line = None
    for key in v:
        if key not in ("function_name", "compilation_unit", "line_number"):
            c.warn([*at, key], "unknown field for a host API call (ignored)")
    if name is None or unit is None or line is None:
        return None
    return HostApiCall(name, unit, int(line))


def _instantiation(c: _Checker, v: Any, i: int, file: Path) -> KernelInstantiation | None:
    at: list[str | int] = [i]
    if not isinstance(v, dict):
        c.add(at, f"a kernel instantiation must be an object, got {_describe(v)}")
        return None
    before = len(c.problems)
    for key in v:
        if key not in TOP_FIELDS:
            c.warn([*at, key], "unknown field (ignored)")
    language = c.string(v, "language", at, required=True)
    if language is not None and language != "OpenCL":
        c.add([*at, "language"], f'must be "OpenCL", got {language!r}')
    endianness = c.string(v, "endianness", at)
    if endianness is not None and endianness not in ("big", "little"):
        c.add([*at, "endianness"], f'must be "big" or "little", got {endianness!r}')
    kernel_file = c.string(v, "kernel_file", at, required=True)
    if kernel_file is not None:
        _check_kernel_file(c, kernel_file, [*at, "kernel_file"], file)
    global_size = c.sizes(v, "global_size", at, 1, required=True)
    local_size = c.sizes(v, "local_size", at, 1)
    global_offset = c.sizes(v, "global_offset", at, 0)
    if global_size is not None:
        _check_dimensions(c, at, global_size, local_size, global_offset)
    flags = c.string(v, "compiler_flags", at)
    entry = c.string(v, "entry_point", at, required=True)
    if entry is not None and not _IDENT.match(entry):
        c.add([*at, "entry_point"], f"must be a kernel name (an identifier), got {entry!r}")
    arguments: list[KernelArgument] | None = _items(c, v, "kernel_arguments", at, "an array of kernel arguments",
                       lambda a, where: _argument(c, a, where, file.parent))
    calls = _items(c, v, "host_api_calls", at, "an array of host API calls", lambda h, where: _host_call(c, h, where))
    if len(c.problems) > before or kernel_file is None or global_size is None or entry is None:
        return None
    return KernelInstantiation(
        file=file, index=i, kernel_file=kernel_file, global_size=global_size, entry_point=entry,
        language=language or "OpenCL", endianness=endianness, local_size=local_size, global_offset=global_offset,
        compiler_flags=flags, kernel_arguments=arguments, host_api_calls=calls)


def _check_kernel_file(c: _Checker, kernel_file: str, at: list[str | int], file: Path) -> None:
    if not kernel_file:
        c.add(at, "must name an OpenCL C source file, got an empty string")
    elif (why := path_problem(kernel_file)) is not None:
        c.add(at, why)
    else:
        try:
            path = (file.parent / kernel_file).resolve()
            found, exists = path.is_file(), path.exists()
        except (OSError, ValueError) as exc:  # a NUL byte, a name too long for the system
            c.add(at, f"kernel file {kernel_file!r} is not a usable file name ({exc})")
        else:
            if not found:
                c.add(at, f"kernel file {kernel_file!r} {_missing(exists)} (looked at {str(path)!r})")


def _missing(exists: bool) -> str:
    """Why a named file is not read: absent, or there but not a regular file (never opened: a
    FIFO would block the read, a device would not end)."""
    return "is not a regular file (a FIFO, device or folder is never read)" if exists else "not found"


def _check_dimensions(c: _Checker, at: list[str | int], global_size: tuple[int, ...],
                      local_size: tuple[int, ...] | None, global_offset: tuple[int, ...] | None) -> None:
    """One entry per dimension everywhere, and whole work-groups unless the device runs partial ones."""
    for key, other in (("local_size", local_size), ("global_offset", global_offset)):
        if other is not None and len(other) != len(global_size):
            c.add([*at, key], f"has {len(other)} entries but global_size has {len(global_size)}: "
                  "one per dimension")
    if local_size is not None and len(local_size) == len(global_size):
        for d, (g, l) in enumerate(zip(global_size, local_size)):
            if g % l and not c.non_uniform:
                c.add([*at, "local_size", d], f"{l} does not divide global_size[{d}] = {g} "
                      "(clEnqueueNDRangeKernel needs whole work-groups)")


def _items(c: _Checker, v: dict, key: str, at: list[str | int], what: str,
           item: Callable[[Any, list[str | int]], _T | None]) -> list[_T] | None:
    """The good entries of the optional array ``v[key]`` (each read by ``item``); None when it is absent or no array."""
    if key not in v:
        return None
    raw = v[key]
    if not isinstance(raw, list):
        c.add([*at, key], f"must be {what}, got {_describe(raw)}")
        return None
    read = [item(x, [*at, key, n]) for n, x in enumerate(raw)]
    return [x for x in read if x is not None]


def parse(data: Any, file: str | Path, *, non_uniform: bool = False
          ) -> tuple[list[KernelInstantiation], list[Problem]]:
    """Check parsed JSON; returns the instantiations and warnings, or raises InputError with every problem."""
    file = Path(file).resolve() if not isinstance(file, Path) else file.resolve()
    c = _Checker(file)
    c.non_uniform = non_uniform
    if not isinstance(data, list):
        c.add([], f"a kernel-instantiation file must be a JSON array of kernel instantiations, got {_describe(data)}")
        raise InputError(c.problems)
    if not data:
        c.add([], "the array holds no kernel instantiations")
        raise InputError(c.problems)
    result = [_instantiation(c, v, i, file) for i, v in enumerate(data)]
    c.raise_if_any()
    return [r for r in result if r is not None], c.warnings


def load(path: str | Path, *, non_uniform: bool = False) -> tuple[list[KernelInstantiation], list[Problem]]:
    """Read and check a kernel-instantiation file: (instantiations, warnings). ``non_uniform``:
    the device runs work-groups that do not divide the global size (OpenCL >= 2.0, Oclgrind)."""
    return parse(load_json(path), path, non_uniform=non_uniform)


# --- writing ---------------------------------------------------------------------------------

def to_json(inst: KernelInstantiation) -> dict[str, Any]:
    """The JSON object for one instantiation (paths as written, relative to the JSON file)."""
    out: dict[str, Any] = {"language": inst.language}
    if inst.endianness:
        out["endianness"] = inst.endianness
    out["kernel_file"] = inst.kernel_file
    if inst.local_size is not None:
        out["local_size"] = list(inst.local_size)
    out["global_size"] = list(inst.global_size)
    if inst.global_offset is not None:
        out["global_offset"] = list(inst.global_offset)
    if inst.compiler_flags is not None:
        out["compiler_flags"] = inst.compiler_flags
    out["entry_point"] = inst.entry_point
    if inst.kernel_arguments is not None:
        args = []
        for a in inst.kernel_arguments:
            if isinstance(a, ScalarArgument):
                args.append({"type": "scalar", **({"value": a.value} if a.value is not None else {})})
            elif isinstance(a, ArrayArgument):
                d: dict[str, Any] = {"type": "array"}
                if a.size is not None:
                    d["size"] = a.size
                if a.address_space is not None:
                    d["address_space"] = a.address_space
                if a.flags is not None:
                    d["flags"] = list(a.flags)
                if a.data is not None:
                    d["data"] = a.data
                args.append(d)
            else:
                args.append({"type": a.type})
        out["kernel_arguments"] = args
    if inst.host_api_calls is not None:
        out["host_api_calls"] = [{"function_name": h.function_name, "compilation_unit": h.compilation_unit,
                                  "line_number": h.line_number} for h in inst.host_api_calls]
    return out


def dumps(instantiations: Sequence[KernelInstantiation]) -> str:
    return json.dumps([to_json(i) for i in instantiations], indent=2) + "\n"


def dump(instantiations: Sequence[KernelInstantiation], path: str | Path) -> None:
    """Write a kernel-instantiation file atomically (data and kernel files are the caller's)."""
    from kernellab.outputs import write_text
    write_text(path, dumps(instantiations))


def hex_value(data: bytes, byteorder: str) -> str:
    """The spec's hex string for an argument's bytes: the number those bytes hold in ``byteorder``."""
    return "0x" + format(int.from_bytes(data, byteorder), "X") if data else "0x0"  # type: ignore[arg-type]


def hex_bytes(value: str, size: int, byteorder: str) -> bytes:
    """Inverse of :func:`hex_value`; raises OverflowError when the number needs more than ``size`` bytes."""
    return int(value, 16).to_bytes(size, byteorder)  # type: ignore[arg-type]
