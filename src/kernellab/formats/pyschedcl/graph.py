"""Task sets, PySchedCL ``.graph`` files and expanded JSON DAGs: several kernel specs and the buffers between them."""
from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

from kernellab.errors import InputError, Problems, UsageError, json_pointer
from kernellab.formats.pyschedcl.kernel import KernelSpec, Sym, parse_assignment
from kernellab.formats.pyschedcl.spec import BUFFER_KINDS, load_spec, spec_from_data
from kernellab.records import dataclass


@dataclass
class Task:
    """One kernel of a task set or DAG, with its own partition and variables."""

    id: str
    spec: KernelSpec
    partition: int | None
    variables: dict[str, Any]
    where: str  # "line N" in the task or graph file


@dataclass(frozen=True)
class Edge:
    """An output buffer of one task feeds an input buffer of another; positions of -1 mean an
    ordering only (PySchedCL's ``depends`` without a buffer)."""

    src: str
    src_pos: int
    dst: str
    dst_pos: int
    where: str


@dataclass
class TaskGraph:
    file: str
    tasks: dict[str, Task]
    edges: list[Edge]

    def predecessors(self, task_id: str) -> list[str]:
        return sorted({e.src for e in self.edges if e.dst == task_id}, key=list(self.tasks).index)

    def topological_order(self) -> list[str]:
        order: list[str] = []
        indeg = {t: 0 for t in self.tasks}
        for e in {(e.src, e.dst) for e in self.edges}:
            indeg[e[1]] += 1
        ready = [t for t in self.tasks if indeg[t] == 0]
        while ready:
            t = ready.pop(0)
            order.append(t)
            for _, d in sorted({(e.src, e.dst) for e in self.edges if e.src == t},
                               key=lambda x: list(self.tasks).index(x[1])):
                indeg[d] -= 1
                if indeg[d] == 0:
                    ready.append(d)
        return order


def _find_spec_file(name: str, base: Path) -> Path:
    p = Path(name)
    if p.is_absolute():
        return p
    for candidate in (base / p, base / "info" / p):
        if candidate.is_file():
            return candidate
    return base / p


def _load_task_spec(c: Problems, name: str, base: Path, where: str, cache: dict[Path, KernelSpec]) -> KernelSpec | None:
    path = _find_spec_file(name, base)
    if path in cache:
        return cache[path]
    if not path.is_file():
        c.add(where, f"spec file {name!r} not found (looked in {base} and {base / 'info'})")
        return None
    try:
        spec = load_spec(path)
    except InputError as exc:
        c.problems.extend(exc.problems)
        return None
    cache[path] = spec
    return spec


def _number_token(tok: str) -> int | float | None:
    try:
        return int(tok)
    except ValueError:
        try:
            return float(tok)
        except ValueError:
            return None


def _read_lines(path: Path, what: str) -> list[str]:
    from kernellab.formats.jsonfile import MAX_JSON_BYTES, read_text_input
    # a regular file of at most 16 MiB, like every JSON input: never a FIFO or /dev/zero
    return read_text_input(path, f"a {what}", MAX_JSON_BYTES).splitlines()


