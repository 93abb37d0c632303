"""Proof time per kernel of ``verify --prove``: median and 95th percentile over a subset of
GPUVerify's OpenCL test suite (every Nth test) and over the GLSL ports of its kernels
(tests/backend/test_verify_vulkan_ports.py). The time is the engine's (encoding and z3), without
the compile, which the compile cache makes a one-off; the wall time with the compile is shown too.

    python benchmarks/bench_prove.py --every 4 --timeout 20
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "backend"))

DEFAULT_SUITE = Path("/work/ext/gpuverify/testsuite/OpenCL")


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))] if ordered else float("nan")


def opencl_times(suite: Path, every: int, timeout: float) -> tuple[list[float], list[float], dict[str, int]]:
    from conformance.gpuverify_prove import prove_test
    proofs, walls, verdicts = [], [], {}  # type: ignore[var-annotated]
    for path in sorted(suite.rglob("kernel.cl"))[::every]:
        start = time.monotonic()
        r = prove_test(path, timeout)
        walls.append(time.monotonic() - start)
        for k in r.get("kernels", {}).values():
            if "seconds" in k:
                proofs.append(k["seconds"])
            verdicts[k["verdict"]] = verdicts.get(k["verdict"], 0) + 1
    return proofs, walls, verdicts


def glsl_times(timeout: float) -> tuple[list[float], list[float], dict[str, int]]:
    from test_verify_vulkan_ports import PORTS, port_scenario

    from kernellab.verify.prove.files import prove_files
    proofs, walls, verdicts = [], [], {}  # type: ignore[var-annotated]
    with tempfile.TemporaryDirectory() as tmp:
        for n, (_, port) in enumerate(sorted(PORTS.items())):
            path = port_scenario(Path(tmp) / str(n), port)
            start = time.monotonic()
            r = prove_files([path], formats=["scenario"], timeout=timeout, replay=False)[0]
            walls.append(time.monotonic() - start)
            for launch in r.launches:
                if launch.seconds is not None:
                    proofs.append(launch.seconds)
                verdicts[launch.proof or "?"] = verdicts.get(launch.proof or "?", 0) + 1
    return proofs, walls, verdicts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", type=Path, default=DEFAULT_SUITE)
    ap.add_argument("--every", type=int, default=4, help="every Nth test of the suite (default 4)")
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--sets", default="opencl,glsl", help="which sets: opencl, glsl or both (default)")
    a = ap.parse_args(argv)
    sets = {"opencl": lambda: opencl_times(a.suite, a.every, a.timeout), "glsl": lambda: glsl_times(a.timeout)}
    names = {"opencl": "GPUVerify OpenCL subset", "glsl": "GLSL ports"}
    print("| set | kernels | proof median s | proof p95 s | wall median s (with compile) | verdicts |")
    print("|---|---|---|---|---|---|")
    for key in a.sets.split(","):
        proofs, walls, verdicts = sets[key]()
        name = names[key]
        print(f"| {name} | {len(proofs)} | {statistics.median(proofs):.2f} | {p95(proofs):.2f} | "
              f"{statistics.median(walls):.2f} | {', '.join(f'{k} {v}' for k, v in sorted(verdicts.items()))} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
