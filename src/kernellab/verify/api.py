"""``kernellab.verify(...)``: the dynamic check of :func:`kernellab.verify.run.verify`, or with
``prove=True`` the proof for every input (:mod:`kernellab.verify.prove`)."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kernellab.verify.model import VerifyResult


def verify(path: str | Path, *, fmt: str = "kernel-instantiation", index: int | None = None, seed: int = 0,
           check: Sequence[str] = (), timeout: float | None = 1800, prove: bool = False,
           prove_sizes: bool = False) -> VerifyResult:
    """Run ``path`` on Oclgrind and return its grouped findings (:func:`kernellab.verify.run.verify`).
    ``prove``: prove every launch for all inputs instead (docs/verify-prove.md); ``timeout`` is
    then each launch's proof limit (60 s when left at its default), ``prove_sizes`` makes the
    work-group size and count symbolic."""
    if prove:
        from kernellab.verify.prove.files import prove_files
        return prove_files([path], formats=[fmt], index=index, timeout=None if timeout == 1800 else timeout,
                           prove_sizes=prove_sizes)[0]
    if prove_sizes:
        raise ValueError("prove_sizes needs prove=True")
    from kernellab.verify import run
    return run.verify(path, fmt=fmt, index=index, seed=seed, check=check, timeout=timeout)
