"""The Python API on lavapipe: kernellab.Session and kernellab.run, arrays in and out."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import kernellab
from helpers.devices import POCL, opencl_device
from helpers.scenarios import vector_add, write
from kernellab.errors import InputError, UsageError


@pytest.fixture(scope="module")
def session():  # type: ignore[no-untyped-def]
    with kernellab.Session() as s:
        yield s


def test_import_is_light() -> None:
    code = "import sys, kernellab; assert 'numpy' not in sys.modules and 'vulkan' not in sys.modules; " \
           "kernellab.Session; assert 'numpy' in sys.modules and 'vulkan' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_arrays_in_and_out(session: kernellab.Session, tmp_path: Path) -> None:
    path, _ = vector_add(tmp_path, 100)
    a = np.linspace(-1, 1, 100, dtype=np.float32)
    out = session.run(path, inputs={"a": a})
    assert set(out) == {"c"} and out["c"].dtype == np.int8 and out["c"].shape == (400,)
    np.testing.assert_array_equal(out["c"].view(np.float32), a + 2.0)
    # the same session, another input: nothing of the first run leaks into the second
    b = np.arange(100, dtype=np.float32)
    out2 = session.run(path, inputs={"a": b, "b": b})
    np.testing.assert_array_equal(out2["c"].view(np.float32), 2 * b)
    assert not (tmp_path / "c.npy").exists()  # no files unless asked


def test_inputs_replace_files_that_do_not_exist(session: kernellab.Session, tmp_path: Path) -> None:
    path, doc = vector_add(tmp_path, 64)
    doc["resources"][2]["buffer"]["src"] = "nowhere.npy"
    write(path, doc)
    out = session.run(path, inputs={"a": np.ones(64, np.float32), "count": np.array([32], np.uint32)})
    c = out["c"].view(np.float32)
    np.testing.assert_array_equal(c[:32], 3.0)
    np.testing.assert_array_equal(c[32:], 0.0)  # count=32 from the push-constant input


def test_outputs_by_name_and_files_on_request(session: kernellab.Session, tmp_path: Path) -> None:
    path, _ = vector_add(tmp_path, 16)
    out = session.run(path, outputs=["a", "c"], write_files=True, output_dir=tmp_path / "out")
    np.testing.assert_array_equal(out["a"].view(np.float32), np.arange(16, dtype=np.float32))
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "c.npy"), out["c"])


def test_bad_inputs_are_usage_errors(session: kernellab.Session, tmp_path: Path) -> None:
    path, _ = vector_add(tmp_path, 16)
    with pytest.raises(UsageError, match="inputs name no resource of the workload: nope"):
        session.run(path, inputs={"nope": np.zeros(1)})
    with pytest.raises(UsageError, match="do not fit the buffer"):
        session.run(path, inputs={"a": np.zeros(100, np.float32)})
    with pytest.raises(InputError):
        session.run(tmp_path / "missing.json")
    # the session still works after errors
    assert session.run(path)["c"].view(np.float32)[3] == 5.0


def test_run_workload_reports_phases_and_gpu_time(tmp_path: Path) -> None:
    path, _ = vector_add(tmp_path, 16)
    with kernellab.Session(timestamps=True) as s:
        run = s.run_workload(path)
    # issue 20: compiling (and checking) the shaders is a phase of its own
    assert [p.name for p in run.phases] == ["parse", "setup", "compile", "setup", "pipeline_creation",
                                           "run", "read_back"]
    assert all(p.end >= p.start for p in run.phases)
    labels = [t.label for submit in run.gpu_timings for t in submit]
    assert labels == ["0:dispatch_compute:add"]


def test_one_shot_run(tmp_path: Path) -> None:
    path, _ = vector_add(tmp_path, 8)
    out = kernellab.run(path, {"b": np.full(8, 10, np.float32)})
    np.testing.assert_array_equal(out["c"].view(np.float32), np.arange(8, dtype=np.float32) + 10)


def test_recycled_device_gives_the_same_results(tmp_path: Path) -> None:
    path, _ = vector_add(tmp_path, 32)
    with kernellab.Session(recycle_after=2) as s:
        results = [s.run(path, inputs={"a": np.full(32, i, np.float32)})["c"].view(np.float32)[0] for i in range(5)]
    assert results == [2.0, 3.0, 4.0, 5.0, 6.0]


def test_a_loaded_scenario_is_a_workload(session: kernellab.Session, tmp_path: Path) -> None:
    from kernellab.formats.scenario import load_scenario

    path, _ = vector_add(tmp_path, 8)
    scenario, _ = load_scenario(path)
    assert session.run(scenario)["c"].view(np.float32)[7] == 9.0


def test_docs_example_runs(tmp_path: Path) -> None:
    """docs/python-api.md's example, as written there."""
    doc = (Path(__file__).parents[2] / "docs" / "python-api.md").read_text()
    code = doc.split("```python\n", 1)[1].split("```", 1)[0]
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=Path(__file__).parents[2])
    assert proc.returncode == 0, proc.stderr
    assert "c[:4] = [" in proc.stdout


def test_opencl_session_runs_opencl_c(tmp_path: Path) -> None:
    (tmp_path / "scale.cl").write_text(
        "__kernel void scale(__global const float *x, __global float *y, float k) {\n"
        "  size_t i = get_global_id(0); y[i] = x[i] * k;\n}\n")
    np.save(tmp_path / "x.npy", np.arange(64, dtype=np.float32))
    np.save(tmp_path / "k.npy", np.array([3.0], np.float32))
    path = write(tmp_path / "s.json", {
        "resources": [{"shader": {"uid": "scale", "src": "scale.cl", "type": "OpenCL-C", "entry": "scale",
                                  "push_constants_size": 4}},
                      {"buffer": {"uid": "x", "size": 256, "shader_access": "readonly", "src": "x.npy"}},
                      {"buffer": {"uid": "y", "size": 256, "shader_access": "writeonly", "dst": "y.npy"}},
                      {"raw_data": {"uid": "k", "src": "k.npy"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "scale", "push_data_ref": "k", "rangeND": [64],
                                           "bindings": [{"set": 0, "id": 0, "resource_ref": "x"},
                                                        {"set": 0, "id": 1, "resource_ref": "y"}]}}]})
    with kernellab.Session(opencl_device(POCL), backend="opencl") as s:
        assert POCL in s.device
        first = s.run(path)["y"].view(np.float32)
        second = s.run(path, inputs={"k": np.array([-1.0], np.float32)})["y"].view(np.float32)
    np.testing.assert_array_equal(first, np.arange(64, dtype=np.float32) * 3)
    np.testing.assert_array_equal(second, -np.arange(64, dtype=np.float32))
