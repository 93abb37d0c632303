"""Running a task set or a DAG of kernel specs on the two lanes (GPU-class, CPU-class).

Planning is HEFT-like list scheduling: tasks are ranked by their upward rank (mean cost plus the
costliest path to an exit task), and each in turn goes where it would finish earliest, after its
predecessors and once its lane is free. A task's cost on a lane comes from ``partition-sweep``
JSON files when one matches the kernel and its NDRange (P=0 is the CPU-class time, P=10 the
GPU-class time, P its split time), else it is estimated as proportional to its work-items (both
lanes equal, so the plan balances work by size). A task with a partition of its own (task files
always give one) keeps it: P=0 runs on the CPU-class lane, P=10 on the GPU-class lane and 1..9
split across both; ``free=True`` lets the policy choose for every task: either lane, or the best
measured split when a sweep measured splits.

Execution follows the plan with one thread per lane; a task starts when its predecessors are
done, and data moves along the DAG's edges through host memory. Each task runs through
:func:`~kernellab.runtime.partition.execute` (its parts as scenarios through the one executor); two
lanes on one device share its backend, so their tasks take turns on it (a split task's two parts
run at once on its two queues). The trace records, per task, the planned and the measured start
and end and the kernel time from profiling events.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import Any

import numpy as np

from kernellab.errors import InputError, KernellabError, Problem
from kernellab.formats.jsonfile import MAX_JSON_BYTES, decode_json, read_text_input
from kernellab.formats.pyschedcl.graph import TaskGraph, load_dag_json, load_graph, load_task_file
from kernellab.formats.pyschedcl.kernel import ResolvedKernel
from kernellab.records import dataclass
from kernellab.runtime.host_data import fill_inputs
from kernellab.runtime.partition import RunResult, Session, execute

LANES = ("gpu", "cpu")


@dataclass
class Timings:
    """Measured costs from sweep documents, by (kernel name, global size): {P: seconds}."""

    table: dict[tuple[str, tuple[int, ...]], dict[int, float]] = field(default_factory=dict)

    @classmethod
    def load(cls, paths: Sequence[str | Path]) -> Timings:
        t = cls()
        for path in paths:
            doc = decode_json(read_text_input(path, "a partition-sweep document (JSON)", MAX_JSON_BYTES), path,
                              "not valid JSON")
            if not isinstance(doc, dict) or doc.get("kind") != "kernellab.partition-sweep":
                raise InputError("not a partition-sweep document (write one with kernellab partition-sweep --json)", path)
            try:
                key = (str(doc["kernel"]), tuple(int(g) for g in doc["global_size"]))
                points = {int(pt["partition"]): float(pt["makespan_ns"]) / 1e9 for pt in doc["points"]}
            except (KeyError, TypeError, ValueError) as exc:
                raise InputError(f"a partition-sweep document lacks {exc}", path) from None
            t.table.setdefault(key, {}).update(points)
        return t

    def cost(self, kernel: ResolvedKernel, partition: int) -> float | None:
        return self.table.get((kernel.spec.name, kernel.global_size), {}).get(partition)

    def partitions(self, kernel: ResolvedKernel) -> dict[int, float]:
        """The measured split partitions (1..9) of ``kernel`` at its NDRange, with their costs."""
        points = self.table.get((kernel.spec.name, kernel.global_size), {})
        return {p: c for p, c in points.items() if 0 < p < 10}


@dataclass
class PlannedTask:
    id: str
    kernel: ResolvedKernel
    placement: str  # "gpu" | "cpu" | "split"
    partition: int
    start: float
    finish: float
    source: str  # where the cost came from: "sweep" or "work-items"

    @property
    def lanes(self) -> tuple[str, ...]:
        return LANES if self.placement == "split" else (self.placement,)


@dataclass
class Plan:
    tasks: dict[str, PlannedTask]
    #: per lane, task ids in the order the lane runs them (a split task is on both)
    order: dict[str, list[str]]

    @property
    def makespan(self) -> float:
        return max((t.finish for t in self.tasks.values()), default=0.0)


def resolve_graph(graph: TaskGraph) -> dict[str, ResolvedKernel]:
    """Every task's spec for its own variables; an edge must join buffers of equal size."""
    kernels: dict[str, ResolvedKernel] = {}
    problems: list[Problem] = []
    for tid, task in graph.tasks.items():
        try:
            kernels[tid] = task.spec.resolve(task.variables, task.partition)
        except InputError as exc:
            problems.extend(exc.problems)
            problems.append(Problem(graph.file, task.where, f"task {tid} ({task.spec.name}): its spec does not resolve "
                                                            f"with {task.variables} (see above)"))
    for e in graph.edges:
        if e.src in kernels and e.dst in kernels and e.src_pos >= 0:
            sb = next(b for b in kernels[e.src].buffers if b.pos == e.src_pos)
            db = next(b for b in kernels[e.dst].buffers if b.pos == e.dst_pos)
            if sb.count != db.count:
                problems.append(Problem(graph.file, e.where, f"task {e.src} argument {e.src_pos} has {sb.count} elements "
                                                             f"but task {e.dst} argument {e.dst_pos} has {db.count}"))
    if problems:
        raise InputError(problems)
    return kernels


