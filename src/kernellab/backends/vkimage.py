"""A Vulkan image as the backend's image parts make it (``vulkan_image``) and the device's
descriptor code binds it: its own module, so that a run of buffers builds no image class."""
from __future__ import annotations

from dataclasses import field

from kernellab.backends.feature_specs import Image, ImageSpec
from kernellab.records import dataclass

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any


@dataclass
class VulkanImage(Image):
    """A Vulkan image, its memory and views."""
    spec: ImageSpec
    handle: Any
    memory: Any
    vk_format: int
    texel_size: int
    integer: bool
    sampler: Any = None
    #: None -> the view of every mip level; N -> the view of level N
    views: dict[int | None, Any] = field(default_factory=dict)
    layout: int = 0
    #: False when the image lives in memory shared with other resources (a memory group)
    owns_memory: bool = True

    def extent(self, level: int) -> tuple[int, int]:
        return max(self.spec.width >> level, 1), max(self.spec.height >> level, 1)

    def depth_at(self, level: int) -> int:
        return max(self.spec.depth >> level, 1)

    def level_size(self, level: int) -> int:
        w, h = self.extent(level)
        return w * h * self.depth_at(level) * self.texel_size
