#!/usr/bin/env python3
"""Issue 13 benchmark: a 200-workload suite with expectations, ``kernellab test`` vs Arm's runner.

    python benchmarks/bench_suites.py [--count 200] [--repeats 3] [--ray] [--workdir DIR] [--json F]
                                      [--glsl-distinct] [--cold]

Generates ``count`` small scenarios in four kinds, a quarter each, every one with its own inputs,
an expectations sidecar and a NumPy reference:

- ``tiny``   c = a + b over 64 floats (exact)
- ``push``   y = x * scale + offset, scale and offset as push constants (1 ulp, FMA or not)
- ``spec``   y = x * K + x, K a specialization constant, 10 different values (rtol 1e-6)
- ``chain``  two dependent dispatches with a barrier: b = sin(a) * 2 + 1; c = sin(b) * 0.5 - 1 (atol 1e-4)

Shaders are compiled to SPIR-V ahead (Arm's runner takes SPIR-V), one file per kind, shared.
Then, wall time of the whole suite, each measured ``repeats`` times (median):

- Arm: a loop that runs ``scenario-runner --scenario S --output D`` once per scenario (pinned to
  lavapipe, emulation layers as in ``kernellab.testing.arm_runner``) and compares every output
  with its reference in Python (``np.load``, view as the reference's dtype, the same tolerance);
- ``kernellab test DIR --jobs 1`` and ``--jobs 2`` (a fresh process: start-up, discovery, workers);
- with ``--ray``, ``kernellab test DIR --executor ray --jobs 2`` (starts a local Ray instance).

And the warm per-workload cost of ``tiny`` in one session: :func:`kernellab.suite.worker.run_item`
(load sidecar, run, read back, compare) on every ``tiny`` workload after one warm-up pass, median.
Targets: ``kernellab test`` >= 5x faster than the Arm loop; warm ``tiny`` < 10 ms.
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

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_scenarios import machine_description, runner_environments, work_folder  # noqa: E402

from kernellab import tools  # noqa: E402

SHADERS = {
    "add": """#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(set = 0, binding = 2) writeonly buffer C { float c[]; };
void main() { uint i = gl_GlobalInvocationID.x; c[i] = a[i] + b[i]; }
""",
    "push": """#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { float scale; float offset; };
void main() { uint i = gl_GlobalInvocationID.x; y[i] = x[i] * scale + offset; }
""",
    "spec": """#version 450
layout(local_size_x = 64) in;
layout(constant_id = 0) const float K = 1.0;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
void main() { uint i = gl_GlobalInvocationID.x; y[i] = x[i] * K + x[i]; }
""",
    "step": """#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer S { float s[]; };
