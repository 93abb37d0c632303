"""The backend interface, documented once here; backends do not repeat it.

A backend owns one device. Public methods check their inputs and add context to errors; the
``_hooks`` do the work. Work is recorded into the current *frame* and runs at :meth:`submit`,
which waits for it to finish: that is the Scenario Runner's model (``mark_boundary`` ends a
frame) and costs nothing when a whole scenario is one frame.

This module is what a run of buffers and compute needs; the records of the optional features
(images, graphics, tensors, graphs, optical flow, kernel launches) are in ``feature_specs.py``,
imported by the code that uses a feature (a run of buffers builds none of their classes).
"""
from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence

# the program records are their own module (feature_specs.py builds on them); callers import them here
from kernellab.backends.programs import BindingSlot, ProgramSpec, SpecConstant  # noqa: F401
from kernellab.errors import KernellabError, UsageError

# the device record and the --device rule are the native layer's (compile/ selects devices too)
from kernellab.native.devices import DEVICE_KINDS, DeviceInfo, choose_device  # noqa: F401
from kernellab.records import Frozen

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any, ClassVar, TypeVar

if TYPE_CHECKING:  # a run of buffers never imports NumPy: the byte-level methods take memoryviews
    import numpy as np

    from kernellab.backends.feature_specs import (
        GraphicsProgramSpec,
        Image,
        ImageSpec,
        KernelArg,
    )
    from kernellab.backends.occasional import CommandTiming as CommandTiming
    from kernellab.backends.occasional import LocalArgument as LocalArgument
    from kernellab.backends.occasional import PipelineCacheMiss as PipelineCacheMiss
    from kernellab.backends.occasional import SubgroupSizing as SubgroupSizing
    from kernellab.backends.occasional import UnknownEntryError as UnknownEntryError
    from kernellab.listing.reflect import Interface


class UnsupportedError(KernellabError):
    """The backend or device cannot do what the workload asks (images on OpenCL, a format...)."""



class ImageBinding(Frozen):
    """An image bound to a descriptor: one mip level (``lod``) or, with None, the whole chain."""

    _fields = _compared = ("image", "lod")
    image: Image
    lod: int | None

    def __init__(self, image: Image, lod: int | None = None):
        vars(self).update(image=image, lod=lod)


class Buffer:
    """A device buffer of ``size`` bytes created by a backend. (A plain base class, as
    :class:`Program`: it declares no abstract method, and an ABC's classes cost more to make and to
    ``isinstance`` against on every run.)"""

    size: int
    uid: str


class BoundBuffer(Buffer):
    """A buffer (or a range of one) as a descriptor other than a plain storage or uniform buffer
    binds it; it stands for the buffer (its size and uid) wherever a buffer is expected."""

    def __init__(self, buffer: Buffer):
        self.buffer = buffer
        self.size = buffer.size
        self.uid = buffer.uid


class DynamicBuffer(BoundBuffer):
    """Bound to a dynamic uniform or storage descriptor: ``dynamic_offset`` is added to the
    descriptor's offset when its set is bound (``vkCmdBindDescriptorSets``' dynamic offsets), so
    one descriptor set serves every offset."""

    def __init__(self, buffer: Buffer, dynamic_offset: int):
        super().__init__(buffer)
        self.dynamic_offset = dynamic_offset


class TexelBuffer(BoundBuffer):
    """Bound to a uniform or storage texel buffer descriptor, through a view of it in ``format``
    (a VkFormat name)."""

    def __init__(self, buffer: Buffer, format: str):
        super().__init__(buffer)
        self.format = format


class BufferArray(Buffer):
    """The buffers of one descriptor array (a shader's array of blocks), element by element; each
    may be a :class:`DynamicBuffer`."""

    def __init__(self, elements: tuple[Buffer, ...]):
        self.elements = elements
        self.size = max(b.size for b in elements)
        self.uid = ",".join(b.uid for b in elements)


#: the dynamic descriptor types a scenario binding may name, as :class:`BindingSlot` descriptors
DYNAMIC_BUFFER_TYPES = {"VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC": "storage-buffer-dynamic",
                        "VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC": "uniform-buffer-dynamic"}
#: the texel buffer descriptor types, as :class:`BindingSlot` descriptors
TEXEL_BUFFER_TYPES = {"VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER": "uniform-texel-buffer",
                      "VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER": "storage-texel-buffer"}


class Program:
    """A pipeline (Vulkan) or kernel (OpenCL) made from a :class:`ProgramSpec`."""

    spec: ProgramSpec


