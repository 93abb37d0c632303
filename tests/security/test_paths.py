"""Paths from names: a uid, a sidecar reference, a graph line or a kernel name is data, and no
command lets one decide a file name outside its folder (issue 18, "paths from names"); and a
folder swapped for a symlink while a run goes on cannot redirect its outputs (TOCTOU)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from helpers.scenarios import vector_add, write
from kernellab.cli import main
from kernellab.formats.paths import NAME_CAP, escaped_name, name_problem
from test_pyschedcl_helpers import vecadd_spec

HOSTILE = ["../../x", "/etc/passwd", "..", ".hidden", "-rf", "a\x1b[31mb", "a\x00b", "a\u202eb", "x" * 300]


def files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*")}


@pytest.fixture()
def sandbox(tmp_path: Path) -> tuple[Path, Path]:
    """(work, sentinel): the workload's folder and a sibling folder nothing may touch."""
    work, sentinel = tmp_path / "work" / "deep", tmp_path / "sentinel"
    work.mkdir(parents=True)
    sentinel.mkdir()
    (sentinel / "keep").write_text("untouched")
    return work, sentinel


def assert_untouched(tmp_path: Path, work: Path, sentinel: Path) -> None:
    assert sorted(p.name for p in sentinel.iterdir()) == ["keep"]
    assert (sentinel / "keep").read_text() == "untouched"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sentinel", "work"]
    assert sorted(p.name for p in (tmp_path / "work").iterdir()) == ["deep"]
    assert not any(p.name.endswith((".tmp", ".lock")) for p in files_under(tmp_path))


# --- the door itself -------------------------------------------------------------------------

@pytest.mark.parametrize("value", HOSTILE + ["", "a/b"])
def test_a_name_that_could_leave_its_folder_is_refused_and_its_escape_is_plain(value: str) -> None:
    assert name_problem(value) is not None
    name = escaped_name(value)
    assert name_problem(name) is None and len(name.encode()) <= NAME_CAP
    assert escaped_name(value) == name  # deterministic: the same uid gives the same dump file


def test_escaped_names_stay_distinct_and_plain_names_stay_as_they_are() -> None:
    assert escaped_name("add") == "add" and escaped_name("v.frame") == "v.frame"
    values = ["a/b", "a%2Fb", "a_b", ".a", "%2Ea", "x" * 300, "x" * 301]
    assert len({escaped_name(v) for v in values}) == len(values)
    assert name_problem("add_1.x") is None


# --- bless -----------------------------------------------------------------------------------

def _sidecar(work: Path, reference: str) -> Path:
    sidecar = work / "scenario.expect.json"
    sidecar.write_text(json.dumps({"outputs": {"c": {"reference": reference}}}))
    return sidecar


@pytest.mark.parametrize("reference", ["../../x.npy", "ABSOLUTE"])
def test_bless_writes_no_reference_outside_the_sidecars_folder(tmp_path: Path, sandbox: tuple[Path, Path],
                                                                reference: str, capsys: Any) -> None:
    work, sentinel = sandbox
    path, _ = vector_add(work)
    target = sentinel / "x.npy" if reference == "ABSOLUTE" else work.parent.parent / "x.npy"
    _sidecar(work, str(target) if reference == "ABSOLUTE" else reference)
    assert main(["bless", str(path), "--force"]) == 2
    err = capsys.readouterr().err
    assert "scenario.expect.json: /outputs/c/reference: reference resolves to" in err and "Traceback" not in err
    assert not target.exists()
    assert_untouched(tmp_path, work, sentinel)


def test_bless_follows_no_symlink_out_of_the_sidecars_folder(tmp_path: Path, sandbox: tuple[Path, Path],
                                                             capsys: Any) -> None:
    work, sentinel = sandbox
    path, _ = vector_add(work)
    (work / "refs").symlink_to(sentinel, target_is_directory=True)
    _sidecar(work, "refs/c.npy")
    assert main(["bless", str(path), "--force"]) == 2
    assert "/outputs/c/reference: reference resolves to" in capsys.readouterr().err
    assert_untouched(tmp_path, work, sentinel)


def test_a_buffer_uid_does_not_decide_a_reference_name(tmp_path: Path, sandbox: tuple[Path, Path],
                                                       capsys: Any) -> None:
    work, sentinel = sandbox
    path, doc = vector_add(work)
    doc["resources"][4]["buffer"]["uid"] = "../../../sentinel/c"
    doc["commands"][0]["dispatch_compute"]["bindings"][2]["resource_ref"] = "../../../sentinel/c"
    write(path, doc)
    assert main(["bless", str(path)]) == 2
    err = capsys.readouterr().err
    assert "scenario.json: /resources/4/buffer/uid: '../../../sentinel/c' cannot name a file" in err
    assert_untouched(tmp_path, work, sentinel)


def test_bless_still_writes_its_references_beside_the_workload(tmp_path: Path) -> None:
    path, _ = vector_add(tmp_path)
    assert main(["bless", str(path)]) == 0
    ref = np.load(tmp_path / "scenario.expected" / "c.npy")
    assert ref.shape == (400,)


# --- export ----------------------------------------------------------------------------------

