"""Calling VK_ARM_tensors / VK_ARM_data_graph through kernellab's own FFI.

Our FFI's types (:mod:`kernellab.backends.vulkan_arm_decls`) are distinct from the ``vulkan``
package's, so handles and pointers cross between them by address (:func:`to_arm`,
:func:`to_vulkan`); extension functions are fetched with the loader's ``vkGetDeviceProcAddr``
and cast to the generated ``PFN_`` types (:class:`ArmDevice`), and every ``VkResult`` they return
is checked at the Vulkan boundary (:func:`kernellab.native.vk.check`). The struct builders here
(tensor descriptions, tensor barriers, tensor descriptor writes) return the cdata to keep alive.
"""
from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from kernellab.backends.vulkan_arm_decls import const, ctype, ffi, new
from kernellab.errors import BackendError
from kernellab.native import vk as nvk
from kernellab.records import dataclass

# --------------------------------------------------------------------------------------------
# crossing between the two FFIs



def address(cdata: Any) -> int:
    """The address a cdata pointer or handle (from either FFI) holds."""
    vk = nvk.load()
    if isinstance(cdata, vk.ffi.CData):
        return int(vk.ffi.cast("uintptr_t", cdata))
    return int(ffi().cast(ctype("uintptr_t"), cdata))


def to_arm(cdata: Any, type_name: str) -> Any:
    """A ``vulkan``-package handle or pointer as our FFI's ``type_name``."""
    return ffi().cast(ctype(type_name), address(cdata))


def to_vulkan(cdata: Any, type_name: str = "void*") -> Any:
    """One of our pointers or handles as the ``vulkan`` package's ``type_name`` (for ``pNext``)."""
    return nvk.load().ffi.cast(type_name, address(cdata))


def chain(*structs: Any) -> Any:
    """Link our structs through ``pNext`` in order; returns the head as a ``vulkan`` ``void*``.

    The caller keeps ``structs`` alive as long as the head is in use.
    """
    for a, b in itertools.pairwise(structs):
        a.pNext = ffi().cast(ctype("void*"), address(b))
    return to_vulkan(structs[0]) if structs else nvk.load().ffi.NULL


# --------------------------------------------------------------------------------------------
# calling the extension functions


#: a raw ``VkResult`` of an extension function, checked at the Vulkan boundary
check = nvk.check


