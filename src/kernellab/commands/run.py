"""``kernellab run``: execute a workload file (flags compatible with Arm's scenario-runner)."""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from kernellab import config
from kernellab.backends.registry import names as backend_names
from kernellab.errors import UsageError


def register(sub: Any) -> None:
    p = sub.add_parser("run", help="run a scenario (or other workload file) and write its outputs",
                       description="Run a workload file. Flags follow Arm's scenario-runner, so scripts can "
                                   "switch by changing the program name.")
    p.add_argument("file", nargs="?", type=Path, help="the workload file (same as --scenario)")
    p.add_argument("--scenario", type=Path, help="scenario JSON file to run")
    p.add_argument("--format", choices=["scenario", "kernel-instantiation", "pyschedcl"],
                   help="input format (default: detected from the file's content)")
    p.add_argument("--output", type=Path, help="folder for relative dst paths (default: the file's folder)")
    p.add_argument("--device", help="device index or name substring (see `kernellab devices`)")
    # issue 3: OpenCL C scenarios on OpenCL devices; launches of kernel-instantiation files
    p.add_argument("--backend", choices=backend_names(), default="vulkan",
                   help="scenarios: run on Vulkan (default) or OpenCL devices (OpenCL-C shaders only)")
    p.add_argument("--index", type=int, help="kernel-instantiation files: run only instantiation N (default: all)")
    p.add_argument("--seed", type=int, default=0,
                   help="kernel-instantiation files: seed for arguments the file leaves unconstrained (default 0)")
    p.add_argument("--dry-run", action="store_true", help="build everything, execute nothing")
    p.add_argument("--repeat", type=int, default=1, help="run the commands N times (default 1)")
    p.add_argument("--strict", action="store_true", help="treat unknown fields as errors")
    p.add_argument("--log-level", type=str.lower, choices=["debug", "info", "warning", "error", "critical"],
                   help="logging verbosity")
    p.add_argument("--profiling-dump-path", type=Path, help="write each command's GPU time (JSON)")
    p.add_argument("--perf-counters-dump-path", type=Path, help="write host-side phase timings (JSON)")
    p.add_argument("--pipeline-caching", action="store_true", help="reuse compiled SPIR-V and pipeline caches")
    p.add_argument("--cache-path", type=Path, help="cache folder for --pipeline-caching")
    p.add_argument("--clear-pipeline-cache", action="store_true", help="empty the cache folder first")
    p.add_argument("--fail-on-pipeline-cache-miss", action="store_true",
                   help="fail when --pipeline-caching finds something not yet cached")
    p.add_argument("--no-cache", action="store_true",
                   help="compile every kernel afresh: neither read nor write the compiled-artifact cache")
    p.add_argument("--enable-robustness-features", action="store_true", help="enable robust buffer access")
    p.add_argument("--capture-frames", type=Path, metavar="DIR",
                   help="save the resources each mark_boundary lists as <uid>.frame<N>.npy in DIR")
    p.add_argument("--dump-stages", type=Path, metavar="DIR",
                   help="write every compilation stage of every kernel as <uid>.<stage>.<ext>")
    # issue 13: expected outputs and timelines
    p.add_argument("--check", action="store_true",
                   help="compare the outputs with the expectations sidecar (NAME.expect.json); exit 1 on a mismatch")
    p.add_argument("--expectations", type=Path, metavar="FILE",
                   help="the sidecar for --check (default: beside the file)")
    p.add_argument("--trace", type=Path, metavar="F.json",
                   help="write a Chrome trace-event timeline (host phases; GPU time per command)")
    # kernel specs (PySchedCL): --set, --partition, --devices, --input, --split
    from kernellab.commands.spec_args import add_spec_arguments
    add_spec_arguments(p)
    p.set_defaults(func=run)


def detect_format(path: Path) -> str:
    from kernellab.formats.detect import detect
    return detect(path)


def run(args: argparse.Namespace) -> int:
    if args.file and args.scenario and args.file != args.scenario:
        raise UsageError("give the file once: either as an argument or with --scenario")
    path = args.scenario or args.file
    if path is None:
        raise UsageError("no workload file: kernellab run S.json (or --scenario S.json)")
    if args.repeat < 1:
        raise UsageError(f"--repeat must be >= 1, got {args.repeat}")
    fmt = args.format or detect_format(path)
    with config.override(compile_cache=not getattr(args, "no_cache", False)):
        if fmt != "scenario":
            from kernellab.runtime.runners import runner_for
            status = runner_for(fmt)(path, args)
        else:
            status = run_scenario(path, args)
    if getattr(args, "check", False) and status == 0 and not args.dry_run:
        from kernellab.suite.checking import check_written_outputs
        status = check_written_outputs(path, args.output, fmt, args.expectations)
    return status


def run_scenario(path: Path, args: argparse.Namespace) -> int:
    from kernellab.formats.scenario import load_scenario
    from kernellab.runtime.executor import RunOptions, execute

    t0 = time.perf_counter()
    scenario, warnings = load_scenario(path, args.output, strict=args.strict)
    for w in warnings:
        print(w, file=sys.stderr)
    parse_ms = (time.perf_counter() - t0) * 1e3

    cache_dir = None
    if args.pipeline_caching or args.cache_path:
        cache_dir = args.cache_path or config.get().cache_dir
        if args.clear_pipeline_cache and cache_dir.exists():
            shutil.rmtree(cache_dir)
    options = RunOptions(device=args.device, backend=args.backend, dry_run=args.dry_run, repeat=args.repeat,
                         capture_frames=args.capture_frames, dump_stages=args.dump_stages, cache_dir=cache_dir,
                         robust_buffer_access=args.enable_robustness_features,
                         timestamps=args.profiling_dump_path is not None or getattr(args, "trace", None) is not None,
                         fail_on_cache_miss=args.fail_on_pipeline_cache_miss)
    progress = None
    if args.repeat > 1:
        from rich.progress import Progress
        progress = Progress(transient=True, console=_stderr_console())
        task = progress.add_task("running", total=args.repeat)
        options.progress = lambda done, total: progress.update(task, completed=done)
    if progress is not None:
        with progress:
            report = execute(scenario, options)
    else:
        report = execute(scenario, options)
    report.phases_ms = {"parse": parse_ms, **report.phases_ms}

    from kernellab.outputs import write_text
    if args.perf_counters_dump_path:
        write_text(args.perf_counters_dump_path, json.dumps({
            "device": report.device,
            "phases_ms": {k: round(v, 3) for k, v in report.phases_ms.items()},
            "total_ms": round(sum(report.phases_ms.values()), 3)}, indent=2) + "\n")
    if args.profiling_dump_path:
        write_text(args.profiling_dump_path, json.dumps(profiling_json(report), indent=2) + "\n")
    if getattr(args, "trace", None) is not None:
        from kernellab.suite.trace import run_report_events, write_trace
        write_trace(args.trace, run_report_events(str(path), report))
    return 0


def profiling_json(report: Any) -> dict[str, Any]:
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


def _stderr_console() -> Any:
    from rich.console import Console
    return Console(stderr=True)
