"""`run --check` on kernel-instantiation outputs, a bad sidecar graded alike by `run --check` and
`kernellab test` (exit 2, nothing run), and the notice of `run K.json` without --output."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from helpers.scenarios import vector_add, write

KERNEL = """\
__kernel void fill(__global float *out) {
  size_t i = get_global_id(0);
  out[i] = (float)i * 0.5f;
}
"""


def cli(*args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kernellab", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "XDG_RUNTIME_DIR": "/tmp"}, timeout=300)


def instantiation(folder: Path) -> Path:
    (folder / "k.cl").write_text(KERNEL)
    path = folder / "k.json"
    path.write_text(json.dumps([{"language": "OpenCL", "kernel_file": "k.cl", "global_size": [16],
                                 "local_size": [4], "entry_point": "fill",
                                 "kernel_arguments": [{"type": "array", "size": 64}]}]))
    return path


def test_run_check_compares_the_raw_bytes_of_arg_files(tmp_path: Path) -> None:
    path = instantiation(tmp_path)
    np.save(tmp_path / "ref.npy", np.arange(16, dtype=np.float32) * np.float32(0.5))
    write(tmp_path / "k.expect.json", {"outputs": {"arg0.bin": {"reference": "ref.npy"}}})
    proc = cli("run", path, "--check", "--output", tmp_path / "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "check: 1 output matches k.expect.json" in proc.stderr
    # without --output the launches write to a folder of their own, and are still checked
    proc = cli("run", path, "--check", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "check: 1 output matches" in proc.stderr and not (tmp_path / "arg0.bin").exists()
    # a wrong reference is a mismatch read as floats
    np.save(tmp_path / "ref.npy", np.arange(16, dtype=np.float32))
    proc = cli("run", path, "--check", cwd=tmp_path)
    assert proc.returncode == 1
    assert "[1] expected 1.0, actual 0.5" in proc.stderr


def test_run_without_output_says_where_the_outputs_went(tmp_path: Path) -> None:
    proc = cli("run", instantiation(tmp_path), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "no --output: the launches ran and their outputs (arg<N>.bin) were not written" in proc.stderr
    assert "--output" in cli("run", "--help", cwd=tmp_path).stdout
    # a file refused before its launches ran is not told "the launches ran"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"language": "OpenCL", "kernel_file": "../nowhere.cl", "entry_point": "k",
                                "global_size": [4], "local_size": [4]}]))
    proc = cli("run", bad, cwd=tmp_path)
    assert proc.returncode == 2 and "/0/kernel_file" in proc.stderr and "the launches ran" not in proc.stderr, \
        proc.stderr


def _bad_sidecar_case(folder: Path) -> Path:
    path, _ = vector_add(folder, 8)
    write(folder / "scenario.expect.json", {"outputs": {"c": {"reference": "missing.npy"}}})
    return path


def test_a_bad_sidecar_is_graded_alike_before_anything_runs(tmp_path: Path) -> None:
    path = _bad_sidecar_case(tmp_path)
    message = "scenario.expect.json: /outputs/c/reference: reference file"
    proc = cli("run", path, "--check", cwd=tmp_path)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert not (tmp_path / "c.npy").exists()  # nothing ran: the dst was not written
    proc = cli("test", tmp_path, "--jobs", 1, cwd=tmp_path)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert "workload" not in proc.stderr.split(message)[0]  # no suite summary before it


def test_ulps_on_an_integer_reference_is_bad_input_in_both(tmp_path: Path) -> None:
    path, _ = vector_add(tmp_path, 8)
    np.save(tmp_path / "ref.npy", np.zeros(8, np.int32))
    write(tmp_path / "scenario.expect.json", {"outputs": {"c": {"reference": "ref.npy", "ulps": 1}}})
    for args in (("run", path, "--check"), ("test", tmp_path, "--jobs", 1)):
        proc = cli(*args, cwd=tmp_path)
        assert proc.returncode == 2 and "/outputs/c/ulps: ulps apply to floating-point outputs" in proc.stderr


def test_bless_a_kernel_instantiation_file_then_check_it(tmp_path: Path) -> None:
    path = instantiation(tmp_path)
    proc = cli("bless", path, "--dtype", "arg0.bin=float32", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "blessed 1 output of" in proc.stderr
    doc = json.loads((tmp_path / "k.expect.json").read_text())
    assert doc == {"outputs": {"arg0.bin": {"reference": "k.expected/arg0.npy", "dtype": "float32"}}}
    np.testing.assert_array_equal(np.load(tmp_path / "k.expected" / "arg0.npy"),
                                  np.arange(16, dtype=np.float32) * np.float32(0.5))
    proc = cli("run", path, "--check", cwd=tmp_path)
    assert proc.returncode == 0 and "check: 1 output matches" in proc.stderr, proc.stderr


def test_bless_refuses_an_unknown_uid_with_a_suggestion(tmp_path: Path) -> None:
    path, _ = vector_add(tmp_path, 8)
    proc = cli("bless", path, "--dtype", "cc=float32", cwd=tmp_path)
    assert proc.returncode == 2
    assert "--dtype cc=float32: 'cc' is not an output blessed from" in proc.stderr
    assert "did you mean 'c'?" in proc.stderr and not (tmp_path / "scenario.expect.json").exists()
    proc = cli("bless", path, "--output-uid", "cx", cwd=tmp_path)
    assert proc.returncode == 2 and "--output-uid: 'cx' is not a resource" in proc.stderr
    assert "did you mean 'c'?" in proc.stderr
    proc = cli("bless", instantiation(tmp_path), "--output-uid", "arg1.bin", cwd=tmp_path)
    assert proc.returncode == 2 and "did you mean 'arg0.bin'?" in proc.stderr