def test_export_refuses_a_shader_uid_that_would_name_a_file_outside(tmp_path: Path, sandbox: tuple[Path, Path],
                                                                   capsys: Any) -> None:
    work, sentinel = sandbox
    (work / "k.cl").write_text("kernel void k(global float *v) { v[get_global_id(0)] += 1.0f; }\n")
    np.save(work / "v.npy", np.zeros(64, np.float32))
    uid = "../../../sentinel/k"
    doc = {"resources": [{"shader": {"uid": uid, "src": "k.cl", "type": "OpenCL-C", "entry": "k"}},
                         {"buffer": {"uid": "v", "size": 256, "shader_access": "readwrite", "src": "v.npy"}}],
           "commands": [{"dispatch_compute": {"shader_ref": uid, "rangeND": [1],
                                              "bindings": [{"set": 0, "id": 0, "resource_ref": "v"}]}}]}
    path = write(work / "s.json", doc)
    assert main(["export", str(path), "-o", str(work / "out")]) == 2
    err = capsys.readouterr().err
    assert f"s.json: /resources/0/shader/uid: shader uid: {uid!r} cannot name a file" in err
    assert_untouched(tmp_path, work, sentinel)


# --- run --dump-stages, --capture-frames -----------------------------------------------------

INC = """#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer V { float v[]; };
void main() { v[gl_GlobalInvocationID.x] += 1.0; }
"""


def _inc_scenario(work: Path, shader_uid: str, buffer_uid: str) -> Path:
    (work / "k.comp").write_text(INC)
    np.save(work / "v.npy", np.zeros(64, np.float32))
    doc = {"resources": [{"shader": {"uid": shader_uid, "src": "k.comp", "type": "GLSL"}},
                         {"buffer": {"uid": buffer_uid, "size": 256, "shader_access": "readwrite", "src": "v.npy",
                                     "dst": "out/v.npy"}}],
           "commands": [{"dispatch_compute": {"shader_ref": shader_uid, "rangeND": [1],
                                              "bindings": [{"set": 0, "id": 0, "resource_ref": buffer_uid}]}},
                        {"mark_boundary": {"resources": [buffer_uid], "frame_id": 3}}]}
    return write(work / "s.json", doc)


def test_dumped_stages_and_captured_frames_get_escaped_names_inside_their_folders(
        tmp_path: Path, sandbox: tuple[Path, Path]) -> None:
    work, sentinel = sandbox
    path = _inc_scenario(work, "../../../sentinel/\x1bk", "../../../sentinel/v")
    assert main(["run", str(path), "--dump-stages", str(work / "stages"),
                 "--capture-frames", str(work / "frames")]) == 0
    kernel = "%2E.%2F..%2F..%2Fsentinel%2F%1Bk"
    assert escaped_name("../../../sentinel/\x1bk") == kernel
    assert {p.name for p in (work / "stages").iterdir()} >= {f"{kernel}.spirv.spv", f"{kernel}.glsl.comp"}
    assert all(p.name.startswith(kernel) for p in (work / "stages").iterdir())
    assert [p.name for p in (work / "frames").iterdir()] == ["%2E.%2F..%2F..%2Fsentinel%2Fv.frame3.npy"]
    assert np.load(work / "out" / "v.npy").view(np.float32)[0] == 1.0
    assert_untouched(tmp_path, work, sentinel)


# --- schedule --------------------------------------------------------------------------------

@pytest.mark.parametrize("tid", ["../../../sentinel/t", "\x1b[2J"])
def test_schedule_refuses_a_task_id_that_would_name_a_folder_outside(tmp_path: Path, sandbox: tuple[Path, Path],
                                                                     tid: str, capsys: Any) -> None:
    work, sentinel = sandbox
    vecadd_spec(work)
    graph = work / "dag.graph"
    graph.write_text(f'{tid} VectorAdd.json {{"dataset": 64, "partition": 10}}\n---\n---\n')
    assert main(["schedule", str(graph), "-o", str(work / "out")]) == 2
    err = capsys.readouterr().err
    assert "dag.graph: line 1: task id" in err and "cannot name a file" in err and "\x1b" not in err
    assert not (work / "out").exists()
    assert_untouched(tmp_path, work, sentinel)


# --- TOCTOU: a folder swapped for a symlink between the check and the write ------------------

def test_a_dst_folder_swapped_for_a_symlink_during_the_run_is_not_followed(
        tmp_path: Path, sandbox: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    from kernellab.runtime.executor import Executor

    work, sentinel = sandbox
    path = _inc_scenario(work, "k", "v")
    (work / "out").mkdir()
    original = Executor.save_outputs

    def swap_then_save(self: Executor, *args: Any) -> None:
        # the scenario was checked (dst inside the output folder); now, before the write, the folder moves
        (work / "out").rename(work / "out.moved")
        (work / "out").symlink_to(sentinel, target_is_directory=True)
        original(self, *args)

    monkeypatch.setattr(Executor, "save_outputs", swap_then_save)
    assert main(["run", str(path)]) == 1
    err = capsys.readouterr().err
    assert "out: cannot write outputs there: it is a symbolic link" in err and "Traceback" not in err
    assert sorted(p.name for p in sentinel.iterdir()) == ["keep"]
    assert list((work / "out.moved").iterdir()) == []
    assert not any(p.name.endswith((".tmp", ".lock")) for p in files_under(work))
