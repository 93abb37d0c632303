"""Kernel-instantiation reading/writing and value decoding, without a device."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kernellab.backends.opencl import parse_type, source_typedefs
from kernellab.formats import gpuverify
from kernellab.runtime.instantiation import _from_device_order, _to_device_order, seeded_values


def test_round_trip_keeps_every_field(tmp_path: Path) -> None:
    (tmp_path / "k.cl").write_text("__kernel void k(__global int *a) {}\n")
    (tmp_path / "a.bin").write_bytes(bytes(8))
    doc = [{"language": "OpenCL", "endianness": "big", "kernel_file": "k.cl", "local_size": [2, 1],
            "global_size": [4, 2], "global_offset": [1, 0], "compiler_flags": "-DX=1", "entry_point": "k",
            "kernel_arguments": [{"type": "array", "size": 8, "address_space": "global",
                                  "flags": ["CL_MEM_READ_WRITE"], "data": "a.bin"},
                                 {"type": "scalar", "value": "0xA208"}, {"type": "scalar"},
                                 {"type": "image"}, {"type": "sampler"}, {"type": "array", "address_space": "local",
                                                                          "size": 16}],
            "host_api_calls": [{"function_name": "clEnqueueNDRangeKernel", "compilation_unit": "h.c",
                                "line_number": 3}]}]
    (tmp_path / "k.json").write_text(json.dumps(doc))
    insts, warnings = gpuverify.load(tmp_path / "k.json")
    assert not warnings
    assert json.loads(gpuverify.dumps(insts)) == doc
    gpuverify.dump(insts, tmp_path / "again.json")
    again, _ = gpuverify.load(tmp_path / "again.json")
    assert gpuverify.dumps(again) == gpuverify.dumps(insts)


def test_flag_names_are_normalized(tmp_path: Path) -> None:
    (tmp_path / "k.cl").write_text("")
    (tmp_path / "k.json").write_text(json.dumps([{"language": "OpenCL", "kernel_file": "k.cl", "global_size": [1],
                                                  "entry_point": "k", "kernel_arguments": [
                                                      {"type": "array", "flags": ["READ_ONLY", "cl_mem_copy_host_ptr"]}]}]))
    [inst], _ = gpuverify.load(tmp_path / "k.json")
    assert inst.kernel_arguments[0].flags == ("CL_MEM_READ_ONLY", "CL_MEM_COPY_HOST_PTR")


def test_preprocessed_path_follows_spec(tmp_path: Path) -> None:
    inst = gpuverify.KernelInstantiation(tmp_path / "k.json", 0, "sub/foo.cl", (1,), "k")
    assert inst.preprocessed_path == (tmp_path / "sub" / "foo.pre.cl").resolve()


@pytest.mark.parametrize("value,size,order,expected", [
    ("0xA208", 4, "little", bytes([0x08, 0xA2, 0, 0])),
    ("0xA208", 4, "big", bytes([0, 0, 0xA2, 0x08])),
    ("0x40400000", 4, "little", np.float32(3.0).tobytes()),
    ("0xFFFFFFFF", 4, "little", np.int32(-1).tobytes()),
])
def test_hex_bytes(value: str, size: int, order: str, expected: bytes) -> None:
    assert gpuverify.hex_bytes(value, size, order) == expected
    assert gpuverify.hex_value(expected, order) == value.upper().replace("0X", "0x")


def test_hex_overflow() -> None:
    with pytest.raises(OverflowError):
        gpuverify.hex_bytes("0x1FFFF", 2, "little")


def test_big_endian_values_become_device_order() -> None:
    # a float4 captured on a big-endian device: each component byte-swapped, not the whole vector
    values = np.array([1.0, 2.0, 3.0, 4.0], dtype=">f4")
    swapped = _to_device_order(values.tobytes(), "f4", "big")
    assert np.frombuffer(swapped, "<f4").tolist() == [1.0, 2.0, 3.0, 4.0]
    assert _from_device_order(swapped, "f4", "big") == values.tobytes()
    assert _to_device_order(b"\x01\x02", "u1", "big") == b"\x01\x02"


@pytest.mark.parametrize("name,dtype,count,size", [
    ("float", "f4", 1, 4), ("uint", "u4", 1, 4), ("unsigned int", "u4", 1, 4), ("float4", "f4", 4, 16),
    ("int3", "i4", 3, 16), ("uchar16", "u1", 16, 16), ("double2", "f8", 2, 16), ("half", "f2", 1, 2),
    ("const long", "i8", 1, 8), ("struct S", None, 1, None),
])
def test_parse_type(name: str, dtype: str | None, count: int, size: int | None) -> None:
    t = parse_type(name)
    assert (t.dtype, t.count, t.size) == (dtype, count, size)


def test_typedefs_resolve() -> None:
    typedefs = source_typedefs("typedef float real;\ntypedef real real_t;\ntypedef unsigned int index_t;\n")
    assert parse_type("real_t", typedefs).dtype == "f4"
    assert parse_type("index_t", typedefs).dtype == "u4"


def test_seeded_values_are_deterministic_and_bounded() -> None:
    a = seeded_values("f4", 1000, np.random.default_rng([0, 0, 1]))
    b = seeded_values("f4", 1000, np.random.default_rng([0, 0, 1]))
    c = seeded_values("f4", 1000, np.random.default_rng([1, 0, 1]))
    assert a == b and a != c
    floats = np.frombuffer(a, "<f4")
    assert floats.min() >= 0 and floats.max() < 1
    ints = np.frombuffer(seeded_values("i1", 500, np.random.default_rng(0)), "i1")
    assert ints.min() >= 0 and ints.max() < 128


def test_format_detection() -> None:
    assert gpuverify.looks_like([{"language": "OpenCL", "kernel_file": "k.cl"}])
    assert not gpuverify.looks_like({"resources": [], "commands": []})
    assert not gpuverify.looks_like([])
