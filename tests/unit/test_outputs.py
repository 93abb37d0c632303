"""Outputs are all-or-nothing, never replace what is not a regular file, and leave no staged file
behind: not on an error, not on SIGTERM/SIGHUP, and not (after the next run) on SIGKILL."""
from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from kernellab.errors import FileSystemError
from kernellab.outputs import OutputSet, escapes, sweep_stale, usable_output_folder, write_bytes


def staged(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_a_set_commits_together_and_discards_on_error(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), OutputSet() as outs:
        outs.npy(tmp_path / "a.npy", np.arange(4))
        outs.bytes(tmp_path / "b.bin", b"xy")
        assert len(staged(tmp_path)) == 2
        raise RuntimeError("a later command failed")
    assert list(tmp_path.iterdir()) == []
    with OutputSet() as outs:
        outs.npy(tmp_path / "a.npy", np.arange(4))
        outs.bytes(tmp_path / "b.bin", b"xy")
        assert outs.commit() == [tmp_path / "a.npy", tmp_path / "b.bin"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npy", "b.bin"]


def test_a_folder_or_a_device_node_is_never_replaced(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(FileSystemError, match="exists and is a folder"), OutputSet() as outs:
        outs.bytes(tmp_path / "d", b"x")
    with pytest.raises(FileSystemError, match="not a regular file"):
        write_bytes(Path("/dev/null"), b"x")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(FileSystemError, match="not a regular file"), OutputSet() as outs:
        outs.bytes(fifo, b"x")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and staged(tmp_path) == []


def test_one_run_cannot_write_one_file_twice(tmp_path: Path) -> None:
    with pytest.raises(FileSystemError, match="two outputs of one run"), OutputSet() as outs:
        outs.bytes(tmp_path / "x", b"1")
        outs.bytes(tmp_path / "x", b"2")
    assert list(tmp_path.iterdir()) == []


def test_files_get_the_permissions_of_the_umask(tmp_path: Path) -> None:
    write_bytes(tmp_path / "f", b"x")
    assert stat.S_IMODE(os.stat(tmp_path / "f").st_mode) == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_staged_files_of_a_dead_process_are_swept(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f".c.npy.kl{int(dead.stdout)}-abc123.tmp"
    mine = tmp_path / f".c.npy.kl{os.getpid()}-abc123.tmp"
    other = tmp_path / ".c.npy.tmp"
    for p in (stale, mine, other):
        p.write_bytes(b"partial")
    assert sweep_stale(tmp_path) == [stale]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([mine.name, other.name])


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_removes_the_staged_files(tmp_path: Path, signum: int) -> None:
    program = textwrap.dedent(f"""
        import os, sys, time
        from pathlib import Path
        from kernellab.outputs import OutputSet, install_signal_cleanup
        install_signal_cleanup()
        outs = OutputSet()
        outs.bytes(Path({str(tmp_path)!r}) / "big.bin", b"x" * 1000)
        print("staged", flush=True)
        time.sleep(60)
    """)
    child = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "staged"
    assert len(staged(tmp_path)) == 1
    child.send_signal(signum)
    assert child.wait(timeout=30) == -signum
    assert list(tmp_path.iterdir()) == []


def test_escapes_follows_dotdot_and_symlinks(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "sub").mkdir(parents=True)
    (out / "link").symlink_to(tmp_path)
    assert not escapes(out / "sub" / "x.npy", out)
    assert escapes(out / ".." / "x.npy", out)
    assert escapes(out / "link" / "x.npy", out)


def test_an_unusable_output_folder_is_refused_before_a_run(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(FileSystemError, match="is not a folder"):
        usable_output_folder(tmp_path / "file" / "sub")
    with pytest.raises(FileSystemError):
        usable_output_folder(Path("/proc/self"))
    usable_output_folder(tmp_path / "new" / "folder")


def test_with_nothing_staged_a_signal_ends_a_long_native_call_at_once(tmp_path: Path) -> None:
    # a Python-level handler would wait for the native call to return (a kernel on Oclgrind, a
    # driver wait): with no staged file there is nothing to clean, so the default action stays
    program = textwrap.dedent("""
        import hashlib
        from kernellab.outputs import OutputSet, install_signal_cleanup
        install_signal_cleanup()
        with OutputSet() as outs:
            pass
        print("busy", flush=True)
        hashlib.pbkdf2_hmac("sha256", b"x", b"y", 10**9)  # minutes inside one C call
    """)
    child = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "busy"
    child.send_signal(signal.SIGTERM)
    assert child.wait(timeout=10) == -signal.SIGTERM
