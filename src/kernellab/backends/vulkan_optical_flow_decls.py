"""VK_ARM_data_graph_optical_flow declared for cffi, apart from the tensor and graph declarations.

Only a scenario with ``dispatch_optical_flow`` needs these types, so they are not part of
:mod:`kernellab.backends.vulkan_arm_decls` (whose declarations every tensor or graph run parses).
They are generated from the same registry on first use, leaving out what that module declares
already, and parsed into an FFI that includes its FFI: the structs of both are the same cffi
types, so a pointer made here fills a field declared there (``pNext``, ``pInfo``).
"""
from __future__ import annotations

import functools
from typing import Any

from kernellab.backends import vulkan_arm_decls as base

EXTENSION = "VK_ARM_data_graph_optical_flow"


@functools.lru_cache(maxsize=1)
def _declarations() -> tuple[str, dict[str, int], dict[str, str]]:
    return base.cached_declarations((EXTENSION,), included=base.DECLARED_EXTENSIONS)


@functools.lru_cache(maxsize=1)
def ffi() -> Any:
    """A cffi FFI declaring the optical-flow types on top of :func:`vulkan_arm_decls.ffi`."""
    import cffi

    f = cffi.FFI()
    f.include(base.ffi())
    f.cdef(_declarations()[0])
    return f


def const(name: str) -> int:
    """An enum value or flag bit of the optical-flow extension or of the tensor and graph ones."""
    value = _declarations()[1].get(name)
    return value if value is not None else base.const(name)


def new(type_name: str, **fields: Any) -> Any:
    """A zeroed ``type_name`` struct (optical-flow or graph) with ``fields`` set and its ``sType``."""
    f = ffi()
    obj = f.new(f"{type_name}*")
    if "sType" in {name for name, _ in f.typeof(type_name).fields} and "sType" not in fields:
        stype = _declarations()[2].get(type_name)
        obj.sType = const(stype) if stype is not None else base.const(base._stype_name(type_name))
    for k, v in fields.items():
        setattr(obj, k, v)
    return obj


def array(type_name: str, items: list[dict[str, Any]]) -> Any:
    """A C array of ``type_name`` structs, each with its ``sType`` and the given fields."""
    f = ffi()
    out = f.new(f"{type_name}[]", max(len(items), 1))
    stype = _declarations()[2].get(type_name) or base._declarations()[2].get(type_name)
    for i, fields in enumerate(items):
        if stype is not None:
            out[i].sType = const(stype)
        for k, v in fields.items():
            setattr(out[i], k, v)
    return out


def feature_chain(then: Any = None) -> tuple[Any, list[Any]]:
    """``VkPhysicalDeviceDataGraphOpticalFlowFeaturesARM`` with the feature on, ``pNext`` = ``then``
    (a ``vulkan``-package struct or pointer, or None); returns it and what to keep alive."""
    from kernellab.backends.vulkan_arm_calls import address
    from kernellab.native import vk as nvk

    features = new("VkPhysicalDeviceDataGraphOpticalFlowFeaturesARM", dataGraphOpticalFlow=1)
    if then is not None:
        vf = nvk.load().ffi
        tail = vf.addressof(then) if vf.typeof(then).kind == "struct" else then
        features.pNext = ffi().cast("void*", address(tail))
    return features, [features, then]
