"""Issue 3 benchmark: kernellab's OpenCL paths against plain pyopencl, side by side in one run.

1. Replay: a 2^22-element vector add captured from a pyopencl script, replayed with
   ``kernellab run capture.json --output OUT``, against running the original script; both on the
   same PoCL device, whole-process wall time (start-up, build, transfers, outputs written).
2. Verify: ``kernellab verify`` on a 64x64 tiled matrix multiply against the same launch on
   Oclgrind through pyopencl directly (same OCLGRIND_* checks as verify's default, -cl-opt-disable).
3. Verify many (issue 12): 32 small GPUVerify test-suite kernels made concrete launches
   (``--gpuverify DIR``, default /work/ext/gpuverify-launches: one ``NAME/launch.json`` each, made by
   ``python conformance/gpuverify_suite.py convert --suite .../gpuverify/testsuite/OpenCL``, see
   CONFORMANCE.md) in one ``kernellab verify A.json B.json ...`` call, against one pyopencl script
   running the same launches on Oclgrind with only its race checker (OCLGRIND_DATA_RACES=1,
   -cl-opt-disable).

Each row gives wall time and CPU time (user + system of the process and its threads, from wait4):
on a shared machine the wall time follows the load, the CPU time the work. kernellab's bytecode is
compiled first (``compileall``), as an installed package has it.

Usage: python benchmarks/bench_opencl.py [--repeat 5] [--gpuverify DIR] [--only-many]  (prints Markdown)
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

from kernellab.testing.kernels import tiled_matmul_cl

VADD_SCRIPT = """\
import sys
import numpy as np
import pyopencl as cl
platform = [p for p in cl.get_platforms() if "Portable" in p.name][0]
ctx = cl.Context(platform.get_devices())
queue = cl.CommandQueue(ctx)
prg = cl.Program(ctx, '''
__kernel void vadd(__global const float *a, __global const float *b, __global float *c) {
  int i = get_global_id(0);
  c[i] = a[i] + b[i];
}''').build()
n = 1 << 22
rng = np.random.default_rng(0)
a = rng.random(n, dtype=np.float32)
b = rng.random(n, dtype=np.float32)
mf = cl.mem_flags
ab = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
bb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=b)
cb = cl.Buffer(ctx, mf.WRITE_ONLY, a.nbytes)
prg.vadd(queue, (n,), (256,), ab, bb, cb)
c = np.empty_like(a)
cl.enqueue_copy(queue, c, cb)
np.save(sys.argv[1], c)
"""

MATMUL_KERNEL = tiled_matmul_cl(tile=16)

OCLGRIND_DIRECT = """\
import os, sys
# kernellab verify's default checks (issue 12: the uninitialized-value tracker only with --check)
os.environ.update({"OCLGRIND_DATA_RACES": "1", "OCLGRIND_CHECK_API": "1", "PYOPENCL_NO_CACHE": "1"})
import numpy as np
import pyopencl as cl
platform = [p for p in cl.get_platforms() if "Oclgrind" in p.name][0]
ctx = cl.Context(platform.get_devices())
queue = cl.CommandQueue(ctx)
prg = cl.Program(ctx, open(sys.argv[1]).read()).build(options=["-cl-opt-disable"])
n = 64
rng = np.random.default_rng(0)
a = rng.random(n * n, dtype=np.float32)
b = rng.random(n * n, dtype=np.float32)
mf = cl.mem_flags
ab = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=a)
bb = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=b)
cb = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.zeros(n * n, np.float32))
prg.matmul(queue, (n, n), (16, 16), ab, bb, cb, np.int32(n))
queue.finish()
"""


# the peer for (3): each launch built and run on Oclgrind through pyopencl, nothing else
OCLGRIND_MANY = """\
import json, os, sys
os.environ.update({"OCLGRIND_DATA_RACES": "1", "PYOPENCL_NO_CACHE": "1"})  # Oclgrind's defaults otherwise
import numpy as np
import pyopencl as cl
platform = [p for p in cl.get_platforms() if "Oclgrind" in p.name][0]
for path in sys.argv[1:]:
    base = os.path.dirname(path)
    for inst in json.load(open(path)):
        ctx = cl.Context(platform.get_devices())
        queue = cl.CommandQueue(ctx)
        src = open(os.path.join(base, inst["kernel_file"])).read()
        prg = cl.Program(ctx, src).build(options=["-cl-opt-disable"] + (inst.get("compiler_flags") or "").split())
        kernel = getattr(prg, inst["entry_point"])
        args = []
        for a in inst.get("kernel_arguments", []):
            if a["type"] == "scalar":
                args.append(np.frombuffer(bytes.fromhex(a["value"][2:].rjust(2, "0"))[::-1], np.uint8))
            elif a.get("address_space") == "local":
                args.append(cl.LocalMemory(a["size"]))
            else:
                data = np.zeros(a["size"], np.uint8)
                if "data" in a:
                    raw = np.fromfile(os.path.join(base, a["data"]), np.uint8)
                    data[:len(raw)] = raw[:a["size"]]
                args.append(cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=data))
        kernel.set_args(*args)
        cl.enqueue_nd_range_kernel(queue, kernel, inst["global_size"], inst.get("local_size"))
        queue.finish()
