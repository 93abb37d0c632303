"""The second attack round on issue 18 (docs/security.md, "Attacks tried, 2026-11-26"): what got
through the boundary the first round built, each now refused with exit 2 and the file named, no
hang, no internal error."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).parents[2] / "examples" / "pyschedcl"


def kernellab(*argv: object, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KERNELLAB_NO_CACHE": "1", "XDG_RUNTIME_DIR": "/tmp"}
    return subprocess.run([sys.executable, "-m", "kernellab", *map(str, argv)], capture_output=True, text=True,
                          timeout=timeout, env=env)


def _refused(proc: subprocess.CompletedProcess[str], text: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert text in proc.stderr, proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr


@pytest.fixture
def specs(tmp_path: Path) -> Path:
    for name in ("Scale.json", "Scale.cl", "VectorAdd.json", "VectorAdd.cl", "vectors.task", "pipeline.graph"):
        (tmp_path / name).write_bytes((EXAMPLE / name).read_bytes())
    return tmp_path


@pytest.mark.parametrize("argv", [("run", "{fifo}"), ("validate", "{fifo}"), ("listing", "--input", "{fifo}"),
                                  ("partition-sweep", "{fifo}"), ("schedule", "{fifo}"),
                                  ("schedule", "{dir}/vectors.task", "--timings", "{fifo}")])
def test_a_fifo_named_on_the_command_line_is_refused_not_waited_on(specs: Path, argv: tuple[str, ...]) -> None:
    """``open()`` of a FIFO waits for a writer: every reader opens without waiting, then checks."""
    fifo = specs / "w.json"
    os.mkfifo(fifo)
    proc = kernellab(*(a.format(fifo=fifo, dir=specs) for a in argv), timeout=30)
    _refused(proc, f"{fifo}: not a regular file")


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("how", ["partition-sweep", "validate", "schedule-task", "schedule-dag", "timings"])
def test_pyschedcl_readers_have_the_json_caps(specs: Path, how: str) -> None:
    """A spec, a DAG and a timings file 100,000 levels deep were an internal error (RecursionError);
    /dev/zero as a spec or timings file read until memory ran out."""
    deep = specs / "deep.json"
    deep.write_text(DEEP)
    argv: list[object] = {
        "partition-sweep": ["partition-sweep", deep], "validate": ["validate", deep],
        "schedule-task": ["schedule", specs / "deep.task"], "schedule-dag": ["schedule", deep],
        "timings": ["schedule", specs / "vectors.task", "--timings", deep]}[how]
    (specs / "deep.task").write_text("deep.json 10 1024\n")
    _refused(kernellab(*argv), f"{deep}: nested more than 64 levels deep")
    if how == "timings":
        _refused(kernellab("schedule", specs / "vectors.task", "--timings", "/dev/zero"),
                 "/dev/zero: not a regular file")


def test_validate_checks_a_pyschedcl_kernels_includes(specs: Path) -> None:
    """validate called a spec valid whose kernel includes a file outside its folder (run refuses it)."""
    (specs / "Scale.cl").write_text('/* c */ #include "/etc/passwd"\n' + (EXAMPLE / "Scale.cl").read_text())
    _refused(kernellab("validate", specs / "Scale.json"), f"{specs / 'Scale.json'}: /src: {specs / 'Scale.cl'}:1:")


@pytest.mark.parametrize("command", [("run",), ("verify",), ("validate",),
                                     ("snapshot", "--kernel", "k", "--stage", "spirv")])
def test_a_scenario_shader_outside_its_folder_is_refused_like_an_include(tmp_path: Path,
                                                                         command: tuple[str, ...]) -> None:
    """validate refused ``src: "../outside.comp"``; run and verify gave it to glslang, whose log
    quotes what it read (a suite's JUnit report then carries a line of any file)."""
    work = tmp_path / "work"
    work.mkdir()
    outside = tmp_path / "outside.comp"
    outside.write_text("#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n")
    import json
    path = work / "s.json"
    path.write_text(json.dumps({
        "resources": [{"shader": {"uid": "k", "src": "../outside.comp", "type": "GLSL"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [1], "bindings": []}}]}))
    _refused(kernellab(*command, path), f"/resources/0/shader/src: cannot read the kernel: {outside} is outside the "
                                        f"workload's folder")
    if command[0] != "validate":
        output = {"run": ["--output", tmp_path / "out"], "snapshot": ["-o", tmp_path / "k.spv"]}.get(command[0], [])
        allowed = kernellab(*command, path, "--allow-outside", tmp_path, *output)
        assert allowed.returncode == 0, allowed.stderr


@pytest.mark.parametrize("form", ["scenario", "kernel-instantiation"])
def test_validate_lists_no_kernel_of_a_source_outside_the_folder(tmp_path: Path, form: str) -> None:
    """validate read an OpenCL C source through a symlink out of the folder to check its entry
    point, and named the outside file's kernels ("its kernels: TOPSECRET") instead of refusing it."""
    import json
    work = tmp_path / "work"
    work.mkdir()
    secret = tmp_path / "secret.cl"
    secret.write_text("__kernel void TOPSECRET(__global int *a) {}\n")
    (work / "k.cl").symlink_to(secret)
    path = work / "w.json"
    if form == "scenario":
        path.write_text(json.dumps({
            "resources": [{"shader": {"uid": "k", "src": "k.cl", "type": "OpenCL-C", "entry": "q"}}],
            "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [1], "bindings": []}}]}))
        where = "/resources/0/shader/src"
    else:
        path.write_text(json.dumps([{"language": "OpenCL", "kernel_file": "k.cl", "entry_point": "q",
                                     "global_size": [4], "local_size": [4]}]))
        where = "/0/kernel_file"
    proc = kernellab("validate", path)
    _refused(proc, f"{where}: cannot read the kernel: {secret} is outside the workload's folder")
    assert "TOPSECRET" not in proc.stderr


def _vector_add(folder: Path) -> Path:
    example = Path(__file__).parents[2] / "examples" / "vector_add"
    for name in ("scenario.json", "a.npy", "b.npy", "count.npy", "add.comp"):
        (folder / name).write_bytes((example / name).read_bytes())
    return folder / "scenario.json"


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_dst_with_control_characters_is_refused(tmp_path: Path, command: str) -> None:
    """A dst named ``ESC[31m...`` was written as named: ``ls`` of the output folder printed it raw."""
    import json
    path = _vector_add(tmp_path)
    doc = json.loads(path.read_text())
    doc["resources"][4]["buffer"]["dst"] = "\x1b[31mc\u202e.npy"
    path.write_text(json.dumps(doc))
    out = tmp_path / "out"
    _refused(kernellab(command, path, "--output", out),
             "/resources/4/buffer/dst: '\\x1b[31mc\\u202e.npy' is not a usable file name for an output")
    assert not out.exists() or not any(out.iterdir())


def test_bless_refuses_a_reference_with_control_characters(tmp_path: Path) -> None:
    path = _vector_add(tmp_path)
    sidecar = tmp_path / "scenario.expect.json"
    sidecar.write_text('{"outputs": {"c": {"reference": "\\u001b[31mc.npy"}}}')
    _refused(kernellab("bless", path, "--force"), f"{sidecar}: /outputs/c/reference: '\\x1b[31mc.npy' is not a "
                                                  "usable file name")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npy", "add.comp", "b.npy", "count.npy",
                                                          "scenario.expect.json", "scenario.json"]
