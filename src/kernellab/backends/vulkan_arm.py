"""VK_ARM_tensors and VK_ARM_data_graph for the ``vulkan`` (cffi) binding, and Arm's ML emulation
layer: the names callers use, from the four modules that do the work.

* :mod:`~kernellab.backends.vulkan_arm_decls`: C declarations generated from the Vulkan registry,
  our own cffi FFI, enum values (``const``) and structs (``new``);
* :mod:`~kernellab.backends.vulkan_arm_calls`: crossing between our FFI and the ``vulkan``
  package's, the extension functions of a device (:class:`ArmDevice`), the structs a backend
  builds for tensors and graphs;
* :mod:`~kernellab.backends.vulkan_arm_layers`: Arm's emulation layers made visible to the loader,
  and instances created with them;
* :mod:`~kernellab.backends.vulkan_arm_features`: the extensions, features and queue family a
  device is opened with.
"""
from __future__ import annotations

from kernellab.backends.vulkan_arm_calls import (
                                                 ArmDevice,
                                                 GraphConstant,
                                                 GraphTensor,
                                                 address,
                                                 chain,
                                                 check,
                                                 tensor_dependency_info,
                                                 tensor_description,
                                                 tensor_descriptor_write,
                                                 to_arm,
                                                 to_vulkan,
)
from kernellab.backends.vulkan_arm_decls import (
                                                 DECLARED_EXTENSIONS,
                                                 EXTENSIONS,
                                                 REGISTRY_PACKAGE,
                                                 const,
                                                 ctype,
                                                 ffi,
                                                 generate_cdef,
                                                 new,
)
from kernellab.backends.vulkan_arm_features import DeviceFeatures, data_graph_queue_family, device_features, ml_features
from kernellab.backends.vulkan_arm_layers import (
                                                 GRAPH_LAYER,
                                                 LAYER_ORDER,
                                                 LAYER_PACKAGE,
                                                 TENSOR_LAYER,
                                                 EmulationLayers,
                                                 available_layers,
                                                 create_instance,
                                                 device_extensions,
                                                 instance_layers,
                                                 layers_visible,
                                                 prepare_layers,
)

# GL_ARM_tensors shaders are compiled in compile/; the names stay reachable here for existing callers
from kernellab.compile.tensor_glsl import uses_tensors
from kernellab.native.vk import result_name
from kernellab.tools import ARM_GLSLC_PACKAGE, arm_glslc

__all__ = [
    "ARM_GLSLC_PACKAGE", "DECLARED_EXTENSIONS", "EXTENSIONS", "GRAPH_LAYER", "LAYER_ORDER", "LAYER_PACKAGE",
    "REGISTRY_PACKAGE", "TENSOR_LAYER", "ArmDevice", "DeviceFeatures", "EmulationLayers", "GraphConstant",
    "GraphTensor", "address", "arm_glslc", "available_layers", "chain", "check", "const", "create_instance",
    "ctype", "data_graph_queue_family", "device_extensions", "device_features", "ffi", "generate_cdef",
    "instance_layers", "layers_visible", "ml_features", "new", "prepare_layers", "result_name",
    "tensor_dependency_info", "tensor_description", "tensor_descriptor_write", "to_arm", "to_vulkan",
    "uses_tensors",
]