class ArmDevice:
    """The extension functions of one device: ``arm.vkCreateTensorARM(...)`` with our FFI's types.

    ``device`` is the ``vulkan`` package's ``VkDevice``; functions that return a ``VkResult``
    are checked (a failure raises :class:`BackendError`), others return what the function does.
    """

    def __init__(self, device: Any, instance: Any = None):
        self.vk_device = device
        self.device = to_arm(device, "VkDevice")
        self.instance = instance
        self._fns: dict[str, Any] = {}

    def _load(self, name: str) -> Any:
        fn = self._fns.get(name)
        if fn is None:
            vk = nvk.load()
            ptr = vk.lib.vkGetDeviceProcAddr(self.vk_device, name.encode())
            if ptr == vk.ffi.NULL and self.instance is not None:
                ptr = vk.lib.vkGetInstanceProcAddr(self.instance, name.encode())
            if ptr == vk.ffi.NULL:
                raise BackendError(f"vkGetDeviceProcAddr({name})", "NULL",
                                   "the device does not expose this function; is its extension enabled?")
            fn = ffi().cast(ctype(f"PFN_{name}"), address(ptr))
            self._fns[name] = fn
        return fn

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("vk"):
            raise AttributeError(name)
        fn = self._load(name)
        returns_result = ffi().typeof(fn).result.cname == "VkResult"

        def call(*args: Any) -> Any:
            out = fn(*args)
            if returns_result:
                nvk.check(name, out)
            return out

        call.__name__ = name
        return call

    # the handful of helpers a backend needs for tensors

    def create_tensor(self, fmt: int, dims: Sequence[int], usage: int, *, tiling: int | None = None,
                      strides: Sequence[int] | None = None) -> tuple[Any, list[Any]]:
        """A ``VkTensorARM`` (our FFI) and the cdata that must outlive the call (kept by the caller)."""
        f = ffi()
        desc, keep = tensor_description(fmt, dims, usage, tiling=tiling, strides=strides)
        info = new("VkTensorCreateInfoARM", pDescription=desc, sharingMode=0)
        out = f.new(ctype("VkTensorARM*"))
        self.vkCreateTensorARM(self.device, info, f.NULL, out)
        return out[0], [*keep, info]

    def tensor_memory_requirements(self, tensor: Any) -> tuple[int, int, int]:
        """(size, alignment, memoryTypeBits) of a tensor."""
        info = new("VkTensorMemoryRequirementsInfoARM", tensor=tensor)
        req = new("VkMemoryRequirements2")
        self.vkGetTensorMemoryRequirementsARM(self.device, info, req)
        r = req.memoryRequirements
        return int(r.size), int(r.alignment), int(r.memoryTypeBits)

    def bind_tensor_memory(self, tensor: Any, memory: Any, offset: int = 0) -> None:
        """Bind a ``vulkan``-package ``VkDeviceMemory`` to a tensor at ``offset``."""
        info = new("VkBindTensorMemoryInfoARM", tensor=tensor, memory=to_arm(memory, "VkDeviceMemory"),
                   memoryOffset=offset)
        self.vkBindTensorMemoryARM(self.device, 1, info)

    def destroy_tensor(self, tensor: Any) -> None:
        self.vkDestroyTensorARM(self.device, tensor, ffi().NULL)

    def create_tensor_view(self, tensor: Any, fmt: int) -> Any:
        info = new("VkTensorViewCreateInfoARM", tensor=tensor, format=fmt)
        out = ffi().new(ctype("VkTensorViewARM*"))
        self.vkCreateTensorViewARM(self.device, info, ffi().NULL, out)
        return out[0]

    def destroy_tensor_view(self, view: Any) -> None:
        self.vkDestroyTensorViewARM(self.device, view, ffi().NULL)

    # data graphs (VK_ARM_data_graph)

    def create_data_graph_pipeline(self, layout: Any, shader_module: Any, entry_point: str,
                                   resources: Sequence[GraphTensor], constants: Sequence[GraphConstant] = (),
                                   *, cache: Any = None, flags: int = 0, feedback: Any = None
                                   ) -> tuple[Any, list[Any]]:
        """A data-graph ``VkPipeline`` (our FFI) for a SPIR-V graph module.

        ``layout`` and ``shader_module`` are the ``vulkan`` package's handles; ``resources`` are
        the graph's bound tensors (descriptor set, binding and tensor description), ``constants``
        its weights from the VGF. ``cache`` is a ``vulkan``-package ``VkPipelineCache``,
        ``flags`` ``VkPipelineCreateFlags2KHR``, ``feedback`` a ``vulkan``-package
        ``VkPipelineCreationFeedbackCreateInfo`` chained after the module info (Arm's runner
        asks there whether the cache held the pipeline). Returns the pipeline and cdata to keep
        until it is destroyed.
        """
        f = ffi()
        keep: list[Any] = []
        infos = f.new(ctype("VkDataGraphPipelineResourceInfoARM[]"), max(len(resources), 1))
        for i, r in enumerate(resources):
            desc, k = tensor_description(r.format, r.shape, const("VK_TENSOR_USAGE_DATA_GRAPH_BIT_ARM"),
                                         tiling=r.tiling, strides=r.strides)
            keep += k
            infos[i].sType = const("VK_STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_RESOURCE_INFO_ARM")
            infos[i].pNext = desc
            infos[i].descriptorSet = r.set
            infos[i].binding = r.binding
        consts = f.new(ctype("VkDataGraphPipelineConstantARM[]"), max(len(constants), 1))
        for i, c in enumerate(constants):
            desc, k = tensor_description(c.format, c.shape, const("VK_TENSOR_USAGE_DATA_GRAPH_BIT_ARM"),
                                         tiling=const("VK_TENSOR_TILING_LINEAR_ARM"))
            keep += k
            if c.sparsity_dimension is not None:
                # 2:4 structured sparsity, as Arm's runner declares it
                sparse = new("VkDataGraphPipelineConstantTensorSemiStructuredSparsityInfoARM",
                             dimension=c.sparsity_dimension, zeroCount=2, groupSize=4)
                desc.pNext = sparse
                keep.append(sparse)
            data = f.new(ctype("uint8_t[]"), bytes(c.data))
            keep += [data]
            consts[i].sType = const("VK_STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_CONSTANT_ARM")
            consts[i].pNext = desc
            consts[i].id = c.id
            consts[i].pConstantData = data
        name = f.new(ctype("char[]"), entry_point.encode())
        module_info = new("VkDataGraphPipelineShaderModuleCreateInfoARM",
                          module=to_arm(shader_module, "VkShaderModule"),
                          pName=name, constantCount=len(constants), pConstants=consts)
        if feedback is not None:
            module_info.pNext = to_arm(feedback, "void*")
        create = new("VkDataGraphPipelineCreateInfoARM", pNext=module_info, layout=to_arm(layout, "VkPipelineLayout"),
                     resourceInfoCount=len(resources), pResourceInfos=infos, flags=flags)
        out = f.new(ctype("VkPipeline*"))
        self.vkCreateDataGraphPipelinesARM(self.device, f.NULL, to_arm(cache, "VkPipelineCache") if cache else f.NULL,
                                           1, create, f.NULL, out)
        return out[0], keep + [infos, consts, name, module_info, create]

    def create_session(self, pipeline: Any, allocate: Any, flags: int = 0) -> tuple[Any, list[Any]]:
        """A session for a data-graph pipeline with all its bind points backed by memory.

        ``allocate(size, memory_type_bits)`` returns a ``vulkan``-package ``VkDeviceMemory``;
        returns the session and the memories (free them after destroying the session). ``flags``:
        ``VkDataGraphPipelineSessionCreateFlagsARM`` (an optical-flow cache, say).
        """
        f = ffi()
        out = f.new(ctype("VkDataGraphPipelineSessionARM*"))
        self.vkCreateDataGraphPipelineSessionARM(
            self.device, new("VkDataGraphPipelineSessionCreateInfoARM", dataGraphPipeline=pipeline, flags=flags),
            f.NULL, out)
        session = out[0]
        info = new("VkDataGraphPipelineSessionBindPointRequirementsInfoARM", session=session)
        count = f.new(ctype("uint32_t*"))
        self.vkGetDataGraphPipelineSessionBindPointRequirementsARM(self.device, info, count, f.NULL)
        reqs = f.new(ctype("VkDataGraphPipelineSessionBindPointRequirementARM[]"), max(count[0], 1))
        for i in range(count[0]):
            reqs[i].sType = const("VK_STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_SESSION_BIND_POINT_REQUIREMENT_ARM")
        self.vkGetDataGraphPipelineSessionBindPointRequirementsARM(self.device, info, count, reqs)
        memories = []
        for i in range(count[0]):
            r = reqs[i]
            if r.bindPointType != const("VK_DATA_GRAPH_PIPELINE_SESSION_BIND_POINT_TYPE_MEMORY_ARM"):
                raise BackendError("vkGetDataGraphPipelineSessionBindPointRequirementsARM", "unsupported",
                                   f"bind point {r.bindPoint} of type {r.bindPointType} is not memory")
            for obj in range(r.numObjects):
                req = new("VkMemoryRequirements2")
                self.vkGetDataGraphPipelineSessionMemoryRequirementsARM(self.device, new(
                    "VkDataGraphPipelineSessionMemoryRequirementsInfoARM", session=session, bindPoint=r.bindPoint,
                    objectIndex=obj), req)
                mem = allocate(max(int(req.memoryRequirements.size), 1), int(req.memoryRequirements.memoryTypeBits))
                memories.append(mem)
                self.vkBindDataGraphPipelineSessionMemoryARM(self.device, 1, new(
                    "VkBindDataGraphPipelineSessionMemoryInfoARM", session=session, bindPoint=r.bindPoint,
                    objectIndex=obj, memory=to_arm(mem, "VkDeviceMemory"), memoryOffset=0))
        return session, memories

    def destroy_session(self, session: Any) -> None:
        self.vkDestroyDataGraphPipelineSessionARM(self.device, session, ffi().NULL)

    def cmd_dispatch_data_graph(self, command_buffer: Any, session: Any, info: Any = None) -> None:
        """Record a graph dispatch into a ``vulkan``-package command buffer; ``info``: a
        ``VkDataGraphPipelineDispatchInfoARM*`` (optical flow's flags ride in its ``pNext``)."""
        self.vkCmdDispatchDataGraphARM(to_arm(command_buffer, "VkCommandBuffer"), session,
                                       ffi().NULL if info is None else info)