def plan(graph: TaskGraph, kernels: Mapping[str, ResolvedKernel], timings: Timings | None = None,
         free: bool = False) -> Plan:
    """HEFT-like list scheduling (upward rank, earliest finish time, no insertion)."""
    timings = timings or Timings()

    def options(tid: str) -> list[tuple[str, int]]:
        p = graph.tasks[tid].partition
        if p is None or free:
            found = [("gpu", 10), ("cpu", 0)]
            # a sweep that measured splits offers the best of them too (it takes both lanes)
            splits = timings.partitions(kernels[tid])
            if splits:
                found.append(("split", min(splits, key=lambda q: (splits[q], q))))
            return found
        return [("gpu", 10)] if p == 10 else [("cpu", 0)] if p == 0 else [("split", p)]

    def cost(tid: str, partition: int) -> tuple[float, str]:
        k = kernels[tid]
        measured = timings.cost(k, partition)
        if measured is not None:
            return measured, "sweep"
        items = 1
        for g in k.global_size:
            items *= g
        # unmeasured: work-items as the unit (1 ns each); a split shares them between both lanes
        share = max(partition, 10 - partition) / 10 if 0 < partition < 10 else 1.0
        return items * share * 1e-9, "work-items"

    succ: dict[str, list[str]] = {t: [] for t in graph.tasks}
    for e in graph.edges:
        if e.dst not in succ[e.src]:
            succ[e.src].append(e.dst)
    rank: dict[str, float] = {}
    for tid in reversed(graph.topological_order()):
        mean = sum(cost(tid, p)[0] for _, p in options(tid)) / len(options(tid))
        rank[tid] = mean + max((rank[s] for s in succ[tid]), default=0.0)
    position = {t: i for i, t in enumerate(graph.topological_order())}
    # by rank, ties in file order; a predecessor always has a higher rank (costs are positive)
    order = sorted(graph.tasks, key=lambda t: (-rank[t], position[t]))
    free_at = {lane: 0.0 for lane in LANES}
    planned: dict[str, PlannedTask] = {}
    lanes_order: dict[str, list[str]] = {lane: [] for lane in LANES}
    for tid in order:
        ready = max((planned[p].finish for p in graph.predecessors(tid)), default=0.0)
        best: PlannedTask | None = None
        for placement, p in options(tid):
            c, source = cost(tid, p)
            lanes = LANES if placement == "split" else (placement,)
            start = max([ready] + [free_at[lane] for lane in lanes])
            cand = PlannedTask(tid, kernels[tid], placement, p, start, start + c, source)
            if best is None or cand.finish < best.finish - 1e-15:
                best = cand
        assert best is not None
        planned[tid] = best
        for lane in best.lanes:
            free_at[lane] = best.finish
            lanes_order[lane].append(tid)
    return Plan(planned, lanes_order)


@dataclass
class TaskRun:
    id: str
    lanes: tuple[str, ...]
    start_s: float
    end_s: float
    result: RunResult


@dataclass
class ScheduleResult:
    plan: Plan
    runs: dict[str, TaskRun]
    outputs: dict[str, dict[int, np.ndarray]]
    wall_s: float


