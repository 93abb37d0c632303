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


def _hold_lock(folder: Path, token: str) -> subprocess.Popen[str]:
    """Another process (in another PID namespace, as far as the sweep can tell) holding a run's lock."""
    program = textwrap.dedent(f"""
        import fcntl, os, time
        fd = os.open({str(folder / f".kl{token}.lock")!r}, os.O_WRONLY | os.O_CREAT)
        fcntl.flock(fd, fcntl.LOCK_EX)
        print("held", flush=True)
        time.sleep(60)
    """)
    child = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "held"
    return child


def test_staged_files_are_swept_when_their_lock_is_free_whatever_their_pid(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    # a pid that is dead here but whose process holds its lock: a live run in another container
    held = tmp_path / f".c.npy.kl{int(dead.stdout)}-feed-1.tmp"
    # our own (live) pid, but nobody holds the lock: a killed run of another container whose pid we reuse
    stale = tmp_path / f".d.npy.kl{os.getpid()}-abc123-1.tmp"
    (tmp_path / f".kl{os.getpid()}-abc123.lock").write_bytes(b"")
    # no lock file at all: its owner removed it with its last staged file, or never made one
    orphan = tmp_path / f".e.npy.kl{int(dead.stdout)}-beef-2.tmp"
    other = tmp_path / ".c.npy.tmp"
    # the PID scheme's name (mkstemp's suffix, no lock): nothing tells whether its owner lives
    before = tmp_path / f".f.npy.kl{int(dead.stdout)}-abc_XY12.tmp"
    for p in (held, stale, orphan, other, before):
        p.write_bytes(b"partial")
    child = _hold_lock(tmp_path, f"{int(dead.stdout)}-feed")
    try:
        assert sorted(sweep_stale(tmp_path)) == sorted([stale, orphan])
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
            [held.name, other.name, before.name, f".kl{int(dead.stdout)}-feed.lock"])
    finally:
        child.kill()
        child.wait(timeout=30)
    assert sweep_stale(tmp_path) == [held]  # the kernel dropped the lock with its holder
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([other.name, before.name])


def test_a_live_run_keeps_its_staged_files_while_another_run_writes_beside_them(tmp_path: Path) -> None:
    program = textwrap.dedent(f"""
        import time
        from pathlib import Path
        from kernellab.outputs import OutputSet
        outs = OutputSet()
        outs.bytes(Path({str(tmp_path)!r}) / "slow.bin", b"x" * 1000)
        print("staged", flush=True)
        time.sleep(60)
    """)
    child = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "staged"
        write_bytes(tmp_path / "fast.bin", b"y")  # sweeps the folder before it stages
        assert len(staged(tmp_path)) == 1
    finally:
        child.kill()
        child.wait(timeout=30)
    write_bytes(tmp_path / "fast.bin", b"z")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fast.bin"]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_removes_the_staged_files(tmp_path: Path, signum: int) -> None:
    # the child starts with the signals' default actions, as a command typed at a terminal does
    # (a test run under nohup hands its children SIGHUP ignored: see the next test)
    child = subprocess.Popen([sys.executable, "-c", _staging_program(tmp_path)], stdout=subprocess.PIPE, text=True,
                             preexec_fn=lambda: [signal.signal(s, signal.SIG_DFL) for s in (signal.SIGTERM, signal.SIGHUP)])
    assert child.stdout is not None and child.stdout.readline().strip() == "staged"
    assert len(staged(tmp_path)) == 1
    child.send_signal(signum)
    assert child.wait(timeout=30) == -signum
    assert list(tmp_path.iterdir()) == []


def _staging_program(folder: Path) -> str:
    return textwrap.dedent(f"""
        import os, sys, time
        from pathlib import Path
        from kernellab.outputs import OutputSet, install_signal_cleanup
        install_signal_cleanup()
        outs = OutputSet()
        outs.bytes(Path({str(folder)!r}) / "big.bin", b"x" * 1000)
        print("staged", flush=True)
        time.sleep(60)
    """)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_between_the_renames_of_a_commit_comes_after_the_last(tmp_path: Path, signum: int) -> None:
    """Two outputs are renamed into place together: a signal that arrives as the first rename
    returns takes effect after the second (it left the first new and the second old)."""
    (tmp_path / "a.bin").write_bytes(b"old")
    (tmp_path / "b.bin").write_bytes(b"old")
    program = textwrap.dedent(f"""
        import os, signal
        from pathlib import Path
        from kernellab.outputs import OutputSet, install_signal_cleanup
        install_signal_cleanup()
        folder = Path({str(tmp_path)!r})
        outs = OutputSet()
        outs.bytes(folder / "a.bin", b"new")
        outs.bytes(folder / "b.bin", b"new")
        rename = os.rename
        def signalled_rename(*args, **kwargs):
            rename(*args, **kwargs)
            os.rename = rename
            os.kill(os.getpid(), {int(signum)})
        os.rename = signalled_rename
        try:
            outs.commit()
        except KeyboardInterrupt:
            raise SystemExit(130)
    """)
    child = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60,
                           preexec_fn=lambda: [signal.signal(s, signal.SIG_DFL) for s in (signal.SIGTERM, signal.SIGHUP)])
    assert child.returncode == (-signum if signum == signal.SIGTERM else 130), child.stderr
    assert [(tmp_path / n).read_bytes() for n in ("a.bin", "b.bin")] == [b"new", b"new"]
    assert staged(tmp_path) == []