@dataclass(frozen=True)
class GraphTensor:
    """A tensor bound to a data-graph pipeline at (set, binding)."""

    set: int
    binding: int
    format: int
    shape: Sequence[int]
    tiling: int | None = None
    strides: Sequence[int] | None = None


@dataclass(frozen=True)
class GraphConstant:
    """A graph constant (weights): its id in the graph module, VkFormat, shape and bytes."""

    id: int
    format: int
    shape: Sequence[int]
    data: bytes
    sparsity_dimension: int | None = None


def tensor_description(fmt: int, dims: Sequence[int], usage: int, *, tiling: int | None = None,
                       strides: Sequence[int] | None = None) -> tuple[Any, list[Any]]:
    """A ``VkTensorDescriptionARM`` (and the arrays it points to, to keep alive)."""
    f = ffi()
    c_dims = f.new(ctype("int64_t[]"), [int(d) for d in dims])
    c_strides = f.new(ctype("int64_t[]"), [int(s) for s in strides]) if strides else f.NULL
    desc = new("VkTensorDescriptionARM", tiling=const("VK_TENSOR_TILING_OPTIMAL_ARM") if tiling is None else tiling,
               format=fmt, dimensionCount=len(dims), pDimensions=c_dims, pStrides=c_strides, usage=usage)
    return desc, [c_dims, c_strides, desc]


