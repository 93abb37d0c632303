"""examples/suite: `kernellab test` passes it, and the pytest plugin collects and checks it."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

from helpers.scenarios import kernellab

SUITE = Path(__file__).parents[2] / "examples" / "suite"
ENV = {**os.environ, "XDG_RUNTIME_DIR": "/tmp"}


def pytest_run(*args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, env=ENV, timeout=600)


def test_kernellab_test_passes_the_example_suite() -> None:
    proc = kernellab("test", SUITE, "--jobs", "2")
    assert proc.returncode == 0, proc.stderr
    assert "OK: 3 workloads" in proc.stderr


def test_pytest_plugin_collects_and_checks_the_suite(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    shutil.copytree(SUITE, suite)
    proc = pytest_run(suite, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 passed" in proc.stdout
    assert "PASSED suite/vector_add/add.expect.json::add.json" in proc.stdout
    # a wrong reference fails that workload, with the mismatch report as the message
    ref = suite / "vector_add" / "add.expected" / "c.npy"
    c = np.load(ref)
    c[5] += 1
    np.save(ref, c)
    proc = pytest_run(suite, cwd=tmp_path)
    assert proc.returncode == 1
    assert "1 failed, 2 passed" in proc.stdout
    assert "c: 1 of 256 elements differ (exact)" in proc.stdout
    assert f"[5] expected {str(c[5])}" in proc.stdout  # float32 digits, not float64 ones (issue 20)


def test_plugin_parametrizes_devices_and_gives_a_session(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    shutil.copytree(SUITE, suite)
    (tmp_path / "test_handwritten.py").write_text('''
import numpy as np

def test_add(kernellab_session, kernellab_device):
    out = kernellab_session.run("suite/vector_add/add.json", inputs={"a": np.ones(256, np.float32)})
    assert np.array_equal(out["c"].view(np.float32), 1 + np.load("suite/vector_add/b.npy"))
    assert kernellab_device == kernellab_session.device
''')
    # a device by index and one by a word of its name: this machine's ("llvmpipe" in CI, "NVIDIA" on an H100)
    from kernellab.backends.registry import backend_class
    word = backend_class("vulkan").devices()[0].name.split()[0]
    proc = pytest_run(".", "--kernellab-device", "0", "--kernellab-device", word, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "8 passed" in proc.stdout
    assert "add.json[0]" in proc.stdout and f"add.json[{word}]" in proc.stdout
    assert "test_add[0]" in proc.stdout and f"test_add[{word}]" in proc.stdout


def test_plugin_reports_an_unexpected_collection_error_as_pytest_does(tmp_path: Path) -> None:
    # a failure that is no KernellabError gets pytest's own report; it was a TypeError (a style passed
    # to Collector.repr_failure, which takes none)
    suite = tmp_path / "suite"
    shutil.copytree(SUITE, suite)
    (tmp_path / "conftest.py").write_text('''
import kernellab.suite.expectations as expectations

def _broken(path):
    raise RuntimeError("the expectations reader broke")

expectations.load_expectations = _broken
''')
    proc = pytest_run(suite, cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "RuntimeError: the expectations reader broke" in proc.stdout
    assert "TypeError" not in proc.stdout + proc.stderr
