"""The Vulkan boundary: loading a binding (advice when the loader is missing), the result-name
table, and the one place a failed call becomes a :class:`~kernellab.errors.BackendError`.

Two bindings serve one interface (the ``vulkan`` package's): :func:`compute` is kernellab's small
one (``vkbind``: the compute path's functions, declared from ``vk.xml``), which a run of buffers
and compute pipelines uses; :func:`load` is the ``vulkan`` package, which declares everything
(images, tensors, graphs, graphics). Their handle types are distinct cffi types: an :class:`Api`
made with ``adopt=True`` takes handles the other binding made (a device opened for compute that
then needs images).

Calls go through :class:`Api`, a view of the binding whose ``vk*`` functions are wrapped: a
failing result (the binding raises ``VkError``/``VkException``) becomes an error naming the
function and the symbolic code, so no call can miss its check. :func:`checked` gives a block a
more telling call name (``vkAllocateMemory(weights, 4096 bytes)``); :func:`check` does the same
for a raw ``VkResult`` (extension functions called through kernellab's own FFI); :func:`release`
is the clean-up path: a failure is logged, and the remaining releases still run.
"""
from __future__ import annotations

import functools
import os
from collections.abc import Callable

from kernellab.errors import BackendError, DeviceError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any

INSTALL_HINT = ("install the Vulkan loader and a driver; on Debian/Ubuntu: "
                "apt-get install libvulkan1 mesa-vulkan-drivers (lavapipe, Vulkan on the CPU)")

#: result codes that are not errors (the binding raises them as ``VkException`` all the same)
_STATUS_NAMES = ("VK_SUCCESS", "VK_NOT_READY", "VK_TIMEOUT", "VK_INCOMPLETE", "VK_EVENT_SET", "VK_EVENT_RESET")

#: results newer than the binding (1.3.275), for which it raises KeyError instead of an exception
#: (a pipeline created with FAIL_ON_PIPELINE_COMPILE_REQUIRED that the cache does not hold)
_RESULTS_UNKNOWN_TO_BINDING = {1000297000: "VkPipelineCompileRequired"}

_vk: Any = None
_compute: Any = None


def compute() -> Any:
    """The small binding of the compute path (see the module's doc)."""
    global _compute
    if _compute is None:
        os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
        from kernellab.native import vkbind  # noqa: PLC0415

        try:
            vkbind.load_library()
        except OSError as exc:
            raise DeviceError(f"the Vulkan loader (libvulkan.so.1) was not found: {INSTALL_HINT}") from exc
        _compute = vkbind
    return _compute


def native_errors() -> tuple[type[BaseException], ...]:
    """The exception classes of the bindings loaded so far (a result other than success)."""
    found: list[type[BaseException]] = []
    for module in (_compute, _vk):
        if module is not None:
            found += [module.VkError, module.VkException]
    return tuple(found)


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
        for code, name in _RESULTS_UNKNOWN_TO_BINDING.items():
            vk.exception_codes.setdefault(code, type(name, (vk.VkException,), {}))
        _vk = vk
    return _vk


@functools.lru_cache(maxsize=1)
def result_names() -> dict[int, str]:
    """``VkResult`` value -> symbolic name, from the registry's enum (its names, not aliases)."""
    from kernellab.native.vkbind import results  # noqa: PLC0415

    return {value: name for value, name in results().items() if name.startswith("VK_ERROR") or name in _STATUS_NAMES}


@functools.lru_cache(maxsize=1)
def _code_of_exception() -> dict[type, int]:
    return {cls: code for code, cls in load().exception_codes.items()}


def result_name(code: int) -> str:
    return result_names().get(code, f"VkResult({code})")


def code_name(exc: BaseException) -> str:
    """The symbolic result of an exception the binding raised (VkErrorOutOfDeviceMemory ->
    VK_ERROR_OUT_OF_DEVICE_MEMORY)."""
    code = getattr(exc, "code", None)  # the small binding's classes carry their code
    if not isinstance(code, int) and _vk is not None:
        code = _code_of_exception().get(type(exc))
    if code is not None and code in result_names():
        return result_names()[code]
    name = type(exc).__name__  # a class the table lacks: spell its name the registry's way
    return "".join("_" + c if c.isupper() else c.upper() for c in name).lstrip("_").replace("V_K_", "VK_")