layout(set = 0, binding = 1) writeonly buffer D { float d[]; };
layout(push_constant) uniform P { float scale; float offset; };
void main() { uint i = gl_GlobalInvocationID.x; d[i] = sin(s[i]) * scale + offset; }
""",
}
N = 64
KINDS = ("tiny", "push", "spec", "chain")


def compile_shaders(root: Path) -> None:
    glslang = tools.require("glslangValidator", "the benchmark's shaders")
    for name, text in SHADERS.items():
        src = root / f"{name}.comp"
        src.write_text(text)
        glslang.run(["-V", "--target-env", "vulkan1.1", "-S", "comp", "-o", str(root / f"{name}.spv"), str(src)],
                    what=f"compile {src.name}")


def _buf(uid: str, access: str, src: str | None = None, dst: str | None = None) -> dict:
    b: dict = {"uid": uid, "size": 4 * N, "shader_access": access}
    if src:
        b["src"] = src
    if dst:
        b["dst"] = dst
    return {"buffer": b}


def _dispatch(shader: str, bindings: list[str], push: str | None = None) -> dict:
    d: dict = {"shader_ref": shader, "rangeND": [N // 64],
               "bindings": [{"set": 0, "id": i, "resource_ref": r} for i, r in enumerate(bindings)]}
    if push:
        d["push_data_ref"] = push
    return {"dispatch_compute": d}


def _distinct_glsl(resources: list[dict], folder: Path, i: int) -> None:
    """Give each scenario its own GLSL source (the shared shader with a line naming the workload):
    every workload is then a compile-cache miss for kernellab, as it is a compile for Arm."""
    for r in resources:
        shader = r.get("shader")
        if shader is not None:
            name = Path(shader["src"]).stem
            (folder / f"{name}.comp").write_text(SHADERS[name] + f"// workload {i}\n")
            shader["src"], shader["type"] = f"{name}.comp", "GLSL"


def make_suite(root: Path, count: int, glsl_distinct: bool = False) -> dict[str, int]:
    """``count`` scenarios under root/suite/KIND/NNN/; returns the count per kind."""
    rng = np.random.default_rng(13)
    made = {k: 0 for k in KINDS}
    for i in range(count):
        kind = KINDS[i % 4]
        folder = root / "suite" / kind / f"{i:04d}"
        folder.mkdir(parents=True, exist_ok=True)
        up = "../../../"
        f32 = np.float32
        if kind == "tiny":
            a, b = rng.standard_normal(N).astype(f32), rng.standard_normal(N).astype(f32)
            np.save(folder / "a.npy", a)
            np.save(folder / "b.npy", b)
            res = [{"shader": {"uid": "add", "src": up + "add.spv", "type": "SPIR-V"}},
                   _buf("a", "readonly", "a.npy"), _buf("b", "readonly", "b.npy"), _buf("c", "writeonly", dst="c.npy")]
            cmds = [_dispatch("add", ["a", "b", "c"])]
            ref, out, tol = a + b, "c", {}
        elif kind == "push":
            x = rng.standard_normal(N).astype(f32)
            scale, offset = f32(rng.uniform(-2, 2)), f32(rng.uniform(-1, 1))
            np.save(folder / "x.npy", x)
            np.save(folder / "p.npy", np.array([scale, offset], f32))
            res = [{"shader": {"uid": "push", "src": up + "push.spv", "type": "SPIR-V", "push_constants_size": 8}},
                   {"raw_data": {"uid": "p", "src": "p.npy"}},
                   _buf("x", "readonly", "x.npy"), _buf("y", "writeonly", dst="y.npy")]
            cmds = [_dispatch("push", ["x", "y"], "p")]
            ref, out, tol = x * scale + offset, "y", {"ulps": 1, "atol": 1e-6}
        elif kind == "spec":
            x = rng.standard_normal(N).astype(f32)
            k = float(0.5 + (i // 4) % 10)
            np.save(folder / "x.npy", x)
            res = [{"shader": {"uid": "spec", "src": up + "spec.spv", "type": "SPIR-V",
                               "specialization_constants": [{"id": 0, "value": k}]}},
                   _buf("x", "readonly", "x.npy"), _buf("y", "writeonly", dst="y.npy")]
            cmds = [_dispatch("spec", ["x", "y"])]
            ref, out, tol = x * f32(k) + x, "y", {"rtol": 1e-6}
        else:
            a = rng.uniform(-3, 3, N).astype(f32)
            np.save(folder / "a.npy", a)
            np.save(folder / "p1.npy", np.array([2.0, 1.0], f32))
            np.save(folder / "p2.npy", np.array([0.5, -1.0], f32))
            res = [{"shader": {"uid": "step", "src": up + "step.spv", "type": "SPIR-V", "push_constants_size": 8}},
                   {"raw_data": {"uid": "p1", "src": "p1.npy"}}, {"raw_data": {"uid": "p2", "src": "p2.npy"}},
                   _buf("a", "readonly", "a.npy"), _buf("b", "readwrite"), _buf("c", "writeonly", dst="c.npy"),
                   {"memory_barrier": {"uid": "mb", "src_access": "compute_shader_write",
                                       "dst_access": "compute_shader_read"}}]
            cmds = [_dispatch("step", ["a", "b"], "p1"),
                    {"dispatch_barrier": {"memory_barrier_refs": ["mb"], "image_barrier_refs": [],
                                          "tensor_barrier_refs": [], "buffer_barrier_refs": []}},
                    _dispatch("step", ["b", "c"], "p2")]
            mid = (np.sin(a.astype(np.float64)) * 2 + 1).astype(f32)
            ref, out, tol = (np.sin(mid.astype(np.float64)) * 0.5 - 1).astype(f32), "c", {"atol": 1e-4, "rtol": 1e-4}
        if glsl_distinct:
            _distinct_glsl(res, folder, i)
        (folder / "scenario.json").write_text(json.dumps({"resources": res, "commands": cmds}, indent=1))
        np.save(folder / "ref.npy", ref.astype(f32))
        (folder / "scenario.expect.json").write_text(json.dumps(
            {"outputs": {out: {"reference": "ref.npy", "dtype": "float32", **tol}}}))
        made[kind] += 1
    return made


def arm_loop(root: Path, arm: object, arm_env: dict[str, str]) -> tuple[float, int]:
    """Arm's runner once per scenario, then the comparison in Python; (wall s, failures)."""
    from kernellab.suite.compare import compare_arrays
    from kernellab.suite.expectations import load_expectations

    failures = 0
    start = time.perf_counter()
    for sidecar in sorted((root / "suite").rglob("scenario.expect.json")):
        folder = sidecar.parent
        proc = subprocess.run(arm.command(folder / "scenario.json", output=folder / "out-arm"),  # type: ignore[attr-defined]
                              env=arm_env, capture_output=True)
        if proc.returncode != 0:
            failures += 1
            continue
        e = load_expectations(sidecar)
        for name, exp in e.outputs.items():
            actual = np.load(folder / "out-arm" / f"{name}.npy")
            if not compare_arrays(name, actual, np.load(exp.reference), exp.tolerance).ok:
                failures += 1
    return time.perf_counter() - start, failures


