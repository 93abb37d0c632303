"""A tensor resource's ``src`` and ``dst`` ``.npy`` files.

A tensor ``.npy`` is shaped by the resource's ``dims`` with the format's dtype
(:attr:`VkFormatInfo.npy_descr` is what Arm's runner writes: ``<i4`` for R32_SINT, ``<V2`` for
BF16, ...). A tensor with ``dims: []`` is rank 0: Arm's runner allocates one element and writes
its ``dst`` with shape ``()``.
"""
from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from kernellab.errors import InputError
from kernellab.formats import npy_arm
from kernellab.vkregistry.vkformat import VkFormatInfo


def element_count(dims: Sequence[int]) -> int:
    n = 1
    for d in dims:
        n *= int(d)
    return n


def byte_size(fmt: VkFormatInfo, dims: Sequence[int]) -> int:
    """Bytes of a packed tensor (a rank-0 tensor holds one element)."""
    return element_count(dims) * fmt.texel_size


def load(path: str | os.PathLike[str], fmt: VkFormatInfo, dims: Sequence[int]) -> np.ndarray:
    """The ``src`` data as a contiguous array; :class:`InputError` naming ``path`` on a mismatch."""
    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read tensor .npy: {exc}", file=path) from None
    want = tuple(int(d) for d in dims)
    if arr.shape != want and not (want == () and arr.shape in ((), (1,))):
        raise InputError(f"tensor .npy is shaped {list(arr.shape)}, the tensor's dims are {list(want)}", file=path)
    if not fmt.npy_dtype_ok(arr.dtype):
        raise InputError(f"tensor .npy has dtype {arr.dtype.str}; {fmt.name} needs {fmt.npy_descr}", file=path)
    return np.ascontiguousarray(arr)


def save(path: str | os.PathLike[str], fmt: VkFormatInfo, dims: Sequence[int],
         data: bytes | memoryview | np.ndarray) -> None:
    """Write a tensor ``dst`` as Arm's runner does (shape ``dims``, descr ``fmt.npy_descr``)."""
    npy_arm.save(path, data, tuple(int(d) for d in dims), fmt.npy_descr)