def failure(call: str, code: str) -> BackendError:
    """The error for ``call`` failing with ``code`` (``native/failure.py``, loaded on a run's first
    failure: a run that fails no call reads none of it)."""
    from kernellab.native import failure as failures  # noqa: PLC0415

    return failures.failure(call, code)


def cleanup_failed(call: str, code: str) -> None:
    """Log a failed release and go on (``native/failure.py``, loaded then)."""
    from kernellab.native import failure as failures  # noqa: PLC0415

    failures.cleanup_failed(call, code)


def check(call: str, code: int) -> None:
    """Raise the error for a raw ``VkResult`` unless it succeeded."""
    if code < 0:
        raise failure(call, result_name(code))


class checked:  # noqa: N801 - used as a function: ``with checked("vkCreateFoo"):``
    """Name the calls of the block ``call`` in the error they raise. (A class, not a
    ``contextlib.contextmanager``: a run imports no contextlib.)"""

    def __init__(self, call: str):
        self.call = call

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if isinstance(exc, BackendError):  # raised by an Api function: keep the code, tell which call it was
            raise failure(self.call, exc.code) from None
        if isinstance(exc, Exception) and isinstance(exc, native_errors()):  # errors, other results a binding raises
            raise failure(self.call, code_name(exc)) from None


def release(call: str, fn: Callable[..., Any], *args: Any) -> None:
    """Run one clean-up call; a failure is logged (call and code), not raised."""
    try:
        fn(*args)
    except BackendError as exc:
        cleanup_failed(call, exc.code)
    except Exception as exc:  # noqa: BLE001 - clean-up goes on whatever one release did
        code = code_name(exc) if isinstance(exc, native_errors()) else repr(exc)
        cleanup_failed(call, code)


class Api:
    """A binding with every ``vk*`` function checked; every other name (structs, constants,
    ``ffi``, ``lib``) is the binding's own. One per backend, so a test can count the calls.

    With ``adopt``, handles the other binding made are taken as this one's (cast by address),
    in the arguments of functions and the members given to structures."""

    def __init__(self, module: Any = None, adopt: bool = False):
        self._module = module if module is not None else load()
        self._adopt = adopt

    def __getattr__(self, name: str) -> Any:
        names = vars(self._module)
        # the compute binding makes a name on first use: its maker is called straight, without
        # the failed lookup (an AttributeError built and dropped) a module's own makes first
        make = names.get("__getattr__")
        value = names[name] if name in names else make(name) if make is not None else getattr(self._module, name)
        if name.startswith("vk") and callable(value):
            value = _wrapped(name, value, (self._module.VkError, self._module.VkException))
        if self._adopt and name.startswith(("vk", "Vk")) and callable(value):
            value = _adopting(value, self._module.ffi)
        setattr(self, name, value)  # resolved once per name
        return value

    def adopt(self, value: Any) -> Any:
        """``value`` (a handle of either binding, or a list of them) as this binding's."""
        return _adopted(value, self._module.ffi)


def _adopted(value: Any, ffi: Any) -> Any:
    if isinstance(value, list):
        return [_adopted(v, ffi) for v in value]
    if isinstance(value, ffi.CData):
        ctype = ffi.typeof(value)
        if ctype.kind == "pointer" and ctype.item.kind == "struct" and ctype.cname.endswith("_T *"):
            own = ffi.typeof(ctype.cname)
            if own is not ctype:  # a handle of the other binding
                return ffi.cast(own, value)
    return value


def _adopting(fn: Callable[..., Any], ffi: Any) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        return fn(*(_adopted(a, ffi) for a in args), **{k: _adopted(v, ffi) for k, v in kwargs.items()})

    call.__name__ = call.__qualname__ = fn.__name__
    return call


def _wrapped(name: str, fn: Callable[..., Any], native: tuple[type[BaseException], ...]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except native as exc:
            raise failure(name, code_name(exc)) from None

    call.__name__ = call.__qualname__ = name
    return call
