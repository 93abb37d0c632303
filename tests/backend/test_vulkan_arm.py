"""VK_ARM_tensors / VK_ARM_data_graph on lavapipe through Arm's ML emulation layer, in-process."""
from __future__ import annotations

import importlib.util
import os

import pytest

from kernellab.errors import BackendError, MissingToolError
from kernellab.vkregistry import vkformat

vk = pytest.importorskip("vulkan")
from kernellab.backends import vulkan_arm as va
from kernellab.backends.vulkan_arm_layers import _MANIFESTS

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")


def test_declarations_come_from_the_registry():
    cdef, constants, stypes = va.generate_cdef()
    assert "struct VkTensorDescriptionARM {" in cdef
    assert "typedef VkResult (*PFN_vkCreateTensorARM)(VkDevice device" in cdef
    assert "PFN_vkCmdDispatchDataGraphARM" in cdef
    assert constants["VK_FORMAT_R8_BOOL_ARM"] == 1000460000
    assert constants["VK_STRUCTURE_TYPE_TENSOR_CREATE_INFO_ARM"] == 1000460000
    assert constants["VK_TENSOR_USAGE_DATA_GRAPH_BIT_ARM"] == 0x20
    assert stypes["VkTensorCreateInfoARM"] == "VK_STRUCTURE_TYPE_TENSOR_CREATE_INFO_ARM"
    f = va.ffi()
    # the layout the C headers give: sType, pNext, tiling, format, dimensionCount, 2 pointers, usage
    assert f.sizeof("VkTensorDescriptionARM") == 56
    assert f.offsetof("VkTensorDescriptionARM", "usage") == 48
    for fmt in vkformat.tensor_formats():
        assert va.const(fmt.name) == fmt.value


def test_new_fills_stype_and_chain_links():
    a = va.new("VkPhysicalDeviceTensorFeaturesARM", tensors=1)
    b = va.new("VkPhysicalDeviceDataGraphFeaturesARM", dataGraph=1)
    assert a.sType == va.const("VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TENSOR_FEATURES_ARM")
    head = va.chain(a, b)
    assert va.address(head) == va.address(a)
    assert va.address(a.pNext) == va.address(b)
    with pytest.raises(KeyError, match="not a constant"):
        va.const("VK_NOT_A_THING")


def test_missing_layer_names_the_pip_package(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "emulation_layer" else real(name, *a))
    va.prepare_layers.cache_clear()
    try:
        with pytest.raises(MissingToolError, match="pip install ai-ml-emulation-layer-for-vulkan"):
            va.create_instance()
    finally:
        va.prepare_layers.cache_clear()


def test_layer_environment_is_restored():
    before = {k: os.environ.get(k) for k in ("VK_ADD_LAYER_PATH", "VK_LAYER_PATH")}
    with va.layers_visible() as layers:
        assert str(layers.manifest_dir) in os.environ["VK_ADD_LAYER_PATH"]
        assert set(va.LAYER_ORDER) <= va.available_layers()
    assert {k: os.environ.get(k) for k in before} == before


def test_the_layer_manifests_are_in_a_folder_of_the_process_own():
    """The loader loads the library a manifest names, reading the folder by name after kernellab
    wrote it: a folder only the user may write (not the cache folder, which may be shared)."""
    from kernellab import config

    layers = va.prepare_layers()
    st = layers.manifest_dir.stat()
    assert st.st_uid == os.getuid() and st.st_mode & 0o777 == 0o700
    assert config.get().cache_dir.resolve() not in layers.manifest_dir.resolve().parents
    assert sorted(p.name for p in layers.manifest_dir.iterdir()) == sorted(_MANIFESTS.values())


@pytest.fixture(scope="module")
def ml_device():
    inst, enabled = va.create_instance()
    assert enabled[:2] == ["VK_LAYER_ML_Graph_Emulation", "VK_LAYER_ML_Tensor_Emulation"]
    pds = vk.vkEnumeratePhysicalDevices(inst)
    pd = next(p for p in pds if "llvmpipe" in vk.vkGetPhysicalDeviceProperties(p).deviceName)
    exts = va.device_extensions(pd)
    feats = va.ml_features()
    qinfo = vk.VkDeviceQueueCreateInfo(queueFamilyIndex=0, queueCount=1, pQueuePriorities=[1.0])
    info = vk.VkDeviceCreateInfo(pNext=va.chain(*feats), pQueueCreateInfos=[qinfo],
                                 ppEnabledExtensionNames=list(va.EXTENSIONS))
    dev = vk.vkCreateDevice(pd, info, None)
    yield inst, pd, dev, exts
    vk.vkDestroyDevice(dev, None)
    vk.vkDestroyInstance(inst, None)


