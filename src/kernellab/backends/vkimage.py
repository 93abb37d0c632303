"""A Vulkan image as the backend's image parts make it (``vulkan_image``) and the device's
descriptor code binds it: its own module, so that a run of buffers builds no image class."""
from __future__ import annotations

from dataclasses import field

from kernellab.backends.base import UnsupportedError
from kernellab.backends.feature_specs import Image, ImageSpec
from kernellab.native.vk import checked
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


def image_view(device: Any, image: VulkanImage, lod: int | None) -> Any:
    """The view a descriptor uses of ``image`` on ``device`` (backends/vulkan_device.py's
    ``VulkanDevice``): one level, or (lod None) every level (made once per image)."""
    if lod is not None and not 0 <= lod < image.spec.mips:
        raise UnsupportedError(f"image {image.spec.uid!r}: lod {lod} but it has {image.spec.mips} mip levels")
    if lod not in image.views:
        vk = device.vk
        base, count = (0, image.spec.mips) if lod is None else (lod, 1)
        # VkImageViewType 1D, 2D, 3D are VkImageType's values
        view_type = {"1D": 0, "2D": 1, "3D": 2}[image.spec.image_type]
        info = vk.VkImageViewCreateInfo(image=image.handle, viewType=view_type,
                                        format=image.vk_format, components=vk.VkComponentMapping(),
                                        subresourceRange=color_range(vk, base, count))
        with checked(f"vkCreateImageView({image.spec.uid}, lod {lod})"):
            image.views[lod] = vk.vkCreateImageView(device.handle, info, None)
    return image.views[lod]


def color_range(vk: Any, base_mip: int = 0, levels: int = 1, base_layer: int = 0, layers: int = 1) -> Any:
    """A color image's subresource range, made with the binding ``vk``."""
    return vk.VkImageSubresourceRange(aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT, baseMipLevel=base_mip,
                                      levelCount=levels, baseArrayLayer=base_layer, layerCount=layers)
