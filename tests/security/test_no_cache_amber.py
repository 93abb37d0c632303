"""``KERNELLAB_NO_CACHE=1``: an AmberScript file's scenarios go to a private temporary folder,
removed when the command ends (an error, a suite worker's exit or its kill by the timeout
included); nothing is written into the cache folder, its size ledger (``cache-usage``) included."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from kernellab import scratch

SCRIPT = """#!amber
SHADER compute doubler GLSL
#version 450
layout(local_size_x = 4) in;
layout(set = 0, binding = 0) buffer In { uint a[]; };
layout(set = 0, binding = 1) buffer Out { uint b[]; };
void main() { uint i = gl_GlobalInvocationID.x; b[i] = a[i] * 2u; }
END
BUFFER in DATA_TYPE uint32 SIZE 4 SERIES_FROM 1 INC_BY 1
BUFFER out DATA_TYPE uint32 SIZE 4 FILL 0
PIPELINE compute double
  ATTACH doubler
  BIND BUFFER in AS storage DESCRIPTOR_SET 0 BINDING 0
  BIND BUFFER out AS storage DESCRIPTOR_SET 0 BINDING 1
END
RUN double 1 1 1
EXPECT out IDX 0 EQ 2 4 6 8
"""
#: 2^32 work groups, each an atomic: far longer than a suite's timeout, which kills its worker
HANG = (SCRIPT.replace("b[i] = a[i] * 2u;", "atomicAdd(b[1], gl_WorkGroupID.x ^ gl_WorkGroupID.y);")
        .replace("RUN double 1 1 1", "RUN double 65535 65535 1"))


def _run(*args: object, cwd: Path, cache: Path, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp"),
           "KERNELLAB_NO_CACHE": "1", "KERNELLAB_CACHE_DIR": str(cache), "TMPDIR": str(tmp)}
    return subprocess.run([sys.executable, "-m", "kernellab", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=300)


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The workload's folder (with ``t.amber``), the empty cache folder, the empty temporary folder."""
    work, cache, tmp = tmp_path / "work", tmp_path / "cache", tmp_path / "tmp"
    for folder in (work, cache, tmp):
        folder.mkdir()
    (work / "t.amber").write_text(SCRIPT)
    return work, cache, tmp


def _left(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("command", [["run"], ["validate"], ["verify"], ["listing"], ["snapshot", "--list"],
                                     ["test", "--jobs", "1"]], ids=lambda c: c[0])
def test_no_cache_writes_nothing_into_the_cache_and_leaves_no_temporary(command: list[str],
                                                                        places: tuple[Path, Path, Path]) -> None:
    work, cache, tmp = places
    proc = _run(*command, "t.amber", cwd=work, cache=cache, tmp=tmp)
    assert proc.returncode == 0, proc.stderr
    assert _left(cache) == [], f"{command[0]} wrote into the cache folder with KERNELLAB_NO_CACHE=1"
    assert _left(tmp) == [], f"{command[0]} left its temporary folder behind"


@pytest.mark.parametrize("command", ["run", "validate", "verify", "listing", "test"])
def test_a_failing_command_removes_its_temporary_folder_too(command: str, places: tuple[Path, Path, Path]) -> None:
    work, cache, tmp = places
    (work / "t.amber").write_text(SCRIPT.replace("* 2u;", "* 2u"))  # the shader no longer compiles
    proc = _run(command, "t.amber", cwd=work, cache=cache, tmp=tmp)
    assert proc.returncode == (1 if command == "test" else 2), proc.stderr
    # the error names the script's line, as with a cache, not the scenario made in the temporary folder
    assert "t.amber: line 7: SHADER doubler (GLSL)" in proc.stdout + proc.stderr
    assert "kernellab-" not in proc.stdout + proc.stderr
    # the compiler's own input folder (``kernellab-src-*``) is kept after a tool's failure for its
    # repro command, as with a cache: not this folder's business
    assert _left(cache) == [] and [p for p in _left(tmp) if not p.startswith("kernellab-src-")] == []


def test_a_worker_killed_by_the_timeout_leaves_no_temporary(places: tuple[Path, Path, Path]) -> None:
    work, cache, tmp = places
    (work / "t.amber").write_text(HANG)
    proc = _run("test", "t.amber", "--jobs", "1", "--timeout", "3", "--no-rerun", cwd=work, cache=cache, tmp=tmp)
    assert proc.returncode == 1, proc.stderr
    assert "no result after 3 s" in proc.stdout + proc.stderr
    assert _left(cache) == [] and _left(tmp) == []


def test_the_scratch_folders_are_private_and_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    monkeypatch.setattr(scratch, "_ROOT", [])
    made = scratch.folder("amber-")
    parent = scratch.root()
    assert made.parent == parent and parent.parent == tmp_path
    for folder in (made, parent):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    # a worker's root lies in its parent's, which outlives it and is removed with all it holds
    scratch.adopt(str(parent))
    worker = scratch.folder("amber-")
    assert worker.parent.parent == parent
    scratch.remove()
    assert not worker.parent.exists() and made.is_dir()
    scratch.adopt(str(tmp_path / "gone"))  # the parent's folder is not on this machine: a root of its own
    assert scratch.root().parent == tmp_path
    scratch.remove()
    monkeypatch.setattr(scratch, "_ROOT", [parent])
    scratch.remove()
    assert _left(tmp_path) == []