def test_lavapipe_advertises_arm_extensions_with_the_layers(ml_device):
    _, _, _, exts = ml_device
    assert "VK_ARM_tensors" in exts and "VK_ARM_data_graph" in exts


def test_without_layers_lavapipe_lacks_tensors():
    inst, enabled = va.create_instance(emulation=False)
    try:
        assert enabled == []
        found = {vk.vkGetPhysicalDeviceProperties(p).deviceName: p for p in vk.vkEnumeratePhysicalDevices(inst)}
        pd = next((p for name, p in found.items() if "llvmpipe" in name), None)
        if pd is None:
            pytest.fail(f"lavapipe is not installed (have {sorted(found)}): apt-get install mesa-vulkan-drivers")
        assert "VK_ARM_tensors" not in va.device_extensions(pd)
    finally:
        vk.vkDestroyInstance(inst, None)


@pytest.mark.parametrize("fmt", vkformat.tensor_formats(), ids=lambda f: f.name)
def test_tensor_of_each_format(ml_device, fmt):
    _, pd, dev, _ = ml_device
    arm = va.ArmDevice(dev)
    usage = va.const("VK_TENSOR_USAGE_SHADER_BIT_ARM") | va.const("VK_TENSOR_USAGE_TRANSFER_SRC_BIT_ARM")
    tensor, _keep = arm.create_tensor(fmt.value, [2, 3, 5], usage)
    size, align, bits = arm.tensor_memory_requirements(tensor)
    assert size >= 2 * 3 * 5 * fmt.texel_size and bits != 0 and align >= 1
    props = vk.vkGetPhysicalDeviceMemoryProperties(pd)
    index = next(i for i in range(props.memoryTypeCount) if bits & (1 << i))
    mem = vk.vkAllocateMemory(dev, vk.VkMemoryAllocateInfo(allocationSize=size, memoryTypeIndex=index), None)
    try:
        arm.bind_tensor_memory(tensor, mem)
    finally:
        arm.destroy_tensor(tensor)
        vk.vkFreeMemory(dev, mem, None)


def test_failures_name_the_call_and_result(ml_device):
    _, _, dev, _ = ml_device
    arm = va.ArmDevice(dev)
    with pytest.raises(BackendError, match=r"vkGetDeviceProcAddr\(vkNoSuchFunctionARM\)"):
        arm.vkNoSuchFunctionARM()
    with pytest.raises(BackendError, match="vkCreateTensorARM failed: VK_ERROR_INITIALIZATION_FAILED"):
        va.check("vkCreateTensorARM", vk.VK_ERROR_INITIALIZATION_FAILED)
    with pytest.raises(MemoryError):
        va.check("vkBindTensorMemoryARM", vk.VK_ERROR_OUT_OF_DEVICE_MEMORY)
    va.check("vkCreateTensorARM", vk.VK_SUCCESS)


def test_device_features_chain_order(ml_device):
    _, pd, _, _ = ml_device
    border = vk.VkPhysicalDeviceCustomBorderColorFeaturesEXT(customBorderColors=True)
    feats = va.device_features(pd, then=border, robust_buffer_access=True)
    stypes = []
    node = vk.ffi.cast("VkBaseOutStructure*", feats.pnext)
    while node != vk.ffi.NULL:
        stypes.append(int(node.sType))
        node = node.pNext
    assert stypes == [vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                      vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                      vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
                      va.const("VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TENSOR_FEATURES_ARM"),
                      va.const("VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DATA_GRAPH_FEATURES_ARM"),
                      vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_CUSTOM_BORDER_COLOR_FEATURES_EXT]
    assert feats.enabled.robustBufferAccess == 1 and feats.enabled.shaderInt64 == 1
    f12 = vk.ffi.cast("VkPhysicalDeviceVulkan12Features*", vk.ffi.cast("VkBaseOutStructure*", feats.pnext).pNext)
    assert f12.storageBuffer8BitAccess == 1 and f12.shaderInt8 == 1   # lavapipe has both