def tensor_dependency_info(barriers: Sequence[tuple[Any, int, int, int, int]]) -> tuple[Any, list[Any]]:
    """``pNext`` for a ``VkDependencyInfo`` carrying tensor memory barriers.

    Each barrier is (tensor, src stage mask, src access mask, dst stage mask, dst access mask),
    masks being the 64-bit ``VK_PIPELINE_STAGE_2_*``/``VK_ACCESS_2_*`` values. Returns a
    ``vulkan`` ``void*`` and cdata to keep alive until ``vkCmdPipelineBarrier2`` is recorded.
    """
    f = ffi()
    arr = f.new(ctype("VkTensorMemoryBarrierARM[]"), max(len(barriers), 1))
    ignored = 0xFFFFFFFF  # VK_QUEUE_FAMILY_IGNORED
    for i, (tensor, src_stage, src_access, dst_stage, dst_access) in enumerate(barriers):
        arr[i].sType = const("VK_STRUCTURE_TYPE_TENSOR_MEMORY_BARRIER_ARM")
        arr[i].srcStageMask, arr[i].srcAccessMask = src_stage, src_access
        arr[i].dstStageMask, arr[i].dstAccessMask = dst_stage, dst_access
        arr[i].srcQueueFamilyIndex = arr[i].dstQueueFamilyIndex = ignored
        arr[i].tensor = tensor
    info = new("VkTensorDependencyInfoARM", tensorMemoryBarrierCount=len(barriers), pTensorMemoryBarriers=arr)
    return to_vulkan(info), [arr, info]


def tensor_descriptor_write(views: Sequence[Any]) -> tuple[Any, list[Any]]:
    """The ``pNext`` of a ``VkWriteDescriptorSet`` of type ``VK_DESCRIPTOR_TYPE_TENSOR_ARM``.

    Returns (a ``vulkan`` ``void*`` for ``pNext``, cdata to keep alive until the update is done);
    the write's ``descriptorCount`` must equal ``len(views)``.
    """
    arr = ffi().new(ctype("VkTensorViewARM[]"), list(views))
    info = new("VkWriteDescriptorSetTensorARM", tensorViewCount=len(views), pTensorViews=arr)
    return to_vulkan(info), [arr, info]
