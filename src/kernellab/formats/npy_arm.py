""".npy files written byte for byte as Arm's Scenario Runner writes them.

Arm's writer (vgf-utils ``numpy::write``) does not lay the header out as NumPy does: its dict is
``{'descr': '<i4','fortran_order': False,'shape': (2, 3)}`` (no space after the commas, no
trailing comma) padded with spaces to a multiple of 16 bytes, and its ``descr`` puts ``|`` before
1-byte types and ``<`` before wider ones. NumPy reads these files fine; writing them the same way
makes kernellab's outputs identical files, not merely equal arrays.

Every ``dst`` the runner writes goes through here: a buffer as ``|i1`` bytes shaped ``(size,)``,
a tensor shaped by ``dims`` with :attr:`VkFormatInfo.npy_descr`, an image ``[1, H, W, C]``.
"""
from __future__ import annotations

import os

from kernellab.outputs import atomic_open

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import IO

if TYPE_CHECKING:  # a buffer's bytes are written without NumPy; arrays (images, tensors) bring it
    import numpy as np

    # for the checker only: a Union naming a type by text compiles that text at run time
    Data = np.ndarray | bytes | bytearray | memoryview

MAGIC = b"\x93NUMPY"


def shape_text(shape: tuple[int, ...] | list[int]) -> str:
    if len(shape) == 1:
        return f"({int(shape[0])},)"
    return "(" + ", ".join(str(int(d)) for d in shape) + ")"


def header(shape: tuple[int, ...] | list[int], descr: str) -> bytes:
    """The magic, version, length and dict of an Arm-style ``.npy`` header."""
    text = "{" + f"'descr': '{descr}','fortran_order': False,'shape': {shape_text(shape)}" + "}"
    pad = 16 - ((10 + len(text) + 1) % 16)
    body = (text + " " * pad + "\n").encode("latin1")
    if len(body) > 0xFFFF:
        return MAGIC + b"\x02\x00" + len(body).to_bytes(4, "little") + body
    return MAGIC + b"\x01\x00" + len(body).to_bytes(2, "little") + body


def descr_of(dtype: np.dtype) -> str:
    """Arm's ``descr`` for a plain NumPy dtype (``|`` for 1 byte, ``<`` otherwise)."""
    import numpy as np

    dtype = np.dtype(dtype)
    if dtype.byteorder == ">":
        raise ValueError("big-endian arrays are not written")
    return f"{'|' if dtype.itemsize < 2 else '<'}{dtype.kind}{dtype.itemsize}"


def _raw(data: Data) -> memoryview:
    if isinstance(data, (bytes, bytearray, memoryview)):
        return memoryview(data).cast("B")
    import numpy as np

    return np.ascontiguousarray(data).data.cast("B")


def write(fh: IO[bytes], data: Data, shape: tuple[int, ...] | list[int], descr: str) -> None:
    """Write header and data; ``data`` is raw bytes (or an array) of exactly the shape's size."""
    itemsize = int(descr[2:])
    count = 1
    for d in shape:
        count *= int(d)
    raw = _raw(data)
    if raw.nbytes != count * itemsize:
        raise ValueError(f"{raw.nbytes} bytes of data for shape {tuple(shape)} of {descr} "
                         f"(needs {count * itemsize})")
    fh.write(header(shape, descr))
    fh.write(raw)


def save(path: str | os.PathLike[str], data: Data,
         shape: tuple[int, ...] | list[int] | None = None, descr: str | None = None) -> None:
    """Atomically write ``path``; shape and descr default to the array's own."""
    if shape is None or descr is None:
        if isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError("shape and descr are needed for raw bytes")
        shape = data.shape if shape is None else shape
        descr = descr_of(data.dtype) if descr is None else descr
    with atomic_open(path) as fh:
        write(fh, data, shape, descr)


def buffer_bytes(data: Data) -> tuple[tuple[int, ...], str]:
    """Shape and descr Arm uses for a buffer ``dst``: its raw bytes as a 1-D int8 array."""
    n = memoryview(data).nbytes  # type: ignore[arg-type]  # an ndarray is a buffer too
    return (n,), "|i1"
