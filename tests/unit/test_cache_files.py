"""The cache folder as a hostile place (issue 23's kept code, attacked): a kept-code or compile-cache
file that is a FIFO, a symlink, a device, another user's, in a folder others may write, or huge is
never waited on, read without end or run; the kept code is written only into a private folder."""
from __future__ import annotations

import marshal
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernellab import cachedir, classcode, codesave
from kernellab.compile.cache import _ENTRY_TAG, ArtifactCache, sha256

ROOT = Path(__file__).resolve().parents[2]


class Waited(BaseException):
    """Not an OSError: no reader's ``except OSError`` takes the wait for a failed read."""


@pytest.fixture(autouse=True)
def no_wait() -> Iterator[None]:
    """A read that waits on a FIFO (or reads /dev/zero on) fails the test instead of holding it."""
    def expired(signum: int, frame: object) -> None:
        raise Waited("the read waited")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(10)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def _private(folder: Path) -> Path:
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    folder.chmod(0o700)
    return folder


def _kept(folder: Path) -> Path:
    file = _private(folder) / "classcode-run.marshal"
    file.write_bytes(marshal.dumps({"x = 1": marshal.dumps(compile("x = 1", "<string>", "exec"))}))
    file.chmod(0o600)
    return file


def test_a_private_file_is_read(tmp_path: Path) -> None:
    file = _kept(tmp_path / "python")
    assert cachedir.read_private(file, 1 << 20) == file.read_bytes()
    assert classcode.CodeCache(file).blobs


def test_a_fifo_is_not_waited_on(tmp_path: Path) -> None:
    folder = _private(tmp_path / "python")
    fifo = folder / "modulecode.marshal"
    os.mkfifo(fifo, 0o600)
    assert cachedir.read_private(fifo, 1 << 20) is None
    assert classcode.ModuleCode(fifo).entries == {}
    assert classcode.CodeCache(fifo).blobs == {}


def test_a_symlink_to_the_users_own_file_is_not_followed(tmp_path: Path) -> None:
    real = _kept(tmp_path / "elsewhere")
    folder = _private(tmp_path / "python")
    (folder / "classcode-run.marshal").symlink_to(real)
    assert cachedir.read_private(folder / "classcode-run.marshal", 1 << 20) is None
    (folder / "zero").symlink_to("/dev/zero")
    assert cachedir.read_private(folder / "zero", 1 << 20) is None


def test_a_folder_others_may_write_or_a_symlinked_folder_is_not_read(tmp_path: Path) -> None:
    file = _kept(tmp_path / "python")
    tmp_path.joinpath("python").chmod(0o770)  # the group could have put the file there
    assert cachedir.read_private(file, 1 << 20) is None
    tmp_path.joinpath("python").chmod(0o700)
    (tmp_path / "linked").symlink_to(tmp_path / "python")
    assert cachedir.read_private(tmp_path / "linked" / file.name, 1 << 20) is None


def test_a_file_larger_than_the_bound_is_not_read(tmp_path: Path) -> None:
    file = _kept(tmp_path / "python")
    with open(file, "r+b") as fh:
        fh.truncate(1 << 40)  # sparse: a terabyte that was never read whole
    assert cachedir.read_private(file, classcode.MAX_FILE_BYTES) is None
    assert classcode.CodeCache(file).blobs == {}


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to make another user's file")
def test_another_users_file_or_folder_is_not_read(tmp_path: Path) -> None:
    file = _kept(tmp_path / "python")
    os.chown(file, 65534, 65534)
    assert cachedir.read_private(file, 1 << 20) is None
    os.chown(file, 0, 0)
    os.chown(file.parent, 65534, 65534)
    assert cachedir.read_private(file, 1 << 20) is None


def test_the_kept_code_is_written_only_into_a_private_folder(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "python").symlink_to(target)  # swapped in by whoever could write the cache
    assert not codesave.write_replacing(tmp_path / "cache" / "python" / "x.marshal", b"code")
    assert list(target.iterdir()) == []
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    assert not codesave.write_replacing(shared / "x.marshal", b"code")
    assert list(shared.iterdir()) == []
    fresh = tmp_path / "fresh" / "python" / "x.marshal"
    assert codesave.write_replacing(fresh, b"code")
    assert cachedir.read_private(fresh, 100) == b"code"
    assert fresh.parent.stat().st_mode & 0o777 == 0o700 and fresh.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in fresh.parent.iterdir()] == ["x.marshal"]  # no temporary file left


def test_a_relative_xdg_cache_home_is_ignored(tmp_path: Path) -> None:
    home = str(tmp_path)
    assert cachedir.cache_dir({"XDG_CACHE_HOME": "rel", "HOME": home}) == tmp_path / ".cache" / "kernellab"
    assert cachedir.cache_dir({"XDG_CACHE_HOME": "/abs", "HOME": home}) == Path("/abs/kernellab")


