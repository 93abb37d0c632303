"""The .npy files scenarios use: header inspection without loading, and raw-byte loading.

The header is read here, not by NumPy, so that a run of buffers and push constants never
imports NumPy (issue 11: start-up). The rules are NumPy's format: the magic ``\\x93NUMPY``,
version 1.0 (2-byte little-endian header length, latin-1), 2.0 (4-byte, latin-1) or 3.0 (4-byte,
UTF-8), then a Python dict literal with exactly the keys ``descr``, ``fortran_order`` and
``shape``. NumPy itself reads that literal with :func:`ast.literal_eval` and refuses headers
longer than 10,000 bytes; so does this reader. Only a ``descr`` that is not a plain type string
(a structured dtype) asks NumPy for its item size.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from kernellab.errors import InputError
from kernellab.records import Frozen

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any, BinaryIO

if TYPE_CHECKING:
    import numpy as np

MAGIC = b"\x93NUMPY"
#: NumPy's own limit on the header dict (``numpy.lib.format._MAX_HEADER_SIZE``)
MAX_HEADER_SIZE = 10_000
_LENGTH_BYTES = {1: 2, 2: 4, 3: 4}
#: the kinds of a plain type string as ``dtype.str`` spells it: byte order, kind, size (datetimes: a unit)
_PLAIN_KINDS = "biufcSUVmM"
_BYTE_ORDERS = ("<", ">", "|", "=")


def _descr_parts(descr: str) -> tuple[str, str, str, str] | None:
    """``descr`` as ``[<>|=]?``, a letter, decimal digits, ``[word]``: (order, kind, size, unit),
    None for any other text. Read with str methods, as the regular expressions ``\\d`` and ``\\w``
    read it (``str.isdecimal``, ``str.isalnum`` or ``_``): compiling the two patterns that read the
    header cost a start-up 3 M instructions (issue 23)."""
    order = descr[:1] if descr[:1] in _BYTE_ORDERS else ""
    kind, rest = descr[len(order):len(order) + 1], descr[len(order) + 1:]
    if not (kind.isascii() and kind.isalpha()):
        return None
    unit = ""
    if rest.endswith("]"):
        at = rest.find("[")
        word = rest[at + 1:-1]
        if at < 0 or not word or not all(c.isalnum() or c == "_" for c in word):
            return None
        rest, unit = rest[:at], rest[at:]
    if rest and not rest.isdecimal():
        return None
    return order, kind, rest, unit


class NpyHeader(Frozen):
    """The header of a ``.npy`` file: shape, element type and order, and where the data starts.
    (A frozen record, not a dataclass: a run imports no dataclasses, issue 23.)"""

    _fields = _compared = ("shape", "descr", "fortran_order", "data_offset", "itemsize")
    shape: tuple[int, ...]
    #: the header's ``descr`` as written: a type string such as ``'<f4'``, or a structured description
    descr: Any
    fortran_order: bool
    data_offset: int
    itemsize: int

    def __init__(self, shape: tuple[int, ...], descr: Any, fortran_order: bool, data_offset: int, itemsize: int):
        vars(self).update(shape=shape, descr=descr, fortran_order=fortran_order, data_offset=data_offset,
                          itemsize=itemsize)

    @property
    def nbytes(self) -> int:
        total = self.itemsize  # Python ints: a hostile shape cannot wrap
        for size in self.shape:  # math.prod without loading math's extension module (start-up)
            total *= size
        return total

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype (imports NumPy: only tensors and images need it)."""
        return _numpy_dtype(self.descr)


def _numpy_dtype(descr: Any) -> np.dtype:
    from numpy.lib.format import descr_to_dtype

    try:
        return descr_to_dtype(descr)
    except (ValueError, TypeError, KeyError, SyntaxError, RecursionError) as exc:
        raise ValueError(f"not a NumPy .npy file ({type(exc).__name__}: {str(exc)[:120]})") from None


#: the element sizes NumPy knows for each numeric kind (anything else is not a dtype)
_SIZES = {"b": (1,), "i": (1, 2, 4, 8), "u": (1, 2, 4, 8), "f": (2, 4, 8, 12, 16), "c": (8, 16, 24, 32)}


