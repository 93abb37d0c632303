"""A refusal of one statement of an AmberScript file names that statement's line, not the
PIPELINE or RUN it belongs to: a script's user looks for the line they wrote; `validate` reads a
script as `run` does."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kernellab import config
from kernellab.cli import main

SAXPY = """#!amber
SHADER compute kernels OPENCL-C
kernel void saxpy(global int* x, int a, global int* y) {
  size_t i = get_global_id(0);
  y[i] = a * x[i] + y[i];
}
END
BUFFER x DATA_TYPE int32 DATA 1 2 3 4 END
BUFFER y DATA_TYPE int32 DATA 10 20 30 40 END
PIPELINE compute p
  ATTACH kernels ENTRY_POINT saxpy
  BIND BUFFER x KERNEL ARG_NAME x
  BIND BUFFER y KERNEL ARG_NUMBER 2
  SET KERNEL ARG_NAME {arg} AS int32 3
END
RUN p 4 1 1
"""


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.chdir(tmp_path)
    with config.override(cache_dir=tmp_path / "cache", compile_cache=False):
        yield


@pytest.mark.parametrize("command", ["listing", "verify", "validate"])
def test_an_unknown_kernel_argument_names_its_set_line(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    Path("s.amber").write_text(SAXPY.replace("{arg}", "zz"))
    assert main([command, "s.amber"]) == 2
    _, err = capsys.readouterr()
    assert err == "s.amber: line 14: the kernel has no argument 'zz'\n", err


def test_validate_reads_an_amberscript_file(capsys: pytest.CaptureFixture[str]) -> None:
    """Not "invalid JSON" at line 1: `validate` checks the script as `run` reads it."""
    Path("s.amber").write_text(SAXPY.replace("{arg}", "a"))
    assert main(["validate", "s.amber"]) == 0
    out, _ = capsys.readouterr()
    assert out == "s.amber: valid AmberScript file (1 pipeline, 1 command)\n", out
    Path("b.amber").write_text(SAXPY.replace("{arg}", "a").replace("RUN p 4 1 1", "RUN p 4 1"))
    assert main(["validate", "b.amber"]) == 2
    _, err = capsys.readouterr()
    assert err.startswith("b.amber: line 16, column ") and "Traceback" not in err, err


@pytest.mark.parametrize("command", ["snapshot", "listing"])
def test_choosing_a_kernel_of_a_script_names_the_script(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Not the scenario kernellab made of it in its cache folder, which the user never wrote."""
    Path("s.amber").write_text(SAXPY.replace("{arg}", "a"))
    argv = ["snapshot", "--list"] if command == "snapshot" else ["listing"]
    assert main([*argv, "--kernel", "nope", "s.amber"]) == 2
    _, err = capsys.readouterr()
    assert "no shader with that uid in s.amber (have pipeline.p)" in err and "/cache/" not in err, err


def test_bless_of_a_script_says_why_not(capsys: pytest.CaptureFixture[str]) -> None:
    """It said "unknown format 'amber'", naming no file, after checking for a sidecar."""
    Path("s.amber").write_text(SAXPY.replace("{arg}", "a"))
    assert main(["bless", "s.amber"]) == 2
    _, err = capsys.readouterr()
    assert err.startswith("s.amber: an AmberScript file holds its own expectations"), err
    assert not Path("s.expect.json").exists()

