"""The files of ``--profiling-dump-path`` and ``--perf-counters-dump-path`` in Arm's schema.

Arm's runner writes both with nlohmann JSON (its src/json_writer.cpp): ``dump(4)`` — 4-space
indent, keys sorted (nlohmann's ``std::map``), UTF-8 as is, no trailing newline. Every key Arm
writes is here with Arm's name, nesting and unit; what kernellab adds (the device, its own
per-repeat view, its phase times) is in extra top-level keys that start with a lower-case
letter, so they sort after Arm's and a script reading Arm's keys never meets them. The
schemas, key by key, are in docs/arm-compat.md.
"""
from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any

#: Arm's "Command type" of each kernellab command label kind (label = "<index>:<kind>:<name>");
#: barriers are not timed by Arm, so a kind missing here is left out of "Timestamps"
COMMAND_TYPES = {"dispatch_compute": "ComputeDispatch", "dispatch_graph_shader": "ComputeDispatch",
                 "dispatch_graph": "DataGraphDispatch", "dispatch_data_graph": "DataGraphDispatch",
                 "dispatch_fragment": "GraphicsDispatch"}
MICROSECONDS = "microseconds"


def dump_text(doc: dict[str, Any]) -> str:
    """nlohmann's ``dump(4)``: indent 4, sorted keys, no ASCII escaping, no final newline."""
    import json

    return json.dumps(doc, indent=4, sort_keys=True, ensure_ascii=False)


def _split(label: str) -> tuple[str, str]:
    _, kind, *rest = label.split(":", 2)
    return kind, rest[0] if rest else ""


def profiling_document(report: Any, dry_run: bool, kernellab_fields: bool = True) -> dict[str, Any]:
    """Arm's ``writeProfilingData``: "Timestamps" (one entry per timed dispatch per repeat),
    "Total execution time [ms]" (first to last timestamp of each repeat, summed) and, for
    data-graph pipelines, "Memory Usage" (one entry per pipeline per repeat)."""
    doc: dict[str, Any] = {}
    period = report.timestamp_period or 1.0
    timestamps: list[dict[str, Any]] = []
    total_ms = None
    for iteration, timings in enumerate(report.timings):
        timed = [t for t in timings if _split(t.label)[0] in COMMAND_TYPES]
        for t in timed:
            kind, name = _split(t.label)
            before, after = round(t.start_ns / period), round(t.end_ns / period)
            timestamps.append({"Command type": COMMAND_TYPES[kind], "Command name": name,
                               "Cycle count before command": before, "Cycle count after command": after,
                               "Cycle count for command": after - before, "Timestamp Period": period,
                               "Time for command [ms]": (after - before) * period / 1e6,
                               "Iteration": iteration + 1})
        if timed:
            first, last = round(timed[0].start_ns / period), round(timed[-1].end_ns / period)
            total_ms = (total_ms or 0.0) + (last - first) * period / 1e6
    if timestamps:
        doc["Timestamps"] = timestamps
    if total_ms is not None:
        doc["Total execution time [ms]"] = total_ms
    # Arm writes the memory use once per repeat (once for a dry run), Iteration counted from 0
    iterations = 1 if dry_run else len(report.timings)
    usage = [{"Command type": "DataGraphDispatch", "Command name": name, "Session memory [bytes]": size,
              "Iteration": iteration}
             for iteration in range(iterations) for name, size in report.session_memory]
    if usage:
        doc["Memory Usage"] = usage
    if kernellab_fields:
        doc.update(kernellab_profiling_fields(report))
    return doc


def kernellab_profiling_fields(report: Any) -> dict[str, Any]:
    """kernellab's own view, added next to Arm's keys: every timed command (barriers too) per
    repeat, with its index in the scenario's commands, in nanoseconds."""
    repeats = []
    for timings in report.timings:
        commands = []
        for t in timings:
            index, kind, *rest = t.label.split(":", 2)
            commands.append({"index": int(index), "command": kind, "resource": rest[0] if rest else "",
                             "gpu_time_ns": round(t.duration_ns, 1)})
        repeats.append({"commands": commands, "total_ns": round(sum(c["gpu_time_ns"] for c in commands), 1)})
    return {"device": report.device, "repeats": repeats,
            "total_ns": round(sum(r["total_ns"] for r in repeats), 1)}


def perf_counters_document(report: Any, kernellab_fields: bool = True) -> dict[str, Any]:
    """Arm's ``writePerfCounters``: per category its counters and total, "Time to Inference"
    (the counters flagged so) and "Total Scenario Time" (all of them), in whole microseconds."""
    doc: dict[str, Any] = {}
    to_inference = total = 0
    for c in report.counters:
        us = c.microseconds
        total += us
        to_inference += us if c.inference else 0
        category = doc.setdefault(c.category, {"total time": 0, "unit": MICROSECONDS, "counters": []})
        category["total time"] += us
        category["counters"].append({"name": c.name, "value": us, "unit": MICROSECONDS})
    doc.update({"Time to Inference": to_inference, "Total Scenario Time": total, "unit": MICROSECONDS})
    if kernellab_fields:
        # "total_ms" is "Total Scenario Time" in ms (Arm's meaning: the counters' sum). The phases
        # also time what no counter of Arm's covers (parsing, opening the device, compiling and
        # checking the shaders): their sum is "wall_ms", the difference "uncounted_ms"
        wall = sum(report.phases_ms.values())
        doc.update({"device": report.device,
                    "phases_ms": {k: round(v, 3) for k, v in report.phases_ms.items()},
                    "total_ms": total / 1e3, "wall_ms": round(wall, 3),
                    "uncounted_ms": round(max(0.0, wall - total / 1e3), 3)})
    return doc
