"""A repeated `kernellab run` (the program, as a user starts it) finds everything it made before:
no compiler, validator or program of any kind (no `subprocess` at all), no SPIR-V decoding, the
dataclasses' method code from the cache folder; and its outputs and exit status are right
(issue 11: start-up)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]

#: the program with, at exit, the modules it imported written to stderr (exit handlers still run)
PROGRAM = ("import atexit, json, sys\n"
           "atexit.register(lambda: print(json.dumps(sorted(sys.modules)), file=sys.stderr))\n"
           "from kernellab.cli import program\nprogram()")


def _run(cache: Path, *args: str) -> tuple[int, list[str], str]:
    env = {**os.environ, "XDG_RUNTIME_DIR": "/tmp", "KERNELLAB_CACHE_DIR": str(cache)}
    env.pop("KERNELLAB_NO_CACHE", None)
    proc = subprocess.run([sys.executable, "-c", PROGRAM, "run", *args], capture_output=True, text=True, env=env)
    return proc.returncode, json.loads(proc.stderr.strip().splitlines()[-1]), proc.stderr


def test_a_repeated_run_starts_no_program_and_decodes_nothing(tmp_path: Path) -> None:
    scenario = ROOT / "examples" / "vector_add" / "scenario.json"
    cache = tmp_path / "cache"
    status, first, err = _run(cache, str(scenario), "--output", str(tmp_path / "one"))
    assert status == 0, err
    assert "subprocess" in first  # glslangValidator and spirv-val ran
    status, again, err = _run(cache, str(scenario), "--output", str(tmp_path / "two"))
    assert status == 0, err
    assert "subprocess" not in again and "kernellab.listing.spirv" not in again
    assert "kernellab.classcode" in again and list((cache / "python").glob("classcode-run-*.marshal"))
    got = np.load(tmp_path / "two" / "c.npy").view(np.float32)
    assert np.array_equal(got, np.load(scenario.parent / "a.npy") + np.load(scenario.parent / "b.npy"))
    assert (tmp_path / "one" / "c.npy").read_bytes() == (tmp_path / "two" / "c.npy").read_bytes()


def test_the_program_exits_with_the_run_status(tmp_path: Path) -> None:
    bad = tmp_path / "s.json"
    bad.write_text(json.dumps({"resources": [], "commands": [{"dispatch_compute": {"shader_ref": "nope"}}]}))
    status, _, err = _run(tmp_path / "cache", str(bad))
    assert status == 2 and "s.json" in err and "Traceback" not in err
