"""Vulkan objects the backend's parts share (programs), the structures the pipeline kinds
(compute, graphics, graph segments) are created with, and the shader features a device is opened
with (:data:`SHADER_FEATURES`). Shared memory (``DeviceMemory``) lives with
the code that allocates it, in ``vulkan_transfers``."""
from __future__ import annotations

from collections.abc import Callable, Sequence

from kernellab.backends import base
from kernellab.backends.base import Program, ProgramSpec
from kernellab.errors import BackendError
from kernellab.native import vk as nvk

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any


class VulkanProgram(Program):
    """A compute pipeline, or a graphics one (then ``module`` is the vertex shader's). (A plain
    class: a run makes one per program, and building its dataclass cost more than the class.)"""

    __slots__ = ("fragment_module", "layout", "module", "pipeline", "set_bindings", "set_layouts", "spec")

    def __init__(self, spec: ProgramSpec, module: Any, set_layouts: list[Any], layout: Any, pipeline: Any,
                 set_bindings: dict[int, tuple[int, ...]], fragment_module: Any = None):
        self.spec, self.module, self.set_layouts, self.layout, self.pipeline = spec, module, set_layouts, layout, pipeline
        #: set index -> (binding ids in order)
        self.set_bindings = set_bindings
        #: a graphics pipeline's fragment shader (None: a compute pipeline)
        self.fragment_module = fragment_module

    def __repr__(self) -> str:
        return f"VulkanProgram({self.spec.uid!r})"


def dynamic_rendering_supported(vk: Any, physical: Any) -> bool:
    """Whether the device has Vulkan 1.3's ``dynamicRendering`` feature."""
    try:
        feature = vk.VkPhysicalDeviceDynamicRenderingFeatures()
        vk.vkGetPhysicalDeviceFeatures2(physical, vk.VkPhysicalDeviceFeatures2(pNext=feature))
    except Exception:  # a Vulkan 1.0 driver: no such query, so no such feature
        return False
    return bool(feature.dynamicRendering)


def specialization_info(constants: Sequence[Any], vk: Any = None) -> tuple[Any, list[Any]]:
    """A VkSpecializationInfo for SpecConstants (4 bytes each, in order), or None; plus the cffi
    objects that must outlive the pipeline-creation call (the binding keeps no references).
    ``vk``: the binding the pipeline is made through (default: the ``vulkan`` package)."""
    if not constants:
        return None, []
    vk = vk if vk is not None else nvk.load()
    data = b"".join(c.encode() for c in constants)
    entries = [vk.VkSpecializationMapEntry(constantID=c.id, offset=4 * i, size=4) for i, c in enumerate(constants)]
    pdata = vk.ffi.new("char[]", data)
    # dataSize given explicitly: the binding would otherwise count elements, not bytes
    info = vk.VkSpecializationInfo(mapEntryCount=len(entries), pMapEntries=entries, dataSize=len(data), pData=pdata)
    return info, [pdata, entries]


#: VK_PIPELINE_CREATE_FAIL_ON_PIPELINE_COMPILE_REQUIRED_BIT (core 1.3, and the same bit in
#: VkPipelineCreateFlags2): the ``vulkan`` package's constant for it is None, which cffi takes as 0
FAIL_ON_PIPELINE_COMPILE_REQUIRED = 0x100


class CacheFeedback:
    """VkPipelineCreationFeedback for one pipeline of ``stages`` shader stages, asked for as Arm's
    runner asks (its src/pipeline.cpp): fail rather than compile, then a miss unless the driver
    reports a cache hit."""

    def __init__(self, vk: Any, stages: int = 1):
        self.pipeline = vk.VkPipelineCreationFeedback()
        self.info = vk.VkPipelineCreationFeedbackCreateInfo(
            pPipelineCreationFeedback=self.pipeline, pipelineStageCreationFeedbackCount=stages,
            pPipelineStageCreationFeedbacks=[vk.VkPipelineCreationFeedback() for _ in range(stages)])
        self.stages = stages
        self.flags = FAIL_ON_PIPELINE_COMPILE_REQUIRED
        self._hit = vk.VK_PIPELINE_CREATION_FEEDBACK_APPLICATION_PIPELINE_CACHE_HIT_BIT

    def hit(self) -> bool:
        flags = self.pipeline.flags
        for k in range(self.stages):
            flags |= self.info.pPipelineStageCreationFeedbacks[k].flags
        return bool(flags & self._hit)


