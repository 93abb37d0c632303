"""Kernel specs through the user-facing commands: run with --set/--partition/--input, import, validate."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from helpers.scenarios import kernellab
from test_pyschedcl_helpers import vecadd_spec


def test_run_import_validate_a_spec(tmp_path: Path) -> None:
    spec = vecadd_spec(tmp_path)
    n = 1024
    a = np.linspace(0, 1, n, dtype=np.float32)
    b = np.arange(n, dtype=np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)

    ok = kernellab("validate", spec, "--set", f"dataset={n}")
    assert ok.returncode == 0 and "valid kernel spec 'VectorAdd'" in ok.stdout, ok.stderr

    for p in (0, 5, 10):
        out = tmp_path / f"out{p}"
        proc = kernellab("run", spec, "--set", f"dataset={n}", "--partition", str(p), "--input", f"0={tmp_path / 'a.npy'}",
                         "--input", f"1={tmp_path / 'b.npy'}", "--output", out)
        assert proc.returncode == 0, proc.stderr
        np.testing.assert_array_equal(np.load(out / "arg2.npy"), a + b)

    imported = tmp_path / "imported"
    proc = kernellab("import", spec, "--set", f"dataset={n}", "-o", imported)
    assert proc.returncode == 0, proc.stderr
    scenario = Path(proc.stdout.strip())
    assert scenario.is_file()
    proc = kernellab("run", scenario, "--backend", "opencl", "--output", tmp_path / "scen")
    assert proc.returncode == 0, proc.stderr
    outs = list((tmp_path / "scen").glob("arg2*.npy"))
    assert len(outs) == 1
    inputs = [np.load(imported / f"arg{i}.npy") for i in (0, 1)]
    np.testing.assert_array_equal(np.load(outs[0]).view(np.float32), inputs[0] + inputs[1])

    bad = kernellab("run", spec, "--set", "dataset=__import__('os')", "--output", tmp_path / "bad")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
