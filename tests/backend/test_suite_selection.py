"""`kernellab test`: -k, -x, --skip, --results-csv, baseline lines that match nothing, --timeout."""
from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers.scenarios import vector_add, write


def cli(*args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kernellab", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "XDG_RUNTIME_DIR": "/tmp"}, timeout=300)


def case(folder: Path, good: bool) -> None:
    """c = a + b over 8 elements (b = 2); a bad case expects c = a + 3."""
    folder.mkdir(parents=True)
    vector_add(folder, 8)
    np.save(folder / "ref.npy", np.arange(8, dtype=np.float32) + np.float32(2 if good else 3))
    write(folder / "scenario.expect.json", {"outputs": {"c": {"reference": "ref.npy"}}})


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sel")
    case(root / "a_bad", good=False)
    case(root / "b_bad", good=False)
    case(root / "c_ok", good=True)
    case(root / "d_ok", good=True)
    return root


def rows(path: Path) -> dict[str, tuple[str, float]]:
    with path.open(newline="") as fh:
        return {r[0]: (r[1], float(r[2])) for r in csv.reader(fh)}


def test_k_skip_and_results_csv(suite: Path) -> None:
    (suite / "skips.txt").write_text("# flaky on lavapipe\n\nb_bad\n")
    proc = cli("test", ".", "-k", "_bad", "-k", "c_", "--skip", "skips.txt", "--results-csv", "r.csv",
               "--jobs", 1, "--no-rerun", cwd=suite)
    assert proc.returncode == 1, proc.stderr
    got = rows(suite / "r.csv")
    # d_ok deselected by -k: in no report; b_bad skipped: Skip, not run
    assert {k: v[0] for k, v in got.items()} == {"a_bad/scenario.json": "Fail", "b_bad/scenario.json": "Skip",
                                                 "c_ok/scenario.json": "Pass"}
    assert got["b_bad/scenario.json"][1] == 0.0 and got["a_bad/scenario.json"][1] > 0
    assert "skip" in proc.stderr and "3 workloads" in proc.stderr


def test_a_baseline_and_flake_in_the_results_csv(suite: Path) -> None:
    (suite / "base.csv").write_text("a_bad/scenario.json,Fail\nc_ok/scenario.json,Fail\ngone/scenario.json,Fail\n")
    proc = cli("test", ".", "-k", "a_bad|c_ok", "--baseline", "base.csv", "--results-csv", "r2.csv",
               "--jobs", 1, cwd=suite)
    got = rows(suite / "r2.csv")
    assert got["a_bad/scenario.json"][0] == "ExpectedFail"
    assert got["c_ok/scenario.json"][0] == "UnexpectedImprovement(Pass)"
    # the line naming no workload is warned about, with its number; the others are not
    assert "base.csv: line 3: warning: 'gone/scenario.json' matches no workload" in proc.stderr
    assert "line 1" not in proc.stderr and "line 2" not in proc.stderr


def test_x_stops_at_the_first_failure(suite: Path) -> None:
    proc = cli("test", ".", "-x", "--jobs", 1, "--no-rerun", "--results-csv", "x.csv", cwd=suite)
    assert proc.returncode == 1
    assert list(rows(suite / "x.csv")) == ["a_bad/scenario.json"]
    assert "stopped at the first failure (-x): 3 workloads not run" in proc.stderr
    # without -x all four run
    proc = cli("test", ".", "--jobs", 1, "--no-rerun", "--results-csv", "all.csv", cwd=suite)
    assert len(rows(suite / "all.csv")) == 4


@pytest.mark.parametrize("args, message", [
    (["--timeout", "-5"], "--timeout must be a number of seconds >= 0"),
    (["-k", "("], "-k '(': not a regular expression"),
])
def test_bad_flags_exit_2(suite: Path, args: list[str], message: str) -> None:
    proc = cli("test", ".", *args, cwd=suite)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr


def test_a_bad_skip_list_names_its_line(suite: Path) -> None:
    (suite / "bad-skips.txt").write_text("ok\n[unclosed\n")
    proc = cli("test", ".", "--skip", "bad-skips.txt", cwd=suite)
    assert proc.returncode == 2 and "bad-skips.txt: line 2: '[unclosed' is not a regular expression" in proc.stderr
