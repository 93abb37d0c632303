"""Images for the Vulkan backend: creation, samplers, views per mip level, uploads with mip
generation, read-back, and layout transitions.

Images live in ``VK_IMAGE_LAYOUT_GENERAL`` between commands (as in Arm's runner), so storage and
sampled access need no transitions; scenario image barriers may move them to another layout, and
descriptors use the layout an image has when the dispatch is recorded.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernellab.backends.base import UnsupportedError
from kernellab.backends.feature_specs import Image, ImageSpec
from kernellab.backends.vkimage import VulkanImage, color_range
from kernellab.backends.vulkan_transfers import DeviceMemory
from kernellab.native.vk import checked, release

if TYPE_CHECKING:
    import numpy as np

    from kernellab.backends.vulkan_device import VulkanDevice
from kernellab.vkregistry import vkformat

#: scenario layout names -> VkImageLayout values (TENSOR_ALIASING is VK_ARM_tensors')
LAYOUTS = {"UNDEFINED": 0, "GENERAL": 1, "TENSOR_ALIASING": 1000460000}
#: VkImageType of an image's ``image_type`` (VkSampleCountFlagBits are the sample counts themselves)
IMAGE_TYPES = {"1D": 0, "2D": 1, "3D": 2}
#: VkSamplerAddressMode of the scenario's address mode names
ADDRESS_MODES = {"REPEAT": 0, "MIRRORED_REPEAT": 1, "CLAMP_EDGE": 2, "CLAMP_BORDER": 3, "MIRROR_CLAMP_EDGE": 4}
#: VkCompareOp values of their names (VK_COMPARE_OP_ dropped)
COMPARE_OPS = {"NEVER": 0, "LESS": 1, "EQUAL": 2, "LESS_OR_EQUAL": 3, "GREATER": 4, "NOT_EQUAL": 5,
               "GREATER_OR_EQUAL": 6, "ALWAYS": 7}
#: VK_IMAGE_USAGE_TENSOR_ALIASING_BIT_ARM (the binding lacks VK_ARM_tensors' names)
TENSOR_ALIASING_USAGE = 0x800000


def _counts(bits: int) -> str:
    return ", ".join(str(1 << i) for i in range(7) if bits & (1 << i)) or "none"


class VulkanImages:
    """The image part of the Vulkan backend (:class:`~kernellab.backends.base.ImageFeature`):
    works through the device it is given."""

    def __init__(self, gpu: VulkanDevice):
        self.gpu = gpu
        self.vk = gpu.vk
        self._created: list[VulkanImage] = []

    # --- creation ------------------------------------------------------------------------------
    def create_image(self, spec: ImageSpec) -> VulkanImage:
        handle, req, info = self.create_image_unbound(spec)
        vk = self.vk
        mtype = self._image_memory_type(req.memoryTypeBits)
        with checked(f"vkAllocateMemory({spec.uid}, {req.size} bytes)"):
            memory = vk.vkAllocateMemory(self.gpu.handle, vk.VkMemoryAllocateInfo(allocationSize=req.size,
                                                                             memoryTypeIndex=mtype), None)
        return self.finish_image(spec, handle, info, memory, 0)

    def create_image_unbound(self, spec: ImageSpec) -> tuple[Any, Any, Any]:
        """The VkImage without memory, its memory requirements, and its format's facts."""
        vk = self.vk
        info = vkformat.lookup(spec.format)
        if info is None:
            raise UnsupportedError(f"image {spec.uid!r}: unknown format {spec.format}")
        usage = vk.VK_IMAGE_USAGE_TRANSFER_SRC_BIT | vk.VK_IMAGE_USAGE_TRANSFER_DST_BIT
        features = 0x4000 | 0x8000  # TRANSFER_SRC|DST (core 1.1; the binding lacks the names)
        if spec.sampled:
            usage |= vk.VK_IMAGE_USAGE_SAMPLED_BIT
            features |= vk.VK_FORMAT_FEATURE_SAMPLED_IMAGE_BIT
        if spec.storage:
            usage |= vk.VK_IMAGE_USAGE_STORAGE_BIT
            features |= vk.VK_FORMAT_FEATURE_STORAGE_IMAGE_BIT
        if spec.color_attachment:
            usage |= vk.VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT
            features |= vk.VK_FORMAT_FEATURE_COLOR_ATTACHMENT_BIT
        if spec.mips > 1:
            features |= vk.VK_FORMAT_FEATURE_BLIT_SRC_BIT | vk.VK_FORMAT_FEATURE_BLIT_DST_BIT
        if spec.tensor_aliasing:
            usage |= TENSOR_ALIASING_USAGE
        if spec.samples > 1:
            counts = vk.vkGetPhysicalDeviceProperties(self.gpu.physical).limits.storageImageSampleCounts
            if not counts & spec.samples:
                raise UnsupportedError(f"image {spec.uid!r}: {spec.samples} samples per texel, but the device's "
                                       f"storage images have {_counts(counts)} (storageImageSampleCounts)")
        props = vk.vkGetPhysicalDeviceFormatProperties(self.gpu.physical, info.value)
        linear_ok = props.linearTilingFeatures & features == features
        optimal_ok = props.optimalTilingFeatures & features == features
        if spec.tiling == "LINEAR" and not linear_ok or spec.tiling == "OPTIMAL" and not optimal_ok:
            raise UnsupportedError(f"image {spec.uid!r}: {spec.format} with {spec.tiling} tiling does not support "
                                   f"this use (sampled={spec.sampled}, storage={spec.storage}, mips={spec.mips}"
                                   f"{', color attachment' if spec.color_attachment else ''}) "
                                   f"on this device")
        if spec.tiling is None and not (linear_ok or optimal_ok):
            raise UnsupportedError(f"image {spec.uid!r}: {spec.format} does not support this use "
                                   f"(sampled={spec.sampled}, storage={spec.storage}, mips={spec.mips}"
                                   f"{', color attachment' if spec.color_attachment else ''}) on this device")
        # an aliased image of unstated tiling is LINEAR, so a tensor can follow its row pitch
        linear = spec.tiling == "LINEAR" or (spec.tiling is None
                                             and (not optimal_ok or spec.tensor_aliasing and linear_ok))
        tiling = vk.VK_IMAGE_TILING_LINEAR if linear else vk.VK_IMAGE_TILING_OPTIMAL
        create = vk.VkImageCreateInfo(imageType=IMAGE_TYPES[spec.image_type], format=info.value,
                                      extent=vk.VkExtent3D(width=spec.width, height=spec.height, depth=spec.depth),
                                      mipLevels=spec.mips, arrayLayers=1, samples=spec.samples,
                                      tiling=tiling, usage=usage, sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE,
                                      initialLayout=vk.VK_IMAGE_LAYOUT_UNDEFINED)
        with checked(f"vkCreateImage({spec.uid}, {spec.format} {spec.width}x{spec.height})"):
            handle = vk.vkCreateImage(self.gpu.handle, create, None)
        return handle, vk.vkGetImageMemoryRequirements(self.gpu.handle, handle), info

    def finish_image(self, spec: ImageSpec, handle: Any, info: Any, memory: Any, offset: int) -> VulkanImage:
        """Bind ``memory`` (a VkDeviceMemory of the image's own, or a shared DeviceMemory) and set the image up."""
        vk = self.vk
        owns = not isinstance(memory, DeviceMemory)
        with checked("vkBindImageMemory"):
            vk.vkBindImageMemory(self.gpu.handle, handle, memory if owns else memory.handle, offset)
        image = VulkanImage(spec, handle, memory if owns else memory.handle, info.value, info.texel_size,
                            info.is_integer, owns_memory=owns)
        self._created.append(image)
        if spec.sampled:
            image.sampler = self._create_sampler(image)
        # every image starts defined (zeros) and in GENERAL, like a buffer starts zeroed
        self.gpu.one_shot(lambda cmd: self._clear(cmd, image))
        return image

    def _image_memory_type(self, bits: int) -> int:
        vk = self.vk
        mp = vk.vkGetPhysicalDeviceMemoryProperties(self.gpu.physical)
        candidates = [i for i in range(mp.memoryTypeCount) if bits & (1 << i)]
        local = [i for i in candidates if mp.memoryTypes[i].propertyFlags & vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT]
        return (local or candidates)[0]

    def _create_sampler(self, image: VulkanImage) -> Any:
        vk = self.vk
        s = image.spec.sampler
        filters = {"NEAREST": vk.VK_FILTER_NEAREST, "LINEAR": vk.VK_FILTER_LINEAR}
        mip_modes = {"NEAREST": vk.VK_SAMPLER_MIPMAP_MODE_NEAREST, "LINEAR": vk.VK_SAMPLER_MIPMAP_MODE_LINEAR}
        colors = {"FLOAT_TRANSPARENT_BLACK": 0, "INT_TRANSPARENT_BLACK": 1, "FLOAT_OPAQUE_BLACK": 2,
                  "INT_OPAQUE_BLACK": 3, "FLOAT_OPAQUE_WHITE": 4, "INT_OPAQUE_WHITE": 5,
                  "FLOAT_CUSTOM_EXT": 1000287003, "INT_CUSTOM_EXT": 1000287004}
        next_struct = None
        if s.border_color.endswith("CUSTOM_EXT"):
            if not self.gpu.custom_border_color:
                raise UnsupportedError(f"image {image.spec.uid!r}: custom border colors need "
                                       f"VK_EXT_custom_border_color, which this device lacks")
            key = "float32" if s.border_color.startswith("FLOAT") else "int32"
            value = self.gpu.ffi.new("VkClearColorValue*", {key: list(s.custom_border_color or (0, 0, 0, 0))})[0]
            next_struct = vk.VkSamplerCustomBorderColorCreateInfoEXT(customBorderColor=value, format=image.vk_format)
        u, v, w = (ADDRESS_MODES[a] for a in (s.address_modes or (s.address_mode,) * 3))
        max_lod = float(image.spec.mips - 1) if s.max_lod is None else s.max_lod
        info = vk.VkSamplerCreateInfo(pNext=next_struct, magFilter=filters[s.mag_filter],
                                      minFilter=filters[s.min_filter],
                                      mipmapMode=mip_modes[s.mip_filter], addressModeU=u, addressModeV=v,
                                      addressModeW=w, maxAnisotropy=1.0, compareEnable=bool(s.compare_op),
                                      compareOp=COMPARE_OPS[s.compare_op or "NEVER"],
                                      minLod=s.min_lod, maxLod=max_lod, borderColor=colors[s.border_color],
                                      unnormalizedCoordinates=s.unnormalized_coordinates)
        with checked(f"vkCreateSampler({image.spec.uid})"):
            return vk.vkCreateSampler(self.gpu.handle, info, None)

    # --- transfers -----------------------------------------------------------------------------
    def _layers(self, level: int) -> Any:
        vk = self.vk
        return vk.VkImageSubresourceLayers(aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT, mipLevel=level,
                                           baseArrayLayer=0, layerCount=1)

    def _transition(self, cmd: Any, image: VulkanImage, old: int, new: int, src_access: int, dst_access: int,
                    src_stage: int, dst_stage: int, base_mip: int = 0, levels: int | None = None) -> None:
        vk = self.vk
        barrier = vk.VkImageMemoryBarrier(srcAccessMask=src_access, dstAccessMask=dst_access, oldLayout=old,
                                          newLayout=new, srcQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED,
                                          dstQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED, image=image.handle,
                                          subresourceRange=color_range(self.gpu.vk, base_mip, levels or image.spec.mips))
        vk.vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 0, None, 0, None, 1, [barrier])

    def _clear(self, cmd: Any, image: VulkanImage) -> None:
        vk = self.vk
        self._transition(cmd, image, vk.VK_IMAGE_LAYOUT_UNDEFINED, vk.VK_IMAGE_LAYOUT_GENERAL, 0,
                         vk.VK_ACCESS_TRANSFER_WRITE_BIT, vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
                         vk.VK_PIPELINE_STAGE_TRANSFER_BIT)
        zero = self.gpu.ffi.new("VkClearColorValue*")
        vk.vkCmdClearColorImage(cmd, image.handle, vk.VK_IMAGE_LAYOUT_GENERAL, zero, 1,
                                [color_range(self.gpu.vk, 0, image.spec.mips)])
        self._after_transfer(cmd, image)
        image.layout = vk.VK_IMAGE_LAYOUT_GENERAL

    def _after_transfer(self, cmd: Any, image: VulkanImage) -> None:
        vk = self.vk
        self._transition(cmd, image, vk.VK_IMAGE_LAYOUT_GENERAL, vk.VK_IMAGE_LAYOUT_GENERAL,
                         vk.VK_ACCESS_TRANSFER_WRITE_BIT,
                         vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT | vk.VK_ACCESS_TRANSFER_READ_BIT,
                         vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
                         vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | vk.VK_PIPELINE_STAGE_TRANSFER_BIT)

    def upload_image(self, image: Image, data: memoryview, levels: int) -> None:
        assert isinstance(image, VulkanImage)
        vk = self.vk
        sizes = [image.level_size(i) for i in range(levels)]
        if data.nbytes != sum(sizes):
            raise ValueError(f"image {image.spec.uid!r}: {data.nbytes} bytes given for {levels} mip levels "
                             f"of {sum(sizes)} bytes")
        staging = self.gpu.staging(data.nbytes)
        staging.view[:] = data

        def record(cmd: Any) -> None:
            general, dst = vk.VK_IMAGE_LAYOUT_GENERAL, vk.VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL
            shader_rw = vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT
            self._transition(cmd, image, image.layout, dst, shader_rw,
                             vk.VK_ACCESS_TRANSFER_WRITE_BIT, vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                             vk.VK_PIPELINE_STAGE_TRANSFER_BIT)
            regions, offset = [], 0
            for level, size in enumerate(sizes):
                w, h = image.extent(level)
                regions.append(vk.VkBufferImageCopy(bufferOffset=offset, imageSubresource=self._layers(level),
                                                    imageOffset=vk.VkOffset3D(x=0, y=0, z=0),
                                                    imageExtent=vk.VkExtent3D(width=w, height=h,
                                                                              depth=image.depth_at(level))))
                offset += size
            vk.vkCmdCopyBufferToImage(cmd, staging.handle, image.handle, dst, len(regions), regions)
            for level in range(levels, image.spec.mips):
                self._downsample(cmd, image, level)
            self._transition(cmd, image, dst, general, vk.VK_ACCESS_TRANSFER_WRITE_BIT,
                             vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT,
                             vk.VK_PIPELINE_STAGE_TRANSFER_BIT, vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT)
            image.layout = general

        try:
            self.gpu.one_shot(record)
        finally:
            self.gpu.free_buffer(staging)

    def _downsample(self, cmd: Any, image: VulkanImage, level: int) -> None:
        """Fill mip ``level`` from ``level - 1`` with a blit (linear for float/normalized formats)."""
        vk = self.vk
        self._transition(cmd, image, vk.VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
                         vk.VK_ACCESS_TRANSFER_WRITE_BIT, vk.VK_ACCESS_TRANSFER_READ_BIT,
                         vk.VK_PIPELINE_STAGE_TRANSFER_BIT, vk.VK_PIPELINE_STAGE_TRANSFER_BIT, level - 1, 1)
        (sw, sh), (dw, dh) = image.extent(level - 1), image.extent(level)
        sd, dd = image.depth_at(level - 1), image.depth_at(level)
        blit = vk.VkImageBlit(srcSubresource=self._layers(level - 1),
                              srcOffsets=[vk.VkOffset3D(x=0, y=0, z=0), vk.VkOffset3D(x=sw, y=sh, z=sd)],
                              dstSubresource=self._layers(level),
                              dstOffsets=[vk.VkOffset3D(x=0, y=0, z=0), vk.VkOffset3D(x=dw, y=dh, z=dd)])
        vk.vkCmdBlitImage(cmd, image.handle, vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, image.handle,
                          vk.VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1, [blit],
                          vk.VK_FILTER_NEAREST if image.integer else vk.VK_FILTER_LINEAR)
        self._transition(cmd, image, vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, vk.VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                         vk.VK_ACCESS_TRANSFER_READ_BIT, vk.VK_ACCESS_TRANSFER_WRITE_BIT,
                         vk.VK_PIPELINE_STAGE_TRANSFER_BIT, vk.VK_PIPELINE_STAGE_TRANSFER_BIT, level - 1, 1)

    def download_image(self, image: Image, level: int) -> np.ndarray:
        assert isinstance(image, VulkanImage)
        vk = self.vk
        w, h = image.extent(level)
        staging = self.gpu.staging(image.level_size(level), readback=True)

        def record(cmd: Any) -> None:
            layout = image.layout if image.layout == vk.VK_IMAGE_LAYOUT_GENERAL else vk.VK_IMAGE_LAYOUT_GENERAL
            self._transition(cmd, image, image.layout, layout,
                             vk.VK_ACCESS_SHADER_WRITE_BIT | vk.VK_ACCESS_TRANSFER_WRITE_BIT,
                             vk.VK_ACCESS_TRANSFER_READ_BIT, vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                             vk.VK_PIPELINE_STAGE_TRANSFER_BIT)
            region = vk.VkBufferImageCopy(bufferOffset=0, imageSubresource=self._layers(level),
                                          imageOffset=vk.VkOffset3D(x=0, y=0, z=0),
                                          imageExtent=vk.VkExtent3D(width=w, height=h, depth=image.depth_at(level)))
            vk.vkCmdCopyImageToBuffer(cmd, image.handle, layout, staging.handle, 1, [region])
            vk.vkCmdPipelineBarrier(cmd, vk.VK_PIPELINE_STAGE_TRANSFER_BIT, vk.VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                                    [vk.VkMemoryBarrier(srcAccessMask=vk.VK_ACCESS_TRANSFER_WRITE_BIT,
                                                        dstAccessMask=vk.VK_ACCESS_HOST_READ_BIT)], 0, None, 0, None)
            image.layout = layout

        try:
            self.gpu.one_shot(record)
            return staging.array.copy()
        finally:
            self.gpu.free_buffer(staging)

    def record_image_barrier(self, image: Image, old_layout: str, new_layout: str, base_mip: int, level_count: int,
                       base_layer: int, layer_count: int) -> None:
        assert isinstance(image, VulkanImage)
        vk = self.vk
        cmd = self.gpu.begin()
        access = vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT
        barrier = vk.VkImageMemoryBarrier(srcAccessMask=access, dstAccessMask=access, oldLayout=LAYOUTS[old_layout],
                                          newLayout=LAYOUTS[new_layout], srcQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED,
                                          dstQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED, image=image.handle,
                                          subresourceRange=color_range(self.gpu.vk, base_mip, level_count, base_layer, layer_count))
        vk.vkCmdPipelineBarrier(cmd, vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                0, 0, None, 0, None, 1, [barrier])
        image.layout = LAYOUTS[new_layout]

    def close(self) -> None:
        """Destroy every image (the device frees shared memory they were bound into)."""
        vk = self.vk
        for image in self._created:
            uid = image.spec.uid
            for view in image.views.values():
                release(f"vkDestroyImageView({uid})", vk.vkDestroyImageView, self.gpu.handle, view, None)
            if image.sampler is not None:
                release(f"vkDestroySampler({uid})", vk.vkDestroySampler, self.gpu.handle, image.sampler, None)
            release(f"vkDestroyImage({uid})", vk.vkDestroyImage, self.gpu.handle, image.handle, None)
            if image.owns_memory:
                release(f"vkFreeMemory({uid})", vk.vkFreeMemory, self.gpu.handle, image.memory, None)
        self._created.clear()