def _itemsize(descr: Any) -> int:
    if isinstance(descr, str):
        plain = _descr_parts(descr)
        if plain is not None and plain[1] in _PLAIN_KINDS and plain[2]:
            kind, size = plain[1], int(plain[2])
            if kind in "mM" and size != 8 or kind not in "mM" and plain[3] \
                    or size not in _SIZES.get(kind, (size,)):
                raise ValueError(f"not a NumPy .npy file (unknown descr {descr!r})")
            return size * 4 if kind == "U" else size  # 'U' counts UCS-4 characters
        if descr.lstrip("<>|=") in ("O", "O8"):
            raise ValueError("a .npy file of Python objects cannot be used as data")
    # structured and unusual dtypes: NumPy's own rules (and its check for objects inside)
    dtype = _numpy_dtype(descr)
    if dtype.hasobject:
        raise ValueError("a .npy file of Python objects cannot be used as data")
    return int(dtype.itemsize)


#: the header as NumPy (and Arm's runner) writes it, padding aside, is read without :mod:`ast`
#: (importing it and compiling a first literal cost a start-up 13 M instructions); any other
#: spelling goes to :func:`ast.literal_eval`, which reads this one the same
_HEAD = "{'descr': '"


def _common_header(text: str) -> tuple[tuple[int, ...], str, bool] | None:
    """``{'descr': 'D', 'fortran_order': True|False, 'shape': (S), }`` with a plain ``D`` (see
    :func:`_descr_parts`) and ``S`` empty, ``N,`` or ``N, N[, N...][,]`` (sizes without leading
    zeros), the last space optional: (shape, descr, fortran order); None for any other text."""
    if not text.startswith(_HEAD):
        return None
    descr, sep, rest = text[len(_HEAD):].partition("', 'fortran_order': ")
    fortran = next((f for f in ("True", "False") if rest.startswith(f + ", 'shape': (")), None)
    if not sep or fortran is None or _descr_parts(descr) is None:
        return None
    dims = rest[len(fortran) + len(", 'shape': ("):]
    end = next((e for e in ("), }", "),}") if dims.endswith(e)), None)
    if end is None:
        return None
    dims = dims[:-len(end)]
    if not dims:
        return (), descr, fortran == "True"
    sizes = (dims[:-1] if dims.endswith(",") else dims).split(", ")
    if len(sizes) == 1 and not dims.endswith(",") or not all(map(_is_size, sizes)):
        return None  # "(4)" is no tuple
    return tuple(int(n) for n in sizes), descr, fortran == "True"


def _is_size(text: str) -> bool:
    return text == "0" or text[:1] in ("1", "2", "3", "4", "5", "6", "7", "8", "9") and \
        (len(text) == 1 or text[1:].isdecimal())


def _parse_dict(text: str) -> tuple[tuple[int, ...], Any, bool]:
    common = _common_header(text.rstrip(" \n"))
    if common is not None:
        return common
    import ast

    try:
        d = ast.literal_eval(text)
    # a name, a call or an operator where a literal belongs: ast's own message shows only the
    # repr of its parse node ("<ast.Name object at 0x...>"), so the header itself is shown
    except (ValueError, TypeError):
        raise ValueError(f"not a NumPy .npy file (its header is not made of Python literals: "
                         f"{text.strip()[:80]!r})") from None
    except SyntaxError as exc:
        raise ValueError(f"not a NumPy .npy file (SyntaxError in its header: {exc.msg}: "
                         f"{text.strip()[:80]!r})") from None
    except (MemoryError, RecursionError):  # a deep one exhausts the parser
        raise ValueError("not a NumPy .npy file (its header is nested too deeply to read)") from None
    if not isinstance(d, dict):
        raise ValueError(f"not a NumPy .npy file (the header is not a dictionary: {text[:60]!r})")
    if set(d) != {"descr", "fortran_order", "shape"}:
        raise ValueError(f"not a NumPy .npy file (header keys {sorted(map(repr, d))}, expected "
                         "'descr', 'fortran_order', 'shape')")
    shape = d["shape"]
    if not isinstance(shape, tuple) or not all(type(n) is int and n >= 0 for n in shape):
        raise ValueError(f"not a NumPy .npy file (shape is not a tuple of sizes: {shape!r})")
    if not isinstance(d["fortran_order"], bool):
        raise ValueError(f"not a NumPy .npy file (fortran_order is not a bool: {d['fortran_order']!r})")
    return shape, d["descr"], d["fortran_order"]


