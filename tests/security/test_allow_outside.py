"""``--allow-outside`` reaches every ``-I`` check and every include lookup (issue 18): a
kernel-instantiation file's ``compiler_flags -I`` and a PySchedCL kernel's includes, on every
command; without the flag the folder is refused with its JSON path, validate included."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def kernellab(*argv: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KERNELLAB_NO_CACHE": "1", "XDG_RUNTIME_DIR": "/tmp"}
    return subprocess.run([sys.executable, "-m", "kernellab", *map(str, argv)], capture_output=True, text=True,
                          timeout=180, env=env)


@pytest.fixture
def outside_header(tmp_path: Path) -> tuple[Path, Path]:
    """(the workload's k.json, the folder outside it holding v.h)."""
    inc, work = tmp_path / "inc", tmp_path / "work"
    inc.mkdir()
    work.mkdir()
    (inc / "v.h").write_text("#define V 7\n")
    (work / "k.cl").write_text('#include "v.h"\n__kernel void k(__global int *o) { o[get_global_id(0)] = V; }\n')
    path = work / "k.json"
    path.write_text(json.dumps([{"language": "OpenCL", "kernel_file": "k.cl", "global_size": [4], "local_size": [4],
                                 "entry_point": "k", "compiler_flags": f"-I{inc}",
                                 "kernel_arguments": [{"type": "array", "size": 16}]}]))
    return path, inc


@pytest.mark.parametrize("command", [("validate",), ("verify",), ("run", "--device", "Oclgrind")])
def test_an_include_folder_outside_is_refused_then_allowed(outside_header: tuple[Path, Path],
                                                           command: tuple[str, ...]) -> None:
    if command[0] != "validate":
        pytest.importorskip("pyopencl")
    path, inc = outside_header
    refused = kernellab(*command, path)
    assert refused.returncode == 2, refused.stderr
    assert f"{path}: /0/compiler_flags: compiler option '-I{inc}' is not allowed in a file" in refused.stderr
    allowed = kernellab(*command, path, "--allow-outside", inc)
    assert allowed.returncode == 0, allowed.stderr  # verify once looked for v.h in the kernel's folder only


def test_validate_reports_what_run_refuses_in_compiler_flags(tmp_path: Path) -> None:
    (tmp_path / "k.cl").write_text("__kernel void k(__global int *o) { o[0] = 1; }\n")
    path = tmp_path / "k.json"
    path.write_text(json.dumps([{"language": "OpenCL", "kernel_file": "k.cl", "global_size": [1], "entry_point": "k",
                                 "compiler_flags": f"-Xclang -load -Xclang /x.so -dependency-file {tmp_path}/dep"}]))
    proc = kernellab("validate", path)
    assert proc.returncode == 2, proc.stdout
    assert f"{path}: /0/compiler_flags: compiler option '-Xclang' is not allowed" in proc.stderr
    assert "valid kernel-instantiation" not in proc.stdout


def test_a_pyschedcl_kernel_includes_from_an_allowed_folder(tmp_path: Path) -> None:
    pytest.importorskip("pyopencl")
    example = Path(__file__).parents[2] / "examples" / "pyschedcl"
    inc, work = tmp_path / "inc", tmp_path / "work"
    inc.mkdir()
    work.mkdir()
    (inc / "v.h").write_text("#define SCALE_HEADER 1\n")
    (work / "Scale.json").write_text((example / "Scale.json").read_text())
    (work / "Scale.cl").write_text('#include "../inc/v.h"\n' + (example / "Scale.cl").read_text())
    refused = kernellab("partition-sweep", work / "Scale.json")
    assert refused.returncode == 2 and f"{work / 'Scale.json'}: /src:" in refused.stderr
    assert "outside the workload's folder" in refused.stderr
    allowed = kernellab("partition-sweep", work / "Scale.json", "--allow-outside", inc)
    assert allowed.returncode == 0, allowed.stderr
