"""kernellab's small Vulkan binding: the compute path's functions and structures, with the
calling convention of the ``vulkan`` package, so one backend serves either.

Its declarations are data generated from ``vk.xml`` (:mod:`kernellab.vkregistry.binding`):
``_vkbind_ffi`` (cffi's out-of-line ABI mode: importing it parses no C) and ``vkbind_table``
(constants, ``sType`` values, each command's parameters and output). Importing this module costs a
few million instructions where the ``vulkan`` package costs seventy; the images, tensors, graphs
and graphics parts keep the package, which declares everything.

The convention, as the package has it: ``VkFoo(**members)`` gives a structure with its ``sType``
filled and a count member set from the list it counts; a list becomes a C array, a ``str`` a C
string, a structure given where a pointer is wanted its address (all kept alive with the
structure); a command returns its output parameter (a handle, a structure, or an array) instead
of taking it, and a failing ``VkResult`` raises the :class:`VkError` subclass of its code.
"""
from __future__ import annotations

import functools
from collections.abc import Callable

from kernellab.native import vkbind_table as table
from kernellab.native._vkbind_ffi import ffi
from kernellab.native.devices import ExtensionNames
from kernellab.weakid import WeakIdMap

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any

#: structures (and arrays) -> what they point to, kept alive as long as they are
_alive = WeakIdMap()
_lib: Any = None


class VkException(Exception):
    """A non-error result other than VK_SUCCESS (VK_TIMEOUT, VK_INCOMPLETE, ...)."""

    code = 0


class VkError(Exception):
    """An error result (negative ``VkResult``)."""

    code = 0


def _class_name(result: str) -> str:
    # VK_ERROR_OUT_OF_DEVICE_MEMORY -> VkErrorOutOfDeviceMemory, as the vulkan package spells it
    return "Vk" + "".join(w.capitalize() for w in result.split("_")[1:])


#: VkResult value -> the exception class raised for it, made when first raised or named: the
#: registry's ~50 results made at import were 3 M instructions of a run that raises none
_exception_classes: dict[int, type[Exception]] = {}


def exception_class(code: int) -> type[Exception]:
    """The class raised for the ``VkResult`` ``code`` (one class per code, as the ``vulkan``
    package has it); :class:`VkError` for a code the registry lacks."""
    cls = _exception_classes.get(code)
    if cls is None:
        name = results().get(code) if code else None
        if name is None:
            return VkError
        cls = _exception_classes[code] = type(_class_name(name), (VkError if code < 0 else VkException,),
                                              {"code": code})
    return cls


@functools.cache
def _exception_codes() -> dict[str, int]:
    """Exception class name -> its ``VkResult`` (VkErrorOutOfDeviceMemory -> -2)."""
    return {_class_name(name): code for code, name in results().items() if code}


# --- the generated tables' text (vkbind_table), read a line when a name is first asked ---------
def _line(text: str, key: str) -> list[str] | None:
    """The fields of the line of ``text`` that starts with ``key`` (None when none does)."""
    at = text.find("\n" + key + " ")
    if at < 0:
        return None
    return text[at + 1:text.find("\n", at + 1)].split(" ")


def constant(name: str) -> int | None:
    """The value of the registry constant ``name`` the binding declares (None: not declared)."""
    fields = _line(table.CONSTANTS, name)
    return int(fields[1]) if fields else None


@functools.cache
def _command_lines() -> dict[str, str]:
    """Each declared command's line of the table, by its name: a run asks for some fifty
    commands, and finding each in the text cost more than reading the text once."""
    return {line[:line.find(" ")]: line for line in table.COMMANDS.split("\n") if line}


def command_entry(name: str) -> tuple[list[str], bool, tuple[str, str | None] | None] | None:
    """A declared command's parameter names, whether it returns a ``VkResult``, and its output
    (None, or its kind, ``one``/``list``/``array``, and what counts it); None: not declared."""
    line = _command_lines().get(name)
    if line is None:
        return None
    _, params, returns, kind, length = line.split(" ")
    return params.split(","), returns == "1", None if kind == "-" else (kind, None if length == "-" else length)


