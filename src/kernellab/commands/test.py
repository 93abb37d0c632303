"""``kernellab test PATH...``: run every workload with expectations under the paths, in parallel."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernellab.backends.registry import names as backend_names
from kernellab.errors import UsageError

if TYPE_CHECKING:  # the suite's modules load when the command runs
    from kernellab.suite.discovery import SuiteItem
    from kernellab.suite.runner import SuiteOutcome


def register(sub: Any) -> None:
    p = sub.add_parser("test", help="run the workloads with expectations under PATHs and compare their outputs",
                       description="Find workloads with an expectations sidecar (NAME.expect.json) under the paths, "
                                   "run them in a pool of workers each holding one device session, compare the "
                                   "outputs, and report. Exit 0 when nothing unexpected failed, 1 otherwise, "
                                   "2 on bad input. See docs/suites.md.")
    p.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="folders, workload files or sidecars")
    p.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1,
                   help="worker processes (default: the core count)")
    p.add_argument("--device", help="device index or name substring (see `kernellab devices`)")
    p.add_argument("--backend", choices=backend_names(), default="vulkan",
                   help="scenarios: run on Vulkan (default) or OpenCL devices (OpenCL-C shaders only)")
    p.add_argument("--timeout", type=float, default=120.0,
                   help="seconds one workload may take before its worker is killed (default 120; 0 = none)")
    p.add_argument("--shard", metavar="I/N", help="run only shard I of N (1 <= I <= N), chosen by a hash of each id")
    p.add_argument("-k", dest="keep", action="append", default=[], metavar="REGEX",
                   help="run only the workloads whose id this regular expression matches (repeatable: any)")
    p.add_argument("--skip", type=Path, metavar="FILE",
                   help="skip list as deqp-runner's: one regular expression per line (# comments); "
                        "matching workloads are reported as Skip")
    p.add_argument("-x", "--exitfirst", action="store_true",
                   help="stop at the first unexpected failure: start no further workload")
    p.add_argument("--baseline", type=Path, metavar="FILE", help="expected failures, one ID,STATUS per line")
    p.add_argument("--write-baseline", type=Path, metavar="FILE", help="write this run's failures as a baseline")
    p.add_argument("--no-rerun", action="store_true", help="do not re-run unexpected failures once")
    p.add_argument("--json", action="store_true", help="print one JSON object per workload on standard output")
    p.add_argument("--junit", type=Path, metavar="FILE", help="write JUnit XML for CI")
    p.add_argument("--results-csv", type=Path, metavar="FILE",
                   help="write deqp-runner's results.csv: ID,Status,seconds per workload")
    p.add_argument("--trace", type=Path, metavar="F.json", help="write a Chrome trace-event timeline")
    p.add_argument("--executor", choices=["local", "ray"], default="local",
                   help="local worker processes (default) or a Ray cluster")
    p.add_argument("--address", help="--executor ray: the cluster to join (default: start a local Ray instance)")
    p.add_argument("--batch-size", type=int, default=8, help="--executor ray: workloads per task (default 8)")
    p.add_argument("--list", action="store_true", help="list the workloads (after --shard) and exit")
    p.add_argument("--progress", choices=["auto", "on", "off"], default="auto",
                   help="progress bar on standard error (auto: when it is a terminal)")
    p.set_defaults(func=test)


def _executor(args: argparse.Namespace) -> Any:
    from kernellab import config as settings
    from kernellab.suite.worker import WorkerConfig

    # with no cache, the workers' private folders lie in one of this process's (``scratch``),
    # removed as the command ends: a worker the timeout killed leaves nothing behind
    shared = None
    if not settings.get().compile_cache:
        from kernellab import scratch

        shared = str(scratch.root())
    config = WorkerConfig(device=args.device, backend=args.backend, timestamps=args.trace is not None,
                          scratch=shared, typed=tuple(os.fspath(p) for p in args.paths))
    timeout = args.timeout if args.timeout and args.timeout > 0 else None
    if args.executor == "ray":
        from kernellab.suite.ray_executor import RayExecutor
        return RayExecutor(config, address=args.address, jobs=args.jobs, batch_size=args.batch_size, timeout=timeout)
    from kernellab.suite.pool import LocalExecutor
    return LocalExecutor(config, args.jobs, timeout)


def test(args: argparse.Namespace) -> int:
    import math

    from kernellab.suite.baseline import read_baseline
    from kernellab.suite.discovery import parse_shard
    from kernellab.suite.selection import compile_patterns, load_skips

    if not math.isfinite(args.timeout) or args.timeout < 0:
        raise UsageError(f"--timeout must be a number of seconds >= 0 (0 = none), got {args.timeout:g}")
    if args.jobs < 1:
        raise UsageError(f"--jobs must be >= 1, got {args.jobs}")
    if args.batch_size < 1:
        raise UsageError(f"--batch-size must be >= 1, got {args.batch_size}")
    if args.address and args.executor != "ray":
        raise UsageError("--address goes with --executor ray")
    shard_spec = parse_shard(args.shard) if args.shard else None
    args.keep = compile_patterns(args.keep)
    args.skip = load_skips(args.skip) if args.skip else []
    baseline = read_baseline(args.baseline) if args.baseline else {}
    executor = None if args.list else _executor(args)
    if executor is not None and hasattr(executor, "start"):
        executor.start()  # workers open their devices while the suite is found
    try:
        return _test(args, executor, baseline, shard_spec)
    finally:
        if executor is not None and hasattr(executor, "close"):
            executor.close()


def _test(args: argparse.Namespace, executor: Any, entries: dict[str, tuple[str, int]],
          shard_spec: tuple[int, int] | None) -> int:
    items, skipped = _select(args, entries, shard_spec)
    if args.list:
        for item in items:
            print(item.id)
        return 0
    if not items and skipped:
        print(f"kernellab test: every workload found matches the skip list ({len(skipped)})", file=sys.stderr)
    elif not items:
        print("kernellab test: no workloads with expectations found", file=sys.stderr)
        return 0 if shard_spec else 1
    baseline = {item_id: status for item_id, (status, _) in entries.items()}
    outcome = _run(args, executor, items, baseline, skipped)
    _report(args, executor, outcome)
    return 0 if outcome.ok else 1


def _select(args: argparse.Namespace, entries: dict[str, tuple[str, int]],
            shard_spec: tuple[int, int] | None) -> tuple[list[SuiteItem], list[SuiteItem]]:
    """The suite's items this run runs (its shard, -k and --skip applied) and those skipped."""
    from kernellab.suite.baseline import unmatched_lines
    from kernellab.suite.discovery import discover, shard
    from kernellab.suite.selection import select

    notes: list[str] = []
    items = discover(args.paths, notes)
    for note in notes:
        print(f"kernellab test: notice: {note}", file=sys.stderr)
    if args.baseline:
        # against the whole suite found: one baseline serves every shard and every -k
        for warning in unmatched_lines(args.baseline, entries, (i.id for i in items)):
            print(warning, file=sys.stderr)
    if shard_spec:
        items = shard(items, *shard_spec)
    return select(items, args.keep, args.skip)


