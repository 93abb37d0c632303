"""``dispatch_optical_flow`` (Arm 0.11): the executor's part, kept out of every other run.

Each command becomes one optical-flow pipeline over the scenario's images (created with the
other pipelines, so ``--dry-run`` and ``--fail-on-pipeline-cache-miss`` see it) and is
recorded in command order. The images are the scenario's own: read from their ``src`` and
written to their ``dst`` as for any command. The reader checked the extents, levels and grid
(formats/scenario_optical_flow.py); the backend does the Vulkan side
(backends/vulkan_optical_flow.py).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from kernellab import model as m
from kernellab.backends.base import Backend, UnsupportedError
from kernellab.backends.feature_specs import Image, OpticalFlowImage, OpticalFlowSpec

if TYPE_CHECKING:  # the parts' protocols are the checker's (backends/base.py)
    from kernellab.backends.base import OpticalFlow

#: Arm's name for the pipeline (its perf counters and cache-miss message say it)
NAME = "dispatch_optical_flow"


def uses_optical_flow(scenario: m.Scenario) -> bool:
    return any(isinstance(c, m.DispatchOpticalFlow) for c in scenario.commands)


def check_backend(backend: Backend) -> None:
    """Only a backend that declares optical flow runs it (Vulkan, with VK_ARM_data_graph_optical_flow)."""
    if not backend.capabilities.optical_flow:
        raise UnsupportedError(f"the {backend.name} backend does not run dispatch_optical_flow "
                               f"(VK_ARM_data_graph_optical_flow): use --backend vulkan")


def sampled(image: m.Image, binding: m.Binding) -> bool:
    """Bound as a combined image sampler (else as a storage image), as Arm's runner binds images."""
    return image.shader_access in ("readonly", "readwrite") and binding.descriptor_type != \
        "VK_DESCRIPTOR_TYPE_STORAGE_IMAGE"


class OpticalFlows:
    """The optical-flow pipelines of one run, by command index."""

    def __init__(self, scenario: m.Scenario):
        self.scenario = scenario
        self.programs: dict[int, OpticalFlow] = {}

    def prepare(self, backend: Backend, images: Mapping[str, Image]) -> None:
        """One pipeline per command; a pipeline the loaded cache lacks raises PipelineCacheMiss."""
        flows = backend.need(backend.optical_flow(), "optical_flow")
        for index, c in enumerate(self.scenario.commands):
            if not isinstance(c, m.DispatchOpticalFlow):
                continue
            bound = []
            for role, b in c.bindings.roles():
                r = self.scenario.by_uid[b.resource_ref]
                assert isinstance(r, m.Image)
                bound.append(OpticalFlowImage(role, b.set, b.id, images[r.uid], b.lod, sampled(r, b)))
            spec = OpticalFlowSpec(f"{index}:{NAME}:{NAME}", c.width, c.height, c.grid_size, c.performance_level,
                                   tuple(bound))
            self.programs[index] = flows.create_optical_flow(spec)

    def run(self, backend: Backend, index: int) -> None:
        c = self.scenario.commands[index]
        assert isinstance(c, m.DispatchOpticalFlow)
        program = self.programs[index]
        flows = backend.need(backend.optical_flow(), "optical_flow")
        flows.dispatch_optical_flow(program, c.execution_flags, c.mean_flow_l1_norm_hint, program.spec.label)

    def session_memory(self) -> list[tuple[str, int]]:
        """(command name, session bytes) of each optical-flow pipeline, in command order."""
        return [(NAME, self.programs[i].session_bytes) for i in sorted(self.programs)]
