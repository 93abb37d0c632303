"""Typed inputs in the Python API (issue 20): an input's type and size are checked against the
buffer and the element type the shader declares, with an error naming the uid; timings print."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import kernellab
from helpers.devices import POCL, opencl_device
from helpers.scenarios import vector_add, write
from kernellab.errors import UsageError
from kernellab.session import InputTypeError


@pytest.fixture(scope="module")
def session():  # type: ignore[no-untyped-def]
    with kernellab.Session() as s:
        yield s


def test_a_list_is_a_type_error_naming_the_uid_and_the_type_to_use(session: kernellab.Session,
                                                                    tmp_path: Path) -> None:
    path, _ = vector_add(tmp_path, 3)
    with pytest.raises(TypeError, match=r"input 'a' is a list.*np\.asarray\(value, dtype=np\.float32\)") as info:
        session.run(path, inputs={"a": [1, 2, 3]})
    assert isinstance(info.value, InputTypeError) and isinstance(info.value, UsageError)


def test_an_array_of_another_element_type_is_refused(session: kernellab.Session, tmp_path: Path) -> None:
    path, _ = vector_add(tmp_path, 1000)
    # 500 float64 are exactly the 4000 bytes of the 1000-float buffer: refused all the same
    with pytest.raises(ValueError, match=r"input 'a': an array of float64, but the shader reads buffer 'a' as "
                                         r"float32.*astype\(np\.float32\)"):
        session.run(path, inputs={"a": np.zeros(500, np.float64)})
    with pytest.raises(ValueError, match="input 'b': an array of int32"):
        session.run(path, inputs={"b": np.zeros(1000, np.int32)})


def test_raw_bytes_and_outputs_go_back_in_unchanged(session: kernellab.Session, tmp_path: Path) -> None:
    path, _ = vector_add(tmp_path, 16)
    first = session.run(path)["c"]  # int8: the buffer's raw bytes
    second = session.run(path, inputs={"a": first, "b": np.zeros(16, np.float32).tobytes()})
    np.testing.assert_array_equal(second["c"].view(np.float32), first.view(np.float32))


def test_a_raw_data_input_must_be_an_array(session: kernellab.Session, tmp_path: Path) -> None:
    path, _ = vector_add(tmp_path, 16)
    with pytest.raises(InputTypeError, match="input 'count' is a int, not an array: raw data 'count'"):
        session.run(path, inputs={"count": 16})
    out = session.run(path, inputs={"count": np.uint32(8)})["c"].view(np.float32)
    assert out[7] == 9.0 and out[8] == 0.0


def test_an_input_for_a_shader_is_refused(session: kernellab.Session, tmp_path: Path) -> None:
    path, _ = vector_add(tmp_path, 16)
    with pytest.raises(UsageError, match="input 'add' names a shader"):
        session.run(path, inputs={"add": np.zeros(4, np.uint8)})


def test_a_block_mixing_types_takes_any_array(session: kernellab.Session, tmp_path: Path) -> None:
    (tmp_path / "mix.comp").write_text("""#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer M { uint n; float v[]; };
void main() { v[0] = float(n); }
""")
    path = write(tmp_path / "mix.json", {
        "resources": [{"shader": {"uid": "mix", "src": "mix.comp", "type": "GLSL"}},
                      {"buffer": {"uid": "m", "size": 8, "shader_access": "readwrite", "dst": "m.npy"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "mix", "rangeND": [1],
                                           "bindings": [{"set": 0, "id": 0, "resource_ref": "m"}]}}]})
    out = session.run(path, inputs={"m": np.array([7, 0], np.uint32)})["m"]
    assert out.view(np.float32)[1] == 7.0


def test_gpu_timings_print_their_commands(tmp_path: Path) -> None:
    path, _ = vector_add(tmp_path, 16)
    with kernellab.Session(timestamps=True) as s:
        run = s.run_workload(path)
    text = repr(run.gpu_timings)
    assert text.startswith("RepeatTimings([[CommandTiming(") and "0:dispatch_compute:add" in text


def test_opencl_c_buffers_are_typed_by_their_pointer_on_the_opencl_backend(tmp_path: Path) -> None:
    (tmp_path / "neg.cl").write_text("__kernel void neg(__global const int *x, __global int *y) {\n"
                                     "  size_t i = get_global_id(0); y[i] = -x[i];\n}\n")
    path = write(tmp_path / "s.json", {
        "resources": [{"shader": {"uid": "neg", "src": "neg.cl", "type": "OpenCL-C", "entry": "neg"}},
                      {"buffer": {"uid": "x", "size": 64, "shader_access": "readonly"}},
                      {"buffer": {"uid": "y", "size": 64, "shader_access": "writeonly", "dst": "y.npy"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "neg", "rangeND": [16],
                                           "bindings": [{"set": 0, "id": 0, "resource_ref": "x"},
                                                        {"set": 0, "id": 1, "resource_ref": "y"}]}}]})
    with kernellab.Session(opencl_device(POCL), backend="opencl") as s:
        with pytest.raises(ValueError, match="input 'x': an array of float32, but the shader reads buffer 'x' as int32"):
            s.run(path, inputs={"x": np.zeros(16, np.float32)})
        y = s.run(path, inputs={"x": np.arange(16, dtype=np.int32)})["y"].view(np.int32)
    np.testing.assert_array_equal(y, -np.arange(16, dtype=np.int32))


def test_an_image_input_must_hold_its_format_s_values(session: kernellab.Session, tmp_path: Path) -> None:
    (tmp_path / "load.comp").write_text("""#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0, r32f) uniform readonly image2D src;
layout(set = 0, binding = 1) writeonly buffer O { float o[]; };
void main() { ivec2 p = ivec2(gl_GlobalInvocationID.xy); o[p.y * 4 + p.x] = imageLoad(src, p).r; }
""")
    path = write(tmp_path / "img.json", {
        "resources": [{"shader": {"uid": "load", "src": "load.comp", "type": "GLSL"}},
                      {"image": {"uid": "src", "dims": [1, 4, 4, 1], "format": "VK_FORMAT_R32_SFLOAT",
                                 "shader_access": "image_read"}},
                      {"buffer": {"uid": "o", "size": 64, "shader_access": "writeonly", "dst": "o.npy"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "load", "rangeND": [4, 4],
                                           "bindings": [{"set": 0, "id": 0, "resource_ref": "src"},
                                                        {"set": 0, "id": 1, "resource_ref": "o"}]}}]})
    texels = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    with pytest.raises(ValueError, match="input 'src': an array of float64, but image 'src' is "
                                         "VK_FORMAT_R32_SFLOAT, whose values are float32"):
        session.run(path, inputs={"src": texels.astype(np.float64)})
    np.testing.assert_array_equal(session.run(path, inputs={"src": texels})["o"].view(np.float32), texels.ravel())
