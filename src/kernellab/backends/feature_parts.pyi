"""The protocols of a backend's optional parts, for the type checker alone (a stub: nothing of it
runs, so a run builds none of these classes nor reads their text). A backend has each part or not,
as its ``Capabilities`` say, and the runtime asks the backend for it (``Backend.tensors()``...);
``base.py`` gives these names. The parts' specs are in ``feature_specs.py``."""
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from kernellab.backends.base import Buffer, ImageBinding, Program
from kernellab.backends.feature_specs import (
    BufferSpec,
    GraphicsProgramSpec,
    GraphSegmentSpec,
    Image,
    ImageSpec,
    KernelArg,
    OpticalFlowSpec,
    TensorSpec,
)

class Tensor(Protocol):
    """A device tensor created by a backend's :class:`TensorFeature`."""

    @property
    def spec(self) -> TensorSpec: ...


class GraphSegment(Protocol):
    """A graph segment's pipeline, made by :meth:`GraphFeature.create_graph_segment`."""

    @property
    def spec(self) -> GraphSegmentSpec: ...

    #: bytes of session memory bound (Arm's profiling dump reports them as "Session memory [bytes]")
    @property
    def session_bytes(self) -> int: ...


class OpticalFlow(Protocol):
    """An optical-flow pipeline, made by :meth:`OpticalFlowFeature.create_optical_flow`."""

    @property
    def spec(self) -> OpticalFlowSpec: ...

    @property
    def session_bytes(self) -> int: ...


class ImageFeature(Protocol):
    """``capabilities.images``: the work behind :meth:`Backend.alloc_image` and its kin, which
    check their inputs first."""

    def create_image(self, spec: ImageSpec) -> Image: ...

    def upload_image(self, image: Image, data: memoryview, levels: int) -> None: ...

    def download_image(self, image: Image, level: int) -> np.ndarray: ...

    def record_image_barrier(self, image: Image, old_layout: str, new_layout: str, base_mip: int,
                             level_count: int, base_layer: int, layer_count: int) -> None: ...


class GraphicsFeature(Protocol):
    """``capabilities.graphics``: the work behind :meth:`Backend.create_graphics_program` and
    :meth:`Backend.draw`, which check their inputs first."""

    def create_graphics_pipeline(self, spec: GraphicsProgramSpec) -> Program: ...

    def record_draw(self, program: Program, attachments: Sequence[ImageBinding], extent: tuple[int, int],
                    bindings: Mapping[tuple[int, int], Buffer | ImageBinding], push_data: bytes, label: str,
                    barrier: bool) -> None: ...


class TensorFeature(Protocol):
    """``capabilities.tensors``: VK_ARM_tensors tensors, their data and their barriers."""

    def alloc_tensor(self, spec: TensorSpec, zero: bool = True) -> Tensor:
        """A tensor in memory of its own, zero-filled unless ``zero`` is False (the caller
        writes every element next)."""

    def write_tensor(self, tensor: Tensor, data: np.ndarray) -> None:
        """Set the tensor's elements from an array of its dims (any dtype of the element's size)."""

    def read_tensor(self, tensor: Tensor) -> np.ndarray:
        """The elements as a contiguous array shaped by dims (a copy)."""

    def tensor_view_array(self, tensor: Tensor) -> np.ndarray | None:
        """The mapped bytes of a packed tensor (files are read straight into them), or None."""

    def tensor_barrier(self, barriers: Sequence[tuple[Tensor, Sequence[str], str, Sequence[str], str]]) -> None:
        """Record tensor memory barriers: (tensor, src stages, src access, dst stages, dst access),
        in the scenario's names (``COMPUTE``, ``ACCESS_COMPUTE_SHADER_WRITE``...)."""


class MemoryGroupFeature(Protocol):
    """``capabilities.memory_groups``: resources bound into one allocation."""

    def alloc_group(self, members: Sequence[tuple[BufferSpec | ImageSpec | TensorSpec, int]]
                    ) -> list[Buffer | Image | Tensor]:
        """The members created at their byte offsets in one zeroed allocation, in the order
        given; :class:`AlignmentError` (with the member's index) for an offset the device
        cannot bind at."""


