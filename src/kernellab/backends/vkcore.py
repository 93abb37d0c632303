"""Vulkan structures both pipeline kinds (compute, graph segments) are created with."""
from __future__ import annotations

from typing import Any
from collections.abc import Sequence

from kernellab.backends.base import PipelineCacheMiss
from kernellab.errors import BackendError
from kernellab.native import vk as nvk


def specialization_info(constants: Sequence[Any]) -> tuple[Any, list[Any]]:
    """A VkSpecializationInfo for SpecConstants (4 bytes each, in order), or None; plus the cffi
    objects that must outlive the pipeline-creation call (the binding keeps no references)."""
    if not constants:
        return None, []
    vk = nvk.load()
    data = b"".join(c.encode() for c in constants)
    entries = [vk.VkSpecializationMapEntry(constantID=c.id, offset=4 * i, size=4) for i, c in enumerate(constants)]
    pdata = vk.ffi.new("char[]", data)
    # dataSize given explicitly: the binding would otherwise count elements, not bytes
    info = vk.VkSpecializationInfo(mapEntryCount=len(entries), pMapEntries=entries, dataSize=len(data), pData=pdata)
    return info, [pdata, entries]


class CacheFeedback:
    """VkPipelineCreationFeedback for one compute pipeline, asked for as Arm's runner asks (its
    src/pipeline.cpp): fail rather than compile, then a miss unless the driver reports a cache hit."""

    def __init__(self, vk: Any):
        self.pipeline = vk.VkPipelineCreationFeedback()
        self.info = vk.VkPipelineCreationFeedbackCreateInfo(
            pPipelineCreationFeedback=self.pipeline, pipelineStageCreationFeedbackCount=1,
            pPipelineStageCreationFeedbacks=[vk.VkPipelineCreationFeedback()])
        self.flags = vk.VK_PIPELINE_CREATE_FAIL_ON_PIPELINE_COMPILE_REQUIRED_BIT_EXT
        self._hit = vk.VK_PIPELINE_CREATION_FEEDBACK_APPLICATION_PIPELINE_CACHE_HIT_BIT

    def hit(self) -> bool:
        stage = self.info.pPipelineStageCreationFeedbacks[0]
        return bool((self.pipeline.flags | stage.flags) & self._hit)


def create_compute_pipeline(vk: Any, device: Any, cache: Any, stage: Any, layout: Any, name: str, call: str,
                            fail_on_miss: bool) -> Any:
    """A compute pipeline through the pipeline cache; with ``fail_on_miss`` (Arm's
    --fail-on-pipeline-cache-miss, a cache loaded) one the cache did not hold raises
    :class:`PipelineCacheMiss` naming ``name``."""
    feedback = CacheFeedback(vk) if fail_on_miss else None
    info = vk.VkComputePipelineCreateInfo(stage=stage, layout=layout, basePipelineIndex=-1,
                                          flags=feedback.flags if feedback else 0,
                                          pNext=feedback.info if feedback else None)
    try:
        with nvk.checked(call):
            pipeline = vk.vkCreateComputePipelines(device, cache, 1, [info], None)[0]
    except BackendError as exc:
        if feedback is None or "COMPILE_REQUIRED" not in str(exc):
            raise
        raise PipelineCacheMiss(name) from None
    if feedback is not None and not feedback.hit():
        raise PipelineCacheMiss(name)
    return pipeline