def execute_plan(session: Session, graph: TaskGraph, the_plan: Plan, seed: int = 0,
                 split: str = "subbuffer") -> ScheduleResult:
    """Run the plan: one thread per lane, each task once its predecessors are done."""
    return _Execution(session, graph, the_plan, split).run(seed)


class _Execution:
    """One run of a plan: the lanes' threads and what they share (the tasks' events and outputs,
    the first failure stopping every lane)."""

    def __init__(self, session: Session, graph: TaskGraph, the_plan: Plan, split: str):
        self.session, self.graph, self.plan, self.split = session, graph, the_plan, split
        self.kernels = {t: pt.kernel for t, pt in the_plan.tasks.items()}
        self.incoming: dict[str, list[Any]] = {t: [] for t in graph.tasks}
        for e in graph.edges:
            if e.dst_pos >= 0:  # not an ordering-only dependency
                self.incoming[e.dst].append(e)
        self.done = {t: threading.Event() for t in graph.tasks}
        self.lane_ready = {t: threading.Event() for t in graph.tasks}  # the CPU-class lane reached a split task
        self.outputs: dict[str, dict[int, np.ndarray]] = {}
        self.runs: dict[str, TaskRun] = {}
        self.failures: list[BaseException] = []
        self.generated: dict[str, dict[int, np.ndarray]] = {}
        self.t0 = 0.0

    def run(self, seed: int) -> ScheduleResult:
        session = self.session
        # build every program first, so the trace shows execution and not the OpenCL C compiler
        for pt in self.plan.tasks.values():
            session.check_fits(pt.kernel)
            session.program(pt.kernel, pt.lanes)
        # and generate the seeded inputs, so the trace shows the devices' work, not numpy's
        index = {t: i for i, t in enumerate(self.graph.tasks)}
        self.generated = {tid: fill_inputs(self.kernels[tid], seed, stream=index[tid]) for tid in self.graph.tasks}
        self.t0 = time.perf_counter()
        threads = [threading.Thread(target=self._lane, args=(lane,), name=f"kernellab-{lane}-lane") for lane in LANES]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        if self.failures:
            exc = self.failures[0]
            if isinstance(exc, KernellabError):
                raise exc
            raise KernellabError(f"a scheduled task failed: {exc!r}") from exc
        return ScheduleResult(self.plan, self.runs, self.outputs, time.perf_counter() - self.t0)

    def _lane(self, lane: str) -> None:
        try:
            self._lane_tasks(lane)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            self.failures.append(exc)

    def _lane_tasks(self, lane: str) -> None:
        """Run the lane's tasks in the plan's order; stop at the first failure on any lane."""
        for tid in self.plan.order[lane]:
            if self.failures or not all(self._wait(self.done[pred]) for pred in self.graph.predecessors(tid)):
                return
            if self.plan.tasks[tid].placement == "split":
                if lane == "cpu":
                    self.lane_ready[tid].set()  # the split task may now take this lane's queue too
                    if not self._wait(self.done[tid]):
                        return
                    continue
                if not self._wait(self.lane_ready[tid]):
                    return
            self._run_task(tid)
            self.done[tid].set()

    def _wait(self, event: threading.Event) -> bool:
        """Wait for ``event``; False when a lane failed first."""
        while not event.wait(0.05):
            if self.failures:
                return False
        return True

    def _run_task(self, tid: str) -> None:
        host = self.generated.pop(tid)
        for e in self.incoming[tid]:
            host[e.dst_pos] = self.outputs[e.src][e.src_pos]
        pt = self.plan.tasks[tid]
        start = time.perf_counter() - self.t0
        result = execute(self.session, self.kernels[tid], host, pt.partition, self.split)
        end = time.perf_counter() - self.t0
        self.outputs[tid] = result.outputs
        self.runs[tid] = TaskRun(tid, pt.lanes, start, end, result)


