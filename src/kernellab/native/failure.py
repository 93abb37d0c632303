"""A failed native call as a kernellab error: out-of-memory is classified here, once, for every API."""
from __future__ import annotations

from kernellab import logs
from kernellab.errors import BackendError, DeviceOutOfMemoryError

log = logs.getLogger("kernellab.native")

#: result codes that mean "the device or host ran out of memory" (Vulkan and OpenCL names)
OUT_OF_MEMORY = frozenset({
    "VK_ERROR_OUT_OF_DEVICE_MEMORY", "VK_ERROR_OUT_OF_HOST_MEMORY", "VK_ERROR_OUT_OF_POOL_MEMORY",
    "CL_MEM_OBJECT_ALLOCATION_FAILURE", "CL_OUT_OF_RESOURCES", "CL_OUT_OF_HOST_MEMORY",
})


def failure(call: str, code: str, detail: str = "") -> BackendError:
    """The error for ``call`` failing with the symbolic result ``code`` (not raised here)."""
    kind = DeviceOutOfMemoryError if code in OUT_OF_MEMORY else BackendError
    return kind(call, code, detail)


def cleanup_failed(call: str, code: str) -> None:
    """A release during clean-up failed: say so and carry on releasing the rest.

    Clean-up runs after the work is done or after an error; raising here would hide that error
    or leak everything released after this call, so the failure is logged instead."""
    log.warning("clean-up call %s failed: %s", call, code)