#: a program form: the source text as is, handed to the driver (OpenCL C to clBuildProgram)
SOURCE = "source"
#: a program form: the SPIR-V module the language's compile pipeline makes for Vulkan
VULKAN_MODULE = "vulkan-module"


class Capabilities(Frozen):
    """What a backend can run, declared as data: callers ask this, never the backend's name."""

    _fields = _compared = ("title", "languages", "elsewhere", "images", "tensors", "graphs", "memory_groups",
                           "optical_flow", "mapped_buffers", "graphics", "work_items", "kernel_launches",
                           "buffer_descriptors")

    #: the backend's name in messages ("OpenCL")
    title: str
    #: source language -> the form :meth:`Backend.create_program` takes it in (:data:`SOURCE`,
    #: :data:`VULKAN_MODULE`); a language not listed cannot run on this backend
    languages: Mapping[str, str]
    #: where to run the languages this backend does not take (for the error message)
    elsewhere: str
    images: bool
    #: VK_ARM_tensors tensors, VK_ARM_data_graph graphs, resources sharing one allocation
    tensors: bool
    graphs: bool
    memory_groups: bool
    #: ``dispatch_optical_flow``: VK_ARM_data_graph_optical_flow's optical-flow pipelines
    optical_flow: bool
    #: :meth:`Backend.buffer_view` gives the mapped device bytes (files are read straight into them)
    mapped_buffers: bool
    #: graphics pipelines: :meth:`Backend.create_graphics_program` and :meth:`Backend.draw`
    graphics: bool
    #: :meth:`Backend.dispatch` takes a global offset and a global size in work-items (the last
    #: work-group of a dimension may be partial), as clEnqueueNDRangeKernel does
    work_items: bool
    #: :meth:`Backend.kernel_launches`: kernels launched with arguments by position (kernel
    #: instantiations, verify's launches)
    kernel_launches: bool
    #: dynamic and texel buffer descriptors and arrays of buffer descriptors (a binding's
    #: ``descriptor_type``, ``dynamic_offset``, ``texel_format``, ``array_element``)
    buffer_descriptors: bool

    def __init__(self, title: str, languages: Mapping[str, str], elsewhere: str = "", images: bool = False,
                 tensors: bool = False, graphs: bool = False, memory_groups: bool = False, optical_flow: bool = False,
                 mapped_buffers: bool = False, graphics: bool = False, work_items: bool = False,
                 kernel_launches: bool = False, buffer_descriptors: bool = False):
        vars(self).update(title=title, languages=languages, elsewhere=elsewhere, images=images, tensors=tensors,
                          graphs=graphs, memory_groups=memory_groups, optical_flow=optical_flow,
                          mapped_buffers=mapped_buffers, graphics=graphics, work_items=work_items,
                          kernel_launches=kernel_launches, buffer_descriptors=buffer_descriptors)

    def program_form(self, language: str) -> str | None:
        return self.languages.get(language)


#: each limit's name in the Vulkan API, which messages quote (a backend may name them otherwise)
VULKAN_LIMIT_NAMES: Mapping[str, str] = {
    "max_bound_descriptor_sets": "maxBoundDescriptorSets",
    "max_per_set_descriptors": "maxPerSetDescriptors",
    "max_workgroup_count": "maxComputeWorkGroupCount",
    "max_workgroup_size": "maxComputeWorkGroupSize",
    "max_workgroup_invocations": "maxComputeWorkGroupInvocations",
    "max_image_dimension_2d": "maxImageDimension2D",
    "max_storage_buffer_range": "maxStorageBufferRange",
    "max_uniform_buffer_range": "maxUniformBufferRange",
    "max_push_constants_size": "maxPushConstantsSize",
    "max_shared_memory_size": "maxComputeSharedMemorySize",
    "max_allocation_size": "maxMemoryAllocationSize",
    "memory_heap_size": "the size of the memory heap buffers are allocated from",
    "min_storage_buffer_offset_alignment": "minStorageBufferOffsetAlignment",
    "min_uniform_buffer_offset_alignment": "minUniformBufferOffsetAlignment",
    "min_texel_buffer_offset_alignment": "minTexelBufferOffsetAlignment",
    "subgroup_size": "subgroupSize",
    "subgroup_size_range": "minSubgroupSize..maxSubgroupSize",
}