def load_task_file(path: str | Path) -> TaskGraph:
    """A task set: one kernel per line, ``SPEC.json PARTITION DATASET [name=value ...]``, ``#`` comments."""
    path = Path(path)
    file = str(path)
    lines = _read_lines(path, "task file")
    c = Problems(file)
    cache: dict[Path, KernelSpec] = {}
    tasks: dict[str, Task] = {}
    for n, raw in enumerate(lines, 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"line {n}"
        toks = line.split()
        if len(toks) < 3:
            c.add(where, f"expected 'SPEC.json PARTITION DATASET [name=value ...]', got {line!r}")
            continue
        part = _number_token(toks[1])
        if not isinstance(part, int) or not 0 <= part <= 10:
            c.add(f"line {n}, column {raw.index(toks[1]) + 1}",
                  f"the partition must be an integer 0..10, got {toks[1]!r}")
            part = None
        variables: dict[str, Any] = {}
        ds = _number_token(toks[2])
        if ds is None:
            c.add(f"line {n}, column {raw.index(toks[2]) + 1}", f"the dataset must be a number, got {toks[2]!r}")
        else:
            variables["dataset"] = ds
        for tok in toks[3:]:
            try:
                k, v = parse_assignment(tok)
                variables[k] = v
            except UsageError as exc:
                c.add(f"line {n}, column {raw.index(tok) + 1}", str(exc))
        spec = _load_task_spec(c, toks[0], path.parent, where, cache)
        if spec is not None and part is not None:
            tid = str(len(tasks))
            tasks[tid] = Task(tid, spec, part, variables, where)
    if not tasks and not c.problems:
        c.add("", "the task file lists no kernels")
    c.raise_if_any()
    return TaskGraph(file, tasks, [])


_EDGE = re.compile(r"^\s*(\S+)\s+(\d+)\s*->\s*(\S+)\s+(\d+)\s*$")


def load_graph(path: str | Path) -> TaskGraph:
    """PySchedCL's ``.graph`` file: task lines ``ID SPEC.json {"dataset": N, "partition": P, ...}``,
    a ``---`` line, edge lines ``SRC SRCPOS -> DST DSTPOS``, and an optional closing ``---``."""
    path = Path(path)
    file = str(path)
    lines = _read_lines(path, "graph file")
    c = Problems(file)
    cache: dict[Path, KernelSpec] = {}
    tasks: dict[str, Task] = {}
    edges: list[Edge] = []
    declared: dict[str, str] = {}
    section = 0
    for n, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"line {n}"
        if line == "---":
            section += 1
            continue
        if section == 0:
            toks = line.split(None, 2)
            if len(toks) < 2:
                c.add(where, f"expected a task line 'ID SPEC.json {{\"dataset\": N, ...}}', got {line!r}")
                continue
            tid, spec_name = toks[0], toks[1]
            if tid in declared:
                c.add(where, f"task id {tid!r} is already defined on {declared[tid]}")
                continue
            declared[tid] = where
            variables: dict[str, Any] = {}
            part: int | None = None
            local_override: int | None = None
            if len(toks) == 3:
                try:
                    obj = json.loads(toks[2])
                except json.JSONDecodeError as exc:
                    c.add(f"line {n}, column {raw.index(toks[2]) + exc.colno}",
                          f"the task's variables are not a JSON object: {exc.msg}")
                    continue
                if not isinstance(obj, dict):
                    c.add(where, f"the task's variables must be a JSON object, got {toks[2]!r}")
                    continue
                variables, part, local_override = _task_variables(c, obj, where)
            spec = _load_task_spec(c, spec_name, path.parent, where, cache)
            if spec is not None:
                if local_override is not None:
                    spec = dataclasses.replace(spec, local_work_size=Sym(local_override, None, "/localWorkSize"))
                tasks[tid] = Task(tid, spec, part, variables, where)
        elif section == 1:
            m = _EDGE.match(line)
            if not m:
                c.add(where, f"expected an edge 'SRC SRCPOS -> DST DSTPOS', got {line!r}")
                continue
            edges.append(Edge(m.group(1), int(m.group(2)), m.group(3), int(m.group(4)), where))
        else:
            c.add(where, "text after the closing '---'")
    return _finish_graph(c, file, tasks, edges, set(declared), "the graph file defines no tasks")


def _task_variables(c: Problems, obj: dict[str, Any], where: str) -> tuple[dict[str, Any], int | None, int | None]:
    """A ``.graph`` task's JSON object as (variables, partition, local size for every dimension)."""
    variables: dict[str, Any] = {}
    part: int | None = None
    local_override: int | None = None
    for k, v in obj.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            c.add(where, f"variable {k!r} must be a number, got {json.dumps(v)}")
        elif k == "partition":
            if not isinstance(v, int) or not 0 <= v <= 10:
                c.add(where, f"partition must be an integer 0..10, got {v}")
            else:
                part = v
        elif k in ("size_percent", "offset_percent"):
            c.add(where, f"{k} is set by kernellab itself")
        elif k == "localWorkSize":
            if not isinstance(v, int) or v < 1:
                c.add(where, f"localWorkSize must be a positive integer, got {v}")
            else:
                local_override = v  # PySchedCL: the same size in every dimension
        else:
            variables[k] = v
    return variables, part, local_override


def _finish_graph(c: Problems, file: str, tasks: dict[str, Task], edges: list[Edge], declared: set[str],
                  empty: str) -> TaskGraph:
    """Check the edges against the tasks' buffers and for cycles; raise every problem found."""
    for e in edges:
        for tid in (e.src, e.dst):
            if tid not in declared:
                c.add(e.where, f"task {tid!r} is not defined" + (" in the task lines" if e.src_pos >= 0 else ""))
        if e.src == e.dst:
            c.add(e.where, "an edge from a task to itself")
        if e.src not in tasks or e.dst not in tasks or e.src_pos < 0:
            continue
        sb = tasks[e.src].spec.buffer(e.src_pos)
        db = tasks[e.dst].spec.buffer(e.dst_pos)
        if sb is None or not sb.written_by_kernel:
            c.add(e.where, f"argument {e.src_pos} of task {e.src} ({tasks[e.src].spec.name}) is not an output or "
                           "io buffer")
        if db is None or not db.read_by_kernel:
            c.add(e.where, f"argument {e.dst_pos} of task {e.dst} ({tasks[e.dst].spec.name}) is not an input or "
                           "io buffer")
        if sb is not None and db is not None and sb.type != db.type:
            c.add(e.where, f"type mismatch: task {e.src} argument {e.src_pos} is {sb.type.name}, "
                           f"task {e.dst} argument {e.dst_pos} is {db.type.name}")
    seen: dict[tuple[str, int], Edge] = {}
    for e in edges:
        if e.dst_pos < 0:
            continue
        key = (e.dst, e.dst_pos)
        if key in seen:
            c.add(e.where, f"argument {e.dst_pos} of task {e.dst} already receives data from {seen[key].where}")
        seen[key] = e
    graph = TaskGraph(file, tasks, edges)
    if not c.problems:
        order = graph.topological_order()
        if len(order) != len(tasks):
            stuck = [t for t in tasks if t not in order]
            c.add("", f"the edges form a cycle through task{'s' if len(stuck) > 1 else ''} {', '.join(stuck)}")
    if not tasks and not c.problems:
        c.add("", empty)
    c.raise_if_any()
    return graph


def load_dag_json(path: str | Path, data: Any = None) -> TaskGraph:
    """PySchedCL's expanded DAG: a JSON list of specs, each with an ``id``, its own
    ``partition`` and ``symbolicVariables``, ``depends`` (task ids), and ``"from": {"kernel": ID,
    "pos": P}`` on the input buffers another task's output feeds."""
    path = Path(path)
    file = str(path)
    if data is None:
        from kernellab.formats.jsonfile import MAX_JSON_BYTES, decode_json, read_text_input
        data = decode_json(read_text_input(path, "a DAG (JSON)", MAX_JSON_BYTES), file, "not valid JSON")
    c = Problems(file)
    if not isinstance(data, list):
        c.add("", f"a DAG must be a JSON list of kernel specs, got {type(data).__name__}")
        c.raise_if_any()
    tasks: dict[str, Task] = {}
    edges: list[Edge] = []
    declared: set[str] = set()
    for i, item in enumerate(data):
        ptr = json_pointer([i])
        if not isinstance(item, dict):
            c.add([i], f"expected a kernel spec object, got {type(item).__name__}")
            continue
        tid = str(item.get("id", i))
        if tid in declared:
            c.add([i, "id"], f"task id {tid!r} is used twice")
            continue
        declared.add(tid)
        try:
            spec = spec_from_data(item, file, path.parent, [i])
        except InputError as exc:
            c.problems.extend(exc.problems)
            continue
        tasks[tid] = Task(tid, spec, spec.partition, {}, ptr)
        fed = _buffer_edges(c, item, i, tid, edges)
        deps = item.get("depends", [])
        deps = [] if deps is None else deps
        if not isinstance(deps, list):
            c.add([i, "depends"], "expected a list of task ids")
            deps = []
        for d in deps:
            if str(d) not in fed:
                edges.append(Edge(str(d), -1, tid, -1, json_pointer([i, "depends"])))
    return _finish_graph(c, file, tasks, edges, declared, "the DAG lists no kernels")


def _buffer_edges(c: Problems, item: dict, i: int, tid: str, edges: list[Edge]) -> set[str]:
    """Append an edge for each input buffer of task ``tid`` that another task's output feeds
    (``"from"``); the ids of those feeding tasks."""
    fed: set[str] = set()
    for key, _ in BUFFER_KINDS:
        for j, b in enumerate(item.get(key) or []):
            src = b.get("from") if isinstance(b, dict) else None
            if src is None:
                continue
            where = json_pointer([i, key, j, "from"])
            if not isinstance(src, dict) or "kernel" not in src or "pos" not in src:
                c.add(where, 'expected {"kernel": ID, "pos": P}')
                continue
            try:
                edges.append(Edge(str(src["kernel"]), int(src["pos"]), tid, int(b["pos"]), where))
                fed.add(str(src["kernel"]))
            except (TypeError, ValueError, KeyError):
                c.add(where, f"expected integer positions, got {json.dumps(src)}")
    return fed
