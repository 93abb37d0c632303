"""The scenario's ``__local`` counts (declared elements) as clspv's specialization constants take
them (elements of the array clspv declares)."""
from __future__ import annotations

import pytest

from kernellab.backends.base import LocalArgument
from kernellab.backends.opencl import parse_type
from kernellab.backends.opencl_abi import clspv_spec_values
from kernellab.errors import InputError


def test_counts_become_bytes_over_clspvs_element_size() -> None:
    locals_ = (LocalArgument(0, "A", 3, 4, "long*"),      # clspv's uint array: twice the count
               LocalArgument(1, "C", 4, 1, "char*"),
               LocalArgument(2, "F", 5, 4, "float4*"),    # a float array: four times
               LocalArgument(3, "R", 6, 8, "real*"))      # a typedef, followed
    got = clspv_spec_values({0: 16, 3: 1024, 4: 64, 5: 16, 6: 10}, locals_,
                            lambda t: parse_type(t, {"real": "double"}).size)
    assert got == {0: 16, 3: 2048, 4: 64, 5: 64, 6: 10}


def test_unset_and_unreflected_arguments_are_left_as_given() -> None:
    locals_ = (LocalArgument(0, "A", 3, 4, ""), LocalArgument(1, "B", 4, 4, "long*"), LocalArgument(2, "C", 5))
    assert clspv_spec_values({3: 7, 5: 9}, locals_, lambda t: parse_type(t).size) == {3: 7, 5: 9}


def test_size_not_a_whole_number_of_clspvs_elements_is_refused() -> None:
    with pytest.raises(InputError) as info:
        clspv_spec_values({3: 6}, (LocalArgument(0, "C", 3, 4, "char*"),), lambda t: 1, "s.json",
                          "/resources/0/shader/specialization_constants")
    problem = info.value.problems[0]
    assert (problem.file, problem.where) == ("s.json", "/resources/0/shader/specialization_constants")
    assert "specialization constant 3 = 6 elements is 6 bytes" in problem.message
    assert "multiple of 4 bytes" in problem.message
