"""Capture pyopencl programs and replay the capture: `kernellab run` reproduces what the program got."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

import kernellab
from kernellab.commands import capture as capture_cmd
from kernellab.formats import gpuverify
from kernellab.runtime.instantiation import run_instantiations

PRELUDE = """\
import sys
import numpy as np
import pyopencl as cl
platform = [p for p in cl.get_platforms() if "Portable" in p.name][0]
ctx = cl.Context(platform.get_devices())
queue = cl.CommandQueue(ctx)
mf = cl.mem_flags
results = []
def keep(buf, dtype, n):
    host = np.empty(n, dtype)
    cl.enqueue_copy(queue, host, buf)
    results.append(host)
"""

EPILOGUE = """\
np.savez(sys.argv[1], *results)
"""

# one kernel, Python scalars through set_scalar_arg_dtypes, no local size
VECTOR_ADD = PRELUDE + """\
prg = cl.Program(ctx, '''
__kernel void vadd(__global const float *a, __global const float *b, __global float *c, uint n) {
  uint i = get_global_id(0);
  if (i < n) c[i] = a[i] + b[i];
}''').build()
n = 1000
a = np.arange(n, dtype=np.float32); b = np.full(n, 0.5, np.float32)
ab = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
bb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=b)
cb = cl.Buffer(ctx, mf.WRITE_ONLY, a.nbytes)
vadd = prg.vadd
vadd.set_scalar_arg_dtypes([None, None, None, np.uint32])
vadd(queue, (1024,), None, ab, bb, cb, n)
keep(cb, np.float32, n)
""" + EPILOGUE

# several kernels, __local memory, set_args + enqueue_nd_range_kernel, a build option
SEVERAL_WITH_LOCAL = PRELUDE + """\
src = '''
__kernel void scale(__global float *y, __global const float *x, float a) {
  int i = get_global_id(0); y[i] = a * x[i] * FACTOR + y[i]; }
__kernel void blocksum(__global const float *in, __global float *out, __local float *t) {
  int l = get_local_id(0); t[l] = in[get_global_id(0)]; barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = get_local_size(0) / 2; s > 0; s >>= 1) { if (l < s) t[l] += t[l + s]; barrier(CLK_LOCAL_MEM_FENCE); }
  if (l == 0) out[get_group_id(0)] = t[0]; }
'''
prg = cl.Program(ctx, src).build(options=["-DFACTOR=2"])
n = 512
x = np.linspace(0, 1, n).astype(np.float32); y = np.ones(n, np.float32)
xb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
yb = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=y)
ob = cl.Buffer(ctx, mf.WRITE_ONLY, 4 * n // 64)
scale = prg.scale
scale(queue, (n,), (64,), yb, xb, np.float32(3))
keep(yb, np.float32, n)
blocksum = cl.Kernel(prg, "blocksum")
blocksum.set_args(yb, ob, cl.LocalMemory(4 * 64))
cl.enqueue_nd_range_kernel(queue, blocksum, (n,), (64,))
keep(ob, np.float32, n // 64)
""" + EPILOGUE

# a 2-D kernel launched repeatedly with a global offset and changing scalars (int math, structs of ints)
REPEATED_2D = PRELUDE + """\
prg = cl.Program(ctx, '''
__kernel void advance(__global int *grid, int width, int add) {
  int x = get_global_id(0), y = get_global_id(1);
  grid[y * width + x] = grid[y * width + x] * 3 + add + x - y;
}''').build()
w, h = 16, 8
grid = np.arange(w * h, dtype=np.int32)
gb = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=grid)
step = prg.advance
for k in range(3):
    step.set_arg(0, gb)
    step.set_arg(1, np.int32(w))
    step.set_arg(2, np.int32(-k))
    cl.enqueue_nd_range_kernel(queue, step, (w - 2, h - 2), (2, 2), global_work_offset=(1, 1))
    keep(gb, np.int32, w * h)
""" + EPILOGUE

PROGRAMS = {"vector-add": (VECTOR_ADD, [(0, 2)]),
            "several-kernels-local": (SEVERAL_WITH_LOCAL, [(0, 0), (1, 1)]),
            "repeated-2d-offset": (REPEATED_2D, [(0, 0), (1, 0), (2, 0)])}


def run_capture(tmp_path: Path, source: str) -> tuple[Path, list[np.ndarray]]:
    prog = tmp_path / "prog.py"
    prog.write_text(source)
    out = tmp_path / "capture"
    status = capture_cmd.run(argparse.Namespace(output=out, program=["--", "python", str(prog),
                                                                    str(tmp_path / "orig.npz")]))
    assert status == 0
    with np.load(tmp_path / "orig.npz") as z:
        results = [z[f"arr_{i}"] for i in range(len(z.files))]
    return out / "capture.json", results


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_replay_reproduces_program_outputs(tmp_path: Path, name: str) -> None:
    source, checks = PROGRAMS[name]
    capture_json, results = run_capture(tmp_path, source)
    insts, warnings = gpuverify.load(capture_json)
    assert warnings == [] and len(insts) == len(checks)
    replay = tmp_path / "replay"
    assert run_instantiations(capture_json, replay, device="Portable", report=lambda s: None) == 0
    for (launch, arg), expected in zip(checks, results):
        got_file = (replay if launch == 0 else replay / str(launch)) / f"arg{arg}.bin"
        got = np.frombuffer(got_file.read_bytes(), dtype=expected.dtype)[:expected.size]
        np.testing.assert_array_equal(got, expected, err_msg=f"{name}: launch {launch} arg {arg}")


def test_capture_records_every_field(tmp_path: Path) -> None:
    capture_json, _ = run_capture(tmp_path, SEVERAL_WITH_LOCAL)
    doc = json.loads(capture_json.read_text())
    first, second = doc
    assert first["entry_point"] == "scale" and second["entry_point"] == "blocksum"
    assert first["compiler_flags"] == "-DFACTOR=2" and first["local_size"] == [64] and first["global_size"] == [512]
    assert first["kernel_arguments"][2] == {"type": "scalar", "value": "0x40400000"}  # 3.0f
    assert second["kernel_arguments"][2] == {"type": "array", "size": 256, "address_space": "local"}
    assert first["kernel_arguments"][1]["flags"] == ["CL_MEM_READ_ONLY", "CL_MEM_COPY_HOST_PTR"]
    # the kernel source, its preprocessed copy (FACTOR expanded), one .bin per buffer argument
    kernel = capture_json.parent / first["kernel_file"]
    assert "FACTOR" in kernel.read_text()
    pre = kernel.with_name(kernel.stem + ".pre.cl").read_text()
    assert "FACTOR" not in pre and "a * x[i] * 2 + y[i]" in pre
    assert (capture_json.parent / first["kernel_arguments"][0]["data"]).stat().st_size == 2048
    calls = [(c["function_name"], Path(c["compilation_unit"]).name, c["line_number"]) for c in second["host_api_calls"]]
    lines = SEVERAL_WITH_LOCAL.splitlines()

    def line_of(text: str) -> int:
        return next(i for i, l in enumerate(lines, 1) if text in l)
    assert calls == [("clCreateProgramWithSource", "prog.py", line_of("cl.Program(ctx, src)")),
                     ("clBuildProgram", "prog.py", line_of("cl.Program(ctx, src)")),
                     ("clSetKernelArg", "prog.py", line_of("blocksum.set_args")),
                     ("clEnqueueNDRangeKernel", "prog.py", line_of("cl.enqueue_nd_range_kernel"))]
    assert ("clCreateKernel", "prog.py", line_of("scale = prg.scale")) in \
        [(c["function_name"], Path(c["compilation_unit"]).name, c["line_number"]) for c in first["host_api_calls"]]


def test_context_manager_api(tmp_path: Path) -> None:
    import pyopencl as cl
    platform = [p for p in cl.get_platforms() if "Portable" in p.name][0]
    ctx = cl.Context(platform.get_devices())
    queue = cl.CommandQueue(ctx)
    data = np.arange(64, dtype=np.int32)
    with kernellab.capture(tmp_path / "cap") as cap:
        prg = cl.Program(ctx, "__kernel void twice(__global int *a) { a[get_global_id(0)] *= 2; }").build()
        buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=data)
        prg.twice(queue, (64,), None, buf)
        queue.finish()
    assert len(cap.launches) == 1
    # hooks are gone after the block: this launch is not recorded
    prg2 = cl.Program(ctx, "__kernel void once(__global int *a) { a[0] = 1; }").build()
    prg2.once(queue, (1,), None, buf)
    doc = json.loads((tmp_path / "cap" / "capture.json").read_text())
    assert [d["entry_point"] for d in doc] == ["twice"]
    assert (tmp_path / "cap" / doc[0]["kernel_arguments"][0]["data"]).read_bytes() == data.tobytes()


def test_preprocessed_copy_without_clang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # no clang on the machine: the pure-Python preprocessor writes the .pre.cl
    from kernellab import tools
    monkeypatch.setattr(tools, "find", lambda name: None)
    capture_json, _ = run_capture(tmp_path, SEVERAL_WITH_LOCAL)
    kernel = capture_json.parent / json.loads(capture_json.read_text())[0]["kernel_file"]
    pre = kernel.with_name(kernel.stem + ".pre.cl").read_text()
    assert "FACTOR" not in pre and "a * x[i] * 2 + y[i]" in pre


def test_pyopencl_array_expressions(tmp_path: Path) -> None:
    # pyopencl.array arithmetic: generated kernels, Array arguments expanded to buffer + offset
    import pyopencl as cl
    import pyopencl.array as cla
    platform = [p for p in cl.get_platforms() if "Portable" in p.name][0]
    ctx = cl.Context(platform.get_devices())
    queue = cl.CommandQueue(ctx)
    with kernellab.capture(tmp_path / "cap") as cap:
        a = cla.to_device(queue, np.arange(1000, dtype=np.float32))
        b = cla.to_device(queue, np.ones(1000, dtype=np.float32))
        result = (a + 2 * b).get()
    assert cap.notes == [] and len(cap.launches) == 2
    run_instantiations(tmp_path / "cap" / "capture.json", tmp_path / "out", device="Portable", report=lambda s: None)
    replayed = np.frombuffer((tmp_path / "out" / "1" / "arg0.bin").read_bytes(), np.float32)
    np.testing.assert_array_equal(replayed, result)


def test_module_program_and_exit_status(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    pkg = tmp_path / "capmod"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "main.py").write_text(PRELUDE + """\
prg = cl.Program(ctx, "__kernel void seven(__global int *a) { a[get_global_id(0)] = 7; }").build()
buf = cl.Buffer(ctx, mf.READ_WRITE, 64)
prg.seven(queue, (16,), None, buf)
queue.finish()
raise SystemExit(int(sys.argv[1]))
""")
    monkeypatch.chdir(tmp_path)
    status = capture_cmd.run(argparse.Namespace(output=tmp_path / "cap", program=["--", "python", "-m",
                                                                                   "capmod.main", "3"]))
    assert status == 3  # the program's own exit status
    [launch] = json.loads((tmp_path / "cap" / "capture.json").read_text())
    assert launch["entry_point"] == "seven"
    assert launch["host_api_calls"][-1]["compilation_unit"] == str(pkg / "main.py")


def test_failing_program_still_writes_capture(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prog = tmp_path / "fails.py"
    prog.write_text(PRELUDE + """\
prg = cl.Program(ctx, "__kernel void one(__global int *a) { a[0] = 1; }").build()
buf = cl.Buffer(ctx, mf.READ_WRITE, 4)
prg.one(queue, (1,), None, buf)
raise ValueError("the program's own bug")
""")
    status = capture_cmd.run(argparse.Namespace(output=tmp_path / "cap", program=[str(prog)]))
    assert status == 1
    err = capsys.readouterr().err
    assert "ValueError: the program's own bug" in err and "1 launch written" in err
    assert len(json.loads((tmp_path / "cap" / "capture.json").read_text())) == 1


WARNING_BUILD = PRELUDE + """\
import warnings
warnings.simplefilter("always")
prg = cl.Program(ctx, '''
#warning "a warning the user's kernel asked for"
__kernel void k(__global float *a) { a[get_global_id(0)] = 1.0f; }''')
prg = prg.build()  # the user's build line
""" + EPILOGUE


def test_pyopencl_warnings_point_at_the_users_line(tmp_path: Path) -> None:
    import subprocess
    import sys

    prog = tmp_path / "prog.py"
    prog.write_text(WARNING_BUILD)
    done = subprocess.run([sys.executable, "-m", "kernellab", "capture", "-o", str(tmp_path / "cap"), "--",
                           sys.executable, str(prog), str(tmp_path / "out.npz")], capture_output=True, text=True,
                          env={**__import__("os").environ, "PYOPENCL_NO_CACHE": "1"})
    assert done.returncode == 0, done.stderr
    line = WARNING_BUILD.splitlines().index("prg = prg.build()  # the user's build line") + 1
    warned = [w for w in done.stderr.splitlines() if "Warning" in w]
    assert warned, done.stderr
    assert all(w.startswith(f"{prog}:{line}: ") for w in warned), warned
