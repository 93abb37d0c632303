"""Texel buffer views of a Vulkan device (``uniform-texel-buffer`` and ``storage-texel-buffer``
descriptors): one VkBufferView per buffer range and format, made on first use and destroyed with
the buffer. The device loads this module on a run's first texel buffer descriptor."""
from __future__ import annotations

from kernellab.backends.base import UnsupportedError
from kernellab.native import vk as nvk
from kernellab.native.vk import checked
from kernellab.vkregistry import vkformat

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any


def view(device: Any, buf: Any, format: str) -> Any:
    """The VkBufferView of ``buf`` (the device's buffer or a range of one) in ``format`` on ``device``
    (backends/vulkan_device.py's ``VulkanDevice``, which loads this module), made once."""
    device.use_full_binding()  # the compute binding declares no buffer views
    vk = device.vk
    key = (int(device.ffi.cast("uintptr_t", buf.handle)), buf.offset, buf.size, format)
    if key not in device._texel_views:
        fmt = vkformat.lookup(format)
        if fmt is None:
            raise UnsupportedError(f"buffer {buf.uid!r}: unknown texel format {format}")
        # the view covers the whole texels the range holds
        info = vk.VkBufferViewCreateInfo(buffer=buf.handle, format=fmt.value, offset=buf.offset,
                                         range=buf.size // fmt.texel_size * fmt.texel_size)
        with checked(f"vkCreateBufferView({buf.uid}, {format})"):
            device._texel_views[key] = vk.vkCreateBufferView(device.handle, info, None)
    return device._texel_views[key]


def destroy(device: Any, handle: Any = None) -> None:
    """Destroy ``device``'s texel views of the buffer ``handle`` (all of them: None), before it goes."""
    address = None if handle is None else int(device.ffi.cast("uintptr_t", handle))
    for key in [k for k in device._texel_views if address is None or k[0] == address]:
        nvk.release("vkDestroyBufferView", device.vk.vkDestroyBufferView, device.handle,
                    device._texel_views.pop(key), None)