class Limits(Frozen):
    """What the device reports it can take, as data: the run checks every dispatch, binding, image,
    buffer and push-constant size against it before anything runs. ``None``: not limited (or
    not reported), so not checked."""

    _fields = ("max_bound_descriptor_sets", "max_per_set_descriptors", "max_workgroup_count", "max_workgroup_size",
               "max_workgroup_invocations", "max_image_dimension_2d", "max_storage_buffer_range",
               "max_uniform_buffer_range", "max_push_constants_size", "max_shared_memory_size",
               "max_allocation_size", "memory_heap_size", "buffer_range_alignment",
               "min_storage_buffer_offset_alignment", "min_uniform_buffer_offset_alignment",
               "min_texel_buffer_offset_alignment", "subgroup_size", "subgroup_size_range", "names")
    _compared = _fields[:-1]  # not names

    max_bound_descriptor_sets: int | None
    #: binding ids are checked against it: drivers size a set's bindings densely up to its largest id
    max_per_set_descriptors: int | None
    max_workgroup_count: tuple[int, int, int] | None
    max_workgroup_size: tuple[int, int, int] | None
    max_workgroup_invocations: int | None
    max_image_dimension_2d: int | None
    max_storage_buffer_range: int | None
    max_uniform_buffer_range: int | None
    max_push_constants_size: int | None
    #: bytes of workgroup (shared, ``__local``) memory one workgroup may use
    max_shared_memory_size: int | None
    #: bytes of one buffer or image allocation
    max_allocation_size: int | None
    #: bytes of the memory heap the run's buffers come from, all together (images may live elsewhere)
    memory_heap_size: int | None
    #: a bound buffer range (:meth:`Backend.sub_buffer`) must start at a multiple of this many bytes
    buffer_range_alignment: int | None
    #: a descriptor's offset (and a dynamic offset) into a buffer is a multiple of these
    min_storage_buffer_offset_alignment: int | None
    min_uniform_buffer_offset_alignment: int | None
    min_texel_buffer_offset_alignment: int | None
    #: the size of a compute shader's subgroups when the pipeline asks for none
    #: (VkPhysicalDeviceSubgroupProperties::subgroupSize)
    subgroup_size: int | None
    #: the sizes a pipeline may require, VK_EXT_subgroup_size_control's min/maxSubgroupSize
    #: (None: the device does not vary its subgroup size)
    subgroup_size_range: tuple[int, int] | None
    #: limit -> its name on this backend's API, for messages (Vulkan's names unless given)
    names: Mapping[str, str]

    def __init__(self, max_bound_descriptor_sets: int | None = None, max_per_set_descriptors: int | None = None,
                 max_workgroup_count: tuple[int, int, int] | None = None,
                 max_workgroup_size: tuple[int, int, int] | None = None,
                 max_workgroup_invocations: int | None = None, max_image_dimension_2d: int | None = None,
                 max_storage_buffer_range: int | None = None, max_uniform_buffer_range: int | None = None,
                 max_push_constants_size: int | None = None, max_shared_memory_size: int | None = None,
                 max_allocation_size: int | None = None, memory_heap_size: int | None = None,
                 buffer_range_alignment: int | None = None, min_storage_buffer_offset_alignment: int | None = None,
                 min_uniform_buffer_offset_alignment: int | None = None,
                 min_texel_buffer_offset_alignment: int | None = None, subgroup_size: int | None = None,
                 subgroup_size_range: tuple[int, int] | None = None, names: Mapping[str, str] | None = None):
        vars(self).update(max_bound_descriptor_sets=max_bound_descriptor_sets,
                          max_per_set_descriptors=max_per_set_descriptors, max_workgroup_count=max_workgroup_count,
                          max_workgroup_size=max_workgroup_size,
                          max_workgroup_invocations=max_workgroup_invocations,
                          max_image_dimension_2d=max_image_dimension_2d,
                          max_storage_buffer_range=max_storage_buffer_range,
                          max_uniform_buffer_range=max_uniform_buffer_range,
                          max_push_constants_size=max_push_constants_size,
                          max_shared_memory_size=max_shared_memory_size, max_allocation_size=max_allocation_size,
                          memory_heap_size=memory_heap_size, buffer_range_alignment=buffer_range_alignment,
                          min_storage_buffer_offset_alignment=min_storage_buffer_offset_alignment,
                          min_uniform_buffer_offset_alignment=min_uniform_buffer_offset_alignment,
                          min_texel_buffer_offset_alignment=min_texel_buffer_offset_alignment,
                          subgroup_size=subgroup_size, subgroup_size_range=subgroup_size_range,
                          names=dict(VULKAN_LIMIT_NAMES) if names is None else names)

    def name(self, limit: str) -> str:
        return self.names.get(limit, VULKAN_LIMIT_NAMES.get(limit, limit))


