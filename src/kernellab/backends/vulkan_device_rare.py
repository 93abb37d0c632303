"""The parts of :mod:`kernellab.backends.vulkan_device` a run of buffers never calls, loaded on
first use: the debug-utils instance and labels (``--enable-gpu-debug-markers``), instance-level
extension functions, the instance with Arm's ML layers, the pipeline cache's contents and a
tensor's descriptor write. (Kept out of that module: every run unmarshals it whole.)"""
from __future__ import annotations

from kernellab import logs
from kernellab.native import vk as nvk

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any

DEBUG_UTILS = "VK_EXT_debug_utils"


def instance_with_debug_utils(instance_class: Any) -> Any:
    """A new ``instance_class`` with VK_EXT_debug_utils when the loader has it."""
    vk = nvk.compute()
    try:
        have = {e.extensionName for e in vk.vkEnumerateInstanceExtensionProperties(None)}
    except vk.VkError:
        have = set()
    return instance_class(extensions=[e for e in (DEBUG_UTILS,) if e in have])


def instance_proc(handle: Any, name: str) -> Any:
    """The instance-level extension function ``name`` (None when the instance lacks it)."""
    try:
        vk = nvk.load()
        return vk.vkGetInstanceProcAddr(nvk.Api(vk).adopt(handle), name)
    except Exception:  # the binding raises its own ProcedureNotFoundError
        return None


def instance_with_ml_layers(instance_class: Any) -> Any:
    """An ``instance_class`` made on the instance with Arm's ML emulation layers enabled."""
    from kernellab.backends.vulkan_arm_layers import create_instance

    vk = nvk.load()
    obj = instance_class.__new__(instance_class)
    obj.handle, _ = create_instance()
    obj.physical_devices = list(vk.vkEnumeratePhysicalDevices(obj.handle))
    return obj


def debug_label_functions(inst: Any) -> tuple[Any, Any] | None:
    """(vkCmdBeginDebugUtilsLabelEXT, vkCmdEndDebugUtilsLabelEXT) of ``inst`` (None: no instance,
    or it lacks the extension)."""
    if inst is None or DEBUG_UTILS not in inst.extensions:
        logs.getLogger("kernellab.vulkan").warning(
            "--enable-gpu-debug-markers: %s is not available here; no labels", DEBUG_UTILS)
        return None
    begin, end = inst.proc("vkCmdBeginDebugUtilsLabelEXT"), inst.proc("vkCmdEndDebugUtilsLabelEXT")
    return (begin, end) if begin and end else None


def begin_label(device: Any, cmd: Any, label: str) -> Any:
    """Open a debug-utils label on ``cmd``; the returned callable closes it."""
    begin, end = device.debug_labels
    begin(cmd, device.vk.VkDebugUtilsLabelEXT(pLabelName=label or "command", color=[0.0, 0.0, 0.0, 0.0]))
    return lambda: end(cmd)


def pipeline_cache_blob(device: Any) -> bytes | None:
    """The contents of ``device``'s pipeline cache (None, logged, when they cannot be read)."""
    ffi, lib = device.ffi, device.lib
    # the raw call: the binding's wrapper cannot be asked for the size first
    size = ffi.new("size_t*")
    result = lib.vkGetPipelineCacheData(device.handle, device.pipeline_cache, size, ffi.NULL)
    if result == 0:
        blob = ffi.new("char[]", size[0])
        result = lib.vkGetPipelineCacheData(device.handle, device.pipeline_cache, size, blob)
    if result != 0:  # the cache is an optimisation: a run that cannot save it still succeeded
        nvk.cleanup_failed("vkGetPipelineCacheData", nvk.result_name(result))
        return None
    return bytes(ffi.buffer(blob, size[0]))


def tensor_descriptor_write(device: Any, dset: Any, binding: int, view: Any) -> tuple[Any, list[Any]]:
    """A ``VkWriteDescriptorSet`` of one tensor (its VkTensorViewARM), and cdata to keep until
    the update is done."""
    from kernellab.backends import vulkan_arm as va

    pnext, keep = va.tensor_descriptor_write([view])
    write = device.vk.VkWriteDescriptorSet(pNext=pnext, dstSet=dset, dstBinding=binding, descriptorCount=1,
                                           descriptorType=va.const("VK_DESCRIPTOR_TYPE_TENSOR_ARM"))
    return write, keep