def kernellab_test(root: Path, env: dict[str, str], *extra: str) -> tuple[float, dict]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "kernellab", "test", str(root / "suite"), "--json",
                           "--progress", "off", *extra], env=env, capture_output=True, text=True, cwd=root)
    wall = time.perf_counter() - start
    outcomes: dict[str, int] = {}
    for line in proc.stdout.splitlines():
        o = json.loads(line)["outcome"]
        outcomes[o] = outcomes.get(o, 0) + 1
    if proc.returncode not in (0, 1):
        raise SystemExit(f"kernellab test failed ({proc.returncode}):\n{proc.stderr}")
    return wall, outcomes


def warm_tiny_ms(root: Path) -> float:
    from kernellab.session import Session
    from kernellab.suite.discovery import discover
    from kernellab.suite.worker import run_item

    cwd = os.getcwd()
    os.chdir(root)
    try:
        items = [i for i in discover([Path("suite/tiny")])]
        with Session() as session:
            for item in items:  # warm-up: compile, pipeline, first touch of each file
                run_item(session, item)
            times = []
            for item in items:
                t = time.perf_counter()
                r = run_item(session, item)
                times.append((time.perf_counter() - t) * 1e3)
                assert r.status == "pass", r.message
    finally:
        os.chdir(cwd)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ray", action="store_true", help="also time --executor ray on a local Ray instance")
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--glsl-distinct", action="store_true",
                        help="each scenario ships its own GLSL source (Arm compiles it on every run)")
    parser.add_argument("--cold", action="store_true",
                        help="each kernellab run starts from an empty compile cache (KERNELLAB_CACHE_DIR)")
    args = parser.parse_args(argv)

    icd, arm, arm_env, kl_env = runner_environments(keep_bytecode=True)
    tmp, root = work_folder(args.workdir, "kernellab-bench-suites-")
    try:
        compile_shaders(root)
        made = make_suite(root, args.count, args.glsl_distinct)
        print(f"machine: {machine_description()}")
        print(f"date:    {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
        print(f"suite:   {args.count} scenarios ({', '.join(f'{v} {k}' for k, v in made.items())}); "
              f"lavapipe; Arm scenario-runner {arm.version}; {args.repeats} runs each, median")
        runs: dict[str, list[float]] = {"arm": [], "jobs1": [], "jobs2": [], "ray2": []}
        outcomes: dict[str, dict] = {}
        for _ in range(args.repeats):
            wall, fails = arm_loop(root, arm, arm_env)
            runs["arm"].append(wall)
            outcomes["arm"] = {"fail": fails, "pass": args.count - fails}
            for key, extra in (("jobs1", ["--jobs", "1"]), ("jobs2", ["--jobs", "2"])):
                env = dict(kl_env)
                if args.cold:
                    cache = root / f"cache-{key}-{len(runs[key])}"
                    env["KERNELLAB_CACHE_DIR"] = str(cache)
                wall, outcomes[key] = kernellab_test(root, env, *extra)
                runs[key].append(wall)
            if args.ray:
                wall, outcomes["ray2"] = kernellab_test(root, kl_env, "--executor", "ray", "--jobs", "2")
                runs["ray2"].append(wall)
        warm = warm_tiny_ms(root)
        med = {k: statistics.median(v) for k, v in runs.items() if v}
        print(f"\n{'runner':34s} {'wall s':>8s} {'per workload ms':>16s} {'vs Arm':>8s}  outcomes")
        labels = {"arm": "Arm runner loop + Python compare", "jobs1": "kernellab test --jobs 1",
                  "jobs2": "kernellab test --jobs 2", "ray2": "kernellab test --executor ray -j 2"}
        for k, v in med.items():
            print(f"{labels[k]:34s} {v:8.2f} {v / args.count * 1e3:16.1f} {med['arm'] / v:7.1f}x  {outcomes[k]}")
        best = max(med["arm"] / med["jobs1"], med["arm"] / med["jobs2"])
        print(f"\nwarm per-workload cost of tiny in one session (run + read back + compare): {warm:.2f} ms "
              f"(target < 10 ms: {'met' if warm < 10 else 'MISSED'})")
        print(f"speed-up over the Arm loop: {best:.1f}x (target >= 5x: {'met' if best >= 5 else 'MISSED'})")
        if args.json:
            args.json.write_text(json.dumps({"machine": machine_description(), "count": args.count, "runs": runs,
                                             "median_s": med, "outcomes": outcomes, "warm_tiny_ms": warm}, indent=2))
    finally:
        if tmp is not None:
            tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