def _entry(cache: ArtifactCache, key: str) -> Path:
    path = cache._path(key, "spv")
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def test_a_compile_cache_entry_that_is_a_fifo_a_device_or_another_users_is_a_miss(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cache = ArtifactCache(tmp_path)
    data = b"\x03\x02\x23\x07module"
    cache.put("aa11", "spv", data)
    assert cache.get("aa11", "spv") == data
    os.mkfifo(_entry(cache, "bb22"))
    assert cache.get("bb22", "spv") is None
    assert "not a regular file" in caplog.text
    _entry(cache, "cc33").symlink_to("/dev/zero")
    assert cache.get("cc33", "spv") is None
    shared = _entry(cache, "dd44")
    shared.write_bytes(_ENTRY_TAG + sha256(b"theirs").digest() + b"theirs")
    shared.chmod(0o666)  # anyone may have written it
    assert cache.get("dd44", "spv") is None


def test_the_program_runs_past_fifos_in_its_cache_folder(tmp_path: Path) -> None:
    """``kernellab`` with every kept-code file a FIFO ends (a cold start), as with none."""
    cache = tmp_path / "cache"
    folder = _private(cache / "python")
    env = {**os.environ, "KERNELLAB_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT / "src")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    tag = f"{sys.implementation.cache_tag}-{sys.hexversion:x}"
    for kind in ("classcode", "modulecode"):
        os.mkfifo(folder / f"{kind}-schema-{tag}{'-O0' if kind == 'modulecode' else ''}.marshal")
    done = subprocess.run([sys.executable, "-m", "kernellab", "schema"], env=env, capture_output=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_tool_version_file_that_is_a_fifo_or_dev_zero_is_no_store(tmp_path: Path, kind: str) -> None:
    from kernellab.tools import _VersionStore

    file = tmp_path / "tool-versions.json"
    if kind == "fifo":
        os.mkfifo(file)
    else:
        file.symlink_to("/dev/zero")  # read without end: the run's memory grew until it failed
    assert _VersionStore(file)._load() == {}
    file.unlink()
    file.write_text('{"glslang|1|2|3|4": "11.0"}')
    assert _VersionStore(file)._load() == {"glslang|1|2|3|4": "11.0"}


def test_the_arm_declarations_are_read_only_from_a_private_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ARM extensions' cffi declarations lay out what is handed to the driver: one planted in
    the cache (a FIFO, a file others may write) is not read; a fresh one is made and kept privately."""
    from kernellab import config
    from kernellab.backends import vulkan_arm_decls as decls

    made = ("struct Made { int x; };", {"MADE": 1}, {"Made": "VK_STRUCTURE_TYPE_MADE"})
    monkeypatch.setattr(decls, "generate_cdef", lambda extensions, included=(): made)
    monkeypatch.setattr(decls, "_registry_version", lambda: "1.4.test")
    with config.override(cache_dir=tmp_path / "cache"):
        path = decls._cache_file(["VK_ARM_tensors"], ())
        path.parent.mkdir(parents=True)
        os.mkfifo(path)
        assert decls.cached_declarations(["VK_ARM_tensors"]) == made  # not waited on
        path.unlink()
        path.write_text('{"cdef": "struct Theirs { char evil[1]; };", "constants": {}, "stypes": {}}')
        path.chmod(0o666)
        assert decls.cached_declarations(["VK_ARM_tensors"]) == made
        path.unlink()
        assert decls.cached_declarations(["VK_ARM_tensors"]) == made
        assert path.stat().st_mode & 0o777 == 0o600
        monkeypatch.setattr(decls, "generate_cdef", lambda extensions, included=(): pytest.fail("not kept"))
        assert decls.cached_declarations(["VK_ARM_tensors"]) == made


def test_an_amber_script_s_folder_is_written_through_no_planted_temporary_name(tmp_path: Path) -> None:
    """Runs of one AmberScript file share its folder in the cache: each file is staged under a
    name of the process's own. A fixed ``NAME.tmp`` was written through a symlink planted there
    (and truncated by a second run under the first's rename)."""
    from kernellab.compile.amber import prepare

    script = tmp_path / "s.amber"
    script.write_text((ROOT / "tests" / "amber" / "struct.amber").read_text())
    folder = tmp_path / "materialized"
    folder.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    for name in ("buffer0.npy.tmp", "buffer1.npy.tmp", "amber-origins.json.tmp"):
        (folder / name).symlink_to(victim)
    prepare(script, folder)
    assert victim.read_text() == "untouched"
    assert (folder / "buffer0.npy").is_file() and not (folder / "buffer0.npy").is_symlink()
