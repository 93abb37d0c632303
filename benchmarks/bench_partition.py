"""Issue 6 benchmark: the cost of splitting a kernel, and of evaluating symbolic expressions.

1. A 2^24-element vector add from a PySchedCL spec on one PoCL device: partition P=5 (two queues,
   sub-buffers, two launches) against the unpartitioned run (P=10: one queue, one launch), same
   session, interleaved, host wall time of the whole run (writes, kernel(s), reads). Target:
   P=5 / unpartitioned <= 1.15.
2. 100,000 symbolic expressions (distinct texts, parsed and evaluated) through
   kernellab.expressions, against Python's ``eval`` (what PySchedCL does, unsafely) on the same
   texts. Target: under 1 s.

Run: /tmp/kv/bin/python benchmarks/bench_partition.py [--elements N] [--repeats R]
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

VECADD = """
__kernel void VectorAdd(__global const float* a, __global const float* b, __global float* c, int n) {
    int i = get_global_id(0);
    if (i >= n) return;
    c[i] = a[i] + b[i];
}
"""
SPEC = {"name": "VectorAdd", "src": "VectorAdd.cl", "workDimension": 1, "globalWorkSize": "[dataset]",
        "localWorkSize": "[256]", "partition": 10,
        "inputBuffers": [{"break": 1, "pos": 0, "size": "dataset", "type": "float"},
                         {"break": 1, "pos": 1, "size": "dataset", "type": "float"}],
        "outputBuffers": [{"break": 1, "pos": 2, "size": "dataset", "type": "float"}],
        "varArguments": [{"pos": 3, "type": "int", "value": "partition_round(dataset, size_percent)"}]}


def bench_partition(elements: int, repeats: int) -> dict:
    from kernellab.formats.pyschedcl.spec import load_spec
    from kernellab.runtime.host_data import fill_inputs
    from kernellab.runtime.partition import Session, choose_targets, execute

    tmp = tempfile.mkdtemp(prefix="kernellab-bench-")
    (Path(tmp) / "VectorAdd.cl").write_text(VECADD)
    (Path(tmp) / "VectorAdd.json").write_text(json.dumps(SPEC))
    kernel = load_spec(Path(tmp) / "VectorAdd.json").resolve({"dataset": elements})
    cpu, gpu = choose_targets("pocl")
    host = fill_inputs(kernel, 0)
    expected = host[0] + host[1]
    walls: dict[int, list[float]] = {10: [], 5: []}
    device: dict[int, list[float]] = {10: [], 5: []}
    with Session(cpu, gpu) as session:
        for p in (10, 5):  # warm-up: builds, first launches
            assert np.array_equal(execute(session, kernel, host, p).outputs[2], expected)
        for _ in range(repeats):
            for p in (10, 5):  # interleaved so that load from others hits both alike
                r = execute(session, kernel, host, p)
                walls[p].append(r.wall_s)
                device[p].append(r.device_ns / 1e6)
        assert np.array_equal(r.outputs[2], expected)
    med = {p: statistics.median(v) for p, v in walls.items()}
    return {"device": cpu.info.name, "elements": elements, "repeats": repeats,
            "unpartitioned_wall_ms": med[10] * 1e3, "p5_wall_ms": med[5] * 1e3, "ratio": med[5] / med[10],
            "unpartitioned_device_ms": statistics.median(device[10]), "p5_device_ms": statistics.median(device[5]),
            "min_ratio": min(walls[5]) / min(walls[10])}


def expression_texts(n: int) -> list[str]:
    shapes = ["partition_round(dataset, size_percent) + {k}", "[dataset // {k}, {k} * 2]", "dataset * {k} - 1",
              "min(dataset, {k}) + max(1, {k} % 7)", "(dataset + {k}) // 4 * 4", "ceil(dataset / {k})"]
    return [shapes[i % len(shapes)].format(k=i + 1) for i in range(n)]


def bench_expressions(n: int, rounds: int = 3) -> dict:
    """Best of ``rounds`` for each figure, ours and Python's interleaved (the machine is shared)."""
    import math

    from kernellab import expressions as ex

    texts = expression_texts(n)
    env = {"dataset": 4096, "size_percent": 50}
    scope = {"__builtins__": {}, "min": min, "max": max, "ceil": math.ceil, "floor": math.floor,
             "partition_round": ex.partition_round, **env}
    best = {"parse_and_evaluate_s": math.inf, "python_eval_s": math.inf, "evaluate_parsed_s": math.inf,
            "evaluate_text_s": math.inf}
    for _ in range(rounds):
        ex._compile_text.cache_clear()
        t0 = time.perf_counter()
        ours = [ex.parse(t).evaluate(env) for t in texts]
        best["parse_and_evaluate_s"] = min(best["parse_and_evaluate_s"], time.perf_counter() - t0)
        t0 = time.perf_counter()
        theirs = [eval(t, scope) for t in texts]  # noqa: S307 - the unsafe peer, on our own texts
        best["python_eval_s"] = min(best["python_eval_s"], time.perf_counter() - t0)
        assert ours == theirs
        parsed = [ex.parse(t) for t in texts[:4096]]  # in the cache now: time evaluation alone
        t0 = time.perf_counter()
        for i in range(n):
            parsed[i % len(parsed)].evaluate(env)
        best["evaluate_parsed_s"] = min(best["evaluate_parsed_s"], time.perf_counter() - t0)
        # what a spec run does: a few dozen distinct texts evaluated over and over through the API
        spec_texts = texts[:64]
        t0 = time.perf_counter()
        for i in range(n):
            ex.evaluate(spec_texts[i % 64], env)
        best["evaluate_text_s"] = min(best["evaluate_text_s"], time.perf_counter() - t0)
    return {"count": n, "rounds": rounds, **best, "ratio_vs_eval": best["parse_and_evaluate_s"] / best["python_eval_s"]}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--elements", type=int, default=1 << 24)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--expressions", type=int, default=100_000)
    ap.add_argument("--json", type=Path, help="also write the figures as JSON")
    args = ap.parse_args()
    print(f"machine: {platform.node()} {platform.machine()}, Python {platform.python_version()}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    e = bench_expressions(args.expressions)
    print(f"expressions (best of {e['rounds']}): {e['count']} distinct texts parsed+evaluated in {e['parse_and_evaluate_s']:.3f} s "
          f"(Python eval: {e['python_eval_s']:.3f} s, ratio {e['ratio_vs_eval']:.2f}x); "
          f"{e['count']} evaluations of parsed expressions {e['evaluate_parsed_s']:.3f} s; {e['count']} "
          f"evaluate(text) calls over 64 spec texts {e['evaluate_text_s']:.3f} s  [target < 1 s]")
    r = bench_partition(args.elements, args.repeats)
    print(f"vector add 2^{int(np.log2(r['elements']))} floats on {r['device']}: unpartitioned {r['unpartitioned_wall_ms']:.1f} ms, "
          f"P=5 two queues {r['p5_wall_ms']:.1f} ms (median of {r['repeats']}), ratio {r['ratio']:.3f}x "
          f"(best-of ratio {r['min_ratio']:.3f}x)  [target <= 1.15x]; device makespan "
          f"{r['unpartitioned_device_ms']:.1f} ms vs {r['p5_device_ms']:.1f} ms")
    if args.json:
        args.json.write_text(json.dumps({"expressions": e, "partition": r}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
