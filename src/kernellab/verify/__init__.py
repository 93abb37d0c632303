"""Dynamic checking of launches: races, barrier divergence, out-of-bounds accesses, uninitialized
reads and API misuse, as structured findings (:mod:`kernellab.verify.model`), found by Oclgrind
(:mod:`kernellab.verify.run`) or by the SPIR-V checker (:mod:`kernellab.verify.vulkan`);
:mod:`kernellab.verify.checkers` picks one per file, :mod:`kernellab.verify.report` words the result."""
from __future__ import annotations

from typing import Any

__all__ = ["VerifyResult", "verify"]


def __getattr__(name: str) -> Any:
    # lazy: the Oclgrind child imports kernellab.verify.harness and needs none of this
    if name == "VerifyResult":
        from kernellab.verify import model
        return model.VerifyResult
    if name in __all__:
        from kernellab.verify import run
        return getattr(run, name)
    raise AttributeError(f"module 'kernellab.verify' has no attribute {name!r}")