def _run(args: argparse.Namespace, executor: Any, items: list[SuiteItem], baseline: dict[str, str],
         skipped: list[SuiteItem]) -> SuiteOutcome:
    """Run the items, with a progress bar on a terminal (or with --progress on)."""
    from kernellab.suite.runner import run_suite

    show = args.progress == "on" or (args.progress == "auto" and sys.stderr.isatty())
    if not show:
        return run_suite(items, executor, baseline, rerun_failures=not args.no_rerun, skipped=skipped,
                         stop_on_failure=args.exitfirst)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from kernellab.textsafe import raw  # the bar's own escape sequences; its text is ours

    progress = Progress(TextColumn("testing"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[bad]}"),
                        TimeElapsedColumn(), console=Console(file=raw(sys.stderr)), transient=True)
    task = progress.add_task("test", total=len(items), bad="")
    bad = [0]

    def on_result(r: Any) -> None:
        bad[0] += r.status != "pass"
        progress.update(task, advance=1, bad=f"{bad[0]} failing" if bad[0] else "")
    with progress:
        return run_suite(items, executor, baseline, on_result, rerun_failures=not args.no_rerun,
                         skipped=skipped, stop_on_failure=args.exitfirst)


def _report(args: argparse.Namespace, executor: Any, outcome: SuiteOutcome) -> None:
    """The reports asked for (JSON lines, JUnit, CSV, trace, a new baseline) and the summary."""
    from kernellab.outputs import write_text
    from kernellab.suite.baseline import baseline_text
    from kernellab.suite.reports import json_lines, junit_xml, results_csv, summary, trace_events

    if args.json:
        json_lines(outcome, sys.stdout)
    if args.junit:
        write_text(args.junit, junit_xml(outcome))
    if args.results_csv:
        write_text(args.results_csv, results_csv(outcome))
    if args.trace:
        from kernellab.suite.trace import write_trace
        write_trace(args.trace, trace_events(outcome), metadata_args={"executor": executor.name})
    if args.write_baseline:
        write_text(args.write_baseline, baseline_text(
            (r.id, r.title) for r in outcome.results if r.outcome in ("fail", "expected-fail")))
    summary(outcome, sys.stderr, executor=executor.name, jobs=args.jobs if args.executor == "local" else None)