def parse_header(head: bytes) -> NpyHeader:
    """Parse the header at the start of ``head``, the file's first bytes (12 + MAX_HEADER_SIZE
    of them hold the longest header read)."""
    if len(head) < 8 or head[:6] != MAGIC:
        raise ValueError(f"not a NumPy .npy file (the magic string is {bytes(head[:6])!r}, expected {MAGIC!r})")
    major, minor = head[6], head[7]
    if major not in _LENGTH_BYTES or minor != 0:
        raise ValueError(f"not a NumPy .npy file (format version {major}.{minor}, expected 1.0, 2.0 or 3.0)")
    width = _LENGTH_BYTES[major]
    start = 8 + width
    if len(head) < start:
        raise ValueError("not a NumPy .npy file (it ends inside its header)")
    length = int.from_bytes(head[8:start], "little")
    if length > MAX_HEADER_SIZE:
        raise ValueError(f"not a NumPy .npy file (a header of {length} bytes, at most {MAX_HEADER_SIZE} are read)")
    if len(head) < start + length:
        raise ValueError("not a NumPy .npy file (it ends inside its header)")
    try:
        text = head[start:start + length].decode("utf-8" if major == 3 else "latin1")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not a NumPy .npy file (UnicodeDecodeError: {exc})") from None
    shape, descr, fortran = _parse_dict(text)
    return NpyHeader(shape, descr, fortran, start + length, _itemsize(descr))


def open_data(path: str | os.PathLike[str]) -> tuple[BinaryIO, NpyHeader]:
    """A .npy file opened once, its header read and checked, the file positioned at its data (the
    caller closes it); raises ValueError with a readable reason. One open for header and data: a
    file swapped for a FIFO between two opens cannot make the second one wait."""
    from kernellab.formats.jsonfile import open_input
    fh = open_input(path)  # a FIFO is refused, not waited on
    try:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("not a regular file, expected a NumPy .npy file")
        # the longest legal header is 12 + MAX_HEADER_SIZE bytes: one read holds it
        header = parse_header(fh.read(12 + MAX_HEADER_SIZE))
        if header.data_offset + header.nbytes > st.st_size:
            raise ValueError(f"the header announces {header.nbytes} bytes of data, the file holds "
                             f"{max(0, st.st_size - header.data_offset)}")
        fh.seek(header.data_offset)
    except BaseException:
        fh.close()
        raise
    return fh, header


def read_header(path: str | os.PathLike[str]) -> NpyHeader:
    """Parse only the header of a .npy file; raises ValueError with a readable reason."""
    fh, header = open_data(path)
    fh.close()
    return header


def _checked_header(path: str | Path) -> NpyHeader:
    try:
        return read_header(path)
    except (ValueError, OSError) as exc:
        raise InputError(str(exc), file=path) from None


def read_bytes(path: str | Path) -> bytes:
    """The data of a .npy file as bytes in C order (push constants: NumPy only for Fortran order)."""
    try:
        fh, hdr = open_data(path)
    except (ValueError, OSError) as exc:
        raise InputError(str(exc), file=path) from None
    with fh:
        if hdr.fortran_order and len(hdr.shape) > 1:
            return bytes(load_bytes(path))
        data = fh.read(hdr.nbytes)
    if len(data) != hdr.nbytes:
        raise InputError(f"truncated .npy file: expected {hdr.nbytes} data bytes, read {len(data)}", file=path)
    return data


def load_bytes(path: str | Path) -> np.ndarray:
    """The data of a .npy file as a flat uint8 array in C order (memory-mapped when possible)."""
    import numpy as np

    hdr = _checked_header(path)
    if hdr.nbytes == 0:
        return np.zeros(0, np.uint8)
    if hdr.fortran_order and len(hdr.shape) > 1:
        arr = np.load(path, mmap_mode="r")
        return np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
    return np.memmap(path, dtype=np.uint8, mode="r", offset=hdr.data_offset, shape=(hdr.nbytes,))
