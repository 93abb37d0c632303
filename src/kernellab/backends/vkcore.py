"""Shared Vulkan plumbing: loading the binding with advice when the loader is missing, and the one
checker every native call goes through (it names the call and the symbolic result code)."""
from __future__ import annotations

import contextlib
import os
from typing import Any, Iterator, Sequence

from kernellab.errors import BackendError, DeviceError, DeviceOutOfMemoryError

INSTALL_HINT = ("install the Vulkan loader and a driver; on Debian/Ubuntu: "
                "apt-get install libvulkan1 mesa-vulkan-drivers (lavapipe, Vulkan on the CPU)")

_vk: Any = None


def load() -> Any:
    """Import the binding lazily: without libvulkan it raises at import, which must become advice."""
    global _vk
    if _vk is None:
        os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
        try:
            import vulkan as vk  # noqa: PLC0415
        except OSError as exc:
            raise DeviceError(f"the Vulkan loader (libvulkan.so.1) was not found: {INSTALL_HINT}") from exc
        except ImportError as exc:
            raise DeviceError(f"the Python package 'vulkan' is missing: pip install vulkan ({exc})") from exc
        _vk = vk
    return _vk


def code_name(exc: BaseException) -> str:
    """VkErrorOutOfDeviceMemory -> VK_ERROR_OUT_OF_DEVICE_MEMORY."""
    name = type(exc).__name__
    out = "".join("_" + c if c.isupper() else c.upper() for c in name).lstrip("_")
    return out.replace("V_K_", "VK_")


@contextlib.contextmanager
def checked(call: str) -> Iterator[None]:
    """Every native call goes through here so a failure names the call and the result code."""
    vk = _vk
    try:
        yield
    except vk.VkError as exc:
        code = code_name(exc)
        if "OUT_OF" in code and "MEMORY" in code:
            raise DeviceOutOfMemoryError(call, code) from None
        raise BackendError(call, code) from None
    except vk.VkException as exc:  # non-error result codes surfaced as exceptions (VkNotReady...)
        raise BackendError(call, code_name(exc)) from None


def specialization_info(constants: "Sequence[Any]") -> tuple[Any, list[Any]]:
    """A VkSpecializationInfo for SpecConstants (4 bytes each, in order), or None; plus the cffi
    objects that must outlive the pipeline-creation call (the binding keeps no references)."""
    vk = _vk
    if not constants:
        return None, []
    data = b"".join(c.encode() for c in constants)
    entries = [vk.VkSpecializationMapEntry(constantID=c.id, offset=4 * i, size=4) for i, c in enumerate(constants)]
    pdata = vk.ffi.new("char[]", data)
    # dataSize given explicitly: the binding would otherwise count elements, not bytes
    info = vk.VkSpecializationInfo(mapEntryCount=len(entries), pMapEntries=entries, dataSize=len(data), pData=pdata)
    return info, [pdata, entries]