class KernelInterface(Frozen):
    """What a program's entry point expects from a dispatch (descriptors, push-constant bytes,
    specialization ids), and the ``__local`` arguments whose lengths must be given."""

    _fields = _compared = ("interface", "local_arguments", "parameters")
    interface: Interface
    local_arguments: tuple[LocalArgument, ...]
    #: every parameter in order, where the backend takes the program as source and its driver
    #: reports them (OpenCL C); empty otherwise
    parameters: tuple[KernelArg, ...]

    def __init__(self, interface: Interface, local_arguments: tuple[LocalArgument, ...] = (),
                 parameters: tuple[KernelArg, ...] = ()):
        vars(self).update(interface=interface, local_arguments=local_arguments, parameters=parameters)


class AlignmentError(UnsupportedError):
    """A memory-group offset the device cannot bind a resource at."""

    def __init__(self, index: int, offset: int, alignment: int, uid: str):
        self.index, self.offset, self.alignment, self.uid = index, offset, alignment, uid
        super().__init__(f"offset {offset} is not a multiple of the {alignment}-byte alignment this device "
                         f"requires for \"{uid}\"")


# --- optional features ------------------------------------------------------------------------
# A backend has each of these as a part or not, as its `Capabilities` say: the runtime asks the
# backend for the part (`Backend.tensors()`...), never for a concrete backend module. The parts'
# protocols are the checker's: at run time nothing is checked against them, so they are a stub
# (feature_parts.pyi) that no run reads (their specs are in feature_specs.py, imported by the code
# that uses a feature).
if TYPE_CHECKING:
    from kernellab.backends.feature_parts import GraphFeature as GraphFeature
    from kernellab.backends.feature_parts import GraphicsFeature as GraphicsFeature
    from kernellab.backends.feature_parts import GraphSegment as GraphSegment
    from kernellab.backends.feature_parts import ImageFeature as ImageFeature
    from kernellab.backends.feature_parts import KernelLaunchFeature as KernelLaunchFeature
    from kernellab.backends.feature_parts import MemoryGroupFeature as MemoryGroupFeature
    from kernellab.backends.feature_parts import OpticalFlow as OpticalFlow
    from kernellab.backends.feature_parts import OpticalFlowFeature as OpticalFlowFeature
    from kernellab.backends.feature_parts import Tensor as Tensor
    from kernellab.backends.feature_parts import TensorFeature as TensorFeature


#: each optional feature's capability -> how a message says a backend lacks it
FEATURE_MISSING = {"images": "does not support images", "graphics": "has no graphics pipelines",
                   "tensors": "has no tensors (VK_ARM_tensors)",
                   "memory_groups": "has no memory groups (resources sharing one allocation)",
                   "graphs": "has no graphs (VK_ARM_data_graph)",
                   "optical_flow": "has no optical flow (VK_ARM_data_graph_optical_flow)",
                   "kernel_launches": "launches no kernels with arguments by position (run it on OpenCL)"}

if TYPE_CHECKING:
    _Part = TypeVar("_Part")


class BackendOptions(Frozen):
    """What a backend is opened with: the features and extensions the work needs."""

    _fields = _compared = ("robust_buffer_access", "timestamps", "pipeline_cache_data", "fail_on_pipeline_cache_miss",
                           "debug_markers", "ml", "optical_flow", "graphics", "custom_border_color")
    robust_buffer_access: bool
    #: record timestamps around every command (for --profiling-dump-path)
    timestamps: bool
    #: initial data of the pipeline cache (a validated VkPipelineCache blob); None = start empty
    pipeline_cache_data: bytes | None
    #: Arm's --fail-on-pipeline-cache-miss with a loaded cache: a pipeline not found in it is an error
    fail_on_pipeline_cache_miss: bool
    #: Arm's --enable-gpu-debug-markers: label each command (VK_EXT_debug_utils) when the driver has it
    debug_markers: bool
    #: the workload has tensors or graphs: open the device with VK_ARM_tensors/VK_ARM_data_graph
    #: (through Arm's ML emulation layer when the driver lacks them)
    ml: bool
    #: the workload has ``dispatch_optical_flow``: also VK_ARM_data_graph_optical_flow (with ``ml``)
    optical_flow: bool
    #: the workload draws (``dispatch_fragment``): a graphics queue and dynamic rendering
    graphics: bool
    #: the work may sample with a custom border color: VK_EXT_custom_border_color is enabled where
    #: the device has it (a run without images opens the device without it)
    custom_border_color: bool

    def __init__(self, robust_buffer_access: bool = False, timestamps: bool = False,
                 pipeline_cache_data: bytes | None = None, fail_on_pipeline_cache_miss: bool = False,
                 debug_markers: bool = False, ml: bool = False, optical_flow: bool = False, graphics: bool = False,
                 custom_border_color: bool = True):
        vars(self).update(robust_buffer_access=robust_buffer_access, timestamps=timestamps,
                          pipeline_cache_data=pipeline_cache_data,
                          fail_on_pipeline_cache_miss=fail_on_pipeline_cache_miss, debug_markers=debug_markers,
                          ml=ml, optical_flow=optical_flow, graphics=graphics, custom_border_color=custom_border_color)