def trace_document(graph: TaskGraph, session: Session, result: ScheduleResult) -> dict[str, Any]:
    """What ran where and when (seconds from the start of the run), as JSON."""
    tasks = []
    for tid in sorted(result.runs, key=lambda t: (result.runs[t].start_s, t)):
        run = result.runs[tid]
        pt = result.plan.tasks[tid]
        tasks.append({
            "id": tid, "kernel": pt.kernel.spec.name, "spec": pt.kernel.spec.file,
            "placement": pt.placement, "partition": pt.partition,
            "lanes": list(pt.lanes),
            "devices": sorted({session.lanes[lane].target.info.name for lane in pt.lanes}),
            "depends": graph.predecessors(tid),
            "global_size": list(pt.kernel.global_size),
            "planned_start_s": pt.start, "planned_end_s": pt.finish, "cost_source": pt.source,
            "start_s": run.start_s, "end_s": run.end_s,
            "kernel_ns": {t.role: t.kernel_ns for t in run.result.parts},
            "device_ns": run.result.device_ns,
        })
    return {"kind": "kernellab.schedule-trace", "file": graph.file, "policy": "heft-eft",
            "lanes": {lane: session.lanes[lane].target.info.name for lane in LANES},
            "edges": [{"src": e.src, "dst": e.dst, **({"src_pos": e.src_pos, "dst_pos": e.dst_pos} if e.src_pos >= 0 else {})}
                      for e in graph.edges],
            "makespan_s": max((r.end_s for r in result.runs.values()), default=0.0),
            "planned_makespan_s": result.plan.makespan, "tasks": tasks}


def chrome_trace_events(trace: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The run of :func:`trace_document` as Chrome trace events (Perfetto, ``chrome://tracing``),
    as ``run --trace`` and ``test --trace`` write them: one process per lane (GPU-class, CPU-class)
    named after its device, one complete event per task on each lane it occupies (a split task is
    on both), times in microseconds from the start of the run, the task's details in ``args``;
    and flow arrows along the DAG's edges."""
    lanes = list(trace["lanes"])
    pid = {lane: n + 1 for n, lane in enumerate(lanes)}
    label = {"gpu": "GPU-class", "cpu": "CPU-class"}
    events: list[dict[str, Any]] = []
    for lane in lanes:
        events.append({"name": "process_name", "ph": "M", "pid": pid[lane], "tid": 0,
                       "args": {"name": f"{label.get(lane, lane)} lane ({trace['lanes'][lane]})"}})
        events.append({"name": "thread_name", "ph": "M", "pid": pid[lane], "tid": 1, "args": {"name": "tasks"}})
    where: dict[str, tuple[int, float, float]] = {}
    for task in trace["tasks"]:
        start, end = task["start_s"] * 1e6, task["end_s"] * 1e6
        for lane in task["lanes"]:
            events.append({"name": f"{task['id']}: {task['kernel']}", "cat": "task", "ph": "X", "pid": pid[lane],
                           "tid": 1, "ts": round(start, 3), "dur": round(end - start, 3),
                           "args": {"task": task["id"], "kernel": task["kernel"], "placement": task["placement"],
                                    "partition": task["partition"], "devices": task["devices"],
                                    "planned_start_s": task["planned_start_s"], "planned_end_s": task["planned_end_s"],
                                    "kernel_ns": task["kernel_ns"]}})
        where[task["id"]] = (pid[task["lanes"][0]], start, end)
    for n, edge in enumerate(trace["edges"]):
        if edge["src"] in where and edge["dst"] in where:
            (spid, _, send), (dpid, dstart, _) = where[edge["src"]], where[edge["dst"]]
            events.append({"name": "edge", "cat": "dependency", "ph": "s", "id": n, "pid": spid, "tid": 1,
                           "ts": round(send, 3)})
            events.append({"name": "edge", "cat": "dependency", "ph": "f", "bp": "e", "id": n, "pid": dpid,
                           "tid": 1, "ts": round(dstart, 3)})
    return events


def load_workload(path: str | Path) -> TaskGraph:
    """A ``.graph`` DAG (task lines, ``---``, edges), PySchedCL's expanded JSON DAG (a list of
    specs with ``id``/``depends``/``from``) or a task set (``SPEC P DATASET`` lines), told apart by
    content: a JSON list is an expanded DAG, a ``---`` line makes a ``.graph``."""
    path = Path(path)
    text = read_text_input(path, "a task set, a .graph or a DAG", MAX_JSON_BYTES)
    if text.lstrip().startswith("["):
        return load_dag_json(path, decode_json(text, path, "not valid JSON"))
    if any(line.strip() == "---" for line in text.splitlines()) or path.suffix == ".graph":
        return load_graph(path)
    return load_task_file(path)

