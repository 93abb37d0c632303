"""The HEFT-like planner, without a device."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernellab.errors import InputError
from kernellab.formats.pyschedcl.graph import load_graph, load_task_file
from kernellab.runtime.schedule import Timings, load_workload, plan, resolve_graph

SPEC = {"name": "k", "src": "k.cl", "workDimension": 1, "globalWorkSize": "[dataset]",
        "inputBuffers": [{"break": 1, "pos": 0, "size": "dataset", "type": "float"}],
        "outputBuffers": [{"break": 1, "pos": 1, "size": "dataset", "type": "float"}]}


def setup(tmp: Path, text: str, name: str = "dag.graph") -> Path:
    (tmp / "k.cl").write_text("__kernel void k(__global const float* a, __global float* b) {}")
    (tmp / "k.json").write_text(json.dumps(SPEC))
    p = tmp / name
    p.write_text(text)
    return p


def sweep_doc(tmp: Path, n: int, cpu_s: float, gpu_s: float, splits: dict | None = None) -> Path:
    p = tmp / f"sweep{n}.json"
    points = [{"partition": 0, "makespan_ns": cpu_s * 1e9}, {"partition": 10, "makespan_ns": gpu_s * 1e9}]
    points += [{"partition": q, "makespan_ns": c * 1e9} for q, c in (splits or {}).items()]
    p.write_text(json.dumps({"kind": "kernellab.partition-sweep", "kernel": "k", "global_size": [n], "points": points}))
    return p


def test_independent_tasks_balance_over_lanes(tmp_path):
    g = load_graph(setup(tmp_path, "".join(f'{i} k.json {{"dataset": 1000}}\n' for i in range(4)) + "---\n"))
    p = plan(g, resolve_graph(g))
    assert sorted(len(v) for v in p.order.values()) == [2, 2]
    assert p.makespan == pytest.approx(2000e-9)


def test_dependencies_and_rank_order(tmp_path):
    g = load_graph(setup(tmp_path, '0 k.json {"dataset": 100}\n1 k.json {"dataset": 100}\n'
                                   '2 k.json {"dataset": 100}\n---\n0 1 -> 2 0\n1 1 -> 0 0\n'))
    p = plan(g, resolve_graph(g))
    # 1 feeds 0 feeds 2: a chain, so each starts when its predecessor finishes
    assert p.tasks["0"].start == pytest.approx(p.tasks["1"].finish)
    assert p.tasks["2"].start == pytest.approx(p.tasks["0"].finish)


def test_sweep_timings_choose_the_faster_lane(tmp_path):
    g = load_graph(setup(tmp_path, '0 k.json {"dataset": 64}\n1 k.json {"dataset": 128}\n---\n'))
    kernels = resolve_graph(g)
    t = Timings.load([sweep_doc(tmp_path, 64, cpu_s=0.001, gpu_s=0.010),
                      sweep_doc(tmp_path, 128, cpu_s=0.050, gpu_s=0.002)])
    p = plan(g, kernels, t)
    assert p.tasks["0"].placement == "cpu" and p.tasks["1"].placement == "gpu"
    assert p.tasks["0"].source == "sweep"
    assert p.makespan == pytest.approx(0.002)


def test_task_partitions_are_kept_unless_free(tmp_path):
    g = load_task_file(setup(tmp_path, "k.json 0 64\nk.json 0 64\nk.json 7 64\n", "set.task"))
    kernels = resolve_graph(g)
    p = plan(g, kernels)
    assert [p.tasks[t].placement for t in "012"] == ["cpu", "cpu", "split"]
    assert p.tasks["1"].start == pytest.approx(p.tasks["0"].finish)
    p = plan(g, kernels, free=True)
    assert {p.tasks["0"].placement, p.tasks["1"].placement} == {"cpu", "gpu"}


def test_edge_sizes_must_match(tmp_path):
    g = load_graph(setup(tmp_path, '0 k.json {"dataset": 64}\n1 k.json {"dataset": 32}\n---\n0 1 -> 1 0\n'))
    with pytest.raises(InputError) as info:
        resolve_graph(g)
    assert info.value.problems[0].where == "line 4"
    assert "64 elements" in str(info.value) and "32" in str(info.value)


def test_unresolvable_task_names_its_line(tmp_path):
    g = load_graph(setup(tmp_path, '0 k.json {"size": 64}\n---\n'))
    with pytest.raises(InputError) as info:
        resolve_graph(g)
    wheres = [p.where for p in info.value.problems]
    assert "/globalWorkSize" in wheres and "line 1" in wheres


def test_workload_detection_and_bad_timings(tmp_path):
    assert load_workload(setup(tmp_path, "k.json 10 64\n", "set.task")).edges == []
    assert len(load_workload(setup(tmp_path, '0 k.json {"dataset": 8}\n---\n', "x.txt")).tasks) == 1
    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": "something else"}')
    with pytest.raises(InputError, match="not a partition-sweep document"):
        Timings.load([bad])
    bad.write_text("{")
    with pytest.raises(InputError) as info:
        Timings.load([bad])
    assert info.value.problems[0].where.startswith("line 1")


def test_free_task_may_take_the_best_measured_split(tmp_path):
    g = load_graph(setup(tmp_path, '0 k.json {"dataset": 64}\n---\n'))
    t = Timings.load([sweep_doc(tmp_path, 64, cpu_s=0.004, gpu_s=0.003, splits={4: 0.0025, 6: 0.0015, 7: 0.002})])
    p = plan(g, resolve_graph(g), t)
    assert (p.tasks["0"].placement, p.tasks["0"].partition) == ("split", 6)
    assert p.order == {"gpu": ["0"], "cpu": ["0"]}
    t = Timings.load([sweep_doc(tmp_path, 64, cpu_s=0.004, gpu_s=0.001, splits={6: 0.0015})])
    assert plan(g, resolve_graph(g), t).tasks["0"].placement == "gpu"
