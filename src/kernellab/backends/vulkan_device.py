"""The Vulkan device every part of the Vulkan backend works through (a device context).

:class:`VulkanDevice` opens the instance, physical device, logical device and queue, and owns
what the parts share: the memory allocator (buffers in host-visible, coherent memory that stays
mapped; shared allocations for memory groups and sessions), the pipeline cache, descriptor set
layouts and sets, and the frame's command recording (one primary command buffer submitted with a
fence, timestamps and debug labels around commands). The backend's parts (``vulkan_image``,
``vulkan_graphics``, ``vulkan_ml``, ``vulkan_optical_flow``) each receive it and use only its
public methods, as a tinygrad device is built from an allocator, a compiler and a program.

On the CPU drivers and on unified-memory and ReBAR GPUs host-visible memory is also
device-local, so data moves with one copy (file -> mapping) and outputs are written straight
from the mapping. Descriptor sets are cached per distinct set of resources, so a chain of
dispatches over the same buffers allocates nothing per dispatch.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence

from kernellab.backends.base import (
    BackendOptions,
    Buffer,
    BufferArray,
    DeviceInfo,
    DynamicBuffer,
    ImageBinding,
    Limits,
    ProgramSpec,
    TexelBuffer,
    UnsupportedError,
)
from kernellab.backends.vkcore import (
    VulkanProgram,
    dynamic_rendering_supported,
    enable_shader_features,
    plain_features,
    set_feature,
    shader_features_of,
)
from kernellab.errors import BackendError, DeviceError, InputError
from kernellab.native import vk as nvk
from kernellab.native.vk import INSTALL_HINT, checked

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:  # NumPy only where images and tensors need it: a run of buffers starts without it
    import numpy as np

    from kernellab.backends.base import CommandTiming
    from kernellab.backends.feature_specs import BufferSpec
    from kernellab.backends.vkimage import VulkanImage
    from kernellab.backends.vulkan_transfers import DeviceMemory

#: what a user may ask of Mesa's VK_LAYER_MESA_device_select (its switch, its settings, DRI_PRIME)
#: and of the loader's layers: any of them set, the instance is created as the user has it
DEVICE_SELECT_VARIABLES = ("NODEVICE_SELECT", "MESA_VK_DEVICE_SELECT", "MESA_VK_DEVICE_SELECT_FORCE_DEFAULT_DEVICE",
                           "MESA_VK_DEVICE_SELECT_DEBUG", "DRI_PRIME", "DRI_PRIME_DEBUG", "VK_INSTANCE_LAYERS",
                           "VK_LOADER_LAYERS_ENABLE", "VK_LOADER_LAYERS_DISABLE", "VK_LOADER_LAYERS_ALLOW",
                           "VK_ADD_LAYER_PATH", "VK_LAYER_PATH")


def device_select_unasked(env: Mapping[str, str]) -> bool:
    """Whether the instance may be created without Mesa's device-selection layer: the user set
    none of its variables (nor the loader's layer controls) and pinned one driver manifest
    (``VK_DRIVER_FILES``, or ``VK_ICD_FILENAMES``, naming one file), so that one device is
    likely; the instance checks that it found at most one (docs/devices.md)."""
    if "VK_ADD_DRIVER_FILES" in env or any(name in env for name in DEVICE_SELECT_VARIABLES):
        return False
    files = env.get("VK_DRIVER_FILES") or env.get("VK_ICD_FILENAMES") or ""
    return bool(files) and ":" not in files and files.endswith(".json")


def _create_instance(vk: Any, info: Any, without_device_select: bool) -> Any:
    """vkCreateInstance; ``without_device_select``: with NODEVICE_SELECT=1 in the environment for
    that call only (the loader reads it there), so no child process inherits it."""
    if without_device_select:
        os.environ["NODEVICE_SELECT"] = "1"
    try:
        return vk.vkCreateInstance(info, None)
    except vk.VkErrorIncompatibleDriver:
        raise DeviceError(f"no Vulkan driver found (VK_ERROR_INCOMPATIBLE_DRIVER): {INSTALL_HINT}") from None
    except vk.VkError as exc:
        raise DeviceError(f"vkCreateInstance failed: {nvk.code_name(exc)}: {INSTALL_HINT}") from None
    finally:
        if without_device_select:
            os.environ.pop("NODEVICE_SELECT", None)


class Instance:
    """One VkInstance per process, shared by discovery and every backend object."""

    _shared: Instance | None = None

    def __init__(self, layers: Sequence[str] = (), extensions: Sequence[str] = ()):
        vk = nvk.compute()
        app = vk.VkApplicationInfo(pApplicationName="kernellab", applicationVersion=1, pEngineName="kernellab",
                                   engineVersion=1, apiVersion=vk.VK_MAKE_VERSION(1, 3, 0))
        info = vk.VkInstanceCreateInfo(pApplicationInfo=app, enabledLayerCount=len(layers),
                                       ppEnabledLayerNames=list(layers) or None,
                                       enabledExtensionCount=len(extensions),
                                       ppEnabledExtensionNames=list(extensions) or None)
        #: Mesa's device-selection layer was kept out of this instance (docs/devices.md)
        self.without_device_select = device_select_unasked(os.environ)
        self.handle = _create_instance(vk, info, self.without_device_select)
        self.physical_devices = list(vk.vkEnumeratePhysicalDevices(self.handle))
        if self.without_device_select and len(self.physical_devices) > 1:
            # several devices: their indices (--device N) and kernellab's ties are in the layer's order
            vk.vkDestroyInstance(self.handle, None)
            self.without_device_select = False
            self.handle = _create_instance(vk, info, False)
            self.physical_devices = list(vk.vkEnumeratePhysicalDevices(self.handle))
        self.extensions = tuple(extensions)

    @classmethod
    def shared(cls) -> Instance:
        """The plain instance: no layer, no extension (a run enables only what it asks for)."""
        if cls._shared is None:
            cls._shared = Instance()
        return cls._shared

    _with_debug_utils: Instance | None = None

    @classmethod
    def with_debug_utils(cls) -> Instance:
        """An instance with VK_EXT_debug_utils when the loader has it (--enable-gpu-debug-markers)."""
        if cls._with_debug_utils is None:
            cls._with_debug_utils = _rare().instance_with_debug_utils(Instance)
        return cls._with_debug_utils

    def proc(self, name: str) -> Any:
        """An instance-level extension function (None when the instance lacks it)."""
        return _rare().instance_proc(self.handle, name)

    _with_ml: Instance | None = None

    @classmethod
    def with_ml_layers(cls) -> Instance:
        """The instance with Arm's ML emulation layers (VK_ARM_tensors, VK_ARM_data_graph) enabled."""
        if cls._with_ml is None:
            cls._with_ml = _rare().instance_with_ml_layers(cls)
        return cls._with_ml




class VulkanBuffer(Buffer):
    """A Vulkan buffer and the memory it is bound to. (A plain class: a run makes one per buffer,
    and building its dataclass cost more than the class; equal means the same object.)"""

    __slots__ = ("_array", "handle", "host_cached", "mapping", "memory", "offset", "owns_memory", "size", "uid",
                 "view")

    def __init__(self, size: int, uid: str, handle: Any, memory: Any, mapping: Any, view: memoryview,
                 owns_memory: bool = True, host_cached: bool = True, _array: np.ndarray | None = None,
                 offset: int = 0):
        self.size, self.uid, self.handle, self.memory = size, uid, handle, memory
        #: ffi.buffer over the persistently mapped memory
        self.mapping = mapping
        #: the mapped bytes; a run of buffers reads and writes them without NumPy
        self.view = view
        #: False when the buffer lives in memory shared with other resources (a memory group)
        self.owns_memory = owns_memory
        #: the CPU reads the mapping fast (host-cached memory); otherwise reads go through a staged copy
        self.host_cached = host_cached
        self._array = _array
        #: a range of a buffer (``VulkanBackend.sub_buffer``): where it starts in ``handle``, which
        #: descriptors bind it at (VkDescriptorBufferInfo's offset)
        self.offset = offset

    def __repr__(self) -> str:
        return f"VulkanBuffer(size={self.size}, uid={self.uid!r}, offset={self.offset})"

    def part(self, offset: int, size: int) -> VulkanBuffer:
        """``size`` bytes from ``offset``: the same VkBuffer and memory, not owning it."""
        return VulkanBuffer(size, self.uid, self.handle, self.memory, self.mapping,
                            self.view[offset:offset + size], False, self.host_cached, None, self.offset + offset)

    @property
    def array(self) -> np.ndarray:
        """The mapped bytes as a uint8 NumPy array (images, tensors and ``read_buffer``'s callers)."""
        if self._array is None:
            import numpy as np

            self._array = np.frombuffer(self.view, dtype=np.uint8)
        return self._array


def _set_key(r: Any) -> Any:
    """What identifies a descriptor's contents, for the cache of descriptor sets."""
    if isinstance(r, ImageBinding):
        return (id(r.image), r.lod, getattr(r.image, "layout", None))
    if isinstance(r, BufferArray):
        return tuple(_set_key(b) for b in r.elements)
    if isinstance(r, TexelBuffer):
        return (id(r.buffer), r.format)
    return (id(r), None)


def _without_dynamic(r: Any) -> Any:
    """The buffer (or array of buffers) a descriptor is written with: a dynamic offset is given at
    bind time, not in the set."""
    if isinstance(r, DynamicBuffer):
        return r.buffer
    if isinstance(r, BufferArray):
        return BufferArray(tuple(_without_dynamic(b) for b in r.elements))
    return r


# VkMemoryPropertyFlagBits (the spec's values: the chooser below runs on plain flags, no binding)
_DEVICE_LOCAL, _HOST_VISIBLE, _HOST_COHERENT, _HOST_CACHED = 0x1, 0x2, 0x4, 0x8
_MAPPABLE = _HOST_VISIBLE | _HOST_COHERENT


class MemoryTypes:
    """The memory type of each buffer role, chosen from a device's memory type flags.

    On a discrete GPU the device-local memory the CPU can map (ReBAR) is write-combined and
    uncached: writing through a mapping is fine, reading it back costs seconds for large
    buffers. So results come out through a copy into host-cached memory unless the
    device-local type is itself host-cached (CPU devices, integrated GPUs), where buffers
    are read in place (zero copy). (A plain class: each run makes one, and a dataclass costs
    its building.)"""

    __slots__ = ("device", "flags", "readback", "upload")

    def __init__(self, flags: tuple[int, ...], device: int, upload: int, readback: int):
        #: the propertyFlags of each memory type, by index
        self.flags = flags
        #: buffers the shaders use
        self.device = device
        #: staging buffers data is written into before a copy to a device buffer
        self.upload = upload
        #: staging buffers a device buffer is copied into to be read by the CPU
        self.readback = readback

    def mapped(self, index: int) -> bool:
        """Whether memory of type ``index`` is host-visible and coherent (mapped for its life)."""
        return self.flags[index] & _MAPPABLE == _MAPPABLE

    def host_cached(self, index: int) -> bool:
        return self.mapped(index) and bool(self.flags[index] & _HOST_CACHED)

    @property
    def zero_copy(self) -> bool:
        """Device buffers are read and written in place through their mapping."""
        return self.host_cached(self.device)


def choose_memory_types(flags: Sequence[int]) -> MemoryTypes:
    """The memory type of each buffer role among types with ``flags`` (see :class:`MemoryTypes`)."""
    plain = [(i, f) for i, f in enumerate(flags) if not f & ~0xF]  # no protected, lazy or vendor types

    def best(score: Callable[[int], int], what: str) -> int:
        ranked = [(score(f), -i, i) for i, f in plain if score(f) > 0]
        if not ranked:
            raise DeviceError(f"no {what} memory type")
        return max(ranked)[2]

    def device(f: int) -> int:
        if not f & _DEVICE_LOCAL:
            return 1 if f & _MAPPABLE == _MAPPABLE else 0
        if f & _MAPPABLE == _MAPPABLE:
            return 4 if f & _HOST_CACHED else 3
        return 2

    def upload(f: int) -> int:
        return 0 if f & _MAPPABLE != _MAPPABLE else 1 if f & _DEVICE_LOCAL else 2

    def readback(f: int) -> int:
        return 0 if f & _MAPPABLE != _MAPPABLE else 2 if f & _HOST_CACHED else 1

    return MemoryTypes(tuple(flags), best(device, "device-local"), best(upload, "host-visible coherent"),
                       best(readback, "host-visible coherent"))



#: descriptor kinds a program slot may have -> VkDescriptorType values
DESCRIPTOR_TYPES = {"storage-buffer": 7, "uniform-buffer": 6, "storage-image": 3, "combined-image-sampler": 1,
                    "sampled-image": 2, "sampler": 0, "storage-buffer-dynamic": 9, "uniform-buffer-dynamic": 8,
                    "uniform-texel-buffer": 4, "storage-texel-buffer": 5,
                    "tensor": 1000460000}  # VK_DESCRIPTOR_TYPE_TENSOR_ARM



#: the values (the spec's, the same in both bindings) of the enums every run of buffers passes:
#: a name read through a binding costs its first lookup, some 25 K instructions each
VK_QUEUE_GRAPHICS_BIT, VK_QUEUE_COMPUTE_BIT = 0x1, 0x2
VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT = 0x2
#: VK_BUFFER_USAGE_ TRANSFER_SRC_BIT | TRANSFER_DST_BIT | UNIFORM_BUFFER_BIT | STORAGE_BUFFER_BIT
BUFFER_USAGE = 0x1 | 0x2 | 0x10 | 0x20
VK_SHARING_MODE_EXCLUSIVE = 0
VK_SHADER_STAGE_COMPUTE_BIT = 0x20
VK_COMMAND_BUFFER_LEVEL_PRIMARY = 0
VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT = 0x1
VK_PIPELINE_BIND_POINT_COMPUTE = 1
VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT = \
    0x800, 0x4000, 0x10000
VK_ACCESS_SHADER_READ_BIT, VK_ACCESS_SHADER_WRITE_BIT = 0x20, 0x40
VK_ACCESS_HOST_READ_BIT, VK_ACCESS_MEMORY_READ_BIT, VK_ACCESS_MEMORY_WRITE_BIT = 0x2000, 0x8000, 0x10000
VK_QUEUE_FAMILY_IGNORED = 0xFFFFFFFF
VK_TRUE = 1

#: VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT | VK_BUFFER_USAGE_STORAGE_TEXEL_BUFFER_BIT: any buffer may be
#: bound as a texel buffer (the compute binding lacks the names)
_TEXEL_BUFFER_USAGE = 0x4 | 0x8


class VulkanDevice:
    """One opened Vulkan device and what the backend's parts share on it (see the module's doc)."""

    def __init__(self, device: DeviceInfo, options: BackendOptions = BackendOptions()):
        self.info = device
        self.options = options
        # every vk* call through this view is checked; one view per backend (tests count its calls).
        # The compute path's small binding unless the work needs the full one from the start
        # (images switch later: use_full_binding)
        self.vk: Any = nvk.Api(nvk.compute())
        self.ffi, self.lib = self.vk.ffi, self.vk.lib
        #: the device works through the ``vulkan`` package, not the compute binding
        self.full_binding = False
        if options.ml or options.graphics or options.optical_flow or options.debug_markers:
            self.use_full_binding()
        vk = self.vk
        #: the device was opened with VK_ARM_tensors/VK_ARM_data_graph (``BackendOptions.ml``)
        self.ml = options.ml
        self.physical = vk.adopt(self._physical_device())
        props = vk.vkGetPhysicalDeviceProperties(self.physical)
        # copy scalars out now: the cffi struct is freed with `props`, and views into it would dangle
        self.timestamp_period = float(props.limits.timestampPeriod)
        self.max_push_constants_size = int(props.limits.maxPushConstantsSize)
        self.api_version = int(props.apiVersion)
        self.family, self.timestamp_bits = self._queue_family()
        #: VK_EXT_custom_border_color is enabled (the work may need it and the device has it)
        self.custom_border_color = options.custom_border_color and \
            "VK_EXT_custom_border_color" in device.details.get("extensions", ())
        self.handle = self._create_device()
        self.queue = vk.vkGetDeviceQueue(self.handle, self.family, 0)
        #: asked once: the memory types and the limits (the heap of device memory) read it
        self._memory_properties = vk.vkGetPhysicalDeviceMemoryProperties(self.physical)
        self.memory = self._pick_memory_types()
        self.limits = self._read_limits(props.limits)
        with checked("vkCreateCommandPool"):
            self.command_pool = vk.vkCreateCommandPool(self.handle, vk.VkCommandPoolCreateInfo(
                flags=VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, queueFamilyIndex=self.family), None)
            self.fence = vk.vkCreateFence(self.handle, vk.VkFenceCreateInfo(), None)
        self.pipeline_cache = self._create_pipeline_cache()
        self._buffers: list[VulkanBuffer] = []
        #: shared allocations (memory groups, tensors, graph and optical-flow sessions)
        self._memories: list[DeviceMemory] = []
        self._arm: Any = None
        self._recording = False
        self._programs: list[VulkanProgram] = []
        self._layouts: dict[tuple, Any] = {}
        self._descriptor_pools: list[Any] = []
        self._pool_left = 0
        self._sets: dict[tuple, Any] = {}
        #: VkBufferViews of texel buffer descriptors, by (buffer handle address, offset, size, format)
        self._texel_views: dict[tuple[int, int, int, str], Any] = {}
        self._query_pools: list[Any] = []
        self._cmd: Any = None
        self._bound_pipeline: Any = None
        self._labels: list[str] = []  # one per timestamp pair recorded this frame
        self.debug_labels = self._debug_label_functions() if options.debug_markers else None
        self._queries_used = 0

    def use_full_binding(self) -> None:
        """Work through the ``vulkan`` package from now on (images, graphics, tensors, graphs need
        its declarations); handles made so far are adopted as they are passed."""
        if not self.full_binding:
            self.full_binding = True
            self.vk = nvk.Api(nvk.load(), adopt=True)
            self.ffi = self.vk.ffi
            self.lib = self.vk.lib
            if hasattr(self, "handle"):
                self.physical, self.handle = self.vk.adopt(self.physical), self.vk.adopt(self.handle)
                self.queue, self.command_pool = self.vk.adopt(self.queue), self.vk.adopt(self.command_pool)
                self.fence, self.pipeline_cache = self.vk.adopt(self.fence), self.vk.adopt(self.pipeline_cache)

    @property
    def arm(self) -> Any:
        """The VK_ARM_tensors / VK_ARM_data_graph entry points of this device (kernellab's own FFI)."""
        if self._arm is None:
            if not self.ml:
                raise UnsupportedError("tensors and graphs need a device opened with VK_ARM_tensors "
                                       "(BackendOptions(ml=True))")
            from kernellab.backends import vulkan_arm as va

            self._arm = va.ArmDevice(self.handle)
        return self._arm


    # --- opening the device --------------------------------------------------------------------
    def _physical_device(self) -> Any:
        inst = Instance.with_debug_utils() if self.options.debug_markers and not self.options.ml else Instance.shared()
        physical = inst.physical_devices[self.info.index]
        if not self.options.ml:
            return physical
        from kernellab.backends.vulkan_arm_decls import EXTENSIONS as ML_EXTENSIONS

        wanted = set(ML_EXTENSIONS)
        if self.options.optical_flow:
            from kernellab.backends.vulkan_optical_flow_decls import EXTENSION as OPTICAL_FLOW

            wanted.add(OPTICAL_FLOW)
        if not wanted <= set(self.info.details.get("extensions", ())):
            # the driver lacks them: the same device seen through Arm's emulation layers
            inst = Instance.with_ml_layers()
            named = [pd for pd in inst.physical_devices
                     if self.vk.vkGetPhysicalDeviceProperties(pd).deviceName == self.info.name]
            physical = named[0] if named else inst.physical_devices[self.info.index]
        return physical

    def _queue_family(self) -> tuple[int, int]:
        """(queue family index, its timestamp valid bits): the first compute family, or with ML
        the data-graph family when it computes too."""
        vk = self.vk
        families = vk.vkGetPhysicalDeviceQueueFamilyProperties(self.physical)
        want = VK_QUEUE_COMPUTE_BIT | (VK_QUEUE_GRAPHICS_BIT if self.options.graphics else 0)
        compute = [i for i, f in enumerate(families) if f.queueFlags & want == want]
        if not compute:
            raise DeviceError(f"{self.info.name}: no queue family supports compute"
                              + (" and graphics (dispatch_fragment draws)" if self.options.graphics else ""))
        family = compute[0]
        if self.options.ml:
            from kernellab.backends.vulkan_arm_features import data_graph_queue_family

            graph_family = data_graph_queue_family(self.physical)
            if graph_family is not None and graph_family in compute:
                family = graph_family
        return family, families[family].timestampValidBits

    def _create_device(self) -> Any:
        vk, options = self.vk, self.options
        # plain memory: the binding builds no type of VkPhysicalDeviceFeatures's 55 members for it
        features: Any = plain_features(vk.ffi)
        set_feature(features, "robustBufferAccess", options.robust_buffer_access)
        if options.robust_buffer_access:
            have = vk.vkGetPhysicalDeviceFeatures(self.physical)
            if not have.robustBufferAccess:
                raise DeviceError(f"{self.info.name} does not support robustBufferAccess")
        qinfo = vk.VkDeviceQueueCreateInfo(queueFamilyIndex=self.family, queueCount=1, pQueuePriorities=[1.0])
        extensions = []
        chain = None
        if self.custom_border_color:
            extensions.append("VK_EXT_custom_border_color")
            chain = vk.VkPhysicalDeviceCustomBorderColorFeaturesEXT(customBorderColors=True)
        if options.graphics:
            if not dynamic_rendering_supported(vk, self.physical):
                raise DeviceError(f"{self.info.name}: Graphics scenarios require Vulkan dynamicRendering support")
            if not options.ml:  # with ML, the Vulkan 1.3 feature struct of that chain enables it
                chain = vk.VkPhysicalDeviceDynamicRenderingFeatures(pNext=chain, dynamicRendering=True)
        keep_shader: list[Any] = []
        if not options.ml:  # Arm's ML chain (below) carries the Vulkan 1.x feature structs itself
            chain, keep_shader = enable_shader_features(vk, shader_features_of(vk, self.physical, self.api_version),
                                                        features, chain,
                                                        vulkan13=not options.graphics)
        keep_flow: list[Any] = []
        if options.optical_flow:
            from kernellab.backends.vulkan_optical_flow_decls import EXTENSION as OPTICAL_FLOW
            from kernellab.backends.vulkan_optical_flow_decls import feature_chain

            chain, keep_flow = feature_chain(chain)
            extensions.append(OPTICAL_FLOW)
        keep_features = None
        if options.ml:
            from kernellab.backends.vulkan_arm_decls import EXTENSIONS as ML_EXTENSIONS
            from kernellab.backends.vulkan_arm_features import device_features

            keep_features = device_features(self.physical, then=chain,
                                            robust_buffer_access=options.robust_buffer_access,
                                            dynamic_rendering=options.graphics)
            extensions = [*ML_EXTENSIONS, *extensions]
            chain, features = keep_features.pnext, keep_features.enabled
        if options.graphics:  # as Arm's runner: fragment shaders may write buffers and images where the device can
            stores = vk.vkGetPhysicalDeviceFeatures(self.physical).fragmentStoresAndAtomics
            if options.ml:
                features.fragmentStoresAndAtomics = stores
            else:
                set_feature(features, "fragmentStoresAndAtomics", stores)
        # (``features``, the plain memory, lives until the device exists)
        enabled = features if options.ml else vk.ffi.cast("VkPhysicalDeviceFeatures *", features)
        dinfo = vk.VkDeviceCreateInfo(pNext=chain, queueCreateInfoCount=1, pQueueCreateInfos=[qinfo],
                                      pEnabledFeatures=enabled, enabledExtensionCount=len(extensions),
                                      ppEnabledExtensionNames=extensions or None)
        with checked("vkCreateDevice"):
            handle = vk.vkCreateDevice(self.physical, dinfo, None)
        del keep_features, keep_flow, keep_shader, features  # the feature chain must live until the device exists, no longer
        return handle

    # --- limits -----
    def _read_limits(self, limits: Any) -> Limits:
        """The device's limits as plain numbers (the cffi structs are freed with their owner)."""
        m3, subgroup, sizing = self._properties2()
        per_set = int(m3.maxPerSetDescriptors) or None if m3 is not None else None
        allocation = int(m3.maxMemoryAllocationSize) or None if m3 is not None else None
        mp = self._memory_properties
        heap = int(mp.memoryHeaps[mp.memoryTypes[self.memory.device].heapIndex].size)
        size = int(subgroup.subgroupSize) or None if subgroup is not None else None
        sizes = None
        if sizing is not None and 0 < int(sizing.minSubgroupSize) <= int(sizing.maxSubgroupSize):
            sizes = (int(sizing.minSubgroupSize), int(sizing.maxSubgroupSize))
        return Limits(max_bound_descriptor_sets=int(limits.maxBoundDescriptorSets),
                      max_per_set_descriptors=per_set,
                      max_workgroup_count=tuple(int(x) for x in limits.maxComputeWorkGroupCount),  # type: ignore[arg-type]
                      max_workgroup_size=tuple(int(x) for x in limits.maxComputeWorkGroupSize),  # type: ignore[arg-type]
                      max_workgroup_invocations=int(limits.maxComputeWorkGroupInvocations),
                      max_image_dimension_2d=int(limits.maxImageDimension2D),
                      max_storage_buffer_range=int(limits.maxStorageBufferRange),
                      max_uniform_buffer_range=int(limits.maxUniformBufferRange),
                      max_push_constants_size=int(limits.maxPushConstantsSize),
                      max_shared_memory_size=int(limits.maxComputeSharedMemorySize),
                      max_allocation_size=allocation, memory_heap_size=heap or None,
                      min_storage_buffer_offset_alignment=int(limits.minStorageBufferOffsetAlignment),
                      min_uniform_buffer_offset_alignment=int(limits.minUniformBufferOffsetAlignment),
                      min_texel_buffer_offset_alignment=int(limits.minTexelBufferOffsetAlignment),
                      subgroup_size=size, subgroup_size_range=sizes)

    def _properties2(self) -> tuple[Any, Any, Any]:
        """VkPhysicalDeviceMaintenance3Properties, VkPhysicalDeviceSubgroupProperties and, where
        the device has VK_EXT_subgroup_size_control (core in 1.3),
        VkPhysicalDeviceSubgroupSizeControlProperties, asked in one vkGetPhysicalDeviceProperties2
        call; None for a structure the binding lacks, all None on a Vulkan 1.0 driver."""
        vk = self.vk
        version = ((self.api_version >> 22) & 0x7F, (self.api_version >> 12) & 0x3FF)
        names = ["VkPhysicalDeviceMaintenance3Properties", "VkPhysicalDeviceSubgroupProperties"]
        if "VK_EXT_subgroup_size_control" in self.info.details.get("extensions", ()) or version >= (1, 3):
            names.append("VkPhysicalDeviceSubgroupSizeControlProperties")
        found: list[Any] = []
        chain = None
        for name in reversed(names):
            make = getattr(vk, name, None)
            if make is not None:  # a binding without the structure: no answer
                chain = make(pNext=chain)
            found.insert(0, chain if make is not None else None)
        try:
            vk.vkGetPhysicalDeviceProperties2(self.physical, vk.VkPhysicalDeviceProperties2(pNext=chain))
        except Exception:  # Vulkan 1.1 queries: a 1.0 driver simply has no answer
            return None, None, None
        return found[0], found[1], found[2] if len(found) > 2 else None

    # --- memory -------
    def _pick_memory_types(self) -> MemoryTypes:
        mp = self._memory_properties
        try:
            return choose_memory_types([int(mp.memoryTypes[i].propertyFlags) for i in range(mp.memoryTypeCount)])
        except DeviceError as exc:
            raise DeviceError(f"{self.info.name}: {exc}") from None

    def alloc_buffer(self, size: int, uid: str) -> VulkanBuffer:
        buf = self._make_buffer(size, uid, self.memory.device)
        self._buffers.append(buf)
        return buf

    # staged transfers and shared memory (backends/vulkan_transfers.py: loaded when first used)
    def staging(self, size: int, readback: bool = False) -> VulkanBuffer:
        return _transfers().staging(self, size, readback)

    def upload(self, buf: VulkanBuffer, data: memoryview, offset: int) -> None:
        _transfers().upload(self, buf, data, offset)

    def read_back(self, buf: VulkanBuffer) -> memoryview:
        return _transfers().read_back(self, buf)

    def fill_zero(self, buf: VulkanBuffer) -> None:
        _transfers().fill_zero(self, buf)

    def one_shot(self, record: Callable[[Any], None]) -> None:
        _transfers().one_shot(self, record)

    def host_memory(self, size: int, type_bits: int, what: str) -> DeviceMemory:
        return _transfers().host_memory(self, size, type_bits, what)

    def free_memory(self, mem: DeviceMemory) -> None:
        _transfers().free_memory(self, mem)

    def bind_buffer(self, handle: Any, memory: DeviceMemory, offset: int, spec: BufferSpec) -> VulkanBuffer:
        """A buffer bound into shared memory at ``offset``; its bytes are a view of the group's mapping."""
        with checked("vkBindBufferMemory"):
            self.vk.vkBindBufferMemory(self.handle, handle, memory.handle, offset)
        buf = VulkanBuffer(spec.size, spec.uid, handle, memory.handle, memory.mapping,
                           memoryview(memory.mapping).cast("B")[offset:offset + spec.size], owns_memory=False,
                           host_cached=self.memory.host_cached(memory.type_index))
        self._buffers.append(buf)
        return buf

    def free_buffer(self, b: VulkanBuffer) -> None:
        vk = self.vk
        # views must go before the mapping does
        b._array = None
        b.view = memoryview(b"")
        mapped, b.mapping = b.mapping is not None, None
        if b.owns_memory and mapped:
            nvk.release("vkUnmapMemory", vk.vkUnmapMemory, self.handle, b.memory)
        if self._texel_views:
            _texels().destroy(self, b.handle)
        nvk.release(f"vkDestroyBuffer({b.uid})", vk.vkDestroyBuffer, self.handle, b.handle, None)
        if b.owns_memory:
            nvk.release(f"vkFreeMemory({b.uid})", vk.vkFreeMemory, self.handle, b.memory, None)

    def create_buffer_handle(self, size: int, uid: str) -> tuple[Any, Any]:
        vk = self.vk
        usage = BUFFER_USAGE | _TEXEL_BUFFER_USAGE
        with checked(f"vkCreateBuffer({uid}, {size} bytes)"):
            handle = vk.vkCreateBuffer(self.handle, vk.VkBufferCreateInfo(
                size=size, usage=usage, sharingMode=VK_SHARING_MODE_EXCLUSIVE), None)
        return handle, vk.vkGetBufferMemoryRequirements(self.handle, handle)

    def _make_buffer(self, size: int, uid: str, memory_type: int) -> VulkanBuffer:
        vk = self.vk
        handle, req = self.create_buffer_handle(size, uid)
        if not req.memoryTypeBits & (1 << memory_type):
            nvk.release("vkDestroyBuffer", vk.vkDestroyBuffer, self.handle, handle, None)
            raise DeviceError(f"{self.info.name}: buffers cannot live in memory type {memory_type} "
                              f"(memoryTypeBits {int(req.memoryTypeBits):#x})")
        try:
            with checked(f"vkAllocateMemory({uid}, {req.size} bytes)"):
                memory = vk.vkAllocateMemory(self.handle, vk.VkMemoryAllocateInfo(
                    allocationSize=req.size, memoryTypeIndex=memory_type), None)
        except BackendError:
            nvk.release("vkDestroyBuffer", vk.vkDestroyBuffer, self.handle, handle, None)
            raise
        with checked("vkBindBufferMemory"):
            vk.vkBindBufferMemory(self.handle, handle, memory, 0)
        if not self.memory.mapped(memory_type):  # device-only memory: data moves by copies
            return VulkanBuffer(size, uid, handle, memory, None, memoryview(b""), host_cached=False)
        with checked("vkMapMemory"):
            mapping = vk.vkMapMemory(self.handle, memory, 0, size, 0)
        return VulkanBuffer(size, uid, handle, memory, mapping, memoryview(mapping).cast("B")[:size],
                            host_cached=self.memory.host_cached(memory_type))

    def _debug_label_functions(self) -> tuple[Any, Any] | None:
        """(vkCmdBeginDebugUtilsLabelEXT, vkCmdEndDebugUtilsLabelEXT), or None without the extension."""
        return _rare().debug_label_functions(Instance.with_debug_utils() if not self.options.ml else None)

    def label(self, cmd: Any, label: str) -> Any:
        """Open a debug-utils label around a command; the returned callable closes it."""
        if self.debug_labels is None:
            return lambda: None
        return _rare().begin_label(self, cmd, label)

    def _create_pipeline_cache(self) -> Any:
        vk = self.vk
        # the caller validated the blob's header against this device (runtime/pipeline_cache.py)
        data = self.options.pipeline_cache_data or b""
        keep = self.ffi.from_buffer(data) if data else None
        info = vk.VkPipelineCacheCreateInfo(initialDataSize=len(data), pInitialData=keep)
        with checked("vkCreatePipelineCache"):
            return vk.vkCreatePipelineCache(self.handle, info, None)

    def pipeline_cache_blob(self) -> bytes | None:
        return _rare().pipeline_cache_blob(self)

    def set_layout(self, bindings: tuple[tuple[int, str] | tuple[int, str, int], ...], stages: int | None = None
                   ) -> Any:
        """The layout of one descriptor set, for the compute stage or (``stages``) those given: each
        binding number with its descriptor type (and count, when it is an array of descriptors)."""
        key: tuple = bindings if stages is None else (stages, bindings)
        if key in self._layouts:
            return self._layouts[key]
        vk = self.vk
        stages = VK_SHADER_STAGE_COMPUTE_BIT if stages is None else stages
        entries = []
        for binding, kind, *count in bindings:
            if kind not in DESCRIPTOR_TYPES:
                raise InputError(f"descriptor type {kind!r} is not supported by the Vulkan backend")
            # a member dict: cffi fills the array's structures itself (a structure made in Python a
            # binding costs more than the call)
            entries.append({"binding": binding, "descriptorType": DESCRIPTOR_TYPES[kind],
                            "descriptorCount": count[0] if count else 1, "stageFlags": stages})
        info = vk.VkDescriptorSetLayoutCreateInfo(bindingCount=len(entries), pBindings=entries or None)
        with checked("vkCreateDescriptorSetLayout"):
            layout = vk.vkCreateDescriptorSetLayout(self.handle, info, None)
        self._layouts[key] = layout
        return layout

    def pipeline_layout(self, spec: ProgramSpec, stages: int | None = None
                         ) -> tuple[list[Any], Any, dict[int, tuple[int, ...]]]:
        """(set layouts, pipeline layout, set -> binding ids) for ``spec``'s slots and push range,
        seen by the compute stage or (``stages``) those given."""
        vk = self.vk
        by_set: dict[int, list[tuple[int, str] | tuple[int, str, int]]] = {}
        for slot in spec.slots:
            by_set.setdefault(slot.set, []).append((slot.id, slot.descriptor) if slot.count == 1 else
                                                   (slot.id, slot.descriptor, slot.count))
        n_sets = max(by_set) + 1 if by_set else 0
        set_layouts = [self.set_layout(tuple(sorted(by_set.get(s, []))), stages) for s in range(n_sets)]
        range_stages = VK_SHADER_STAGE_COMPUTE_BIT if stages is None else stages
        ranges = [vk.VkPushConstantRange(stageFlags=range_stages, offset=0,
                                         size=spec.push_constants_size)] if spec.push_constants_size else []
        with checked(f"vkCreatePipelineLayout({spec.uid})"):
            layout = vk.vkCreatePipelineLayout(self.handle, vk.VkPipelineLayoutCreateInfo(
                setLayoutCount=n_sets, pSetLayouts=set_layouts or None,
                pushConstantRangeCount=len(ranges), pPushConstantRanges=ranges or None), None)
        return set_layouts, layout, {s: tuple(b[0] for b in sorted(by_set.get(s, []))) for s in range(n_sets)}

    def add_program(self, program: VulkanProgram) -> VulkanProgram:
        """Keep a compute or graphics pipeline until :meth:`close`."""
        self._programs.append(program)
        return program

    def tensor_descriptor_write(self, dset: Any, binding: int, view: Any) -> tuple[Any, list[Any]]:
        """A ``VkWriteDescriptorSet`` of one tensor (its VkTensorViewARM), and cdata to keep
        until the update is done."""
        return _rare().tensor_descriptor_write(self, dset, binding, view)


    # --- descriptor sets -----------------------------------------------------------------------
    def _descriptor_set(self, program: VulkanProgram, set_index: int,
                        resources: tuple[VulkanBuffer | ImageBinding, ...]) -> Any:
        if any(isinstance(r, TexelBuffer) or isinstance(r, BufferArray) and isinstance(r.elements[0], TexelBuffer)
               for r in resources):
            self.use_full_binding()  # the compute binding declares no buffer views
        vk = self.vk
        layout = program.set_layouts[set_index]
        # a dynamic descriptor's set serves every dynamic offset: the set is that of the buffer
        resources = tuple(_without_dynamic(r) for r in resources)  # type: ignore[misc]
        key = (id(layout), tuple(_set_key(r) for r in resources))
        hit = self._sets.get(key)
        if hit is not None:
            return hit
        if self._pool_left == 0:
            n = 256
            # (type, descriptorCount) of each VkDescriptorPoolSize: cffi fills the array itself
            sizes = [(t, n * 8) for k, t in DESCRIPTOR_TYPES.items() if k != "tensor" or self.ml]
            with checked("vkCreateDescriptorPool"):
                self._descriptor_pools.append(vk.vkCreateDescriptorPool(self.handle, vk.VkDescriptorPoolCreateInfo(
                    maxSets=n, poolSizeCount=len(sizes), pPoolSizes=sizes), None))
            self._pool_left = n
        with checked("vkAllocateDescriptorSets"):
            dset = vk.vkAllocateDescriptorSets(self.handle, vk.VkDescriptorSetAllocateInfo(
                descriptorPool=self._descriptor_pools[-1], descriptorSetCount=1, pSetLayouts=[layout]))[0]
        self._pool_left -= 1
        kinds = dict((s.id, s.descriptor) for s in program.spec.slots if s.set == set_index)
        writes = []
        keep: list[Any] = []
        for binding, res in zip(program.set_bindings[set_index], resources):
            dtype = DESCRIPTOR_TYPES[kinds[binding]]
            if isinstance(res, TexelBuffer) or isinstance(res, BufferArray) and \
                    isinstance(res.elements[0], TexelBuffer):
                elements = res.elements if isinstance(res, BufferArray) else (res,)
                views = [_texels().view(self, t.buffer, t.format) for t in elements if isinstance(t, TexelBuffer)]
                writes.append(vk.VkWriteDescriptorSet(dstSet=dset, dstBinding=binding, descriptorCount=len(views),
                                                      descriptorType=dtype, pTexelBufferView=views))
            elif not isinstance(res, (VulkanBuffer, BufferArray, ImageBinding)):  # a tensor
                write, k = self.tensor_descriptor_write(dset, binding, res.view)
                writes.append(write)
                keep += k
            elif isinstance(res, (VulkanBuffer, BufferArray)):
                # a uniform block sees at most maxUniformBufferRange bytes (the run checked it fits)
                most = self.limits.max_uniform_buffer_range if kinds[binding].startswith("uniform-buffer") else None
                elements = res.elements if isinstance(res, BufferArray) else (res,)
                infos = [vk.VkDescriptorBufferInfo(buffer=b.handle, offset=b.offset, range=min(b.size, most or b.size))
                         for b in elements if isinstance(b, VulkanBuffer)]
                writes.append(vk.VkWriteDescriptorSet(dstSet=dset, dstBinding=binding, descriptorCount=len(infos),
                                                      descriptorType=dtype, pBufferInfo=infos))
            else:
                # the Vulkan image part made it (a run of buffers imports no image class to check that)
                image: VulkanImage = res.image  # type: ignore[assignment]  # Image -> this backend's own
                sampler = image.sampler if kinds[binding] in ("combined-image-sampler", "sampler") else None
                info = vk.VkDescriptorImageInfo(sampler=sampler, imageView=_images().image_view(self, image, res.lod),
                                                imageLayout=image.layout)
                writes.append(vk.VkWriteDescriptorSet(dstSet=dset, dstBinding=binding, descriptorCount=1,
                                                      descriptorType=dtype, pImageInfo=[info]))
        if writes:
            vk.vkUpdateDescriptorSets(self.handle, len(writes), writes, 0, None)
        del keep
        self._sets[key] = dset
        return dset

    # --- recording -----------------------------------------------------------------------------
    def begin(self) -> Any:
        """The frame's command buffer, recording (begun on the first command of a frame)."""
        if self._cmd is None:
            vk = self.vk
            with checked("vkAllocateCommandBuffers"):
                self._cmd = vk.vkAllocateCommandBuffers(self.handle, vk.VkCommandBufferAllocateInfo(
                    commandPool=self.command_pool, level=VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1))[0]
            self._recording = False
        if not self._recording:
            vk = self.vk
            with checked("vkBeginCommandBuffer"):
                vk.vkBeginCommandBuffer(self._cmd, vk.VkCommandBufferBeginInfo(
                    flags=VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT))
            self._recording = True
            self._bound_pipeline = None
            self._labels = []
            self._queries_used = 0
        return self._cmd

    @property
    def timing(self) -> bool:
        """Whether commands are timed (``BackendOptions.timestamps`` and a queue with timestamps)."""
        return self.options.timestamps and self.timestamp_bits > 0

    def timestamp(self, cmd: Any) -> None:
        """Write a timestamp (top of pipe, then bottom of pipe: a command's pair; backends/vulkan_timing.py)."""
        _timing().write(self, cmd)

    def end_timing(self, cmd: Any, label: str) -> None:
        """Close the timestamp pair of a command opened with :meth:`timestamp` (when :attr:`timing`)."""
        self.timestamp(cmd)
        self._labels.append(label)

    def bind_pipeline(self, cmd: Any, bind_point: int, pipeline: Any, remember: bool = True) -> None:
        """Bind ``pipeline`` unless it is the one bound; ``remember`` False (a data-graph
        pipeline) binds it and forgets which compute pipeline was bound."""
        if not remember:
            self.vk.vkCmdBindPipeline(cmd, bind_point, pipeline)
            self._bound_pipeline = None
        elif self._bound_pipeline is not pipeline:
            self.vk.vkCmdBindPipeline(cmd, bind_point, pipeline)
            self._bound_pipeline = pipeline

    def bind_program(self, cmd: Any, program: VulkanProgram, bind_point: int, push_stages: int, sets: list[Any],
                     push_data: bytes, dynamic_offsets: Sequence[int] = ()) -> None:
        """Bind ``program``'s pipeline (unless it is bound), its descriptor sets (with the offsets of
        its dynamic descriptors, in set and binding order) and its push data."""
        vk = self.vk
        self.bind_pipeline(cmd, bind_point, program.pipeline)
        if sets:
            vk.vkCmdBindDescriptorSets(cmd, bind_point, program.layout, 0, len(sets), sets, len(dynamic_offsets),
                                       list(dynamic_offsets) or None)
        if push_data:
            pdata = self.ffi.new("char[]", push_data)
            vk.vkCmdPushConstants(cmd, program.layout, push_stages, 0, len(push_data), pdata)

    @staticmethod
    def dynamic_offsets(program: VulkanProgram, bindings: Mapping[tuple[int, int], Buffer | ImageBinding]
                        ) -> list[int]:
        """The dynamic offset of each dynamic descriptor of ``program``, in set then binding order
        (the order vkCmdBindDescriptorSets takes them)."""
        offsets = []
        for slot in sorted(program.spec.slots, key=lambda s: (s.set, s.id)):
            if slot.descriptor.endswith("-dynamic"):
                res = bindings.get((slot.set, slot.id))
                elements = res.elements if isinstance(res, BufferArray) else (res,)
                offsets += [getattr(b, "dynamic_offset", 0) for b in elements]
        return offsets

    def descriptor_sets(self, program: VulkanProgram,
                         bindings: Mapping[tuple[int, int], Buffer | ImageBinding]) -> list[Any]:
        """One descriptor set per set of ``program``'s layout, holding what ``bindings`` binds there."""
        sets = []
        for s in range(len(program.set_layouts)):
            bound: list[VulkanBuffer | ImageBinding] = []
            for b in program.set_bindings[s]:
                res = bindings.get((s, b))
                if res is None:
                    raise InputError(f"dispatch of {program.spec.uid!r}: nothing bound at set {s} binding {b}")
                bound.append(res)  # type: ignore[arg-type]
            sets.append(self._descriptor_set(program, s, tuple(bound)))
        return sets

    def submit(self) -> list[CommandTiming]:
        vk = self.vk
        if self._cmd is None or not self._recording:
            return []
        cmd = self._cmd
        # make the frame's writes (shaders, graphs) visible to the host before it reads the mapping
        vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0,
                                1, [vk.VkMemoryBarrier(srcAccessMask=VK_ACCESS_MEMORY_WRITE_BIT,
                                                       dstAccessMask=VK_ACCESS_HOST_READ_BIT)], 0, None, 0, None)
        with checked("vkEndCommandBuffer"):
            vk.vkEndCommandBuffer(cmd)
        self._recording = False
        with checked("vkQueueSubmit"):
            vk.vkQueueSubmit(self.queue, 1, [vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=[cmd])], self.fence)
        with checked("vkWaitForFences"):
            vk.vkWaitForFences(self.handle, 1, [self.fence], VK_TRUE, 0xFFFFFFFFFFFFFFFF)
            vk.vkResetFences(self.handle, 1, [self.fence])
        timings = _timing().read(self) if self.timing else []
        with checked("vkResetCommandBuffer"):
            vk.vkResetCommandBuffer(cmd, 0)
        return timings

    def close(self, parts: Sequence[Callable[[], None]] = ()) -> None:
        """Release everything: the shared pipelines, layouts and pools, then each part's own
        objects (``parts``: their release functions, in order), then buffers, shared memory
        and the device."""
        vk = self.vk
        # a lost device fails here; what follows still releases every handle (and logs failures)
        nvk.release("vkDeviceWaitIdle", vk.vkDeviceWaitIdle, self.handle)
        destroy: list[tuple[str, Any]] = []
        for p in self._programs:
            destroy += [("vkDestroyPipeline", p.pipeline), ("vkDestroyPipelineLayout", p.layout),
                        ("vkDestroyShaderModule", p.module)]
            if p.fragment_module is not None:
                destroy.append(("vkDestroyShaderModule", p.fragment_module))
        if self._texel_views:
            _texels().destroy(self)
        destroy += [("vkDestroyDescriptorSetLayout", h) for h in self._layouts.values()]
        destroy += [("vkDestroyDescriptorPool", h) for h in self._descriptor_pools]
        destroy += [("vkDestroyQueryPool", h) for h in self._query_pools]
        for name, h in destroy:
            nvk.release(name, getattr(vk, name), self.handle, h, None)
        for release_part in parts:
            release_part()
        for b in self._buffers:
            self.free_buffer(b)
        for mem in self._memories:
            _transfers().unmap_and_free(self, mem)
        nvk.release("vkDestroyPipelineCache", vk.vkDestroyPipelineCache, self.handle, self.pipeline_cache, None)
        nvk.release("vkDestroyFence", vk.vkDestroyFence, self.handle, self.fence, None)
        nvk.release("vkDestroyCommandPool", vk.vkDestroyCommandPool, self.handle, self.command_pool, None)
        nvk.release("vkDestroyDevice", vk.vkDestroyDevice, self.handle, None)
        self._buffers.clear()
        self._memories.clear()
        self._programs.clear()
        self._layouts.clear()
        self._descriptor_pools.clear()
        self._query_pools.clear()


def _transfers() -> Any:
    """Staged transfers and shared memory (backends/vulkan_transfers.py): loaded on first use."""
    from kernellab.backends import vulkan_transfers

    return vulkan_transfers


def _timing() -> Any:
    """The timestamp code (backends/vulkan_timing.py): loaded on a run's first timed command."""
    from kernellab.backends import vulkan_timing

    return vulkan_timing


def _texels() -> Any:
    """The texel buffer views (backends/vulkan_texels.py): loaded on a run's first texel buffer."""
    from kernellab.backends import vulkan_texels

    return vulkan_texels


def _images() -> Any:
    """The image code the descriptors need (backends/vkimage.py): loaded on a run's first image."""
    from kernellab.backends import vkimage

    return vkimage


def _rare() -> Any:
    """What a run of buffers never calls (backends/vulkan_device_rare.py): loaded on first use."""
    from kernellab.backends import vulkan_device_rare

    return vulkan_device_rare