def create_compute_pipeline(vk: Any, device: Any, cache: Any, stage: Any, layout: Any, name: str, call: str,
                            fail_on_miss: bool) -> Any:
    """A compute pipeline through the pipeline cache; with ``fail_on_miss`` (Arm's
    --fail-on-pipeline-cache-miss, a cache loaded) one the cache did not hold raises
    :class:`PipelineCacheMiss` naming ``name``."""
    def create(flags: int, feedback_info: Any) -> Any:
        info = vk.VkComputePipelineCreateInfo(stage=stage, layout=layout, basePipelineIndex=-1, flags=flags,
                                              pNext=feedback_info)
        return vk.vkCreateComputePipelines(device, cache, 1, [info], None)[0]

    return through_cache(create, CacheFeedback(vk) if fail_on_miss else None, name, call)


def through_cache(create: Callable[[int, Any], Any], feedback: CacheFeedback | None, name: str, call: str) -> Any:
    """The pipeline ``create(flags, pNext)`` makes; with ``feedback`` (a loaded cache and Arm's
    --fail-on-pipeline-cache-miss) one the cache did not hold raises :class:`PipelineCacheMiss`."""
    try:
        with nvk.checked(call):
            pipeline = create(feedback.flags if feedback else 0, feedback.info if feedback else None)
    except BackendError as exc:
        if feedback is None or "COMPILE_REQUIRED" not in str(exc):
            raise
        raise base.PipelineCacheMiss(name) from None
    if feedback is not None and not feedback.hit():
        raise base.PipelineCacheMiss(name)
    return pipeline


def release_data_graph_program(vk: Any, device: Any, arm: Any, program: Any) -> None:
    """Destroy what a data-graph program (a graph segment, an optical flow) was given: its
    session, pipeline, layouts, pool and shader module, each only if it was made (creation may
    have failed half-way); a failure is logged, not raised."""
    label = program.spec.label
    if program.session is not None:
        nvk.release(f"vkDestroyDataGraphPipelineSessionARM({label})", arm.destroy_session, program.session)
    handles = [("vkDestroyPipeline", program.pipeline), ("vkDestroyPipelineLayout", program.layout),
               *(("vkDestroyDescriptorSetLayout", sl) for sl in program.set_layouts),
               ("vkDestroyDescriptorPool", program.pool), ("vkDestroyShaderModule", getattr(program, "module", None))]
    for call, handle in handles:
        if handle is not None:
            nvk.release(f"{call}({label})", getattr(vk, call), device, handle, None)


# --- the shader features a device is opened with, read from the device without opening it ---------
# (vulkan_supported reads the whole record of what a device offers, for AmberScript's requirements;
# device creation reads only what it enables)
class ShaderFeatures:
    """The :data:`SHADER_FEATURES` a device has (member name -> bool) and its Vulkan version
    (major, minor): what opening a device asks, not the whole record ``vulkan_supported`` reads
    (a plain class: a run builds no dataclass for it)."""

    __slots__ = ("features", "version")

    def __init__(self, features: dict[str, bool], version: tuple[int, int]):
        self.features, self.version = features, version