@functools.cache
def results() -> dict[int, str]:
    """``VkResult`` value -> its registry name (read whole: only a failure asks)."""
    return {int(value): name for value, name in (line.split(" ") for line in table.RESULTS.strip().split("\n"))}


def VK_MAKE_VERSION(major: int, minor: int, patch: int) -> int:  # noqa: N802 - the C macro's name
    return (major << 22) | (minor << 12) | patch


def load_library() -> Any:
    """The Vulkan loader (OSError when it is not installed)."""
    global _lib
    if _lib is None:
        _lib = ffi.dlopen("libvulkan.so.1")
    return _lib


def _pointer(value: Any, ctype: Any, keep: list[Any]) -> Any:
    """``value`` as the C pointer type ``ctype``; what the pointer needs goes into ``keep``."""
    item = ctype.item
    if isinstance(value, ffi.CData):
        kind = ffi.typeof(value).kind
        if kind in ("struct", "union"):
            keep.append(value)
            return ffi.addressof(value)
        return value
    if isinstance(value, str):
        value = value.encode()
    if isinstance(value, (bytes, bytearray, memoryview)):
        buf = ffi.from_buffer(value)
        keep.append(buf)
        return ffi.cast(ctype, buf)
    if isinstance(value, (list, tuple)):
        if item.kind == "pointer" and item.item.cname == "char":  # a list of strings
            strings = [ffi.new("char[]", s.encode()) for s in value]
            keep.extend(strings)
            value = strings
        array = ffi.new(item.cname + "[]", value)
        keep.append(array)
        return array
    return ffi.cast(ctype, value)


def _structure(name: str) -> Callable[..., Any]:
    ctype = ffi.typeof(name)
    fields = dict(ctype.fields)
    stype = table.STYPES.get(name)
    counts = table.COUNTS.get(name, {})
    pointer_type = name + "*"

    def make(**members: Any) -> Any:
        keep: list[Any] = []
        init: dict[str, Any] = {}
        if stype is not None:
            init["sType"] = stype
        for key, value in members.items():
            if value is None:
                continue
            ftype = fields[key].type
            init[key] = _pointer(value, ftype, keep) if ftype.kind == "pointer" else value
        for count, counted in counts.items():
            given = next((members[c] for c in counted if members.get(c) is not None), None)
            if count not in init and given is not None:
                init[count] = len(given)
        value = ffi.new(pointer_type, init)[0]
        if keep:
            _alive.put(value, keep)
        return value

    make.__name__ = make.__qualname__ = name
    return make


@functools.cache
def _char_arrays(cname: str) -> frozenset[str]:
    """The fixed ``char`` array members of a structure, read as ``str`` (looked up once a type:
    a device's ~100 extension names were each checked member by member)."""
    return frozenset(name for name, field in ffi.typeof(cname).fields
                     if field.type.kind == "array" and field.type.item.cname == "char")


class StrWrap:
    """A returned structure whose fixed ``char`` arrays read as ``str`` (``deviceName``)."""

    __slots__ = ("obj", "_chars")

    def __init__(self, obj: Any, chars: frozenset[str] | None = None):
        self.obj = obj
        self._chars = _char_arrays(ffi.typeof(obj).cname) if chars is None else chars

    def __getattr__(self, key: str) -> Any:
        value = getattr(self.obj, key)
        if key in self._chars:
            return ffi.string(value).decode("utf-8", "replace")
        return value


def _wrap(item: Any) -> Any:
    cname = ffi.typeof(item).cname
    return StrWrap(item, _char_arrays(cname)) if cname in _STRING_STRUCTS else item


_STRING_STRUCTS = frozenset(table.STRINGS) | frozenset("struct " + s for s in table.STRINGS)


