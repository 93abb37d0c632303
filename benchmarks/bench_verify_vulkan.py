"""Issue 14 benchmark: ``kernellab verify`` on Vulkan compute shaders against Oclgrind, side by side.

For an n x n tiled matrix product (16x16 tiles, n x n invocations), whole-process wall time of:

- ``kernellab verify S.json`` on a scenario running the GLSL shader (compiled with -gVS, checked by
  the SPIR-V checker);
- ``kernellab verify S.json --vulkan`` on a scenario running the OpenCL C kernel of
  benchmarks/bench_opencl.py, compiled by clspv (as Vulkan runs it) and checked by the SPIR-V checker;
- the peer: the same OpenCL C kernel on Oclgrind through pyopencl (bench_opencl.py's script at
  size n: race checker and API checker on, -cl-opt-disable, kernellab verify's default checks).

kernellab runs with its artifact cache off (KERNELLAB_NO_CACHE=1: every run compiles, as pyopencl
does with PYOPENCL_NO_CACHE=1). Each size's verdict must be ``verified`` on both paths.

Usage: python benchmarks/bench_verify_vulkan.py [--repeat 3] [--sizes 64,128,256] [--peer-max 256]
(prints Markdown tables: 64x64 side by side, then the growth with n).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_opencl import MATMUL_KERNEL  # noqa: E402 - issue 3's kernel and peer
from bench_opencl import OCLGRIND_DIRECT as OCLGRIND_64

MATMUL_GLSL = """\
#version 450
layout(local_size_x = 16, local_size_y = 16) in;
layout(std430, set = 0, binding = 0) readonly buffer A { float a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { float b[]; };
layout(std430, set = 0, binding = 2) buffer C { float c[]; };
layout(push_constant) uniform Size { int n; } size;
shared float As[16][16];
shared float Bs[16][16];
void main() {
  int n = size.n;
  int row = int(gl_GlobalInvocationID.y), col = int(gl_GlobalInvocationID.x);
  int ly = int(gl_LocalInvocationID.y), lx = int(gl_LocalInvocationID.x);
  float acc = 0.0;
  for (int t = 0; t < n / 16; ++t) {
    As[ly][lx] = a[row * n + t * 16 + lx];
    Bs[ly][lx] = b[(t * 16 + ly) * n + col];
    barrier();
    for (int k = 0; k < 16; ++k)
      acc += As[ly][k] * Bs[k][lx];
    barrier();
  }
  c[row * n + col] = acc;
}
"""

# the peer: bench_opencl.py's Oclgrind script, at the size given on its command line
OCLGRIND_DIRECT = OCLGRIND_64.replace("n = 64\n", "n = int(sys.argv[2])\n")
assert OCLGRIND_DIRECT != OCLGRIND_64


def _buffers(work: Path, n: int) -> list[dict]:
    rng = np.random.default_rng(0)
    out = []
    for name in ("A", "B"):
        data = rng.random(n * n, dtype=np.float32)
        np.save(work / f"{name}{n}.npy", data)
        out.append({"buffer": {"uid": name, "size": data.nbytes, "shader_access": "readonly", "src": f"{name}{n}.npy"}})
    out.append({"buffer": {"uid": "C", "size": n * n * 4, "shader_access": "readwrite"}})
    return out


def glsl_scenario(work: Path, n: int) -> Path:
    (work / "matmul.comp").write_text(MATMUL_GLSL)
    np.save(work / f"n{n}.npy", np.frombuffer(np.int32(n).tobytes(), np.uint8))
    doc = {"resources": [{"shader": {"uid": "matmul", "src": "matmul.comp", "type": "GLSL", "push_constants_size": 4}},
                         *_buffers(work, n), {"raw_data": {"uid": "n", "src": f"n{n}.npy"}}],
           "commands": [{"dispatch_compute": {"shader_ref": "matmul", "rangeND": [n // 16, n // 16],
                                              "push_data_ref": "n", "bindings": [
                                                  {"set": 0, "id": k, "resource_ref": uid}
                                                  for k, uid in enumerate("ABC")]}}]}
    path = work / f"glsl{n}.json"
    path.write_text(json.dumps(doc))
    return path


def clspv_scenario(work: Path, n: int) -> Path:
    """The OpenCL C kernel as a Vulkan scenario: bound where clspv's reflection puts each argument."""
    from kernellab.compile.pipeline import Compiler, CompileRequest
    from kernellab.spirvsim import Binding
    from kernellab.spirvsim.clspv import launch, reflection
    (work / "matmul.cl").write_text(MATMUL_KERNEL)
    spirv = Compiler(CompileRequest((work / "matmul.cl").resolve(), "opencl-c", entry="matmul")).vulkan_module().data
    kernel = reflection(spirv)["matmul"]
    plan = launch(kernel, (n, n), (16, 16), [Binding("A", b""), Binding("B", b""), Binding("C", b""),
                                              np.int32(n).tobytes()])
    resources = [{"shader": {"uid": "matmul", "src": "matmul.cl", "type": "OpenCL-C", "entry": "matmul",
                             "push_constants_size": len(plan.push_constants),
                             "specialization_constants": [{"id": i, "value": v}
                                                          for i, v in sorted(plan.spec_constants.items())]}},
                 *_buffers(work, n)]
    bindings = []
    for (s, b), binding in sorted(plan.bindings.items()):
        if binding.uid not in "ABC":  # clspv put the scalar argument in a buffer of its own
            np.save(work / f"pod{n}.npy", np.frombuffer(bytes(binding.data), np.uint8))
            resources.append({"buffer": {"uid": "pod", "size": len(binding.data), "shader_access": "readonly",
                                         "src": f"pod{n}.npy"}})
            bindings.append({"set": s, "id": b, "resource_ref": "pod"})
        else:
            bindings.append({"set": s, "id": b, "resource_ref": binding.uid})
    command: dict = {"shader_ref": "matmul", "rangeND": list(plan.workgroups), "bindings": bindings}
    if plan.push_constants:
        np.save(work / f"push{n}.npy", np.frombuffer(plan.push_constants, np.uint8))
        resources.append({"raw_data": {"uid": "push", "src": f"push{n}.npy"}})
        command["push_data_ref"] = "push"
    path = work / f"clspv{n}.json"
    path.write_text(json.dumps({"resources": resources, "commands": [{"dispatch_compute": command}]}))
    return path


def timed(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, env=env)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stdout.decode()[-2000:]}"
                         f"{proc.stderr.decode()[-3000:]}")
    return elapsed, proc.stdout.decode()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3, help="runs of each at 64x64 (larger sizes: once)")
    ap.add_argument("--sizes", default="64,128,256")
    ap.add_argument("--peer-max", type=int, default=256, help="largest n Oclgrind is run at")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    env = dict(os.environ, KERNELLAB_NO_CACHE="1", XDG_RUNTIME_DIR=os.environ.get("XDG_RUNTIME_DIR", "/tmp"))
    kl = [sys.executable, "-m", "kernellab", "verify"]
    times: dict[tuple[str, int], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="kernellab-bench-vk-") as tmp:
        work = Path(tmp)
        (work / "direct.py").write_text(OCLGRIND_DIRECT)
        for n in sizes:
            glsl, cl = glsl_scenario(work, n), clspv_scenario(work, n)
            runs = args.repeat if n == sizes[0] else 1
            if n == sizes[0]:  # warm the page cache for every side
                timed(kl + [str(glsl)], work, env)
                timed([sys.executable, "direct.py", "matmul.cl", str(n)], work)
            for _ in range(runs):
                for key, argv in (("glsl", kl + [str(glsl), "--json"]), ("clspv", kl + [str(cl), "--vulkan", "--json"])):
                    seconds, out = timed(argv, work, env)
                    doc = json.loads(out)
                    assert doc["verdict"] == "verified" and doc["checker"] == "spirv", doc
                    times.setdefault((key, n), []).append(seconds)
                if n <= args.peer_max:
                    times.setdefault(("oclgrind", n), []).append(
                        timed([sys.executable, "direct.py", "matmul.cl", str(n)], work)[0])
    cpu = platform.processor() or platform.machine()
    print(f"machine: {platform.node()} {cpu}, {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f}, Python {platform.python_version()}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; wall time per process, median of the runs")
    print()
    n0 = sizes[0]
    peer = statistics.median(times[("oclgrind", n0)])
    print(f"| {n0}x{n0} tiled matmul | seconds (median / best of {args.repeat}) | ratio to Oclgrind (median) |")
    print("|---|---|---|")
    for key, label in (("oclgrind", "Oclgrind through pyopencl (OpenCL C)"),
                       ("glsl", "kernellab verify S.json (GLSL, -gVS)"),
                       ("clspv", "kernellab verify S.json --vulkan (OpenCL C via clspv)")):
        t = times[(key, n0)]
        print(f"| {label} | {statistics.median(t):.2f} / {min(t):.2f} | {statistics.median(t) / peer:.2f}x |")
    print()
    print("| n x n (invocations) | GLSL s | clspv s | Oclgrind s | GLSL / Oclgrind | clspv / Oclgrind |")
    print("|---|---|---|---|---|---|")
    for n in sizes:
        g, c = statistics.median(times[("glsl", n)]), statistics.median(times[("clspv", n)])
        o = statistics.median(times[("oclgrind", n)]) if ("oclgrind", n) in times else None
        ratios = f"{g / o:.2f}x | {c / o:.2f}x" if o else "- | -"
        print(f"| {n}x{n} ({n * n}) | {g:.2f} | {c:.2f} | {f'{o:.2f}' if o else 'not run'} | {ratios} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
