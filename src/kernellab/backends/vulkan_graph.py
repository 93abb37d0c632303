"""Graph segments (VK_ARM_data_graph) for the Vulkan backend.

A VGF model sequence is a list of segments; each becomes a :class:`GraphSegmentProgram`: a
data-graph pipeline (SPIR-V graph module, its constants, a session whose memory the driver
asks for) or a compute pipeline (a VGF compute module or the scenario's substitute for a
placeholder), with the descriptor sets the VGF lays out, written once with the tensors and
buffers bound to them. Descriptor set layouts use ``VK_SHADER_STAGE_ALL``, as Arm's runner does.
"""
from __future__ import annotations

from dataclasses import field
from typing import Any

from kernellab.backends.feature_specs import GraphSegmentSpec
from kernellab.records import dataclass


@dataclass
class GraphSegmentProgram:
    spec: GraphSegmentSpec
    pipeline: Any                    # vulkan-package VkPipeline
    layout: Any
    set_layouts: list[Any]
    sets: list[Any]
    pool: Any
    module: Any
    session: Any = None
    session_memories: list[Any] = field(default_factory=list)
    #: bytes of session memory bound (Arm's profiling dump reports them as "Session memory [bytes]")
    session_bytes: int = 0
    keep: list[Any] = field(default_factory=list)