#: the shader features enabled at device creation wherever the device has them: a module that
#: declares their capabilities (Int16, StorageBuffer8BitAccess...) may be run only on a device
#: with them enabled; none of them changes how a module without them runs
SHADER_FEATURES: dict[str, tuple[str, ...]] = {
    "VkPhysicalDeviceFeatures": (
        "shaderFloat64", "shaderInt64", "shaderInt16", "shaderStorageImageExtendedFormats",
        "shaderStorageImageReadWithoutFormat", "shaderStorageImageWriteWithoutFormat",
        "shaderImageGatherExtended", "shaderUniformBufferArrayDynamicIndexing",
        "shaderSampledImageArrayDynamicIndexing", "shaderStorageBufferArrayDynamicIndexing",
        "shaderStorageImageArrayDynamicIndexing"),
    "VkPhysicalDeviceVulkan11Features": (
        "storageBuffer16BitAccess", "uniformAndStorageBuffer16BitAccess", "storagePushConstant16",
        "variablePointersStorageBuffer", "variablePointers"),
    "VkPhysicalDeviceVulkan12Features": (
        "storageBuffer8BitAccess", "uniformAndStorageBuffer8BitAccess", "storagePushConstant8",
        "shaderBufferInt64Atomics", "shaderSharedInt64Atomics", "shaderFloat16", "shaderInt8",
        "scalarBlockLayout", "uniformBufferStandardLayout", "shaderSubgroupExtendedTypes",
        "vulkanMemoryModel", "vulkanMemoryModelDeviceScope", "subgroupBroadcastDynamicId"),
    "VkPhysicalDeviceVulkan13Features": (
        "subgroupSizeControl", "computeFullSubgroups", "shaderIntegerDotProduct",
        "shaderDemoteToHelperInvocation", "shaderTerminateInvocation", "shaderZeroInitializeWorkgroupMemory"),
}
_MIN_VERSION = {"VkPhysicalDeviceVulkan11Features": (1, 2), "VkPhysicalDeviceVulkan12Features": (1, 2),
                "VkPhysicalDeviceVulkan13Features": (1, 3)}

#: the structures the device is asked with and the 1.x features given in: their sType and size in
#: 4-byte words (vk.xml). Each member of :data:`SHADER_FEATURES` is a VkBool32, the
#: :data:`_WORD`-th after sType and pNext (16 bytes; VkPhysicalDeviceFeatures sits there in
#: VkPhysicalDeviceFeatures2): Vulkan's ABI, checked against the binding's declarations by
#: tests/unit/test_vulkan_shader_features.py. Plain memory so laid out spares the binding building
#: the types of four structures of up to sixty members (~0.5 M instructions a run)
_LAYOUT = {"VkPhysicalDeviceFeatures": (0, 55), "VkPhysicalDeviceFeatures2": (1000059000, 60), "VkPhysicalDeviceVulkan11Features": (49, 16),
           "VkPhysicalDeviceVulkan12Features": (51, 52), "VkPhysicalDeviceVulkan13Features": (53, 20)}
_WORD = {"shaderFloat64": 39, "shaderInt64": 40, "shaderInt16": 41, "shaderStorageImageExtendedFormats": 29,
         "shaderStorageImageReadWithoutFormat": 31, "shaderStorageImageWriteWithoutFormat": 32,
         "shaderImageGatherExtended": 28, "shaderUniformBufferArrayDynamicIndexing": 33,
         "shaderSampledImageArrayDynamicIndexing": 34, "shaderStorageBufferArrayDynamicIndexing": 35,
         "shaderStorageImageArrayDynamicIndexing": 36,
         "storageBuffer16BitAccess": 0, "uniformAndStorageBuffer16BitAccess": 1, "storagePushConstant16": 2,
         "variablePointersStorageBuffer": 7, "variablePointers": 8,
         "storageBuffer8BitAccess": 2, "uniformAndStorageBuffer8BitAccess": 3, "storagePushConstant8": 4,
         "shaderBufferInt64Atomics": 5, "shaderSharedInt64Atomics": 6, "shaderFloat16": 7, "shaderInt8": 8,
         "scalarBlockLayout": 31, "uniformBufferStandardLayout": 33, "shaderSubgroupExtendedTypes": 34,
         "vulkanMemoryModel": 41, "vulkanMemoryModelDeviceScope": 42, "subgroupBroadcastDynamicId": 46,
         "subgroupSizeControl": 7, "computeFullSubgroups": 8, "shaderIntegerDotProduct": 13,
         "shaderDemoteToHelperInvocation": 5, "shaderTerminateInvocation": 6,
         "shaderZeroInitializeWorkgroupMemory": 11,
         # VkPhysicalDeviceFeatures's members a device is opened with besides the shader features
         "robustBufferAccess": 0, "fragmentStoresAndAtomics": 26}


