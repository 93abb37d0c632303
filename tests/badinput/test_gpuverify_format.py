"""Bad kernel-instantiation files: every case names the file, the JSON pointer and the problem."""
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from kernellab.errors import InputError
from kernellab.formats import gpuverify
from kernellab.runtime.instantiation import run_instantiations

KERNEL = """\
__kernel void scale(__global float *out, __global const float *in, __local float *tile, float s, int n) {
  int i = get_global_id(0);
  tile[get_local_id(0)] = in[i];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (i < n) out[i] = tile[get_local_id(0)] * s;
}
"""

GOOD: dict[str, Any] = {
    "language": "OpenCL",
    "endianness": "little",
    "kernel_file": "scale.cl",
    "local_size": [4],
    "global_size": [16],
    "global_offset": [0],
    "compiler_flags": "-DUNUSED=1",
    "entry_point": "scale",
    "kernel_arguments": [
        {"type": "array", "size": 64, "address_space": "global", "flags": ["CL_MEM_WRITE_ONLY"]},
        {"type": "array", "size": 64, "address_space": "global", "flags": ["CL_MEM_READ_ONLY"], "data": "in.bin"},
        {"type": "array", "size": 16, "address_space": "local"},
        {"type": "scalar", "value": "0x40000000"},
        {"type": "scalar", "value": "0x10"},
    ],
    "host_api_calls": [{"function_name": "clEnqueueNDRangeKernel", "compilation_unit": "host.c", "line_number": 12}],
}


def write_case(tmp_path: Path, doc: Any) -> Path:
    (tmp_path / "scale.cl").write_text(KERNEL)
    (tmp_path / "in.bin").write_bytes(bytes(64))
    (tmp_path / "big.bin").write_bytes(bytes(100))
    path = tmp_path / "k.json"
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def mutate(change: Any) -> Any:
    doc = [copy.deepcopy(GOOD)]
    change(doc)
    return doc


def set_at(path: list[Any], value: Any) -> Any:
    def change(doc: Any) -> None:
        obj = doc
        for p in path[:-1]:
            obj = obj[p]
        obj[path[-1]] = value
    return change


def delete_at(path: list[Any]) -> Any:
    def change(doc: Any) -> None:
        obj = doc
        for p in path[:-1]:
            obj = obj[p]
        del obj[path[-1]]
    return change


