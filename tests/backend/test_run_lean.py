"""`kernellab run` of a plain compute scenario on the Vulkan device (issue 11, items 3 and 6): it
imports no validation library, and it runs past a declared but unused shader whose file is missing,
as Arm's runner does, saying so."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from helpers.scenarios import kernellab, raw, vector_add, write

ROOT = Path(__file__).resolve().parents[2]


def test_plain_compute_run_imports_no_pydantic(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "kernellab", "run",
                           str(ROOT / "examples" / "vector_add" / "scenario.json"), "--output", str(tmp_path)],
                          capture_output=True, text=True, env={**os.environ, "XDG_RUNTIME_DIR": "/tmp"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    imported = [line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")]
    assert "kernellab.model" in imported and "kernellab.runtime.executor" in imported  # the listing is read right
    assert [name for name in imported if name.split(".")[0] in ("pydantic", "pydantic_core")] == []


def test_unused_shader_with_a_missing_file_warns_and_runs(tmp_path: Path) -> None:
    path, doc = vector_add(tmp_path)
    doc["resources"].append({"shader": {"uid": "spare", "src": "missing.comp", "type": "GLSL"}})
    write(path, doc)
    proc = kernellab("run", path, "--output", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    assert f"{path}: /resources/5/shader/src: warning: file not found: {tmp_path / 'missing.comp'}" in proc.stderr
    got = raw(tmp_path / "out" / "c.npy").view(np.float32)
    assert np.array_equal(got, np.arange(100, dtype=np.float32) + 2.0)
    strict = kernellab("run", "--strict", path, "--output", tmp_path / "strict")
    assert strict.returncode == 2 and "Traceback" not in strict.stderr
    assert not (tmp_path / "strict" / "c.npy").exists()
