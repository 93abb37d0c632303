"""AmberScript STRUCT: member offsets by std430/std140, OFFSET, STRIDE, nested structs, errors."""
from __future__ import annotations

from pathlib import Path

import pytest

from kernellab.errors import InputError
from kernellab.formats.amber.parse import parse_amber


def elem_of(structs: str, layout: str = ""):
    script = parse_amber(structs + f"BUFFER b DATA_TYPE S {layout} SIZE 1 FILL 0\n".replace("  ", " "), Path("t.amber"))
    return script.buffers["b"].element


@pytest.mark.parametrize("body, layout, components, size", [
    ("  float a\n  vec3<float> b\n", "", ((0, "float32"), (16, "float32"), (20, "float32"), (24, "float32")), 32),
    ("  vec3<float> a\n  float b\n", "", ((0, "float32"), (4, "float32"), (8, "float32"), (12, "float32")), 16),
    ("  uint8 a\n  uint16 b\n  double c\n", "", ((0, "uint8"), (2, "uint16"), (8, "float64")), 16),
    ("  float a\n  vec2<float> b\n", "", ((0, "float32"), (8, "float32"), (12, "float32")), 16),
    # std140 rounds a matrix column and the struct to 16 bytes
    ("  float a\n  mat2x2<float> m\n", "STD140",
     ((0, "float32"), (16, "float32"), (20, "float32"), (32, "float32"), (36, "float32")), 48),
    ("  float a OFFSET 8\n  float b\n", "", ((8, "float32"), (12, "float32")), 16),
])
def test_member_offsets_follow_the_layout(body, layout, components, size):
    e = elem_of(f"STRUCT S\n{body}END\n", layout)
    assert e.components == components and e.size == size


def test_nested_structs_and_stride():
    e = elem_of("STRUCT In\n  uint32 t\n  vec2<float> xy\nEND\nSTRUCT S STRIDE 48\n  float a\n  In in\nEND\n")
    assert e.components == ((0, "float32"), (8, "uint32"), (16, "float32"), (20, "float32")) and e.size == 48
    e140 = elem_of("STRUCT In\n  float t\nEND\nSTRUCT S\n  float a\n  In in\nEND\n", "STD140")
    assert e140.components == ((0, "float32"), (16, "float32")) and e140.size == 32


@pytest.mark.parametrize("text, where, words", [
    ("STRUCT S STRIDE 4\n  double d\nEND\n", "line 1, column 1", "STRIDE 4 is shorter than its members (8 bytes)"),
    ("STRUCT S\n  vec4<float> v\n  float f OFFSET 8\nEND\n", "line 1, column 1", "overlaps the one before it"),
    ("STRUCT S\n  quux q\nEND\n", "line 2, column 3", "unknown data type 'quux'"),
    ("STRUCT S\n  S s\nEND\n", "line 2, column 3", "cannot hold itself"),
    ("STRUCT S\n  float a\n  float a\nEND\n", "line 3, column 9", "already has a member 'a'"),
    ("STRUCT S\n  float a\n", "line 1, column 1", "has no END"),
    # Amber's own rules: ARRAY_STRIDE only on array members, MATRIX_STRIDE only on matrices
    ("STRUCT S\n  float a ARRAY_STRIDE 16\nEND\n", "line 2, column 11", "ARRAY_STRIDE only valid on array members"),
    ("STRUCT S\n  vec4<float> a MATRIX_STRIDE 16\nEND\n", "line 2, column 17",
     "MATRIX_STRIDE only valid on matrix members"),
    ("STRUCT S\n  mat2x3<float> a MATRIX_STRIDE 8\nEND\n", "line 2, column 19", "a column is 12 bytes"),
    ("STRUCT S\n  mat2x2<float> a MATRIX_STRIDE 10\nEND\n", "line 2, column 19", "a column is 8 bytes"),
    ("STRUCT S\n  mat2x2<float> a MATRIX_STRIDE\nEND\n", "line 2, column 33", "expected the member's matrix stride"),
])
def test_bad_structs_name_the_line(text, where, words):
    with pytest.raises(InputError) as info:
        parse_amber(text, Path("t.amber"))
    assert f"t.amber: {where}: " in str(info.value) and words in str(info.value)


def test_matrix_stride_puts_the_columns_that_far_apart():
    e = elem_of("STRUCT S\n  float a\n  mat2x2<float> m MATRIX_STRIDE 16\nEND\n")
    # the alignment stays the matrix's (8 in std430); the columns are 16 bytes apart
    assert e.components == ((0, "float32"), (8, "float32"), (12, "float32"), (24, "float32"), (28, "float32"))
    assert e.size == 40
    plain = elem_of("STRUCT S\n  float a\n  mat2x2<float> m\nEND\n")
    assert plain.components[3][0] == 16 and plain.size == 24
