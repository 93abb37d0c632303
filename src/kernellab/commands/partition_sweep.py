"""``kernellab partition-sweep SPEC.json``: time a kernel spec at every partition P = 0..10."""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kernellab.errors import UsageError


def register(sub: Any) -> None:
    from kernellab.runtime.split_modes import SPLIT_MODES

    p = sub.add_parser("partition-sweep", help="time a PySchedCL kernel spec at every CPU/GPU partition 0..10",
                       description="Run the spec at partitions 0..10 (P/10 of dimension 0 on the GPU-class device), "
                                   "with warm-up and repeats, and report the makespan from profiling events.")
    p.add_argument("spec", type=Path, help="the kernel spec (PySchedCL JSON)")
    p.add_argument("--set", action="append", metavar="NAME=VALUE", help="a variable, e.g. --set dataset=4096")
    p.add_argument("--devices", metavar="CPU,GPU", help="CPU-class and GPU-class OpenCL devices "
                                                         "(kind cpu/gpu, index or name substring)")
    p.add_argument("--partitions", default="0-10", metavar="LIST", help="partitions to time, e.g. 0-10 or 0,5,10")
    p.add_argument("--warmup", type=int, default=1, help="untimed runs per partition (default 1)")
    p.add_argument("--repeats", type=int, default=5, help="timed runs per partition; medians reported (default 5)")
    p.add_argument("--seed", type=int, default=0, help="seed of the generated input data")
    p.add_argument("--split", choices=SPLIT_MODES, default="subbuffer", help="how parts see their share")
    p.add_argument("--plot", type=Path, metavar="FILE.png", help="plot the times against P")
    p.add_argument("--json", type=Path, metavar="FILE.json",
                   help="write the timings (kernellab schedule --timings reads them)")
    p.set_defaults(func=run)


def parse_partitions(text: str) -> list[int]:
    out: list[int] = []
    for item in text.split(","):
        item = item.strip()
        lo, sep, hi = item.partition("-")
        try:
            values = range(int(lo), int(hi) + 1) if sep else [int(item)]
        except ValueError:
            raise UsageError(f"--partitions {text!r}: expected numbers 0..10 like 0-10 or 0,5,10") from None
        for v in values:
            if not 0 <= v <= 10:
                raise UsageError(f"--partitions {text!r}: {v} is outside 0..10")
            if v not in out:
                out.append(v)
    if not out:
        raise UsageError("--partitions: no partition given")
    return out


def sweep_document(kernel: Any, session: Any, points: Sequence[Any], best: Any) -> dict[str, Any]:
    return {"kind": "kernellab.partition-sweep", "spec": kernel.spec.file, "kernel": kernel.spec.name,
            "variables": {k: v for k, v in kernel.variables.items()},
            "global_size": list(kernel.global_size),
            "devices": {"gpu": session.lanes["gpu"].target.info.name, "cpu": session.lanes["cpu"].target.info.name},
            "best_partition": best.partition, "points": [pt.as_json() for pt in points]}


def plot_sweep(points: Sequence[Any], best: Any, title: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from kernellab.outputs import atomic_open

    ps = [pt.partition for pt in points]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(ps, [pt.makespan_ns / 1e6 for pt in points], "o-", label="makespan (profiling events)")
    ax.plot(ps, [pt.kernel_ns("gpu") / 1e6 for pt in points], "s--", label="GPU-class part, kernel")
    ax.plot(ps, [pt.kernel_ns("cpu") / 1e6 for pt in points], "^--", label="CPU-class part, kernel")
    ax.axvline(best.partition, color="grey", linestyle=":", label=f"best P = {best.partition}")
    ax.set_xlabel("partition P (P/10 of dimension 0 on the GPU-class device)")
    ax.set_ylabel("time (ms, median)")
    ax.set_xticks(range(0, 11))
    ax.set_title(title)
    ax.legend(fontsize="small")
    fig.tight_layout()
    with atomic_open(path) as fh:
        fig.savefig(fh, format="png", dpi=100)
    plt.close(fig)


def run(args: argparse.Namespace) -> int:
    from kernellab.commands.run_extras import supervised_natively
    # kernels run as native code on a CPU device: a crash is one line naming the part (launch_guard)
    status = supervised_natively([], [args.json, args.plot])
    if status is not None:
        return status
    from kernellab.formats.pyschedcl.kernel import parse_assignments
    from kernellab.formats.pyschedcl.spec import load_spec
    from kernellab.outputs import write_text
    from kernellab.runtime.host_data import fill_inputs
    from kernellab.runtime.partition import Session, best_partition, choose_targets, sweep

    partitions = parse_partitions(args.partitions)
    spec = load_spec(args.spec)
    kernel = spec.resolve(parse_assignments(args.set))
    cpu, gpu = choose_targets(args.devices)
    with Session(cpu, gpu) as session:
        session.check_fits(kernel)
        host = fill_inputs(kernel, args.seed)
        points = sweep(session, kernel, host, partitions, args.warmup, args.repeats, args.split)
        best = best_partition(points)
        out = sys.stdout
        print(f"{spec.name}: NDRange {list(kernel.global_size)} on {session.description}; "
              f"{args.warmup} warm-up + {args.repeats} timed runs per P (medians)", file=out)
        print(f"{'P':>3} {'split':>9} {'makespan ms':>12} {'GPU part ms':>12} {'CPU part ms':>12} {'wall ms':>9}",
              file=out)
        for pt in points:
            mark = "  <- best" if pt is best else ""
            warn = ("  (outputs differ!)" if not pt.consistent
                    else "  (outputs equal within rounding)" if not pt.identical else "")
            print(f"{pt.partition:>3} {pt.split:>9} {pt.makespan_ns / 1e6:>12.3f} {pt.kernel_ns('gpu') / 1e6:>12.3f} "
                  f"{pt.kernel_ns('cpu') / 1e6:>12.3f} {pt.wall_s * 1e3:>9.2f}{mark}{warn}", file=out)
        print(f"best partition: P={best.partition} ({best.makespan_ns / 1e6:.3f} ms)", file=out)
        if args.json:
            write_text(args.json, json.dumps(sweep_document(kernel, session, points, best), indent=2) + "\n")
        if args.plot:
            plot_sweep(points, best, f"{spec.name} {list(kernel.global_size)}", args.plot)
        if not all(pt.consistent for pt in points):
            print("warning: some partitions gave different outputs (see the table)", file=sys.stderr)
            return 1
    return 0
