"""The pytest plugin says a mistake once: a bad --kernellab-device is one usage error, a bad
sidecar one collection error naming the file and the JSON path, without a traceback of ours."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

SUITE = Path(__file__).parents[2] / "examples" / "suite"


def pytest_run(*args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, env={**os.environ, "XDG_RUNTIME_DIR": "/tmp"},
                          timeout=600)


def test_a_bad_device_is_one_usage_error(tmp_path: Path) -> None:
    shutil.copytree(SUITE, tmp_path / "suite")
    (tmp_path / "test_hand.py").write_text("def test_a(kernellab_device):\n    assert kernellab_device\n")
    proc = pytest_run(".", "--kernellab-device", "no-such-device", cwd=tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4, out  # pytest's usage error
    assert out.count("--kernellab-device no-such-device: ") == 1 and "no device name contains it" in out
    assert "Traceback" not in out and "passed" not in out and "failed" not in out


def test_a_bad_sidecar_is_one_clean_collection_error(tmp_path: Path) -> None:
    shutil.copytree(SUITE, tmp_path / "suite")
    sidecar = tmp_path / "suite" / "vector_add" / "add.expect.json"
    sidecar.write_text(json.dumps({"outputs": {"c": {"reference": "add.expected/c.npy", "rtol": "big"}}}))
    proc = pytest_run("suite", "--collect-only", cwd=tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert f"{sidecar}: /outputs/c/rtol: expected a number >= 0, got \"big\"" in out
    assert out.count("ERROR collecting") == 1
    assert "Traceback" not in out and "kernellab/suite" not in out and "raise " not in out
    # a reference that is not there is found at collection too, at its JSON path
    sidecar.write_text(json.dumps({"outputs": {"c": {"reference": "nowhere.npy"}}}))
    out = pytest_run("suite", "--collect-only", cwd=tmp_path).stdout
    assert f"{sidecar}: /outputs/c/reference: reference file" in out and "raise " not in out
