"""kernellab's own .npy header reader (no NumPy on a run of buffers, issue 11) reads what NumPy
writes exactly as NumPy does, and refuses what NumPy refuses; the Arm-layout writer's files load
back in NumPy to the bytes given."""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from kernellab.backends.base import SpecConstant
from kernellab.formats import npy, npy_arm

ARRAYS = [
    np.arange(7, dtype=np.int8),
    np.arange(12, dtype="<f4").reshape(3, 4),
    np.arange(12, dtype=">i4").reshape(4, 3),
    np.asfortranarray(np.arange(24, dtype=np.uint16).reshape(2, 3, 4)),
    np.zeros((0, 5), np.float64),
    np.array(3.5, np.float32),
    np.array([True, False]),
    np.array([1 + 2j], np.complex64),
    np.array([b"ab", b"cde"]),
    np.array(["x", "yz"]),
    np.array(["2024-01-01"], "datetime64[D]"),
    np.zeros(3, dtype=[("a", "<i4"), ("b", "<f8", (2,))]),
]


@pytest.mark.parametrize("version", [(1, 0), (2, 0), (3, 0)])
@pytest.mark.parametrize("array", ARRAYS, ids=lambda a: f"{a.dtype.str}{a.shape}")
def test_reads_numpys_headers_as_numpy_does(tmp_path: Path, array: np.ndarray, version: tuple[int, int]) -> None:
    path = tmp_path / "a.npy"
    with open(path, "wb") as fh:
        np.lib.format.write_array(fh, array, version=version)
    hdr = npy.read_header(path)
    with open(path, "rb") as fh:
        assert np.lib.format.read_magic(fh) == version
        # version 3 differs from 2 only in the header's encoding (UTF-8): ASCII headers read alike
        reader = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, fortran, dtype = reader(fh)
        offset = fh.tell()
    assert (hdr.shape, hdr.fortran_order, hdr.data_offset) == (shape, fortran, offset)
    assert hdr.itemsize == dtype.itemsize and hdr.nbytes == array.nbytes and hdr.dtype == dtype


def test_data_bytes_are_numpys_in_c_order(tmp_path: Path) -> None:
    for i, array in enumerate(ARRAYS):
        path = tmp_path / f"{i}.npy"
        np.save(path, array)
        assert npy.read_bytes(path) == np.ascontiguousarray(array).tobytes()
        assert bytes(npy.load_bytes(path)) == np.ascontiguousarray(array).tobytes()


def _v1(text: str) -> bytes:
    return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text.encode("latin1")


