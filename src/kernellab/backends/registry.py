"""Every backend, registered by name in one place and imported only when first used.

An entry names the class as ``module:Class`` text, so listing the backends (the CLI's
``--backend`` choices) imports none of them, and a missing driver matters only to the backend
that needs it. ``listed`` entries are the ones offered to users; the null backend is registered
for tests (the executor's unit tests, the contract test) but not offered on the command line.
"""
from __future__ import annotations

import importlib

from kernellab.errors import UsageError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)

if TYPE_CHECKING:
    from kernellab.backends.base import Backend


#: each backend's name -> the class that implements it as "module:Class" text (imported on first
#: use), and whether it is offered on the command line (``--backend``, ``kernellab devices``); plain
#: pairs, not records: the table is read once a run, and a record class costs more to build than that
REGISTRY: dict[str, tuple[str, bool]] = {
    "vulkan": ("kernellab.backends.vulkan:VulkanBackend", True),
    "opencl": ("kernellab.backends.opencl:OpenCLBackend", True),
    "null": ("kernellab.backends.null:NullBackend", False),
}


def names(*, listed_only: bool = True) -> list[str]:
    """Backend names in registration order (by default only those offered to users)."""
    return [name for name, (_, listed) in REGISTRY.items() if listed or not listed_only]


def backend_class(name: str) -> type[Backend]:
    """The backend class by name, imported lazily so a missing driver only matters when used
    (the import system keeps the module: no cache of our own)."""
    entry = REGISTRY.get(name)
    if entry is None:
        raise UsageError(f"unknown backend {name!r} (have: {', '.join(names())})")
    module, _, attr = entry[0].partition(":")
    cls: type[Backend] = getattr(importlib.import_module(module), attr)
    return cls