# (case id, mutation, expected pointer, expected message fragment)
STATIC_CASES = [
    ("not-array", lambda d: d.clear(), "/",
     "holds no kernel instantiations"),
    ("entry-not-object", set_at([0], 5), "/0", "must be an object"),
    ("language-missing", delete_at([0, "language"]), "/0", '"language" is required'),
    ("language-wrong", set_at([0, "language"], "CUDA"), "/0/language", 'must be "OpenCL"'),
    ("endianness-wrong", set_at([0, "endianness"], "middle"), "/0/endianness", 'must be "big" or "little"'),
    ("kernel-file-missing", delete_at([0, "kernel_file"]), "/0", '"kernel_file" is required'),
    ("kernel-file-not-string", set_at([0, "kernel_file"], 3), "/0/kernel_file", "must be a string"),
    ("kernel-file-absent", set_at([0, "kernel_file"], "nope.cl"), "/0/kernel_file", "'nope.cl' not found"),
    ("global-size-missing", delete_at([0, "global_size"]), "/0", '"global_size" is required'),
    ("global-size-not-array", set_at([0, "global_size"], 16), "/0/global_size", "must be an array"),
    ("global-size-too-many", set_at([0, "global_size"], [1, 1, 1, 1]), "/0/global_size", "1 to 3 entries"),
    ("global-size-zero", set_at([0, "global_size", 0], 0), "/0/global_size/0", "must be > 0"),
    ("global-size-float", set_at([0, "global_size", 0], 16.5), "/0/global_size/0", "must be an integer"),
    ("local-size-rank", set_at([0, "local_size"], [4, 1]), "/0/local_size", "global_size has 1"),
    ("local-size-not-dividing", set_at([0, "local_size"], [5]), "/0/local_size/0", "does not divide"),
    ("global-offset-negative", set_at([0, "global_offset"], [-1]), "/0/global_offset/0", "must be >= 0"),
    ("compiler-flags-not-string", set_at([0, "compiler_flags"], ["-O2"]), "/0/compiler_flags",
     "must be a string"),
    ("entry-point-missing", delete_at([0, "entry_point"]), "/0", '"entry_point" is required'),
    ("entry-point-not-identifier", set_at([0, "entry_point"], "scale kernel"), "/0/entry_point",
     "must be a kernel name"),
    ("arguments-not-array", set_at([0, "kernel_arguments"], {}), "/0/kernel_arguments", "must be an array"),
    ("argument-not-object", set_at([0, "kernel_arguments", 3], "0x1"), "/0/kernel_arguments/3",
     "must be an object"),
    ("argument-type-missing", delete_at([0, "kernel_arguments", 3, "type"]), "/0/kernel_arguments/3",
     '"type" is required'),
    ("argument-type-unknown", set_at([0, "kernel_arguments", 3, "type"], "pointer"),
     "/0/kernel_arguments/3/type", 'must be "scalar", "array"'),
    ("scalar-not-hex", set_at([0, "kernel_arguments", 3, "value"], "2.0"), "/0/kernel_arguments/3/value",
     "starting with 0x"),
    ("scalar-number", set_at([0, "kernel_arguments", 4, "value"], 16), "/0/kernel_arguments/4/value",
     "must be a hexadecimal string"),
    ("array-size-zero", set_at([0, "kernel_arguments", 0, "size"], 0), "/0/kernel_arguments/0/size",
     "must be a number of bytes > 0"),
    ("array-space-unknown", set_at([0, "kernel_arguments", 0, "address_space"], "private"),
     "/0/kernel_arguments/0/address_space", 'must be "global", "local" or "constant"'),
    ("array-flag-unknown", set_at([0, "kernel_arguments", 0, "flags"], ["CL_MEM_FAST"]),
     "/0/kernel_arguments/0/flags/0", "unknown cl_mem_flags name"),
    ("array-flags-conflict", set_at([0, "kernel_arguments", 0, "flags"], ["CL_MEM_READ_ONLY", "CL_MEM_WRITE_ONLY"]),
     "/0/kernel_arguments/0/flags", "cannot be combined"),
    ("array-data-absent", set_at([0, "kernel_arguments", 1, "data"], "missing.bin"),
     "/0/kernel_arguments/1/data", "'missing.bin' not found"),
    ("array-data-too-long", set_at([0, "kernel_arguments", 1, "data"], "big.bin"),
     "/0/kernel_arguments/1/data", "has 100 bytes, more than the array's size of 64 bytes"),
    ("local-array-with-data", set_at([0, "kernel_arguments", 2, "data"], "in.bin"),
     "/0/kernel_arguments/2/data", "a local array cannot have data"),
    ("host-calls-not-array", set_at([0, "host_api_calls"], "clEnqueueNDRangeKernel"), "/0/host_api_calls",
     "must be an array"),
    ("host-call-missing-field", delete_at([0, "host_api_calls", 0, "compilation_unit"]), "/0/host_api_calls/0",
     '"compilation_unit" is required'),
    ("host-call-line-zero", set_at([0, "host_api_calls", 0, "line_number"], 0),
     "/0/host_api_calls/0/line_number", "must be a line number > 0"),
]


@pytest.mark.parametrize("change,pointer,fragment", [c[1:] for c in STATIC_CASES], ids=[c[0] for c in STATIC_CASES])
def test_static_problem(tmp_path: Path, change: Any, pointer: str, fragment: str) -> None:
    path = write_case(tmp_path, mutate(change))
    with pytest.raises(InputError) as info:
        gpuverify.load(path)
    err = info.value
    assert err.exit_status == 2
    matching = [p for p in err.problems if p.where == pointer and fragment in p.message]
    assert matching, f"no problem at {pointer} containing {fragment!r}; got {[str(p) for p in err.problems]}"
    assert all(p.file == str(path.resolve()) for p in err.problems)
    assert str(path.resolve()) in str(err)


def test_good_file_loads(tmp_path: Path) -> None:
    insts, warnings = gpuverify.load(write_case(tmp_path, [GOOD]))
    assert warnings == []
    [inst] = insts
    assert inst.global_size == (16,) and inst.local_size == (4,) and inst.entry_point == "scale"
    assert inst.kernel_arguments is not None and len(inst.kernel_arguments) == 5


def test_invalid_json_names_line_and_column(tmp_path: Path) -> None:
    path = write_case(tmp_path, '[{"language": "OpenCL",\n  "kernel_file": }]')
    with pytest.raises(InputError) as info:
        gpuverify.load(path)
    assert info.value.problems[0].where == "line 2, column 18"
    assert "invalid JSON" in info.value.problems[0].message


def test_top_level_object_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        gpuverify.load(write_case(tmp_path, GOOD))
    assert info.value.problems[0].where == "/"
    assert "must be a JSON array" in info.value.problems[0].message


