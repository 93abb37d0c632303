"""kernellab: run, inspect and check GPU compute kernels described in JSON."""
from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)


__version__ = "0.1.0"

__all__ = ["__version__", "Session", "run"]

if TYPE_CHECKING:
    from kernellab.session import Session, run


def __getattr__(name: str) -> object:
    # `with kernellab.capture(DIR):` without importing pyopencl for every other use of kernellab;
    # the kernellab.capture module is itself callable (see kernellab/capture.py)
    if name in ("Session", "run"):  # the Python API; numpy and the drivers load on first use
        from kernellab import session
        return getattr(session, name)
    if name == "capture":
        import importlib
        return importlib.import_module("kernellab.capture")
    raise AttributeError(f"module 'kernellab' has no attribute {name!r}")
