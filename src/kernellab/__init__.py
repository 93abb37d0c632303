"""kernellab: run, inspect and check GPU compute kernels described in JSON."""
from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]


def __getattr__(name: str) -> object:
    # `with kernellab.capture(DIR):` without importing pyopencl for every other use of kernellab;
    # the kernellab.capture module is itself callable (see kernellab/capture.py)
    if name == "capture":
        import importlib
        return importlib.import_module("kernellab.capture")
    raise AttributeError(f"module 'kernellab' has no attribute {name!r}")
