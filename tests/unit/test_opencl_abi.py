"""The OpenCL argument mapping shared by the backend, the converters and the runners (no device)."""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from kernellab.backends import opencl_abi as abi
from kernellab.errors import InputError


@dataclass(frozen=True)
class T:
    size: int | None
    alignment: int


@dataclass(frozen=True)
class Arg:
    index: int
    kind: str
    type: T
    type_name: str = "t"
    name: str = "a"


# k(global float *a, char c, float4 v, local int *l, struct s st, global int *b, local float2 *m)
ARGS = [Arg(0, "buffer", T(4, 4)), Arg(1, "scalar", T(1, 1)), Arg(2, "scalar", T(16, 16)),
        Arg(3, "local", T(4, 4)), Arg(4, "scalar", T(None, 4), "struct s", "st"), Arg(5, "buffer", T(4, 4)),
        Arg(6, "local", T(8, 8))]
LAYOUT = {"struct s": (12, 8)}


def test_by_value_arguments_are_a_c_struct():
    assert abi.unsized_types(ARGS) == ["struct s"]
    # char at 0, float4 aligned to 16, the struct (12 bytes, 8-aligned) right after
    assert abi.value_slots(ARGS, LAYOUT) == {1: (0, 1), 2: (16, 16), 4: (32, 12)}
    values = {1: b"\x07", 2: bytes(range(16)), 4: bytes(range(100, 112))}
    packed = abi.pack_push_constants(ARGS, values, LAYOUT)
    assert len(packed) == 44 and len(packed) % 4 == 0
    assert packed[0] == 7 and packed[1:16] == bytes(15) and packed[16:32] == bytes(range(16))
    assert abi.unpack_push_constants(ARGS, packed, LAYOUT) == values
    # bytes missing at the end read as zeros
    assert abi.unpack_push_constants(ARGS, packed[:20], LAYOUT)[2] == bytes(range(4)) + bytes(12)


def test_a_struct_without_its_layout_is_bad_input():
    with pytest.raises(InputError, match=r"argument 4 \(struct s st\): its size is unknown"):
        abi.value_slots(ARGS)


def test_bindings_and_local_arguments():
    assert abi.buffer_bindings(ARGS) == {0: 0, 5: 1}
    assert abi.local_counts(ARGS, {3: 32}) == {3: 32, 6: 1}
    assert abi.local_counts(ARGS, {4: 0}) == {3: 1, 6: 1}
    assert abi.local_count(130, 4) == 33
    assert abi.local_element_size(ARGS[6]) == 8
    assert abi.local_element_size(Arg(9, "local", T(None, 4))) == 1


def test_work_group_size():
    assert abi.local_size({0: 8}, (4, 4, 1)) == (8, 1, 1)
    assert abi.local_size({2: 2, 7: 9}, (0, 0, 0)) == (1, 1, 2)
    assert abi.local_size({}, (4, 2, 1)) == (4, 2, 1)
    assert abi.local_size({3: 5}, (0, 0, 0)) == (1, 1, 1)
    assert abi.default_local_size((96, 5)) == (48, 1)
    assert abi.default_local_size((1000,)) == (50,)
    assert abi.default_local_size((97,)) == (1,)
    assert abi.default_local_size((256, 1), limit=16) == (16, 1)


def test_pack_values_pads_to_whole_words():
    assert abi.pack_values([]) == b""
    assert abi.pack_values([(b"\x01", 1), (b"\x02\x00", 2)]) == b"\x01\x00\x02\x00"
    assert abi.pack_values([(b"\x01", 1)]) == b"\x01\x00\x00\x00"


# --- the one argument packer ------------------------------------------------------------------

class _Cl:
    """Stands for the OpenCL runtime module: what clSetKernelArg is handed for local memory."""

    @staticmethod
    def LocalMemory(size):  # noqa: N802 - pyopencl's name
        return ("local", size)


def test_scenario_arguments_in_parameter_order():
    push = bytes(range(48))
    args = abi.scenario_arguments(ARGS, {0: "A", 1: "B"}.get, push, {3: 5, 4: 2}, {"struct s": (8, 4)}, "k")
    assert args == ["A", push[0:1], push[16:32], abi.LocalMemory(20), push[32:40], "B", abi.LocalMemory(16)]


def test_scenario_arguments_name_what_is_missing():
    with pytest.raises(ValueError, match=r"binding \(set 0, id 1\) is not bound"):
        abi.scenario_arguments(ARGS, {0: "A"}.get, bytes(48), {}, {"struct s": (8, 4)}, "k")
    with pytest.raises(ValueError, match="needs push-constant bytes 16..32, only 8 given"):
        abi.scenario_arguments(ARGS, {0: "A", 1: "B"}.get, bytes(8), {}, {"struct s": (8, 4)}, "k")


def test_positional_arguments_fill_memory_objects_in_the_places_left():
    args = abi.positional_arguments(5, {1: b"\x01\0\0\0"}, {3: 64}, iter(["a", "b", "c"]))
    assert args == ["a", b"\x01\0\0\0", "b", abi.LocalMemory(64), "c"]


def test_driver_values_one_conversion_for_every_launch():
    values = abi.driver_values([b"\x02\0", abi.LocalMemory(0), "buf"], _Cl, lambda a: f"mem:{a}")
    assert values[0].dtype.name == "uint8" and values[0].tobytes() == b"\x02\0"
    assert values[1:] == [("local", 1), "mem:buf"]  # a local allocation is never empty
    assert abi.driver_values([b"\x02\0"], _Cl, str, raw_bytes=True) == [b"\x02\0"]
