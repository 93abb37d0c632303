"""Dynamic checking of one launch on Oclgrind: races, barrier divergence, out-of-bounds accesses,
uninitialized reads and API misuse, as structured findings (see :mod:`kernellab.verify.run`)."""
from __future__ import annotations

from kernellab.verify.run import VerifyResult, verify

__all__ = ["VerifyResult", "verify"]
