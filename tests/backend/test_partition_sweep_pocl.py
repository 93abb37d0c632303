"""``kernellab partition-sweep``: table, best P, plot and JSON; its JSON feeds ``schedule --timings``."""
from __future__ import annotations

import json

from kernellab.cli import main
from test_pyschedcl_helpers import vecadd_spec


def test_sweep_table_plot_json_and_schedule_timings(tmp_path, capsys):
    spec = vecadd_spec(tmp_path)
    plot, doc = tmp_path / "sweep.png", tmp_path / "sweep.json"
    rc = main(["partition-sweep", str(spec), "--set", "dataset=4096", "--partitions", "0,3-4,10", "--warmup", "0",
               "--repeats", "2", "--plot", str(plot), "--json", str(doc)])
    out = capsys.readouterr().out
    assert rc == 0
    rows = [line.split() for line in out.splitlines() if line[:3].strip().isdigit()]
    assert [int(r[0]) for r in rows] == [0, 3, 4, 10]
    assert [int(r[1]) for r in rows] == [0, 1232, 1632, 4096]  # splits on 16-item workgroups
    assert "best partition: P=" in out and "<- best" in out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    sweep = json.loads(doc.read_text())
    assert sweep["kind"] == "kernellab.partition-sweep" and sweep["kernel"] == "VectorAdd"
    assert sweep["global_size"] == [4096] and len(sweep["points"]) == 4
    assert all(pt["consistent"] and pt["identical"] and pt["makespan_ns"] > 0 and len(pt["makespans_ns"]) == 2 for pt in sweep["points"])
    assert sweep["best_partition"] == min(sweep["points"], key=lambda p: (p["makespan_ns"], p["partition"]))["partition"]

    task = tmp_path / "set.task"
    task.write_text("VectorAdd.json 10 4096\nVectorAdd.json 0 2048\n")
    trace = tmp_path / "trace.json"
    assert main(["schedule", str(task), "--timings", str(doc), "--json", str(trace)]) == 0
    tasks = {t["id"]: t for t in json.loads(trace.read_text())["tasks"]}
    assert tasks["0"]["cost_source"] == "sweep"  # the sweep measured this kernel at this NDRange
    assert tasks["1"]["cost_source"] == "work-items"  # ...but not at 2048