def plain_features(ffi: Any) -> Any:
    """A zeroed VkPhysicalDeviceFeatures in plain memory (its members set with
    :func:`set_feature`; ``ffi.cast("VkPhysicalDeviceFeatures *", it)`` is a pEnabledFeatures)."""
    return ffi.new("uint32_t[]", _LAYOUT["VkPhysicalDeviceFeatures"][1])


def set_feature(features: Any, name: str, on: object) -> None:
    """Turn member ``name`` of a :func:`plain_features` on or off."""
    features[_WORD[name]] = 1 if on else 0


def _address(ffi: Any, chain: Any) -> Any:
    """A ``pNext`` chain's head (None, a structure, or plain memory) as a ``void *``."""
    if chain is None:
        return ffi.NULL
    return ffi.addressof(chain) if ffi.typeof(chain).kind == "struct" else ffi.cast("void *", chain)


def _structure(ffi: Any, type_name: str, chain: Any) -> Any:
    """Zeroed plain memory laid out as ``type_name``, its sType set and ``pNext`` = ``chain``."""
    stype, words = _LAYOUT[type_name]
    raw = ffi.new("uint32_t[]", words)
    raw[0] = stype
    ffi.cast("void **", raw)[1] = _address(ffi, chain)
    return raw


def enable_shader_features(vk: Any, have: ShaderFeatures, features: Any, chain: Any, *,
                           vulkan13: bool = True) -> tuple[Any, list[Any]]:
    """Turn on in ``features`` (a :func:`plain_features`) and in Vulkan 1.1-1.3 feature structs
    put before ``chain`` the :data:`SHADER_FEATURES` the device (``have``) has; the new chain head
    and what to keep alive until the device exists. ``vulkan13``: False where the chain already
    holds a struct the 1.3 one may not sit beside (VkPhysicalDeviceDynamicRenderingFeatures)."""
    for name in SHADER_FEATURES["VkPhysicalDeviceFeatures"]:
        if have.features.get(name):
            set_feature(features, name, True)
    keep = [chain]
    for type_name, names in SHADER_FEATURES.items():
        minimum = _MIN_VERSION.get(type_name)
        if minimum is None or have.version < minimum or (type_name.endswith("13Features") and not vulkan13):
            continue
        on = [n for n in names if have.features.get(n)]
        if on:
            raw = _structure(vk.ffi, type_name, chain)
            for name in on:
                raw[4 + _WORD[name]] = 1
            keep.append(raw)
            chain = vk.ffi.cast("void *", raw)
    return chain, keep


def shader_features_of(vk: Any, physical: Any, api: int | None = None) -> ShaderFeatures:
    """The :data:`SHADER_FEATURES` physical device ``physical`` has and its version, asked through
    ``vk`` (the binding the device is opened with: the compute path's own binding declares these
    structs, so opening a device loads no other); ``api``: its ``apiVersion`` where the caller
    read its properties already."""
    if api is None:
        api = int(vk.vkGetPhysicalDeviceProperties(physical).apiVersion)
    have = ShaderFeatures({}, ((api >> 22) & 0x7F, (api >> 12) & 0x3FF))
    ffi = vk.ffi
    structs = []
    chain = None
    for type_name, minimum in _MIN_VERSION.items():
        if have.version >= minimum:
            chain = _structure(ffi, type_name, chain)
            structs.append((type_name, chain))
    f2 = _structure(ffi, "VkPhysicalDeviceFeatures2", chain)
    vk.vkGetPhysicalDeviceFeatures2(physical, ffi.cast("VkPhysicalDeviceFeatures2 *", f2))
    have.features = {n: bool(f2[4 + _WORD[n]]) for n in SHADER_FEATURES["VkPhysicalDeviceFeatures"]}
    for type_name, raw in structs:
        have.features.update({n: bool(raw[4 + _WORD[n]]) for n in SHADER_FEATURES[type_name]})
    return have
