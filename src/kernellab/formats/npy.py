"""The .npy files scenarios use: header inspection without loading, and raw-byte loading."""
from __future__ import annotations

import math
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from tokenize import TokenError

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
        return math.prod(self.shape) * self.dtype.itemsize  # Python ints: a hostile shape cannot wrap


def read_header(path: str | Path) -> NpyHeader:
    """Parse only the header of a .npy file; raises ValueError with a readable reason."""
    with open(path, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("not a regular file, expected a NumPy .npy file")
        try:
            version = np.lib.format.read_magic(fh)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
            else:
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
        # numpy parses the header with Python's tokenizer: a broken one raises any of these
        except (ValueError, SyntaxError, TokenError, TypeError, MemoryError, RecursionError) as exc:
            raise ValueError(f"not a NumPy .npy file ({type(exc).__name__}: {str(exc)[:120]})") from None
        if dtype.hasobject:
            raise ValueError("a .npy file of Python objects cannot be used as data")
        header = NpyHeader(tuple(shape), dtype, fortran, fh.tell())
        if header.data_offset + header.nbytes > st.st_size:
            raise ValueError(f"the header announces {header.nbytes} bytes of data, the file holds "
                             f"{max(0, st.st_size - header.data_offset)}")
        return header


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
