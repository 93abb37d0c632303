"""The one OpenCL C type parser: the OpenCL backend, verify, capture and PySchedCL kernel specs
read a type name the same way."""
from __future__ import annotations

import numpy as np
import pytest

from kernellab import opencl_types
from kernellab.formats.pyschedcl import elements


@pytest.mark.parametrize("name, dtype, count, size", [
    ("float4", "f4", 4, 16), ("const uint", "u4", 1, 4), ("unsigned  int", "u4", 1, 4), ("unsigned", "u4", 1, 4),
    ("signed char", "i1", 1, 1), ("double3", "f8", 3, 32), ("size_t", "u8", 1, 8), ("half16", "f2", 16, 32),
    ("struct pair", None, 1, None), ("bool4", None, 1, None),
])
def test_a_type_name_parses_to_its_element_and_count(name: str, dtype: str | None, count: int, size: int | None) -> None:
    t = opencl_types.parse_type(name)
    assert (t.dtype, t.count, t.size) == (dtype, count, size)


def test_typedef_chains_are_followed() -> None:
    typedefs = opencl_types.source_typedefs("typedef float real;\ntypedef real  scalar_t;\n")
    assert typedefs == {"real": "float", "scalar_t": "real"}
    t = opencl_types.parse_type("const scalar_t", typedefs)
    assert (t.dtype, t.is_float, t.signed) == ("f4", True, True)
    assert not opencl_types.parse_type("ulong2").signed


def test_a_kernel_spec_element_type_is_the_parsers_type() -> None:
    for spelling in elements.SCALAR_TYPES:
        for width in (1, *elements.VECTOR_WIDTHS):
            name = spelling if width == 1 else f"{spelling}{width}"
            if width > 1 and spelling not in opencl_types.SCALAR_DTYPES:
                continue  # vectors are named by the one-word scalars only (no "unsigned4")
            element, parsed = elements.parse_type(name), opencl_types.parse_type(name)
            assert parsed.dtype is not None and element.dtype == np.dtype("<" + parsed.dtype), name
            assert element.itemsize == parsed.size and element.width == parsed.count, name


@pytest.mark.parametrize("name, hint", [("size_t", "its size depends on the device"),
                                        ("uintptr_t", "its size depends on the device"),
                                        ("float3", "3-element vectors are not supported")])
def test_a_kernel_spec_refuses_what_the_parser_sizes_by_the_device_or_pads(name: str, hint: str) -> None:
    assert opencl_types.parse_type(name).size is not None
    with pytest.raises(ValueError, match=hint):
        elements.parse_type(name)


def test_the_backend_reads_types_with_the_one_parser() -> None:
    from kernellab.backends import opencl

    assert opencl.parse_type is opencl_types.parse_type and opencl.ArgType is opencl_types.ArgType
    assert opencl.source_typedefs is opencl_types.source_typedefs
