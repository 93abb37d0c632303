"""examples/pyschedcl: the spec runs (and passes `run --check`, and `bless` writes its sidecar),
the task set and the .graph DAG run under `schedule`, each output as NumPy computes it."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from helpers.scenarios import kernellab
from kernellab.formats.pyschedcl.spec import load_spec
from kernellab.runtime.host_data import fill_inputs

EXAMPLE = Path(__file__).parents[2] / "examples" / "pyschedcl"


def seeded(spec: str, variables: dict[str, float], seed: int, stream: int = 0) -> dict[int, np.ndarray]:
    return fill_inputs(load_spec(EXAMPLE / spec).resolve(variables), seed, stream=stream)


def test_the_spec_runs_split_and_passes_its_check(tmp_path: Path) -> None:
    proc = kernellab("run", EXAMPLE / "VectorAdd.json", "--output", tmp_path, "--check")
    assert proc.returncode == 0, proc.stderr
    assert "partition 5" in proc.stderr and "check: 1 output matches VectorAdd.expect.json" in proc.stderr
    host = seeded("VectorAdd.json", {"dataset": 1024}, 0)
    np.testing.assert_array_equal(np.load(tmp_path / "arg2.npy"), host[0] + host[1])


def test_bless_writes_the_example_sidecar_again(tmp_path: Path) -> None:
    copy = tmp_path / "pyschedcl"
    shutil.copytree(EXAMPLE, copy)
    proc = kernellab("bless", copy / "VectorAdd.json", "--force")
    assert proc.returncode == 0, proc.stderr
    assert "blessed 1 output of" in proc.stderr
    assert json.loads((copy / "VectorAdd.expect.json").read_text()) == \
        json.loads((EXAMPLE / "VectorAdd.expect.json").read_text())
    np.testing.assert_array_equal(np.load(copy / "VectorAdd.expected" / "arg2.npy"),
                                  np.load(EXAMPLE / "VectorAdd.expected" / "arg2.npy"))


def test_the_task_set_runs_every_line(tmp_path: Path) -> None:
    proc = kernellab("schedule", EXAMPLE / "vectors.task", "-o", tmp_path, "--seed", "3")
    assert proc.returncode == 0, proc.stderr
    for tid, n in (("0", 4096), ("1", 4096), ("2", 2048)):
        host = seeded("VectorAdd.json", {"dataset": n}, 3, int(tid))
        np.testing.assert_array_equal(np.load(tmp_path / f"task{tid}" / "arg2.npy"), host[0] + host[1])
    x = seeded("Scale.json", {"dataset": 2048, "k": 3}, 3, 3)[0]
    np.testing.assert_array_equal(np.load(tmp_path / "task3" / "arg1.npy"), np.float32(3) * x)


def test_the_graph_runs_its_dag(tmp_path: Path) -> None:
    proc = kernellab("schedule", EXAMPLE / "pipeline.graph", "-o", tmp_path, "--seed", "1",
                     "--trace", tmp_path / "trace.json")
    assert proc.returncode == 0, proc.stderr
    host = seeded("VectorAdd.json", {"dataset": 1024}, 1, 0)
    c0 = host[0] + host[1]
    np.testing.assert_array_equal(np.load(tmp_path / "task0" / "arg2.npy"), c0)
    np.testing.assert_array_equal(np.load(tmp_path / "task1" / "arg1.npy"), np.float32(3) * c0)
    np.testing.assert_array_equal(np.load(tmp_path / "task2" / "arg2.npy"), c0 + np.float32(3) * c0)
    events = json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    assert {e["args"]["task"] for e in events if e.get("cat") == "task"} == {"0", "1", "2"}


def test_kernellab_test_leaves_the_spec_out_saying_so() -> None:
    proc = kernellab("test", EXAMPLE.parent, "--list")
    assert proc.returncode == 0, proc.stderr
    assert "pyschedcl/VectorAdd.json: a PySchedCL spec, left out" in proc.stderr
    assert "VectorAdd" not in proc.stdout and "suite/vector_add/add.json" in proc.stdout
