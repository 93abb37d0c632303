"""The .npy files scenarios use: header inspection without loading, and raw-byte loading."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kernellab.errors import InputError


@dataclass(frozen=True)
class NpyHeader:
    shape: tuple[int, ...]
    dtype: np.dtype
    fortran_order: bool
    data_offset: int

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


def read_header(path: str | Path) -> NpyHeader:
    """Parse only the header of a .npy file; raises ValueError with a readable reason."""
    with open(path, "rb") as fh:
        try:
            version = np.lib.format.read_magic(fh)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
            else:
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
        except ValueError as exc:
            raise ValueError(f"not a NumPy .npy file ({exc})") from None
        if dtype.hasobject:
            raise ValueError("a .npy file of Python objects cannot be used as data")
        return NpyHeader(tuple(shape), dtype, fortran, fh.tell())


def load_bytes(path: str | Path) -> np.ndarray:
    """The data of a .npy file as a flat uint8 array in C order (memory-mapped when possible)."""
    try:
        hdr = read_header(path)
    except (ValueError, OSError) as exc:
        raise InputError(str(exc), file=path) from None
    if hdr.nbytes == 0:
        return np.zeros(0, np.uint8)
    if hdr.fortran_order and len(hdr.shape) > 1:
        arr = np.load(path, mmap_mode="r")
        return np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
    return np.memmap(path, dtype=np.uint8, mode="r", offset=hdr.data_offset, shape=(hdr.nbytes,))
