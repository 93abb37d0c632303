"""kernellab: run, inspect and check GPU compute kernels described in JSON."""
from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
