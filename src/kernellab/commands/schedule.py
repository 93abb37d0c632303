"""``kernellab schedule FILE``: run a task set or a DAG of kernel specs on the available devices."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kernellab.formats.pyschedcl.graph import TaskGraph


def register(sub: Any) -> None:
    from kernellab.runtime.split_modes import SPLIT_MODES

    p = sub.add_parser("schedule", help="run a task set or DAG of PySchedCL kernel specs (HEFT-like policy)",
                       description="Run the kernels of a task file (SPEC.json PARTITION DATASET per line) or of a "
                                   "PySchedCL .graph DAG on the GPU-class and CPU-class OpenCL devices, each where it "
                                   "finishes earliest after its predecessors.")
    p.add_argument("file", type=Path, help="a task file, a .graph file or an expanded DAG (.json)")
    p.add_argument("--devices", metavar="CPU,GPU", help="CPU-class and GPU-class OpenCL devices "
                                                         "(kind cpu/gpu, index or name substring)")
    p.add_argument("--timings", type=Path, action="append", default=[], metavar="SWEEP.json",
                   help="partition-sweep --json files giving measured costs (repeatable)")
    p.add_argument("--free", action="store_true",
                   help="ignore the tasks' own partitions: the policy picks a device for every task")
    p.add_argument("--seed", type=int, default=0, help="seed of the generated input data")
    p.add_argument("--split", choices=SPLIT_MODES, default="subbuffer", help="how split tasks' parts see their share")
    p.add_argument("--output", "-o", type=Path, metavar="DIR",
                   help="write each task's outputs as DIR/task<ID>/arg<pos>.npy")
    p.add_argument("--trace", type=Path, metavar="FILE.json",
                   help="write a Chrome trace-event timeline (as run --trace and test --trace): one track per lane")
    p.add_argument("--json", type=Path, metavar="FILE.json",
                   help="write what ran where and when as kernellab's JSON (per task: lanes, devices, partition, "
                        "planned and measured times)")
    p.add_argument("--gantt", type=Path, metavar="FILE.png", help="draw the run as a Gantt chart")
    p.set_defaults(func=run)


def plot_gantt(trace: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from kernellab.outputs import atomic_open

    lanes = ["gpu", "cpu"]
    labels = [f"GPU-class\n{trace['lanes']['gpu']}", f"CPU-class\n{trace['lanes']['cpu']}"]
    colors = plt.get_cmap("tab10")
    fig, ax = plt.subplots(figsize=(9, 2.8))
    span = max([t["end_s"] for t in trace["tasks"]] + [1e-9]) * 1e3
    for n, task in enumerate(trace["tasks"]):
        for lane in task["lanes"]:
            y = lanes.index(lane)
            width = max(task["end_s"] - task["start_s"], 1e-6) * 1e3
            ax.barh(y, width, left=task["start_s"] * 1e3, height=0.6, color=colors(n % 10), edgecolor="black")
            split = f" P={task['partition']}" if task["placement"] == "split" else ""
            label = f"{task['id']}:{task['kernel']}{split}"
            if width < span * 0.12:  # a narrow bar gets its id only; the trace has the rest
                label = task["id"] if width >= span * 0.02 else ""
            ax.text(task["start_s"] * 1e3 + width / 2, y, label, ha="center", va="center", fontsize=7, clip_on=True)
    ax.set_yticks(range(len(lanes)))
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("time since start (ms, host clock)")
    ax.set_title(f"{Path(trace['file']).name}: makespan {trace['makespan_s'] * 1e3:.2f} ms")
    fig.tight_layout()
    with atomic_open(path) as fh:
        fig.savefig(fh, format="png", dpi=100)
    plt.close(fig)


def check_task_folders(graph: TaskGraph) -> None:
    """Each task's outputs go to ``task<id>``, and the id is a word of the graph file: one that
    cannot be a folder name ('../x', a control character) is refused at its line before anything runs."""
    from kernellab.errors import InputError, Problem
    from kernellab.formats.paths import name_problem

    problems = [Problem(graph.file, task.where, f"task id {tid!r}: its outputs' folder {why}")
                for tid, task in graph.tasks.items() if (why := name_problem(f"task{tid}")) is not None]
    if problems:
        raise InputError(problems)


def run(args: argparse.Namespace) -> int:
    from kernellab.commands.run_extras import supervised_natively
    # kernels run as native code on a CPU device: a crash is one line naming the part (launch_guard)
    status = supervised_natively([args.output], [args.json, args.trace, args.gantt])
    if status is not None:
        return status
    from kernellab.outputs import OutputSet, write_text
    from kernellab.runtime.host_data import output_array
    from kernellab.runtime.partition import Session, choose_targets
    from kernellab.runtime.schedule import (
        Timings,
        chrome_trace_events,
        execute_plan,
        load_workload,
        plan,
        resolve_graph,
        trace_document,
    )

    graph = load_workload(args.file)
    kernels = resolve_graph(graph)
    if args.output:
        check_task_folders(graph)
    timings = Timings.load(args.timings)
    the_plan = plan(graph, kernels, timings, free=args.free)
    cpu, gpu = choose_targets(args.devices)
    with Session(cpu, gpu) as session:
        result = execute_plan(session, graph, the_plan, seed=args.seed, split=args.split)
        trace = trace_document(graph, session, result)
    out = sys.stdout
    print(f"{Path(graph.file).name}: {len(graph.tasks)} task{'s' if len(graph.tasks) != 1 else ''}, "
          f"{len(graph.edges)} edge{'s' if len(graph.edges) != 1 else ''}; lanes: GPU-class {trace['lanes']['gpu']}, "
          f"CPU-class {trace['lanes']['cpu']}", file=out)
    print(f"{'task':>5} {'kernel':<24} {'where':<6} {'P':>3} {'start ms':>9} {'end ms':>9} {'kernel ms':>10}", file=out)
    for t in trace["tasks"]:
        print(f"{t['id']:>5} {t['kernel'][:24]:<24} {t['placement']:<6} {t['partition']:>3} {t['start_s'] * 1e3:>9.2f} "
              f"{t['end_s'] * 1e3:>9.2f} {max(t['kernel_ns'].values(), default=0) / 1e6:>10.3f}", file=out)
    print(f"makespan {trace['makespan_s'] * 1e3:.2f} ms (planned {trace['planned_makespan_s'] * 1e3:.3f} ms in "
          f"{'measured' if timings.table else 'estimated'} units)", file=out)
    if args.output:
        with OutputSet(args.output) as outs:
            for tid, kernel in kernels.items():
                for b in kernel.buffers:
                    if b.spec.written_by_kernel:
                        outs.npy(args.output / f"task{tid}" / f"arg{b.pos}.npy",
                                 output_array(b, result.outputs[tid][b.pos]))
            outs.commit()
    if args.json:
        write_text(args.json, json.dumps(trace, indent=2) + "\n")
    if args.trace:
        from kernellab.suite.trace import write_trace
        write_trace(args.trace, chrome_trace_events(trace),
                    metadata_args={"file": trace["file"], "policy": trace["policy"],
                                   "makespan_s": trace["makespan_s"]})
    if args.gantt:
        plot_gantt(trace, args.gantt)
    return 0
