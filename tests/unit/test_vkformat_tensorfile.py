"""Tensor src/dst .npy files for every tensor format."""
from __future__ import annotations

import numpy as np
import pytest

from kernellab.errors import InputError
from kernellab.formats import tensorfile
from kernellab.vkregistry import vkformat


@pytest.mark.parametrize("fmt", vkformat.tensor_formats(), ids=lambda f: f.name)
def test_round_trip_every_tensor_format(fmt, tmp_path):
    dims = [2, 3, 4]
    raw = np.random.default_rng(fmt.value).integers(0, 256, tensorfile.byte_size(fmt, dims), dtype=np.uint8)
    if fmt.numeric == "BOOL":
        raw = raw % 2
    path = tmp_path / "t.npy"
    tensorfile.save(path, fmt, dims, raw.tobytes())
    head = path.read_bytes()[:80]
    assert f"'descr': '{fmt.npy_descr}'".encode() in head and b"'shape': (2, 3, 4)}" in head
    back = tensorfile.load(path, fmt, dims)
    assert back.shape == (2, 3, 4) and back.tobytes() == raw.tobytes()


def test_rank_zero_tensor(tmp_path):
    fmt = vkformat.lookup("VK_FORMAT_R32_SFLOAT")
    assert tensorfile.byte_size(fmt, []) == 4
    path = tmp_path / "s.npy"
    tensorfile.save(path, fmt, [], np.float32(2.5).tobytes())
    assert b"'shape': ()}" in path.read_bytes()
    assert tensorfile.load(path, fmt, []).tobytes() == np.float32(2.5).tobytes()


def test_mismatches_name_the_file(tmp_path):
    fmt = vkformat.lookup("VK_FORMAT_R16_SINT")
    path = tmp_path / "t.npy"
    np.save(path, np.zeros((3, 2), np.int16))
    with pytest.raises(InputError, match=r"shaped \[3, 2\], the tensor's dims are \[2, 3\]") as e:
        tensorfile.load(path, fmt, [2, 3])
    assert e.value.problems[0].file == str(path)
    np.save(path, np.zeros((2, 3), np.float32))
    with pytest.raises(InputError, match="dtype <f4; VK_FORMAT_R16_SINT needs <i2"):
        tensorfile.load(path, fmt, [2, 3])
    with pytest.raises(InputError, match="cannot read tensor .npy"):
        tensorfile.load(tmp_path / "missing.npy", fmt, [2, 3])
    with pytest.raises(ValueError, match="needs 12"):
        tensorfile.save(path, fmt, [2, 3], b"\0" * 10)