def _argument(value: Any, ctype: Any, keep: list[Any]) -> Any:
    if ctype.kind != "pointer":
        return value
    if value is None:
        return ffi.NULL
    return _pointer(value, ctype, keep)


def _raise(result: int) -> None:
    raise exception_class(result)(result)


def _command(name: str, entry: tuple[list[str], bool, tuple[str, str | None] | None]) -> Callable[..., Any]:
    params, returns_result, output = entry
    fn = getattr(load_library(), name)
    argtypes = ffi.typeof(fn).args

    def convert(args: tuple[Any, ...], keep: list[Any]) -> list[Any]:
        return [_argument(a, t, keep) for a, t in zip(args, argtypes)]

    if name == "vkMapMemory":
        def map_memory(device: Any, memory: Any, offset: int, size: int, flags: int) -> Any:
            data = ffi.new("void**")
            result = fn(device, memory, offset, size, flags, data)
            if result:
                _raise(result)
            return ffi.buffer(data[0], size)

        return map_memory

    def call(*args: Any) -> Any:
        keep: list[Any] = []
        if output is None or len(args) == len(params):  # no output, or the caller gave it
            result = fn(*convert(args, keep))
            if returns_result and result:
                _raise(result)
            return args[-1] if output is not None else result
        kind, length = output
        length = length or ""
        out_type = argtypes[-1].item.cname
        converted = convert(args, keep)
        if kind == "list":
            count = ffi.new("uint32_t*")
            converted = converted[:params.index(length)] + [count]
            result = fn(*converted, ffi.NULL)
            if returns_result and result:
                _raise(result)
            out = ffi.new(out_type + "[]", count[0])
            result = fn(*converted, out)
            if returns_result and result:
                _raise(result)
            if out_type in _STRING_STRUCTS:
                chars = _char_arrays(out_type)
                return [StrWrap(x, chars) for x in out]
            return list(out)
        if kind == "array":
            owner, _, member = length.partition("->")  # "pAllocateInfo->commandBufferCount"
            n = args[params.index(owner)]
            out = ffi.new(f"{out_type}[{getattr(n, member) if member else n}]")
        else:
            out = ffi.new(out_type + "*")
        result = fn(*converted, out)
        if returns_result and result:
            _raise(result)
        return out if kind == "array" else _wrap(out[0])

    call.__name__ = call.__qualname__ = name
    return call


def device_extensions(physical_device: Any) -> ExtensionNames:
    """``vkEnumerateDeviceExtensionProperties``'s list as :class:`ExtensionNames` (its bytes:
    wrapping and decoding ~100 structures cost a run ~4 M instructions, for two or three names)."""
    fn = load_library().vkEnumerateDeviceExtensionProperties
    count = ffi.new("uint32_t*")
    result = fn(physical_device, ffi.NULL, count, ffi.NULL)
    if result:
        _raise(result)
    out = ffi.new("VkExtensionProperties[]", count[0])
    result = fn(physical_device, ffi.NULL, count, out)
    if result:
        _raise(result)
    stride = ffi.sizeof("VkExtensionProperties")
    return ExtensionNames(bytes(ffi.buffer(out, stride * count[0])), stride)


def _declared(name: str) -> bool:
    try:
        ffi.typeof(name)
    except ffi.error:
        return False
    return True


def __getattr__(name: str) -> Any:
    """Constants, structures, commands and exception classes, made on first use."""
    value: Any = None
    if name.startswith("VK_"):
        value = constant(name)
    elif name.startswith("vk"):
        entry = command_entry(name)
        value = _command(name, entry) if entry is not None else None
    elif name.startswith("Vk"):  # a structure, else an exception class (the result names are read then)
        if _declared(name):
            value = _structure(name)
        elif name in _exception_codes():
            value = exception_class(_exception_codes()[name])
    elif name == "lib":
        value = load_library()
    if value is None:
        raise AttributeError(f"the compute binding does not declare {name}")
    globals()[name] = value
    return value
