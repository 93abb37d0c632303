#!/usr/bin/env python3
"""Issue 10 soak benchmark: memory stays flat over a long run.

    python benchmarks/bench_soak.py [--repeats 100000] [--verifies 1000] [--json out.json]

1. ``kernellab run examples/vector_add/scenario.json --repeat N``: the child's peak resident memory
   (wait4) with N/20 repeats ("start") and with N ("end").
2. ``kernellab verify`` of one small kernel-instantiation launch, called N times in ONE Python
   process through the CLI's entry point (as a test suite or a service would): resident memory
   after the first 5% of the calls, at every tenth of the run ("trace"), and after the last.
Flat means the end is within 5% (or 2 MiB) of the early figure. ``--only-verify`` runs 2 alone.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KERNEL = """__kernel void scale(__global float *a, float k) {
    size_t i = get_global_id(0);
    a[i] = a[i] * k;
}
"""


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _run_peak(repeats: int) -> tuple[float, int]:
    """Wall time and peak resident memory (KiB, from wait4) of one `kernellab run --repeat`."""
    with tempfile.TemporaryDirectory() as out:
        argv = [sys.executable, "-m", "kernellab", "run", str(ROOT / "examples/vector_add/scenario.json"),
                "--output", out, "--repeat", str(repeats)]
        started = time.monotonic()
        child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                 env={**os.environ, "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp")})
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.monotonic() - started
        if status != 0:
            raise SystemExit(f"kernellab run failed: {child.stderr.read().decode() if child.stderr else ''}")
    return wall, usage.ru_maxrss


def soak_run(repeats: int) -> dict[str, float]:
    """Memory after N/20 repeats against memory after N: per-repeat growth shows as a difference."""
    early = max(1, repeats // 20)
    _, start = _run_peak(early)
    wall, end = _run_peak(repeats)
    return {"repeats": repeats, "wall_s": round(wall, 2), "rss_start_mib": round(start / 1024, 1),
            "rss_end_mib": round(end / 1024, 1), "early_repeats": early}


def soak_verify(calls: int) -> dict[str, float]:
    from kernellab.cli import main

    work = Path(tempfile.mkdtemp())
    (work / "scale.cl").write_text(KERNEL)
    (work / "a.bin").write_bytes(bytes(256))
    (work / "k.json").write_text(json.dumps([{
        "language": "OpenCL", "kernel_file": "scale.cl", "entry_point": "scale", "global_size": [64],
        "local_size": [16], "kernel_arguments": [
            {"type": "array", "size": 256, "address_space": "global", "flags": ["CL_MEM_READ_WRITE"], "data": "a.bin"},
            {"type": "scalar", "value": "0x40000000"}]}]))
    early = 0
    trace = []
    started = time.monotonic()
    for i in range(calls):
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            status = main(["verify", str(work / "k.json")])
        if status != 0:
            raise SystemExit(f"kernellab verify exited {status} on call {i}")
        if i == max(1, calls // 20):
            early = rss_kib(os.getpid())
        if (i + 1) % max(1, calls // 10) == 0:
            trace.append(round(rss_kib(os.getpid()) / 1024, 1))
    end = rss_kib(os.getpid())
    return {"calls": calls, "wall_s": round(time.monotonic() - started, 2), "rss_start_mib": round(early / 1024, 1),
            "rss_end_mib": round(end / 1024, 1), "trace_mib": trace,
            "growth_kib_per_call": round((end - early) / max(1, calls - max(1, calls // 20) - 1), 2)}


def flat(result: dict[str, float]) -> bool:
    grown = result["rss_end_mib"] - result["rss_start_mib"]
    return grown <= max(2.0, 0.05 * result["rss_start_mib"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=100000)
    ap.add_argument("--verifies", type=int, default=1000)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--only-verify", action="store_true", help="only the in-process verify soak")
    args = ap.parse_args()
    results: dict[str, object] = {"machine": f"{platform.node()} {platform.machine()}, {os.cpu_count()} cores, "
                                             f"Python {platform.python_version()}", "date": time.strftime("%Y-%m-%d")}
    ok = True
    if not args.only_verify:
        results["run"] = run = soak_run(args.repeats)
        print(f"run --repeat {args.repeats}: {run} -> {'flat' if flat(run) else 'GROWS'}")
        ok = flat(run)
    results["verify"] = verify = soak_verify(args.verifies)
    print(f"{args.verifies} verify calls: {verify} -> {'flat' if flat(verify) else 'GROWS'}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0 if ok and flat(verify) else 1


if __name__ == "__main__":
    sys.exit(main())