def test_all_problems_reported_at_once(tmp_path: Path) -> None:
    doc = mutate(set_at([0, "language"], "CUDA"))
    doc[0]["global_size"] = [0]
    doc.append({"language": "OpenCL"})
    with pytest.raises(InputError) as info:
        gpuverify.load(write_case(tmp_path, doc))
    wheres = {p.where for p in info.value.problems}
    assert {"/0/language", "/0/global_size/0", "/1"} <= wheres


def test_unknown_field_is_a_warning(tmp_path: Path) -> None:
    doc = mutate(set_at([0, "kernel_name"], "scale"))
    _, warnings = gpuverify.load(write_case(tmp_path, doc))
    assert [(w.where, w.warning) for w in warnings] == [("/0/kernel_name", True)]


# --- problems found against the built kernel (PoCL) -------------------------------------------

KERNEL_CASES = [
    ("argument-count", set_at([0, "kernel_arguments"], GOOD["kernel_arguments"][:4]), "/0/kernel_arguments",
     "has 4 entries but kernel scale("),
    ("scalar-for-buffer", set_at([0, "kernel_arguments", 0], {"type": "scalar", "value": "0x1"}),
     "/0/kernel_arguments/0/type", 'is "scalar" but parameter 0 of scale is "float* out"'),
    ("array-for-scalar", set_at([0, "kernel_arguments", 4], {"type": "array", "size": 4}),
     "/0/kernel_arguments/4/type", 'expected "scalar"'),
    ("hex-too-wide", set_at([0, "kernel_arguments", 4, "value"], "0x100000000"), "/0/kernel_arguments/4/value",
     "needs 5 bytes but parameter 4 (int n) has 4"),
    ("space-mismatch", set_at([0, "kernel_arguments", 2, "address_space"], "global"),
     "/0/kernel_arguments/2/address_space", "is declared __local"),
    ("entry-not-in-source", set_at([0, "entry_point"], "scale2"), "/0/entry_point", "no kernel named 'scale2'"),
    ("image-for-buffer", set_at([0, "kernel_arguments", 0], {"type": "image"}), "/0/kernel_arguments/0/type",
     'is "image"'),
    ("compile-error", set_at([0, "compiler_flags"], "-DUNDEFINED_SYMBOL -Dfloat=struct"), "/0/kernel_file",
     "build failed"),
]


@pytest.mark.parametrize("change,pointer,fragment", [c[1:] for c in KERNEL_CASES], ids=[c[0] for c in KERNEL_CASES])
def test_kernel_problem(tmp_path: Path, change: Any, pointer: str, fragment: str) -> None:
    path = write_case(tmp_path, mutate(change))
    out = tmp_path / "out"
    with pytest.raises(InputError) as info:
        run_instantiations(path, out, device="Portable", report=lambda s: None)
    matching = [p for p in info.value.problems if p.where == pointer and fragment in p.message]
    assert matching, f"no problem at {pointer} containing {fragment!r}; got {[str(p) for p in info.value.problems]}"
    assert not out.exists(), "a failed run must not leave outputs"


def test_index_out_of_range(tmp_path: Path) -> None:
    path = write_case(tmp_path, [GOOD])
    with pytest.raises(InputError) as info:
        run_instantiations(path, None, index=3, device="Portable", report=lambda s: None)
    assert "--index 3: the file holds 1 instantiation (0..0)" in str(info.value)


def test_image_without_shape(tmp_path: Path) -> None:
    (tmp_path / "img.cl").write_text("__kernel void k(read_only image3d_t im, __global float4 *o) "
                                     "{ o[0] = (float4)(0); }\n")
    path = tmp_path / "img.json"
    path.write_text(json.dumps([{"language": "OpenCL", "kernel_file": "img.cl", "global_size": [4],
                                 "entry_point": "k", "kernel_arguments": [{"type": "image"}, {"type": "array"}]}]))
    with pytest.raises(InputError) as info:
        run_instantiations(path, None, device="Portable", report=lambda s: None)
    [p] = info.value.problems
    assert p.where == "/0/kernel_arguments/0" and "image3d_t" in p.message and "no image description" in p.message


def test_validate_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kernellab.cli import main
    good = write_case(tmp_path, [GOOD])
    assert main(["validate", str(good)]) == 0
    assert "valid kernel-instantiation file (1 instantiation)" in capsys.readouterr().out
    bad = write_case(tmp_path, mutate(set_at([0, "global_size", 0], 0)))
    assert main(["validate", str(bad)]) == 2
    assert f"{bad.resolve()}: /0/global_size/0: must be > 0" in capsys.readouterr().err
    extra = write_case(tmp_path, mutate(set_at([0, "kernel_name"], "x")))
    assert main(["validate", "--strict", str(extra)]) == 2
    assert "/0/kernel_name: unknown field" in capsys.readouterr().err