@pytest.mark.parametrize("head, reason", [
    (b"\x93NUMPX\x01\x00", "magic string"),
    (b"\x93NUMPY\x04\x00\x10\x00", "format version 4.0"),
    (b"\x93NUMPY\x01\x00\x40\x00{'descr'", "ends inside its header"),
    (b"\x93NUMPY\x01\x00\x11\x27", "at most 10000"),
    (_v1("[1, 2, 3]\n"), "not a dictionary"),
    (_v1("{'descr': '<f4', 'x': 1}\n"), "header keys"),
    (_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}\n"), "shape"),
    (_v1("{'descr': '<f4', 'fortran_order': False, 'shape': [1]}\n"), "shape"),
    (_v1("{'descr': '<f4', 'fortran_order': 0, 'shape': (1,), }\n"), "fortran_order"),
    (_v1("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }\n"), "Python objects"),
    (_v1("{'descr': [('a', '|O')], 'fortran_order': False, 'shape': (1,), }\n"), "Python objects"),
    (_v1("{'descr': '<q9', 'fortran_order': False, 'shape': (1,), }\n"), "not a NumPy"),
    (_v1("{'descr': __import__('os'), 'fortran_order': False, 'shape': ()}\n"), "not a NumPy"),
    (_v1("(" * 60), "not a NumPy"),
])
def test_broken_headers_are_refused_with_the_reason(head: bytes, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        npy.parse_header(head)


def test_numpy_refuses_what_the_reader_refuses(tmp_path: Path) -> None:
    head = b"\x93NUMPY\x01\x00\x1a\x00{'descr': '<f4', 'x': 1}\n"
    (tmp_path / "bad.npy").write_bytes(head)
    with pytest.raises(ValueError):
        np.load(tmp_path / "bad.npy")


@pytest.mark.parametrize("n", [0, 1, 5, 16, 117, 4096])
def test_buffer_dst_writer_loads_back_as_its_bytes(tmp_path: Path, n: int) -> None:
    data = bytes(range(256)) * (n // 256) + bytes(range(n % 256))
    fh = io.BytesIO()
    npy_arm.write(fh, memoryview(data), *npy_arm.buffer_bytes(data))
    written = fh.getvalue()
    assert len(written) % 16 == len(data) % 16  # Arm pads the header to a multiple of 16 bytes
    (tmp_path / "b.npy").write_bytes(written)
    back = np.load(tmp_path / "b.npy")
    assert back.dtype == np.int8 and back.shape == (n,) and back.tobytes() == data
    # the header is the layout Arm's runner writes, and the same bytes come from an int8 array
    assert written.startswith(b"\x93NUMPY\x01\x00") and b"{'descr': '|i1','fortran_order': False,'shape': (" in written
    array_fh = io.BytesIO()
    npy_arm.write(array_fh, np.frombuffer(data, np.int8), *npy_arm.buffer_bytes(data))
    assert array_fh.getvalue() == written


@pytest.mark.parametrize("value", [1.5, 0.1, -2.75, 1e40, -1e40, 3.4028235e38, 1e-50, True, False, 0, 5, -5,
                                   2**31, 2**32 + 7, -2**31])
def test_spec_constants_encode_as_numpy_casts(value: int | float | bool) -> None:
    if isinstance(value, bool):
        want = np.uint32(value).tobytes()
    elif isinstance(value, float):
        with np.errstate(over="ignore"):
            want = np.float32(value).tobytes()
    else:
        want = (np.int32(value) if value < 0 else np.uint32(value & 0xFFFFFFFF)).tobytes()
    assert SpecConstant(3, value).encode() == want


@pytest.mark.parametrize("descr", ["<f4", "|i1", ">u2", "<c16", "|b1", "<M8[s]", "<U3", "|S5", "|V8"])
@pytest.mark.parametrize("shape", [(), (0,), (5,), (2, 3), (1, 2, 3)])
@pytest.mark.parametrize("fortran", [False, True])
def test_numpys_own_headers_read_without_ast_as_ast_reads_them(descr: str, shape: tuple[int, ...],
                                                                fortran: bool) -> None:
    """The header NumPy writes is read by a pattern (start-up: no ``ast``), to what
    ``ast.literal_eval`` gives; every other spelling still goes through ``ast``."""
    import ast
    import io

    from kernellab.formats.npy import _COMMON_HEADER, _parse_dict

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": fortran, "shape": shape})
    text = buf.getvalue()[10:].decode("latin1")
    assert _COMMON_HEADER.fullmatch(text.rstrip(" \n"))
    d = ast.literal_eval(text)
    assert _parse_dict(text) == (d["shape"], d["descr"], d["fortran_order"])


@pytest.mark.parametrize("text, expected", [
    ("{'descr': '<f4', 'fortran_order': False, 'shape': (3), }", None),  # an int, not a tuple
    ("{'descr': '<f4', 'fortran_order': False, 'shape': (03,), }", None),  # no such int literal
    ("{'shape': (3,), 'descr': '<f4', 'fortran_order': False}", ((3,), "<f4", False)),
    ("{'descr': '<f4', 'fortran_order': False, 'shape': (2,3), }", ((2, 3), "<f4", False)),
    ("{'descr': '<f4', 'fortran_order': False, 'shape': (1_0,), }", ((10,), "<f4", False)),
])
def test_other_spellings_read_as_ast_reads_them(text: str, expected: tuple | None) -> None:
    from kernellab.formats.npy import _parse_dict

    if expected is None:
        with pytest.raises(ValueError, match="not a NumPy .npy file"):
            _parse_dict(text)
    else:
        assert _parse_dict(text) == expected
