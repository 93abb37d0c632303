"""Vulkan objects the backend's parts share (programs) and the structures the pipeline kinds
(compute, graphics, graph segments) are created with. Shared memory (``DeviceMemory``) lives with
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
