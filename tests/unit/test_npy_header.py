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
    # ast's message names its parse node and a memory address; the header is shown instead
    (_v1("{'descr': foo, 'fortran_order': False, 'shape': (1,), }\n"),
     r"^not a NumPy \.npy file \(its header is not made of Python literals: \"\{'descr': foo, "),
    (_v1("{'descr': '<f4', 'shape': (1, 1>, 9999}\n"), r"^not a NumPy \.npy file \(SyntaxError in its header: "),
    (_v1("[" * 5000 + "\n"), "nested too deeply|SyntaxError in its header: too many nested"),
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
    """The header NumPy writes is read by str methods (start-up: no ``ast``), to what
    ``ast.literal_eval`` gives; every other spelling still goes through ``ast``."""
    import ast
    import io

    from kernellab.formats.npy import _common_header, _parse_dict

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": fortran, "shape": shape})
    text = buf.getvalue()[10:].decode("latin1")
    assert _common_header(text.rstrip(" \n")) is not None
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


#: the patterns that read the header before issue 23 (compiling them cost a start-up 3 M
#: instructions): the str-method reader must accept exactly what they accepted, with the same groups
_OLD_DESCR = r"([<>|=]?)([biufcSUVmM])(\d+)(\[\w+\])?"
_OLD_HEADER = (r"\{'descr': '([<>|=]?[A-Za-z]\d*(?:\[\w+\])?)', 'fortran_order': (True|False), "
               r"'shape': \((|(?:0|[1-9]\d*),|(?:(?:0|[1-9]\d*), )+(?:0|[1-9]\d*),?)\), ?\}")


def _old_header(text: str) -> tuple[tuple[int, ...], str, bool] | None:
    import re

    found = re.fullmatch(_OLD_HEADER, text)
    if found is None:
        return None
    descr, fortran, dims = found.groups()
    return tuple(int(n) for n in dims.split(",") if n.strip()), descr, fortran == "True"


def _headers() -> list[str]:
    import random

    rng = random.Random(23)
    seeds = [f"{{'descr': '{d}', 'fortran_order': {f}, 'shape': ({s}), }}"
             for d in ("<f4", "|b1", ">i8", "<M8[D]", "<m8[us]", "<U12", "|S3", "|V16", "<f", "f4", "<O", "<x4")
             for f in ("True", "False") for s in ("", "4,", "3, 4", "3, 4,", "0, 0, 0", "10, 200, 3000,")]
    alphabet = "0123456789 ,()[]{}'<>|=_abfiuSUMmx\u0663\u00b2\u00df\u0130:T"
    texts = list(seeds)
    for seed in seeds:
        for _ in range(60):
            chars = list(seed)
            for _ in range(rng.randint(1, 3)):
                at = rng.randrange(len(chars) + 1)
                action = rng.random()
                if action < 0.4 and at < len(chars):
                    del chars[at]
                elif action < 0.7:
                    chars.insert(at, rng.choice(alphabet))
                elif at < len(chars):
                    chars[at] = rng.choice(alphabet)
            texts.append("".join(chars))
    return texts


def test_the_header_reader_accepts_what_the_old_patterns_did() -> None:
    import re

    texts = _headers()
    accepted = 0
    for text in texts:
        assert npy._common_header(text) == _old_header(text), text
        accepted += npy._common_header(text) is not None
        descr = text[len("{'descr': '"):].partition("'")[0]
        old = re.fullmatch(_OLD_DESCR, descr)
        new = npy._descr_parts(descr)
        plain = new is not None and new[1] in npy._PLAIN_KINDS and new[2] != ""
        assert (old is not None) == plain, descr
        if old is not None and new is not None:
            assert (old.group(1), old.group(2), old.group(3), old.group(4) or "") == new
    assert 200 < accepted < len(texts) - 1000  # both sides of the line are exercised
    # \\d is a decimal digit of any script (U+0663 is one, U+00B2 is not), \\w a letter, digit or _
    for descr in ("<f\u00b2", "<f\u0663", "<M8[\u00df]", "<M8[]", "<f4]", "[D]", "<M8[D", "<", "", "=b1", "<ff4",
                  "<f4[D]x", "|V\u0130", "<M8[a[b]", "<M8[a]b]", "x", "\u0130", "<m8[_]"):
        old_full = re.fullmatch(r"([<>|=]?)([A-Za-z])(\d*)(\[\w+\])?", descr)
        expected = None if old_full is None else (*old_full.groups()[:3], old_full.group(4) or "")
        assert npy._descr_parts(descr) == expected, descr
