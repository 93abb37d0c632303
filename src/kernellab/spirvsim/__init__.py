"""A SPIR-V compute-shader checker: a lockstep interpreter of the compute subset of SPIR-V with
shadow memory, finding data races (within and across workgroups), barrier divergence,
out-of-bounds accesses and (opt-in) uninitialized reads of workgroup memory.

:func:`check_dispatch` checks one dispatch; the method and its limits are in docs/verify.md.
"""
from __future__ import annotations

from kernellab.spirvsim.dispatch import Binding, BufferArray, DispatchResult, Footprint, check_dispatch
from kernellab.spirvsim.findings import DEFECT_KINDS, KINDS, Finding, verdict
from kernellab.spirvsim.glsl import glsl_to_spirv
from kernellab.spirvsim.hazards import dispatch_hazards
from kernellab.spirvsim.images import ImageBinding, Sampler
from kernellab.spirvsim.module import Unsupported
from kernellab.spirvsim.sync import Dependency

__all__ = ["Binding", "BufferArray", "DispatchResult", "Footprint", "check_dispatch", "DEFECT_KINDS", "KINDS", "Finding",
           "verdict", "glsl_to_spirv", "dispatch_hazards", "Dependency", "Unsupported", "ImageBinding", "Sampler"]