"""


def small_gpuverify_launches(root: Path, count: int = 32) -> list[Path]:
    """``count`` launches of the GPUVerify test suite with array arguments only (no hex scalars to size) and the
    fewest work-items (the suite's small kernels), in name order."""
    import numpy as np
    found = []
    for path in sorted(root.glob("*/launch.json")):
        try:
            insts = json.loads(path.read_text())
        except ValueError:
            continue
        if len(insts) != 1 or any(a.get("type") != "array" for a in insts[0].get("kernel_arguments", [])):
            continue
        items = int(np.prod(insts[0]["global_size"]))
        if items <= 4096 and all(a.get("size", 0) <= 1 << 20 for a in insts[0].get("kernel_arguments", [])):
            found.append(path)
    return found[:count]


def timed(argv: list[str], cwd: Path, ok: tuple[int, ...] = (0,)) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one process."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        child = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        elapsed = time.perf_counter() - t0
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode not in ok:
            err.seek(0)
            raise SystemExit(f"{' '.join(argv)} failed ({child.returncode}):\n{err.read().decode()[-3000:]}")
    return elapsed, usage.ru_utime + usage.ru_stime


def kernellab_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "kernellab", *args]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--gpuverify", type=Path, default=Path("/work/ext/gpuverify-launches"))
    ap.add_argument("--only-many", action="store_true", help="only the GPUVerify many-launch comparison")
    args = ap.parse_args()
    rows = []
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(__file__).resolve().parents[1] / "src")],
                   check=True)
    with tempfile.TemporaryDirectory(prefix="kernellab-bench-opencl-") as tmp:
        work = Path(tmp)
        if not args.gpuverify.is_dir():
            raise SystemExit(f"{args.gpuverify}: no GPUVerify launches; make them with: python "
                             "conformance/gpuverify_suite.py convert --suite /work/ext/gpuverify/testsuite/OpenCL")
        launches = [str(p) for p in small_gpuverify_launches(args.gpuverify)]
        (work / "many.py").write_text(OCLGRIND_MANY)
        many_peer, many_ours = [], []
        timed([sys.executable, "many.py", *launches], work)  # warm the page cache
        for _ in range(args.repeat):
            many_peer.append(timed([sys.executable, "many.py", *launches], work))
            many_ours.append(timed(kernellab_argv("verify", *launches), work, ok=(0, 1)))
        rows.append((f"verify {len(launches)} GPUVerify launches (Oclgrind)", "pyopencl, race checker only",
                     many_peer, "kernellab verify A.json B.json ...", many_ours, True))
        if args.only_many:
            return _print(rows, args.repeat)
        (work / "vadd.py").write_text(VADD_SCRIPT)
        subprocess.run(kernellab_argv("capture", "-o", "cap", "--", "python", "vadd.py", "warm.npy"),
                       cwd=work, check=True, capture_output=True)
        # warm the OS page cache and PoCL's kernel cache for both sides before timing
        timed([sys.executable, "vadd.py", "c.npy"], work)
        timed(kernellab_argv("run", "cap/capture.json", "--output", "out"), work)
        orig, replay = [], []
        for _ in range(args.repeat):
            orig.append(timed([sys.executable, "vadd.py", "c.npy"], work))
            replay.append(timed(kernellab_argv("run", "cap/capture.json", "--output", "out"), work))
        import numpy as np
        same = np.array_equal(np.load(work / "c.npy").view(np.uint8), np.fromfile(work / "out" / "arg2.bin", np.uint8))
        rows.append(("replay 2^22 vector add (PoCL)", "pyopencl script", orig, "kernellab run capture.json",
                     replay, same))

        (work / "matmul.cl").write_text(MATMUL_KERNEL)
        (work / "direct.py").write_text(OCLGRIND_DIRECT)
        rng = np.random.default_rng(0)
        rng.random(64 * 64, dtype=np.float32).tofile(work / "A.bin")
        rng.random(64 * 64, dtype=np.float32).tofile(work / "B.bin")
        (work / "matmul.json").write_text(json.dumps([{
            "language": "OpenCL", "kernel_file": "matmul.cl", "global_size": [64, 64], "local_size": [16, 16],
            "entry_point": "matmul", "kernel_arguments": [
                {"type": "array", "size": 16384, "data": "A.bin"}, {"type": "array", "size": 16384, "data": "B.bin"},
                {"type": "array", "size": 16384}, {"type": "scalar", "value": "0x40"}]}]))
        direct, verify = [], []
        timed([sys.executable, "direct.py", "matmul.cl"], work)  # warm the page cache for both
        for _ in range(args.repeat):
            direct.append(timed([sys.executable, "direct.py", "matmul.cl"], work))
            verify.append(timed(kernellab_argv("verify", "matmul.json"), work))
        rows.append(("verify 64x64 tiled matmul (Oclgrind)", "pyopencl on Oclgrind", direct, "kernellab verify",
                     verify, True))

    return _print(rows, args.repeat)


def _print(rows: list, repeat: int) -> int:
    cpu = platform.processor() or platform.machine()
    print(f"machine: {platform.node()} {cpu}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average {os.getloadavg()[0]:.1f} at the end; "
          f"{repeat} runs of each, interleaved; wall and CPU time per process (median, and best run)")
    print()
    print("| task | peer | peer wall s (median / best) | peer CPU s | kernellab | kernellab wall s (median / best) "
          "| kernellab CPU s | wall ratio (median / best) | CPU ratio (median) | same result |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for task, peer, ptimes, ours, otimes, same in rows:
        pt, ot = [w for w, _ in ptimes], [w for w, _ in otimes]
        pm, pb, om, ob = statistics.median(pt), min(pt), statistics.median(ot), min(ot)
        pc, oc = statistics.median(c for _, c in ptimes), statistics.median(c for _, c in otimes)
        print(f"| {task} | {peer} | {pm:.3f} / {pb:.3f} | {pc:.3f} | {ours} | {om:.3f} / {ob:.3f} | {oc:.3f} | "
              f"{om / pm:.2f}x / {ob / pb:.2f}x | {oc / pc:.2f}x | {'yes' if same else 'NO'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
