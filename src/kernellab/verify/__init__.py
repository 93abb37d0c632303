"""Dynamic checking of one launch on Oclgrind: races, barrier divergence, out-of-bounds accesses,
uninitialized reads and API misuse, as structured findings (see :mod:`kernellab.verify.run`)."""
from __future__ import annotations

from typing import Any

__all__ = ["VerifyResult", "verify"]


def __getattr__(name: str) -> Any:
    # lazy: the Oclgrind child imports kernellab.verify.harness and needs none of this
    if name in __all__:
        from kernellab.verify import run
        return getattr(run, name)
    raise AttributeError(f"module 'kernellab.verify' has no attribute {name!r}")
