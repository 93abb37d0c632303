"""The optional features of the backend contract (images, graphics, tensors, memory groups,
graphs, optical flow): a backend has a part for each feature its capabilities declare, and only
for those; asking a backend for a part it lacks names the backend and the capability."""
from __future__ import annotations

from typing import ClassVar

import pytest

from kernellab.backends import registry
from kernellab.backends.base import FEATURE_MISSING, Backend, Capabilities, UnsupportedError, feature_mismatches
from kernellab.backends.feature_specs import ImageSpec
from kernellab.backends.null import NullBackend


@pytest.mark.parametrize("name", registry.names(listed_only=False))
def test_every_backend_has_a_part_exactly_for_what_it_declares(name: str) -> None:
    cls = registry.backend_class(name)
    assert feature_mismatches(cls) == []
    declared = {f for f in FEATURE_MISSING if getattr(cls.capabilities, f)}
    overridden = {f for f in FEATURE_MISSING if getattr(cls, f) is not getattr(Backend, f)}
    assert declared == overridden


def test_the_vulkan_backend_declares_every_feature() -> None:
    cls = registry.backend_class("vulkan")
    # launches with arguments by position are OpenCL's (clEnqueueNDRangeKernel), not Vulkan's
    assert all(getattr(cls.capabilities, f) for f in FEATURE_MISSING if f != "kernel_launches")
    assert not cls.capabilities.kernel_launches
    assert registry.backend_class("opencl").capabilities.kernel_launches


def test_a_backend_without_launches_by_position_is_named() -> None:
    from kernellab.runtime.instantiation import launches

    backend = NullBackend(NullBackend.devices()[0])
    with pytest.raises(UnsupportedError, match=r"^the null backend launches no kernels with arguments by position"):
        launches(backend)


def test_a_class_whose_parts_disagree_with_its_capabilities_is_refused() -> None:
    with pytest.raises(TypeError, match=r"Lying: capabilities.tensors is on but tensors\(\) gives no part"):
        class Lying(NullBackend):  # noqa: F841 - defining it is the test
            capabilities: ClassVar[Capabilities] = Capabilities(title="lying", languages={}, tensors=True)

    class Silent(NullBackend):
        def graphs(self) -> None:
            return None

    assert feature_mismatches(Silent) == ["graphs() gives a part but capabilities.graphs is off"]


def test_asking_for_a_missing_part_names_the_backend_and_the_capability() -> None:
    backend = NullBackend(NullBackend.devices()[0])
    assert backend.tensors() is None and backend.graphs() is None and backend.optical_flow() is None
    with pytest.raises(UnsupportedError, match=r"^the null backend has no graphs \(VK_ARM_data_graph\) "
                                               r"\(capabilities.graphs is off\)$"):
        backend.need(backend.graphs(), "graphs")
    with pytest.raises(UnsupportedError, match=r"^the null backend does not support images \(capabilities.images is off\)"):
        backend.alloc_image(ImageSpec("i", "VK_FORMAT_R8_UNORM", 4, 4))
    part = object()
    assert backend.need(part, "tensors") is part
