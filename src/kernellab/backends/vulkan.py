"""The Vulkan backend, built from parts.

:class:`~kernellab.backends.vulkan_device.VulkanDevice` opens the device and owns what is shared
(memory, pipeline cache, descriptor sets, command recording); the backend itself runs buffers and
compute programs on it, and each optional feature is a part made on first use that receives the
device explicitly: images (``vulkan_image``), graphics pipelines (``vulkan_graphics``), tensors
and memory groups, graph segments (``vulkan_ml``), optical flow (``vulkan_optical_flow``). The
runtime reaches a part through the feature accessors of :class:`~kernellab.backends.base.Backend`.
Buffers and compute go through kernellab's small binding (``native/vkbind``); the parts that need
more switch the device to the ``vulkan`` package (``VulkanDevice.use_full_binding``).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from kernellab.backends import vulkan_device as vd
from kernellab.backends.base import (
    VULKAN_MODULE,
    Backend,
    BackendOptions,
    Buffer,
    Capabilities,
    DeviceInfo,
    ImageBinding,
    Limits,
    Program,
    ProgramSpec,
)
from kernellab.backends.vkcore import VulkanProgram, create_compute_pipeline, specialization_info
from kernellab.backends.vulkan_device import Instance, VulkanBuffer, VulkanDevice
from kernellab.errors import DeviceError, InputError
from kernellab.native import vk as nvk
from kernellab.native.vk import INSTALL_HINT
from kernellab.native.vk import checked as _checked

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:  # NumPy only where images and tensors need it: a run of buffers starts without it
    import numpy as np

    from kernellab.backends.base import CommandTiming
    from kernellab.backends.vulkan_graphics import VulkanGraphics
    from kernellab.backends.vulkan_image import VulkanImages
    from kernellab.backends.vulkan_ml import VulkanGraphs, VulkanTensors
    from kernellab.backends.vulkan_optical_flow import VulkanOpticalFlows

#: a buffer is cleared a block at a time: a large one needs no zeroed copy of its size
_ZERO_BLOCK = 1 << 20

KIND_OF_TYPE = {0: "other", 1: "integrated-gpu", 2: "discrete-gpu", 3: "virtual-gpu", 4: "cpu"}


def _version(v: int) -> str:
    return f"{v >> 22}.{(v >> 12) & 0x3FF}.{v & 0xFFF}"


class VulkanBackend(Backend):
    name = "vulkan"
    capabilities = Capabilities(
        title="Vulkan", languages={"glsl": VULKAN_MODULE, "spirv": VULKAN_MODULE, "opencl-c": VULKAN_MODULE},
        images=True, tensors=True, graphs=True, memory_groups=True, optical_flow=True, mapped_buffers=True,
        graphics=True, buffer_descriptors=True)

    @classmethod
    def devices(cls) -> list[DeviceInfo]:
        vk = nvk.compute()
        inst = Instance.shared()
        if not inst.physical_devices:
            raise DeviceError(f"the Vulkan loader found no devices: {INSTALL_HINT}")
        out = []
        for i, pd in enumerate(inst.physical_devices):
            p = vk.vkGetPhysicalDeviceProperties(pd)
            exts = vk.device_extensions(pd)  # names read when asked: a run asks two or three
            out.append(DeviceInfo("vulkan", i, p.deviceName, KIND_OF_TYPE.get(p.deviceType, "other"),
                                  driver=_version(p.driverVersion), api_version=_version(p.apiVersion),
                                  details={"vendor_id": f"0x{p.vendorID:04x}", "device_id": f"0x{p.deviceID:04x}",
                                           "timestamp_period_ns": p.limits.timestampPeriod,
                                           "max_workgroup_size": list(p.limits.maxComputeWorkGroupSize),
                                           "max_workgroup_count": list(p.limits.maxComputeWorkGroupCount),
                                           "max_push_constants_size": p.limits.maxPushConstantsSize,
                                           "extensions": exts}))
        return out

    def __init__(self, device: DeviceInfo, options: BackendOptions = BackendOptions()):
        super().__init__(device, options)
        self.gpu = VulkanDevice(device, options)
        if not self.gpu.memory.mapped(self.gpu.memory.device):
            # buffers in device-only memory: files go through write_buffer, not into a mapping.
            # The class declares what the backend can do; this device can do less (shadowed per instance)
            vars(self)["capabilities"] = self.capabilities.replace(mapped_buffers=False)
        # the optional parts, made on first use (a buffer-only run imports none of their modules)
        self._images: VulkanImages | None = None
        self._graphics: VulkanGraphics | None = None
        self._tensors: VulkanTensors | None = None
        self._graphs: VulkanGraphs | None = None
        self._optical_flows: VulkanOpticalFlows | None = None

    @property
    def limits(self) -> Limits:
        return self.gpu.limits

    def pipeline_cache_blob(self) -> bytes | None:
        return self.gpu.pipeline_cache_blob()

    # --- the parts -----------------------------------------------------------------------------
    def images(self) -> VulkanImages:
        if self._images is None:
            from kernellab.backends.vulkan_image import VulkanImages

            self.gpu.use_full_binding()  # the compute binding declares no image functions
            self._images = VulkanImages(self.gpu)
        return self._images

    def graphics(self) -> VulkanGraphics:
        if self._graphics is None:
            from kernellab.backends.vulkan_graphics import VulkanGraphics

            self._graphics = VulkanGraphics(self.gpu)
        return self._graphics

    def tensors(self) -> VulkanTensors:
        if self._tensors is None:
            from kernellab.backends.vulkan_ml import VulkanTensors

            self._tensors = VulkanTensors(self.gpu, self.images())
        return self._tensors

    def memory_groups(self) -> VulkanTensors:
        return self.tensors()  # a group may hold tensors: the tensor part binds every member

    def graphs(self) -> VulkanGraphs:
        if self._graphs is None:
            from kernellab.backends.vulkan_ml import VulkanGraphs

            self._graphs = VulkanGraphs(self.gpu)
        return self._graphs

    def optical_flow(self) -> VulkanOpticalFlows:
        if self._optical_flows is None:
            from kernellab.backends.vulkan_optical_flow import VulkanOpticalFlows

            self._optical_flows = VulkanOpticalFlows(self.gpu)
        return self._optical_flows

    # --- buffers -------------------------------------------------------------------------------
    def _alloc_buffer(self, size: int, uid: str) -> VulkanBuffer:
        return self.gpu.alloc_buffer(size, uid)

    def _write_buffer(self, buf: Buffer, data: memoryview, offset: int) -> None:
        assert isinstance(buf, VulkanBuffer)
        if buf.mapping is None:
            self.gpu.upload(buf, data, offset)
        else:  # writing through a mapping is fast even where reading it back is not (write-combined)
            buf.view[offset:offset + data.nbytes] = data

    def _clear_buffer(self, buf: Buffer) -> None:
        assert isinstance(buf, VulkanBuffer)
        if buf.mapping is None:
            self.gpu.fill_zero(buf)
            return
        zeros = bytes(min(buf.size, _ZERO_BLOCK))
        for start in range(0, buf.size, len(zeros)):
            end = min(start + len(zeros), buf.size)
            buf.view[start:end] = zeros[:end - start]

    def _read_buffer(self, buf: Buffer) -> np.ndarray:
        assert isinstance(buf, VulkanBuffer)
        if buf.host_cached:
            return buf.array
        import numpy as np

        return np.frombuffer(self.gpu.read_back(buf), dtype=np.uint8)

    def sub_buffer(self, buf: Buffer, offset: int, size: int) -> VulkanBuffer:
        """``size`` bytes of ``buf`` from ``offset``: the same VkBuffer, bound to descriptors at
        that offset with that range (a descriptor's range, or a split dispatch's part)."""
        assert isinstance(buf, VulkanBuffer)
        if offset < 0 or size < 1 or offset + size > buf.size:
            raise ValueError(f"buffer {buf.uid!r}: a range of {size} bytes at {offset} exceeds its {buf.size} bytes")
        return buf.part(offset, size)

    def buffer_view(self, buf: Buffer) -> np.ndarray:
        """The mapped bytes, writable: files are read straight into it (no staging copy)."""
        assert isinstance(buf, VulkanBuffer)
        self._require_mapping(buf)
        return buf.array

    def read_buffer_bytes(self, buf: Buffer) -> memoryview:
        """The buffer's bytes: its mapping where the CPU reads it fast, else a copy made by the
        device into host-cached memory (never CPU reads of uncached device memory)."""
        assert isinstance(buf, VulkanBuffer)
        return buf.view if buf.host_cached else self.gpu.read_back(buf)

    def buffer_view_bytes(self, buf: Buffer) -> memoryview:
        assert isinstance(buf, VulkanBuffer)
        self._require_mapping(buf)
        return buf.view

    def _require_mapping(self, buf: VulkanBuffer) -> None:
        if buf.mapping is None:
            raise DeviceError(f"buffer {buf.uid!r} lives in device-only memory: it has no mapped bytes "
                              "(capabilities.mapped_buffers is false on this device)")

    # --- compute programs ----------------------------------------------------------------------
    def _create_program(self, spec: ProgramSpec) -> VulkanProgram:
        gpu = self.gpu
        vk = gpu.vk
        if spec.language != "spirv":
            raise InputError(f"program {spec.uid!r}: the Vulkan backend runs SPIR-V, got {spec.language}")
        with _checked(f"vkCreateShaderModule({spec.uid})"):
            module = vk.vkCreateShaderModule(gpu.handle, vk.VkShaderModuleCreateInfo(
                codeSize=len(spec.code), pCode=spec.code), None)
        set_layouts, layout, set_bindings = gpu.pipeline_layout(spec)
        spec_info, keep = specialization_info(spec.specialization, vk)
        flags, sizing = subgroup_stage_info(vk, spec)
        stage = vk.VkPipelineShaderStageCreateInfo(stage=vd.VK_SHADER_STAGE_COMPUTE_BIT, module=module,
                                                   pName=spec.entry, pSpecializationInfo=spec_info,
                                                   flags=flags, pNext=sizing)
        pipeline = create_compute_pipeline(vk, gpu.handle, gpu.pipeline_cache, stage, layout, spec.uid,
                                           f"vkCreateComputePipelines({spec.uid}, entry {spec.entry!r})",
                                           self.options.fail_on_pipeline_cache_miss)
        program = VulkanProgram(spec, module, set_layouts, layout, pipeline, set_bindings)
        gpu.add_program(program)
        return program

    # --- commands ------------------------------------------------------------------------------
    def _dispatch(self, program: Program, groups: tuple[int, int, int],
                  bindings: Mapping[tuple[int, int], Buffer | ImageBinding],
                  push_data: bytes, label: str) -> None:
        assert isinstance(program, VulkanProgram)
        gpu = self.gpu
        vk = gpu.vk
        cmd = gpu.begin()
        close_label = gpu.label(cmd, label)
        if gpu.timing:
            gpu.timestamp(cmd)
        gpu.bind_program(cmd, program, vd.VK_PIPELINE_BIND_POINT_COMPUTE, vd.VK_SHADER_STAGE_COMPUTE_BIT,
                         gpu.descriptor_sets(program, bindings), push_data, gpu.dynamic_offsets(program, bindings))
        vk.vkCmdDispatch(cmd, *groups)
        if gpu.timing:
            gpu.end_timing(cmd, label)
        close_label()

    def _barrier(self, buffers: Sequence[tuple[Buffer, int, int]], memory: bool, label: str) -> None:
        gpu = self.gpu
        vk = gpu.vk
        cmd = gpu.begin()
        # with graphs in the frame, the dependency spans the data-graph stage and its accesses too
        if gpu.ml:
            stage = vd.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT
            access = vd.VK_ACCESS_MEMORY_READ_BIT | vd.VK_ACCESS_MEMORY_WRITE_BIT
        else:
            stage = vd.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
            access = vd.VK_ACCESS_SHADER_READ_BIT | vd.VK_ACCESS_SHADER_WRITE_BIT
        mem = [vk.VkMemoryBarrier(srcAccessMask=access, dstAccessMask=access)] if memory else []
        bufs = []
        for buf, offset, size in buffers:
            assert isinstance(buf, VulkanBuffer)
            bufs.append(vk.VkBufferMemoryBarrier(srcAccessMask=access, dstAccessMask=access,
                                                 srcQueueFamilyIndex=vd.VK_QUEUE_FAMILY_IGNORED,
                                                 dstQueueFamilyIndex=vd.VK_QUEUE_FAMILY_IGNORED,
                                                 buffer=buf.handle, offset=offset, size=size))
        # a scenario's barrier command is labelled; the implicit one after a dispatch is not a command
        close_label = gpu.label(cmd, label) if not label.endswith(":implicit_barrier") else None
        vk.vkCmdPipelineBarrier(cmd, stage, stage, 0, len(mem), mem or None, len(bufs), bufs or None, 0, None)
        if close_label is not None:
            close_label()

    def _submit(self) -> list[CommandTiming]:
        return self.gpu.submit()

    def _close(self) -> None:
        # the parts' objects go after the shared pipelines and before the memory they live in
        parts: list[Callable[[], None]] = [p.close for p in (self._optical_flows, self._graphs, self._tensors,
                                                             self._images) if p is not None]
        self.gpu.close(parts)


#: VkPipelineShaderStageCreateFlagBits (the ``vulkan`` module's names for them are None)
_ALLOW_VARYING_SUBGROUP_SIZE, _REQUIRE_FULL_SUBGROUPS = 0x1, 0x2


def subgroup_stage_info(vk: Any, spec: ProgramSpec) -> tuple[int, Any]:
    """The compute stage's create flags and ``pNext`` for the program's subgroup sizing
    (VK_EXT_subgroup_size_control, core in 1.3): full subgroups and varying sizes are stage
    flags, a required size a VkPipelineShaderStageRequiredSubgroupSizeCreateInfo."""
    g = spec.subgroup
    if g is None:
        return 0, None
    flags = (_REQUIRE_FULL_SUBGROUPS if g.full else 0) | (_ALLOW_VARYING_SUBGROUP_SIZE if g.varying else 0)
    sizing = vk.VkPipelineShaderStageRequiredSubgroupSizeCreateInfo(requiredSubgroupSize=g.required_size) \
        if g.required_size else None
    return flags, sizing
