"""The AmberScript compute corpus: `kernellab test --jobs 2` over the files vs one `kernellab run`
per file, on one machine (the files each run passes: the same work both ways).

    .venv/bin/python benchmarks/bench_amber.py --results /tmp/amber-conf/results.json

``--results`` is conformance/amber_corpus.py's output; only the files that passed there are timed,
so both sides do the same work. Amber itself is not built here (see CONFORMANCE.md).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

KERNELLAB = Path(__file__).resolve().parent.parent / ".venv" / "bin" / "kernellab"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results", type=Path, required=True)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--kernellab", type=Path, default=KERNELLAB)
    args = p.parse_args(argv)
    rows = json.loads(args.results.read_text())["files"]
    files = [r["file"] for r in rows if r["verdict"] == "pass"]
    env = {**os.environ, "XDG_RUNTIME_DIR": "/tmp"}
    # one warm-up of each so the compiled-artifact cache holds every shader for both sides
    subprocess.run([str(args.kernellab), "test", "--jobs", str(args.jobs), "--progress", "off", *files],
                   capture_output=True, env=env)
    t0 = time.perf_counter()
    suite = subprocess.run([str(args.kernellab), "test", "--jobs", str(args.jobs), "--progress", "off", *files],
                           capture_output=True, text=True, env=env)
    suite_s = time.perf_counter() - t0
    per_file = []
    statuses = []
    for f in files:
        t = time.perf_counter()
        r = subprocess.run([str(args.kernellab), "run", f], capture_output=True, env=env)
        per_file.append(time.perf_counter() - t)
        statuses.append(r.returncode)
    total = sum(per_file)
    print(f"{len(files)} passing files; kernellab test --jobs {args.jobs}: {suite_s:.2f} s "
          f"({suite_s / len(files) * 1e3:.1f} ms per file, exit {suite.returncode}); "
          f"kernellab run per file: {total:.2f} s (median {statistics.median(per_file) * 1e3:.0f} ms, "
          f"max {max(per_file) * 1e3:.0f} ms; {statuses.count(0)} exit 0); "
          f"ratio {total / suite_s:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