def test_a_signal_the_user_ignored_stays_ignored(tmp_path: Path) -> None:
    # `nohup kernellab run ...`: SIGHUP must not end the run because staging installed a handler
    child = subprocess.Popen([sys.executable, "-c", _staging_program(tmp_path)], stdout=subprocess.PIPE, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "staged"
        child.send_signal(signal.SIGHUP)
        with pytest.raises(subprocess.TimeoutExpired):
            child.wait(timeout=1)
        assert len(staged(tmp_path)) == 1
    finally:
        child.kill()
        child.wait(timeout=30)


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


def _swap_for_link(folder: Path, target: Path) -> Path:
    moved = folder.with_name(folder.name + ".moved")
    folder.rename(moved)
    folder.symlink_to(target, target_is_directory=True)
    return moved


def test_a_subfolder_swapped_for_a_symlink_before_the_write_is_refused(tmp_path: Path) -> None:
    out, sentinel = tmp_path / "out", tmp_path / "sentinel"
    (out / "sub").mkdir(parents=True)
    sentinel.mkdir()
    assert not escapes(out / "sub" / "o.npy", out)  # what the scenario's check saw
    _swap_for_link(out / "sub", sentinel)
    with pytest.raises(FileSystemError, match="symbolic link"), OutputSet(out) as outs:
        outs.bytes(out / "sub" / "o.npy", b"x")
    with pytest.raises(FileSystemError, match="symbolic link"):
        write_bytes(out / "sub" / "deeper" / "o.npy", b"x", root=out)
    assert list(sentinel.iterdir()) == []


def test_a_subfolder_swapped_after_staging_cannot_redirect_the_commit(tmp_path: Path) -> None:
    out, sentinel = tmp_path / "out", tmp_path / "sentinel"
    out.mkdir()
    sentinel.mkdir()
    with OutputSet(out) as outs:
        outs.bytes(out / "sub" / "o.npy", b"x")
        moved = _swap_for_link(out / "sub", sentinel)
        outs.commit()
    assert list(sentinel.iterdir()) == []
    assert (moved / "o.npy").read_bytes() == b"x"


def test_dotdot_inside_the_root_is_walked_and_above_it_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_bytes(out / "a" / ".." / "b" / "o.bin", b"1", root=out)
    assert (out / "b" / "o.bin").read_bytes() == b"1"
    link = tmp_path / "link"
    link.symlink_to(out)  # the root itself is the user's choice: a link to it is followed
    write_bytes(link / "c.bin", b"2", root=link)
    assert (out / "c.bin").read_bytes() == b"2"
    with pytest.raises(FileSystemError, match="not above it"):
        write_bytes(out / "a" / ".." / ".." / "x.bin", b"3", root=out / "a")
    assert not (tmp_path / "x.bin").exists()


def test_one_lock_is_held_for_all_the_folders_of_a_run(tmp_path: Path) -> None:
    with OutputSet(tmp_path) as outs:
        before = len(os.listdir("/proc/self/fd"))
        for i in range(40):
            outs.bytes(tmp_path / f"d{i}" / "o.bin", b"x")
        assert len(os.listdir("/proc/self/fd")) - before == 40 + 2  # each folder, the root, one lock
        locks = sorted(tmp_path.rglob(".kl*.lock"))
        assert len(locks) == 40 and len({p.stat().st_ino for p in locks}) == 1
        sweep = subprocess.run([sys.executable, "-c", "import sys; from pathlib import Path; from kernellab.outputs "
                                "import sweep_stale; print(sweep_stale(Path(sys.argv[1])))", str(tmp_path / "d7")],
                               capture_output=True, text=True, check=True)
        assert sweep.stdout.strip() == "[]" and len(staged(tmp_path / "d7")) == 1
        outs.commit()
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["o.bin"] * 40


def test_outputs_import_no_secrets_module() -> None:
    """Every command imports kernellab.outputs: its lock tokens come from os.urandom, not from
    secrets, whose import (hmac, hashlib with OpenSSL, random) made listing and verify ~10% slower."""
    code = "import sys, kernellab.outputs; print(sorted({'secrets', 'hmac'} & set(sys.modules)))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"
