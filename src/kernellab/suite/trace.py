"""Timelines in the Chrome trace-event format (opens in Perfetto and ``chrome://tracing``).

One process per worker (or per ``kernellab run``); on it a "host" thread with one complete
event per workload and one per host phase inside it, and a "GPU" thread with each command's
GPU time where the device gave timestamps. GPU clocks are not the host's: each workload's GPU
events are placed so its first command starts with the host's ``run`` phase, keeping their
lengths and the gaps between them as the device measured them.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

HOST_TID = 1
GPU_TID = 2


def _us(seconds: float) -> float:
    return round(seconds * 1e6, 3)


def metadata(pid: int, process_name: str) -> list[dict[str, Any]]:
    return [{"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": process_name}},
            {"name": "thread_name", "ph": "M", "pid": pid, "tid": HOST_TID, "args": {"name": "host"}},
            {"name": "thread_name", "ph": "M", "pid": pid, "tid": GPU_TID, "args": {"name": "GPU"}}]


def workload_events(name: str, pid: int, phases: Sequence[tuple[str, float, float]],
                    gpu: Iterable[Sequence[tuple[str, float, float]]], origin: float,
                    args: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Events of one workload: ``phases`` are (name, start, end) in host seconds, ``gpu`` per
    submit (label, start_ns, end_ns) on the device clock; times are relative to ``origin``."""
    events: list[dict[str, Any]] = []
    if phases:
        start, end = min(p[1] for p in phases), max(p[2] for p in phases)
        events.append({"name": name, "cat": "workload", "ph": "X", "pid": pid, "tid": HOST_TID,
                       "ts": _us(start - origin), "dur": _us(end - start), "args": args or {}})
        for pname, s, e in phases:
            events.append({"name": pname, "cat": "host", "ph": "X", "pid": pid, "tid": HOST_TID,
                           "ts": _us(s - origin), "dur": _us(e - s), "args": {"workload": name}})
    commands = [c for submit in gpu for c in submit]
    if commands:
        run_start = next((s for pname, s, _ in phases if pname == "run"), phases[0][1] if phases else origin)
        first_ns = min(c[1] for c in commands)
        for label, s_ns, e_ns in commands:
            index, kind, *rest = label.split(":", 2)
            events.append({"name": f"{kind} {rest[0]}" if rest else kind, "cat": "gpu", "ph": "X", "pid": pid,
                           "tid": GPU_TID, "ts": _us(run_start - origin + (s_ns - first_ns) * 1e-9),
                           "dur": round((e_ns - s_ns) / 1e3, 3),
                           "args": {"workload": name, "command_index": int(index) if index.isdigit() else index,
                                    "gpu_time_ns": round(e_ns - s_ns, 1)}})
    return events


def write_trace(path: str | Path, events: list[dict[str, Any]], *, metadata_args: dict[str, Any] | None = None) -> None:
    from kernellab.outputs import write_text

    doc = {"traceEvents": events, "displayTimeUnit": "ms", "otherData": metadata_args or {}}
    write_text(path, json.dumps(doc) + "\n")


def run_report_events(name: str, report: Any, parse_first: bool = True) -> list[dict[str, Any]]:
    """Events of a ``kernellab run`` from its RunReport: phases laid end to end from zero."""
    phases = []
    t = 0.0
    for pname, ms in report.phases_ms.items():
        phases.append((pname, t, t + ms / 1e3))
        t += ms / 1e3
    gpu = [[(c.label, c.start_ns, c.end_ns) for c in submit] for submit in report.timings]
    return metadata(1, f"kernellab run ({report.device})") + workload_events(name, 1, phases, gpu, 0.0,
                                                                             {"device": report.device})
