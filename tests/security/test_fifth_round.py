"""The fifth round of attacks (docs/security.md): the eighth session's kept module code, the
kept copies of failed compiles and the suite's re-runs."""
from __future__ import annotations

import marshal
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"


def _env(cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "KERNELLAB_NO_CACHE")}
    env.update(PYTHONPATH=str(SRC), KERNELLAB_CACHE_DIR=str(cache), XDG_RUNTIME_DIR=env.get("XDG_RUNTIME_DIR", "/tmp"))
    return env


def _kernellab(env: dict[str, str], *args: str, cwd: Path | None = None,
               limit: int | None = None) -> subprocess.CompletedProcess[str]:
    def cap() -> None:  # the address space a machine without overcommit would give
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return subprocess.run([sys.executable, "-m", "kernellab", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=120, preexec_fn=cap if limit else None)


def _module_file(cache: Path) -> Path:
    env = _env(cache)
    assert _kernellab(env, "devices").returncode == 0
    files = sorted((cache / "python").glob("modulecode-devices-*.marshal"))
    assert len(files) == 1
    return files[0]


def _rewrite(file: Path, index_change: Any = None, shared: bytes | None = None) -> None:
    data = file.read_bytes()
    end = 8 + int.from_bytes(data[:8], "little")
    index = list(marshal.loads(data[8:end]))
    rest = data[end + index[3]:]
    if index_change is not None:
        index_change(index[2])
    if shared is not None:
        index[3] = len(shared)
    else:
        shared = data[end:end + index[3]]
    head = marshal.dumps(tuple(index))
    file.write_bytes(len(head).to_bytes(8, "little") + head + shared + rest)


def test_a_module_code_file_whose_shared_group_counts_two_billion_items_falls_back(tmp_path: Path) -> None:
    """A damaged count: marshal allocates a tuple of that many items before it reads one (16 GiB
    here); where the machine refuses that, every start ended in a MemoryError traceback."""
    cache = tmp_path / "cache"
    file = _module_file(cache)
    _rewrite(file, shared=b"(" + (0x7FFFFFFF).to_bytes(4, "little"))
    env = _env(cache)
    proc = _kernellab(env, "devices", limit=3 << 30)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    again = _kernellab(env, "devices", limit=3 << 30)  # the file was kept anew at exit
    assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr


def test_a_module_code_index_entry_of_another_shape_is_dropped_at_exit(tmp_path: Path) -> None:
    """An index entry that is a triple but not (entry, start, end) of the kept layout: the save at
    exit read it as one and ended every run with a traceback, the file never rewritten."""
    cache = tmp_path / "cache"
    file = _module_file(cache)

    def damage(entries: dict[str, Any]) -> None:
        entries["kernellab.never_imported"] = (5, "a", "b")
        entries["kernellab.never_imported2"] = (("where",), 0, 1)
        del entries["kernellab.commands.devices"]  # imported anew: the file is written at exit

    _rewrite(file, damage)
    proc = _kernellab(_env(cache), "devices")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    data = file.read_bytes()
    index = marshal.loads(data[8:8 + int.from_bytes(data[:8], "little")])
    assert "kernellab.commands.devices" in index[2]
    assert not any(name.startswith("kernellab.never_imported") for name in index[2])


def _failing_shader(work: Path, name: str) -> None:
    """``work/scenario.json`` dispatching the GLSL shader ``work/NAME``, which does not compile."""
    import json

    work.mkdir()
    (work / name).write_text("#version 450\nlayout(local_size_x = 1) in;\nvoid main() { undefined_thing; }\n")
    (work / "scenario.json").write_text(json.dumps({
        "resources": [{"shader": {"uid": "k", "src": name, "type": "GLSL"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [1], "bindings": []}}]}))


def test_a_failed_compiles_repro_command_runs_from_any_folder(tmp_path: Path) -> None:
    """The compiler reads the kept copy by its own name in its folder (<cache>/repro/...): the
    printed command named the file alone, so pasted into the user's shell it compiled nothing."""
    work = tmp_path / "w y"
    name = "x y$(id).comp"
    _failing_shader(work, name)
    proc = _kernellab(_env(tmp_path / "cache"), "run", str(work / "scenario.json"), cwd=tmp_path)
    assert proc.returncode == 2 and "undefined_thing" in proc.stderr, proc.stderr
    repro = [line for line in proc.stderr.splitlines() if line.startswith("repro: ")]
    assert len(repro) == 1
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    again = subprocess.run(["sh", "-c", repro[0].removeprefix("repro: ")], cwd=elsewhere, capture_output=True,
                           text=True, timeout=60)
    assert again.returncode != 0 and "undefined_thing" in again.stdout + again.stderr, again
    command = shlex.split(repro[0].removeprefix("repro: "))
    assert command[-1] == name  # the name quoted: the shell ran no $(id)


@pytest.mark.parametrize(("returncode", "refused"), [(2, True), (-9, False), (-6, False)])
def test_a_compiler_ended_by_a_signal_is_run_again(returncode: int, refused: bool, tmp_path: Path) -> None:
    """A compile error is the source's (exit 2: not run again), but a compiler killed by a signal
    (its memory limit, the OOM killer) crashed: the suite runs that workload again."""
    from kernellab.errors import CompileError, ToolFailure
    from kernellab.suite import worker
    from kernellab.suite.discovery import SuiteItem

    class Session:
        device = "fake"

        def run_workload(self, *args: object, **kwargs: object) -> None:
            raise CompileError("compiling k.comp: glslangValidator failed",
                               ToolFailure("glslangValidator", ["glslangValidator", "k.comp"], returncode, "log"))

    sidecar = tmp_path / "w.expect.json"
    sidecar.write_text('{"outputs": {"y": {"reference": "y.npy", "dtype": "float32"}}}')
    result = worker.run_item(Session(), SuiteItem("w", tmp_path / "w.json", sidecar))
    assert result.status == "error" and result.bad_input is refused


def test_a_no_cache_root_a_killed_process_left_is_removed_by_the_next(tmp_path: Path) -> None:
    """KERNELLAB_NO_CACHE: a command killed while it ran an AmberScript file (SIGTERM from
    ``timeout`` or a CI runner, SIGKILL) left its private folder, the scenarios in it, for good;
    the next command removes each one no live process holds, and nothing else."""
    import time

    from tests.security.test_no_cache_amber import HANG, SCRIPT

    work, tmp, outside = tmp_path / "work", tmp_path / "tmp", tmp_path / "outside"
    for folder in (work, tmp, outside):
        folder.mkdir()
    (work / "hang.amber").write_text(HANG)
    (work / "t.amber").write_text(SCRIPT)
    (outside / "keep.txt").write_text("mine")
    env = {**_env(tmp_path / "cache"), "KERNELLAB_NO_CACHE": "1", "TMPDIR": str(tmp)}
    hung = subprocess.Popen([sys.executable, "-m", "kernellab", "run", "hang.amber"], cwd=work, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not any(tmp.rglob("*.json")) and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        hung.kill()
        hung.wait()
    left = sorted(tmp.iterdir())
    assert len(left) == 1, left
    old = time.time() - 3600
    os.utime(left[0], (old, old))
    young = tmp / "kernellab-scratch-young123"  # not locked yet by a process that just made it
    young.mkdir()
    (tmp / "kernellab-scratch-planted1").symlink_to(outside)
    os.utime(tmp / "kernellab-scratch-planted1", (old, old), follow_symlinks=False)
    proc = subprocess.run([sys.executable, "-m", "kernellab", "validate", "t.amber"], cwd=work, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp.iterdir()) == ["kernellab-scratch-planted1", "kernellab-scratch-young123"]
    assert (outside / "keep.txt").read_text() == "mine"


def test_a_shader_path_with_a_newline_stays_on_its_line(tmp_path: Path) -> None:
    """Messages name a shader beside the workload as the user typed the workload (errors.shown):
    a ``src`` holding a newline printed a line of the file's choosing ("scenario.json: all
    outputs match") where a buffer's is escaped; and so did a typed path."""
    _failing_shader(tmp_path / "w", "x\nscenario.json: all outputs match.comp")
    env = _env(tmp_path / "cache")
    for command in ("run", "validate"):
        proc = _kernellab(env, command, "w/scenario.json", cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr
        first = proc.stderr.splitlines()[0]
        assert first.startswith("w/scenario.json: /resources/0/shader/src: compiling "
                                "w/x\\x0ascenario.json: all outputs match.comp: glslangValidator failed"), proc.stderr
    typed = tmp_path / "d\nY"
    typed.mkdir()
    (typed / "s.json").write_text('{"resources": [1')
    proc = _kernellab(env, "run", "d\nY/s.json", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.startswith("d\\x0aY/s.json: line 1, column 17: "), proc.stderr


def _regenerate(table: str, target: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run([sys.executable, "-m", f"kernellab.vkregistry.{table}", str(target)], env=env,
                          capture_output=True, text=True, timeout=60)


def test_a_table_regenerated_onto_a_fifo_replaces_it(tmp_path: Path) -> None:
    """The developer tool wrote its table straight into PATH: a FIFO there held it forever (and
    an interrupted write left half a table); it is staged beside PATH and renamed."""
    pytest.importorskip("vulkan_object")
    fifo = tmp_path / "enums.json"
    os.mkfifo(fifo)
    proc = _regenerate("enums", fifo)
    assert proc.returncode == 0, proc.stderr
    assert fifo.is_file() and '"enums"' in fifo.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["enums.json"]


def test_the_binding_modules_are_never_written_through_a_planted_tmp_name(tmp_path: Path) -> None:
    pytest.importorskip("vulkan_object")
    pytest.importorskip("cffi")
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    out = tmp_path / "out"
    out.mkdir()
    (out / "_vkbind_ffi.tmp").symlink_to(victim)
    proc = _regenerate("binding", out)
    assert proc.returncode == 0, proc.stderr
    assert victim.read_text() == "mine" and (out / "_vkbind_ffi.py").is_file()


@pytest.mark.parametrize("where", ["missing/x.json", "."])
def test_a_table_that_cannot_be_written_is_one_line(where: str, tmp_path: Path) -> None:
    pytest.importorskip("vulkan_object")
    proc = _regenerate("spirv", tmp_path / where)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("python -m kernellab.vkregistry.spirv: cannot write: ") and \
        len(proc.stderr.splitlines()) == 1, proc.stderr


@pytest.mark.parametrize("plant", ["open", "link"])
def test_a_worker_never_makes_its_root_in_a_folder_not_its_own(plant: str, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A suite's worker takes its root inside the folder its parent named (``WorkerConfig.scratch``);
    on another machine (Ray) a folder of that name may be anyone's: writable by others, or a
    symlink to one, where its folder could be swapped for a link. It makes a root of its own then."""
    from kernellab import scratch

    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    monkeypatch.setattr(scratch, "_ROOT", [])
    monkeypatch.setattr(scratch, "_HELD", [])
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    parent = shared if plant == "open" else tmp_path / "link"
    if plant == "link":
        shared.chmod(0o700)
        parent.symlink_to(shared)
    scratch.adopt(str(parent))
    try:
        made = scratch.root()
        assert made.parent == tmp_path and list(shared.iterdir()) == []
    finally:
        scratch.remove()


def test_a_file_system_error_names_the_path_as_typed(tmp_path: Path) -> None:
    """The machine's refusal of a path (a name longer than the system allows) named the resolved
    absolute path, where every other message names it as the user typed it, on one line."""
    name = "a\n" + "a" * 300 + ".json"
    proc = _kernellab(_env(tmp_path / "cache"), "listing", name, cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr == f"kernellab: error: a\\x0a{'a' * 300}.json: File name too long\n"
