"""A three-kernel DAG scheduled on PoCL gives what running the kernels one by one gives."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from kernellab.cli import main
from kernellab.formats.pyschedcl.graph import load_graph
from kernellab.formats.pyschedcl.spec import load_spec
from kernellab.runtime.host_data import fill_inputs
from kernellab.runtime.partition import Session, choose_targets, execute
from kernellab.runtime.schedule import execute_plan, plan, resolve_graph
from test_pyschedcl_helpers import vecadd_spec, write_spec

SCALE = """
__kernel void scale(__global const float* x, __global float* y, float k, int n) {
    int i = get_global_id(0);
    if (i < n) y[i] = k * x[i] + 1.0f;
}
"""


def make_dag(tmp: Path, partitions=(10, 0, 4)) -> Path:
    vecadd_spec(tmp)
    write_spec(tmp, "scale", SCALE, {
        "workDimension": 1, "globalWorkSize": "[dataset]", "localWorkSize": "[8]",
        "inputBuffers": [{"break": 1, "pos": 0, "size": "dataset", "type": "float"}],
        "outputBuffers": [{"break": 1, "pos": 1, "size": "dataset", "type": "float"}],
        "varArguments": [{"pos": 2, "type": "float", "value": "k"},
                         {"pos": 3, "type": "int", "value": "partition_round(dataset, size_percent)"}]})
    g = tmp / "dag.graph"
    p0, p1, p2 = partitions
    g.write_text(f'0 VectorAdd.json {{"dataset": 256, "partition": {p0}}}\n'
                 f'1 scale.json {{"dataset": 256, "k": 3, "partition": {p1}}}\n'
                 f'2 VectorAdd.json {{"dataset": 256, "partition": {p2}}}\n'
                 "---\n"
                 "0 2 -> 1 0\n"
                 "0 2 -> 2 0\n"
                 "1 1 -> 2 1\n"
                 "---\n")
    return g


def one_by_one(session, tmp: Path, seed: int) -> dict[str, np.ndarray]:
    add = load_spec(tmp / "VectorAdd.json").resolve({"dataset": 256})
    scale = load_spec(tmp / "scale.json").resolve({"dataset": 256, "k": 3})
    h0 = fill_inputs(add, seed, stream=0)
    c = execute(session, add, h0, 10).outputs[2]
    h1 = fill_inputs(scale, seed, stream=1)
    h1[0] = c
    d = execute(session, scale, h1, 10).outputs[1]
    h2 = fill_inputs(add, seed, stream=2)
    h2[0], h2[1] = c, d
    e = execute(session, add, h2, 10).outputs[2]
    assert np.allclose(e, c + (3 * c + 1))
    return {"0": c, "1": d, "2": e}


def test_dag_matches_one_by_one(tmp_path):
    graph = load_graph(make_dag(tmp_path))
    kernels = resolve_graph(graph)
    the_plan = plan(graph, kernels)
    assert [the_plan.tasks[t].placement for t in "012"] == ["gpu", "cpu", "split"]
    cpu, gpu = choose_targets()
    with Session(cpu, gpu) as session:
        result = execute_plan(session, graph, the_plan, seed=7)
        expected = one_by_one(session, tmp_path, seed=7)
    assert np.array_equal(result.outputs["0"][2], expected["0"])
    assert np.array_equal(result.outputs["1"][1], expected["1"])
    assert np.array_equal(result.outputs["2"][2], expected["2"])
    runs = result.runs
    assert runs["1"].start_s >= runs["0"].end_s and runs["2"].start_s >= runs["1"].end_s


def test_schedule_command_writes_outputs_trace_and_gantt(tmp_path, capsys):
    g = make_dag(tmp_path, partitions=(10, 10, 10))
    out = tmp_path / "out"
    rc = main(["schedule", str(g), "--free", "--seed", "7", "-o", str(out), "--json", str(tmp_path / "trace.json"),
               "--trace", str(tmp_path / "chrome.json"), "--gantt", str(tmp_path / "gantt.png")])
    assert rc == 0
    trace = json.loads((tmp_path / "trace.json").read_text())
    # --trace: Chrome trace events, as run --trace and test --trace write them
    chrome = json.loads((tmp_path / "chrome.json").read_text())["traceEvents"]
    slices = {e["args"]["task"]: e for e in chrome if e.get("cat") == "task"}
    assert set(slices) == {"0", "1", "2"} and all(e["ph"] == "X" and e["dur"] >= 0 for e in slices.values())
    assert slices["2"]["ts"] >= slices["1"]["ts"] + slices["1"]["dur"] - 0.01
    assert {e["args"]["name"].split(" lane")[0] for e in chrome if e["name"] == "process_name"} == \
        {"GPU-class", "CPU-class"}
    assert sum(e["ph"] == "s" for e in chrome) == 3  # one flow arrow per edge
    assert trace["kind"] == "kernellab.schedule-trace"
    assert {t["id"] for t in trace["tasks"]} == {"0", "1", "2"}
    by_id = {t["id"]: t for t in trace["tasks"]}
    assert by_id["2"]["depends"] == ["0", "1"]
    assert all(t["placement"] in ("gpu", "cpu") for t in trace["tasks"])
    assert by_id["2"]["start_s"] >= by_id["1"]["end_s"]
    assert (tmp_path / "gantt.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    cpu, gpu = choose_targets()
    with Session(cpu, gpu) as session:
        expected = one_by_one(session, tmp_path, seed=7)
    assert np.array_equal(np.load(out / "task2" / "arg2.npy"), expected["2"])
    assert sorted(p.name for p in out.iterdir()) == ["task0", "task1", "task2"]
    assert "makespan" in capsys.readouterr().out


def test_task_file_runs_every_line(tmp_path, capsys):
    vecadd_spec(tmp_path)
    t = tmp_path / "set.task"
    t.write_text("VectorAdd.json 10 64\nVectorAdd.json 0 128\nVectorAdd.json 5 96  # split\n")
    rc = main(["schedule", str(t), "-o", str(tmp_path / "o"), "--seed", "2"])
    assert rc == 0
    spec = load_spec(tmp_path / "VectorAdd.json")
    for tid, n in (("0", 64), ("1", 128), ("2", 96)):
        k = spec.resolve({"dataset": n})
        host = fill_inputs(k, 2, stream=int(tid))
        assert np.array_equal(np.load(tmp_path / "o" / f"task{tid}" / "arg2.npy"), host[0] + host[1])


def test_expanded_json_dag_matches_graph_file(tmp_path):
    """PySchedCL's expanded DAG (a JSON list with id/depends/from) runs like the .graph file."""
    g = make_dag(tmp_path, partitions=(10, 0, 10))
    add = json.loads((tmp_path / "VectorAdd.json").read_text())
    scale = json.loads((tmp_path / "scale.json").read_text())

    def task(spec, tid, partition, variables, feeds):
        t = json.loads(json.dumps(spec))
        t.update(id=tid, partition=partition, symbolicVariables=variables,
                 depends=sorted({k for k, _, _ in feeds}))
        for src_kernel, src_pos, dst_pos in feeds:
            for b in t["inputBuffers"]:
                if b["pos"] == dst_pos:
                    b["from"] = {"kernel": str(src_kernel), "pos": src_pos}
        return t

    dag = [task(add, 0, 10, {"dataset": 256}, []),
           task(scale, 1, 0, {"dataset": 256, "k": 3}, [(0, 2, 0)]),
           task(add, 2, 10, {"dataset": 256}, [(0, 2, 0), (1, 1, 1)])]
    j = tmp_path / "dag.json"
    j.write_text(json.dumps(dag))
    assert main(["schedule", str(j), "--seed", "5", "-o", str(tmp_path / "from_json")]) == 0
    assert main(["schedule", str(g), "--seed", "5", "-o", str(tmp_path / "from_graph")]) == 0
    for tid, pos in (("0", 2), ("1", 1), ("2", 2)):
        assert np.array_equal(np.load(tmp_path / "from_json" / f"task{tid}" / f"arg{pos}.npy"),
                              np.load(tmp_path / "from_graph" / f"task{tid}" / f"arg{pos}.npy"))