class Backend(abc.ABC):
    name: ClassVar[str]
    capabilities: ClassVar[Capabilities]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "capabilities" in cls.__dict__ and (wrong := feature_mismatches(cls)):
            raise TypeError(f"{cls.__name__}: " + "; ".join(wrong))

    def __init__(self, device: DeviceInfo, options: BackendOptions = BackendOptions()):
        self.device = device
        self.options = options
        self._closed = False

    @property
    def limits(self) -> Limits:
        """The opened device's limits (nothing limited unless the backend reads them)."""
        return Limits()

    def pipeline_cache_blob(self) -> bytes | None:
        """The pipeline cache's data as the driver serializes it (None: the backend keeps none)."""
        return None

    def program_interface(self, spec: ProgramSpec) -> KernelInterface | None:
        """What a program taken as source (:data:`SOURCE`) expects, known before
        :meth:`create_program`; None when the backend cannot tell. Raises
        :class:`UnknownEntryError` when the source does not define ``spec.entry``. SPIR-V
        modules are reflected by the caller, which has them before any backend does."""
        return None

    # --- discovery --------------------------------------------------------------------------
    @classmethod
    @abc.abstractmethod
    def devices(cls) -> list[DeviceInfo]:
        """Every device this backend can see; raises DeviceError naming what to install if none."""

    # --- memory -----------------------------------------------------------------------------
    def alloc_buffer(self, size: int, uid: str = "") -> Buffer:
        if size < 1:
            raise ValueError(f"buffer {uid!r}: size must be >= 1, got {size}")
        return self._alloc_buffer(size, uid)

    def write_buffer(self, buf: Buffer, data: Any, offset: int = 0) -> None:
        """Copy bytes (any buffer-protocol object) into ``buf`` at ``offset``, before the frame runs."""
        view = memoryview(data).cast("B")
        if offset < 0 or offset + view.nbytes > buf.size:
            raise ValueError(f"buffer {buf.uid!r}: write of {view.nbytes} bytes at {offset} exceeds its "
                             f"{buf.size} bytes")
        self._write_buffer(buf, view, offset)

    def sub_buffer(self, buf: Buffer, offset: int, size: int) -> Buffer:
        """``size`` bytes of ``buf`` from ``offset``, bound as a buffer of their own (a split
        dispatch's part sees its rows only); backends without buffer views refuse it."""
        raise UsageError(f"the {self.name} backend cannot bind a range of buffer {buf.uid!r}")

    def free_buffer(self, buf: Buffer) -> None:
        """Release ``buf`` (or a view of :meth:`sub_buffer`) now rather than at :meth:`close`: a
        caller that runs many scenarios on one backend frees each run's buffers. Views go first.
        By default nothing: the backend releases its buffers when it closes."""
        return None

    def transfer_timings(self) -> list[CommandTiming]:
        """Device times of the buffer transfers since the last call (``write:<uid>``,
        ``fill:<uid>``, ``read:<uid>``): the writes before a frame and the reads after it, which
        :meth:`submit`'s dispatch timings leave out. Only on a backend opened with timestamps that
        profiles its transfers (OpenCL: their events); empty otherwise."""
        return []

    def clear_buffer(self, buf: Buffer) -> None:
        """Set every byte of ``buf`` to zero."""
        self._clear_buffer(buf)

    def _clear_buffer(self, buf: Buffer) -> None:
        self._write_buffer(buf, memoryview(bytes(buf.size)), 0)

    def read_buffer(self, buf: Buffer) -> np.ndarray:
        """The buffer's bytes as a uint8 array; only valid until the next submit, write or close."""
        return self._read_buffer(buf)

    def read_buffer_range(self, buf: Buffer, offset: int, size: int) -> bytes:
        """``size`` bytes of ``buf`` from ``offset`` (a guard band: no copy of the rest)."""
        if offset < 0 or size < 0 or offset + size > buf.size:
            raise ValueError(f"buffer {buf.uid!r}: read of {size} bytes at {offset} exceeds its {buf.size} bytes")
        return bytes(self.read_buffer_bytes(buf)[offset:offset + size])

    def read_buffer_into(self, buf: Buffer, out: Any, offset: int = 0) -> None:
        """Copy as many bytes of ``buf`` from ``offset`` as ``out`` (a writable buffer-protocol
        object, such as a NumPy array) holds straight into ``out``: the caller's own memory, with no
        second host copy of the bytes (a read-back that keeps the result owns it from the start)."""
        view = memoryview(out).cast("B")
        if view.readonly:
            raise ValueError(f"buffer {buf.uid!r}: read into a read-only host object")
        if offset < 0 or offset + view.nbytes > buf.size:
            raise ValueError(f"buffer {buf.uid!r}: read of {view.nbytes} bytes at {offset} exceeds its "
                             f"{buf.size} bytes")
        self._read_buffer_into(buf, view, offset)

    def _read_buffer_into(self, buf: Buffer, view: memoryview, offset: int) -> None:
        view[:] = self.read_buffer_bytes(buf)[offset:offset + view.nbytes]

    @property
    def writes_past_end_reach_memory(self) -> bool:
        """Whether a kernel's write past the end of a bound buffer lands in the memory after it,
        unchecked (a plain pointer, no robust access, no bounds-checking driver or simulator): only
        then can a guard band after the buffer show it."""
        return False

    def buffer_view(self, buf: Buffer) -> np.ndarray:
        """The buffer's device bytes, writable in place (``capabilities.mapped_buffers`` only)."""
        raise UnsupportedError(f"the {self.name} backend does not map buffers")

    # a run of buffers never imports NumPy: these two give the same bytes as memoryviews
    def read_buffer_bytes(self, buf: Buffer) -> memoryview:
        """:meth:`read_buffer`'s bytes as a memoryview; only valid until the next submit, write or close."""
        return memoryview(self.read_buffer(buf)).cast("B")  # type: ignore[arg-type]  # stubs: no Buffer

    def buffer_view_bytes(self, buf: Buffer) -> memoryview:
        """:meth:`buffer_view`'s writable device bytes as a memoryview (``capabilities.mapped_buffers`` only)."""
        return memoryview(self.buffer_view(buf)).cast("B")  # type: ignore[arg-type]  # stubs: no Buffer

    # --- programs and commands --------------------------------------------------------------
    def create_program(self, spec: ProgramSpec) -> Program:
        if spec.push_constants_size % 4:
            raise ValueError(f"program {spec.uid!r}: push constants size must be a multiple of 4")
        return self._create_program(spec)

    def dispatch(self, program: Program, workgroups: Sequence[int],
                 bindings: Mapping[tuple[int, int], Buffer | ImageBinding],
                 push_data: bytes = b"", label: str = "", *, offset: Sequence[int] = (),
                 global_size: Sequence[int] | None = None) -> None:
        """Record a dispatch of ``workgroups`` (1-3 counts, padded with 1) into the current frame.

        ``offset`` is the global id of the first work-item per dimension (clEnqueueNDRangeKernel's
        offset); ``global_size`` counts the work-items per dimension instead of whole work-groups,
        so the last work-group of a dimension may be partial (``workgroups`` is then only their
        count). Either needs ``capabilities.work_items``; other backends refuse it, naming it."""
        uid = program.spec.uid
        groups = tuple(workgroups) + (1,) * (3 - len(workgroups))
        if len(groups) != 3 or any(int(g) < 1 for g in groups):
            raise ValueError(f"dispatch of {uid!r}: workgroup counts must be 1-3 positive ints, "
                             f"got {list(workgroups)}")
        if len(push_data) > program.spec.push_constants_size:
            raise ValueError(f"dispatch of {uid!r}: {len(push_data)} bytes of push data exceed "
                             f"push_constants_size {program.spec.push_constants_size}")
        if not any(offset) and global_size is None:
            self._dispatch(program, groups, bindings, push_data, label or uid)
            return
        if not self.capabilities.work_items:
            what = "a global offset" if any(offset) else "a global size in work-items"
            raise UnsupportedError(f"dispatch of {uid!r}: the {self.capabilities.title} backend dispatches whole "
                                   f"work-groups from global id 0 and cannot take {what} (the OpenCL backend can)")
        sizes = tuple(int(g) for g in global_size) if global_size is not None else None
        if sizes is not None and not (1 <= len(sizes) <= 3 and all(g >= 1 for g in sizes)):
            raise ValueError(f"dispatch of {uid!r}: a global size must be 1-3 positive ints, got {list(sizes)}")
        dims = len(sizes) if sizes is not None else len(workgroups)
        if len(offset) > dims or any(int(o) < 0 for o in offset):
            raise ValueError(f"dispatch of {uid!r}: the global offset must be up to {dims} non-negative ints, "
                             f"got {list(offset)}")
        # dimensions the offset leaves out start at 0, as those the work-group counts leave out are 1
        start = tuple(int(o) for o in offset) + (0,) * (dims - len(offset))
        self._dispatch_range(program, groups, bindings, push_data, label or uid, start, sizes)

    def create_graphics_program(self, spec: GraphicsProgramSpec) -> Program:
        """A graphics pipeline (``capabilities.graphics`` only)."""
        if spec.push_constants_size % 4:
            raise ValueError(f"program {spec.uid!r}: push constants size must be a multiple of 4")
        return self.need(self.graphics(), "graphics").create_graphics_pipeline(spec)

    def draw(self, program: Program, attachments: Sequence[ImageBinding], extent: tuple[int, int],
             bindings: Mapping[tuple[int, int], Buffer | ImageBinding], push_data: bytes = b"",
             label: str = "", barrier: bool = True) -> None:
        """Record a draw of three vertices (no vertex input) into ``attachments`` (one mip level
        each), viewport and scissor ``extent``; with ``barrier`` its writes are made visible to
        the commands after it."""
        if extent[0] < 1 or extent[1] < 1:
            raise ValueError(f"draw of {program.spec.uid!r}: extent must be >= 1x1, got {extent}")
        if len(push_data) > program.spec.push_constants_size:
            raise ValueError(f"draw of {program.spec.uid!r}: {len(push_data)} bytes of push data exceed "
                             f"push_constants_size {program.spec.push_constants_size}")
        self.need(self.graphics(), "graphics").record_draw(program, attachments, extent, bindings, push_data,
                                                           label or program.spec.uid, barrier)

    def alloc_image(self, spec: ImageSpec) -> Image:
        if spec.width < 1 or spec.height < 1 or spec.mips < 1:
            raise ValueError(f"image {spec.uid!r}: extent and mip count must be >= 1")
        max_mips = max(spec.width, spec.height, spec.depth).bit_length()
        if spec.mips > max_mips:
            raise ValueError(f"image {spec.uid!r}: {spec.mips} mip levels, but a {spec.width}x{spec.height} "
                             f"image has at most {max_mips}")
        return self.need(self.images(), "images").create_image(spec)

    def write_image(self, image: Image, data: Any, levels: int = 1) -> None:
        """Upload ``levels`` packed mip levels (rows of texels, level after level); the levels
        beyond them up to the image's ``mips`` are generated by downsampling."""
        if not 1 <= levels <= image.spec.mips:
            raise ValueError(f"image {image.spec.uid!r}: {levels} levels given, it has {image.spec.mips}")
        self.need(self.images(), "images").upload_image(image, memoryview(data).cast("B"), levels)

    def read_image(self, image: Image, level: int = 0) -> np.ndarray:
        """The packed texels of one mip level as a uint8 array (a copy)."""
        if not 0 <= level < image.spec.mips:
            raise ValueError(f"image {image.spec.uid!r} has no mip level {level}")
        return self.need(self.images(), "images").download_image(image, level)

    def image_barrier(self, image: Image, old_layout: str, new_layout: str, base_mip: int = 0, level_count: int = 1,
                      base_layer: int = 0, layer_count: int = 1) -> None:
        """Record an image memory barrier with a layout transition (``UNDEFINED``, ``GENERAL``,
        ``TENSOR_ALIASING``) over a subresource range."""
        if base_mip + level_count > image.spec.mips:
            raise ValueError(f"image {image.spec.uid!r}: mip levels {base_mip}..{base_mip + level_count - 1} "
                             f"exceed its {image.spec.mips} levels")
        self.need(self.images(), "images").record_image_barrier(image, old_layout, new_layout, base_mip, level_count,
                                                                base_layer, layer_count)

    def open_queues(self, count: int) -> int:
        """Let dispatches recorded with no barrier between them run at once, on up to ``count``
        queues of the one device (OpenCL: in-order command queues of the backend's one context, so
        every buffer is shared): a barrier and :meth:`submit` wait for them all. Returns the
        queues now in use; 1 where the backend runs a frame on its one queue, in order."""
        return 1

    def barrier(self, buffers: Sequence[tuple[Buffer, int, int]] = (), memory: bool = True,
                label: str = "barrier") -> None:
        """Record a compute→compute dependency: a global memory barrier and/or buffer ranges
        ``(buffer, offset, size)``."""
        self._barrier(buffers, memory, label)

    # --- optional features: the backend's part for each, as ``capabilities`` declares ---------
    # a backend overrides exactly the accessors of the features its capabilities declare
    # (tests/unit/test_backend_features.py checks every registered backend)
    def images(self) -> ImageFeature | None:
        return None

    def graphics(self) -> GraphicsFeature | None:
        return None

    def tensors(self) -> TensorFeature | None:
        return None

    def memory_groups(self) -> MemoryGroupFeature | None:
        return None

    def graphs(self) -> GraphFeature | None:
        return None

    def optical_flow(self) -> OpticalFlowFeature | None:
        return None

    def kernel_launches(self) -> KernelLaunchFeature | None:
        return None

    def need(self, part: _Part | None, capability: str) -> _Part:
        """``part`` (what a feature accessor gave) when the backend has it, else
        :class:`UnsupportedError` naming the backend and the capability it lacks."""
        if part is None:
            raise UnsupportedError(f"the {self.name} backend {FEATURE_MISSING[capability]} "
                                   f"(capabilities.{capability} is off)")
        return part

    def submit(self) -> list[CommandTiming]:
        """Run the recorded frame, wait for it, and return its command timings (if enabled)."""
        return self._submit()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._close()

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- hooks ------------------------------------------------------------------------------
    @abc.abstractmethod
    def _alloc_buffer(self, size: int, uid: str) -> Buffer: ...

    @abc.abstractmethod
    def _write_buffer(self, buf: Buffer, data: memoryview, offset: int) -> None: ...

    @abc.abstractmethod
    def _read_buffer(self, buf: Buffer) -> np.ndarray: ...

    @abc.abstractmethod
    def _create_program(self, spec: ProgramSpec) -> Program: ...

    @abc.abstractmethod
    def _dispatch(self, program: Program, groups: tuple[int, int, int],
                  bindings: Mapping[tuple[int, int], Buffer | ImageBinding], push_data: bytes,
                  label: str) -> None: ...

    def _dispatch_range(self, program: Program, groups: tuple[int, int, int],
                        bindings: Mapping[tuple[int, int], Buffer | ImageBinding], push_data: bytes, label: str,
                        offset: tuple[int, ...], global_size: tuple[int, ...] | None) -> None:
        """A dispatch from global id ``offset`` of ``global_size`` work-items (None: ``groups``
        whole work-groups); only a backend with ``capabilities.work_items`` is asked."""
        raise UnsupportedError(f"the {self.capabilities.title} backend has no dispatch with a global offset")

    @abc.abstractmethod
    def _barrier(self, buffers: Sequence[tuple[Buffer, int, int]], memory: bool, label: str) -> None: ...

    @abc.abstractmethod
    def _submit(self) -> list[CommandTiming]: ...

    @abc.abstractmethod
    def _close(self) -> None: ...


def feature_mismatches(cls: type[Backend]) -> list[str]:
    """Where a backend class's feature accessors and its capabilities disagree: an accessor is
    overridden exactly for each optional feature its ``capabilities`` declare (a class that
    disagrees is refused when it is defined)."""
    wrong = []
    for feature in FEATURE_MISSING:
        declared = bool(getattr(cls.capabilities, feature))
        has_part = getattr(cls, feature) is not getattr(Backend, feature)
        if declared and not has_part:
            wrong.append(f"capabilities.{feature} is on but {feature}() gives no part")
        elif has_part and not declared:
            wrong.append(f"{feature}() gives a part but capabilities.{feature} is off")
    return wrong


#: the names of the interface declared in ``occasional.py``, built on first use
_OCCASIONAL = ("CommandTiming", "LocalArgument", "PipelineCacheMiss", "SubgroupSizing", "UnknownEntryError")


def __getattr__(name: str) -> Any:
    # PEP 562: the records and errors a run meets only on occasion, imported when first asked for
    if name not in _OCCASIONAL:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from kernellab.backends import occasional

    value = getattr(occasional, name)
    globals()[name] = value
    return value