class GraphFeature(Protocol):
    """``capabilities.graphs``: VK_ARM_data_graph segments (data-graph or compute pipelines)."""

    def create_graph_segment(self, spec: GraphSegmentSpec,
                             resources: Mapping[tuple[int, int], Tensor | Buffer]) -> GraphSegment:
        """A segment's pipeline with its descriptor sets written: ``resources`` maps each slot's
        (set, binding) to a tensor (kind ``tensor``) or a buffer (``storage-buffer``)."""

    def dispatch_graph_segment(self, program: GraphSegment, push_data: bytes = b"", label: str = "") -> None:
        """Record one segment into the current frame, then a barrier so the next one sees its writes."""


class OpticalFlowFeature(Protocol):
    """``capabilities.optical_flow``: VK_ARM_data_graph_optical_flow pipelines."""

    def create_optical_flow(self, spec: OpticalFlowSpec) -> OpticalFlow:
        """The pipeline, descriptor sets and session of one optical flow."""

    def dispatch_optical_flow(self, program: OpticalFlow, execution_flags: Sequence[str] = (),
                              mean_flow_l1_norm_hint: int = 0, label: str = "") -> None:
        """Record one optical flow into the current frame (``execution_flags`` in Arm's names)."""



class KernelLaunchFeature(Protocol):
    """Kernels taken as source, launched the way ``clEnqueueNDRangeKernel`` does: positional
    arguments (buffers made with their ``cl_mem_flags``, ``__local`` sizes, by-value bytes,
    images and samplers), a global size, offset and local size of the caller's. What a
    kernel-instantiation file needs beyond a scenario's dispatch."""

    @property
    def is_simulator(self) -> bool:
        """The device simulates kernels and checks each access (Oclgrind): it runs work-groups of
        unequal size whatever OpenCL C version it reports."""

    def language_version(self) -> tuple[int, int] | None:
        """The device's kernel language version (OpenCL C major, minor); None when it does not say."""

    def non_uniform_work_groups(self) -> bool:
        """Whether a device of a version where they are optional (OpenCL 3.0) supports work-groups
        of unequal size (True when it cannot tell)."""

    def kernel_arguments(self, program: Program) -> list[KernelArg]:
        """The program's parameters, in order, as the driver reports them."""

    def static_local_memory(self, program: Program) -> int:
        """Bytes of the program's own ``__local`` arrays; 0 where the driver does not say."""

    def required_work_group_size(self, program: Program) -> tuple[int, int, int]:
        """The kernel's ``reqd_work_group_size`` (CL_KERNEL_COMPILE_WORK_GROUP_SIZE); zeros when
        it names none."""

    def type_layout(self, program: Program, type_names: Sequence[str]) -> dict[str, tuple[int, int]]:
        """``(sizeof, alignof)`` of by-value types only the compiler can size."""

    def alloc_with_flags(self, size: int, flags: Sequence[str], uid: str = "") -> Buffer:
        """A buffer created with named ``cl_mem_flags`` (``CL_MEM_READ_ONLY``...)."""

    def make_image(self, dims: Sequence[int], data: np.ndarray, access: str) -> Any:
        """A float RGBA image of ``dims`` holding ``data``."""

    def make_sampler(self, normalized: bool = False, addressing: str = "CLAMP_TO_EDGE",
                     filtering: str = "NEAREST") -> Any: ...

    def read_launch_image(self, image: Any, dims: Sequence[int]) -> np.ndarray:
        """The texels of an image made by :meth:`make_image`."""

    def launch(self, program: Program, args: Sequence[Any], global_size: Sequence[int],
               local_size: Sequence[int] | None = None, global_offset: Sequence[int] | None = None,
               label: str = "") -> None:
        """Enqueue ``program`` with ``args`` by position into the current frame."""
