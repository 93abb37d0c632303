"""Writing output files so that nothing is ever half-written, and nothing lands outside its folder.

Every output goes to a temp file in the destination folder and is renamed into place; a run that
fails part-way removes the temp files it made, and a :class:`OutputSet` commits all of a run's
files together at the end so a failed run leaves no ``dst`` file behind.

Folders are opened once, as descriptors, and the staged file is created and renamed relative to
that descriptor (``O_CREAT|O_EXCL|O_NOFOLLOW``, ``renameat``). Inside the output folder an
:class:`OutputSet` is given (``root``), every sub-folder is opened component by component with
``O_NOFOLLOW``: a sub-folder replaced by a symlink between the scenario's check and the write is
refused, and one replaced after its staging cannot redirect the rename, which goes to the folder
already open. The root itself is the user's choice and may be a symlink.

Staged files are named ``.NAME.kl<pid>-<token>-<n>.tmp``. The run that stages them holds an
``flock`` on ``.kl<pid>-<token>.lock`` in the same folder (one locked file per file system,
hard-linked into each folder) until it commits or discards them, and the kernel drops that lock
when the process dies, however it dies. The next run that writes into
the folder removes the staged files whose lock it can take, or whose lock file is gone
(:func:`sweep_stale`); the pid in the name is for people only, so a run in another PID namespace
sharing the folder keeps its files. SIGTERM and SIGHUP remove them at once
(:func:`install_signal_cleanup`). Files get the permissions the user's umask gives, like any file
the user creates.
"""
from __future__ import annotations

import errno
import fcntl
import functools
import os
import stat
import sys
from pathlib import Path
from types import FrameType, SimpleNamespace

from kernellab.errors import FileSystemError
from kernellab.weakid import WeakIdMap

try:  # signal's C half: the module builds its enums at import (3 M instructions of a run, issue 23)
    import _signal as signal  # the same functions and numbers; a handler is read back as a plain int
except ImportError:  # an interpreter without it
    import signal  # type: ignore[no-redef]

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:  # numpy is imported by the writers that need it: the CLI starts without it
    import re
    from collections.abc import Callable, Iterator
    from contextlib import AbstractContextManager
    from typing import IO

    import numpy as np


#: ``.NAME.kl<token>-<n>.tmp`` with ``<token>`` = ``<pid>-<hex>``; the lock is ``.kl<token>.lock``
_STAGED = r"^\..+\.kl(\d+-[0-9a-f]+)-\d+\.tmp$"
_LOCK = r"^\.kl(\d+-[0-9a-f]+)\.lock$"
#: a staged name keeps at most this much of NAME, so that it stays within NAME_MAX (255 bytes)
_NAME_KEPT = 180
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
#: every OutputSet not yet committed or discarded, for the signal handlers
_LIVE = WeakIdMap()


@functools.cache
def _umask() -> int:
    """The process's umask, read once: reading it means setting it, and doing that per file would
    race with threads (process-wide by nature; kernellab never changes it)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _file_mode() -> int:
    return 0o666 & ~_umask()


def _lock_name(token: str) -> str:
    return f".kl{token}.lock"


def _owner_gone(dir_fd: int, token: str) -> int | None:
    """The descriptor of ``token``'s lock file, locked by us, when its owner is gone; None while
    a process (in any PID namespace) holds it. A lock file that is gone counts as a gone owner,
    with -1: its owner makes it before its first staged file and removes it after its last."""
    try:
        fd = os.open(_lock_name(token), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError:
        return -1
    except OSError:  # a symlink, unreadable: not ours to judge
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a lock file")
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _sweep_at(dir_fd: int, own_lock: str = "") -> list[str]:
    """Remove the staged files of owners that are gone from the folder open as ``dir_fd``.
    ``own_lock``, the name of the caller's own lock there, is skipped unread: it is held, so the
    sweep would leave it anyway, and reading its name compiles the patterns (~0.9 M instructions
    of every run, issue 23)."""
    try:
        names = os.listdir(dir_fd)
    except OSError:
        return []
    by_token: dict[str, list[str]] = {}
    for name in names:
        if name != own_lock and (match := _token_of(name)) is not None:
            by_token.setdefault(match[0], []).extend([match[1]] if match[1] else [])
    removed: list[str] = []
    for token, staged in by_token.items():
        lock = _owner_gone(dir_fd, token)
        if lock is None:
            continue
        try:
            for name in staged:
                try:
                    os.unlink(name, dir_fd=dir_fd)
                except OSError:
                    continue
                removed.append(name)
            if lock >= 0:  # unlinked while we hold it: a writer that opened it meanwhile sees it gone
                _unlink_at(dir_fd, _lock_name(token))
        finally:
            if lock >= 0:
                os.close(lock)
    return removed


def _token_of(name: str) -> tuple[str, str] | None:
    """(token, staged name) for a staged file, (token, "") for a lock file, None for anything else."""
    if ".kl" not in name:  # neither: the patterns are compiled only for a folder that has such names
        return None
    staged, lock = _patterns()
    if (match := staged.match(name)) is not None:
        return match.group(1), name
    if (match := lock.match(name)) is not None:
        return match.group(1), ""
    return None


@functools.cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """:data:`_STAGED` and :data:`_LOCK` compiled (about 1.5 M instructions: only where a sweep
    meets a name with ``.kl``, never in a run's output folder of its own, issue 23)."""
    import re

    return re.compile(_STAGED), re.compile(_LOCK)


def _unlink_at(dir_fd: int, name: str) -> None:
    """Remove ``name`` from the folder ``dir_fd`` if it can be (cleanup: a failure changes nothing)."""
    try:
        os.unlink(name, dir_fd=dir_fd)
    except OSError:
        pass


def sweep_stale(folder: Path) -> list[Path]:
    """Remove the staged files that a killed kernellab process left in ``folder``."""
    try:
        fd = os.open(folder, _DIR_FLAGS)
    except OSError:
        return []
    try:
        return [folder / name for name in _sweep_at(fd)]
    finally:
        os.close(fd)


def _refusal(kind: str, shown: object) -> FileSystemError:
    return FileSystemError(f"{shown}: cannot write an output there: it exists and is {kind}")


def _check_at(dir_fd: int, name: str, shown: object) -> None:
    """An output may replace a regular file (or a link to one, which the rename replaces), never
    a folder, a device node, a FIFO or a socket."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        if stat.S_ISLNK(st.st_mode):
            st = os.stat(name, dir_fd=dir_fd)
    except FileNotFoundError:  # nothing there, or a dangling link: the rename replaces the link itself
        return
    except OSError as exc:
        raise FileSystemError.from_os(exc, shown) from None
    if not stat.S_ISREG(st.st_mode):
        raise _refusal("a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file", shown)


def _absolute(path: Path) -> Path:
    """``path`` made absolute without resolving ``..`` or links (the walk decides about those)."""
    return path if path.is_absolute() else Path.cwd() / path


def _parts_inside(folder: Path, root: Path) -> tuple[str, ...] | None:
    """``folder``'s parts below ``root`` (as written or with ``root``'s links resolved), or None."""
    folder = _absolute(folder)
    for base in (_absolute(root), Path(os.path.realpath(root))):
        try:
            return folder.relative_to(base).parts
        except ValueError:
            continue
    return None


def _open_given(folder: Path) -> int:
    """A folder the user named (an output root, an absolute dst they allowed): links followed."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        return os.open(folder, _DIR_FLAGS)
    except OSError as exc:
        raise FileSystemError.from_os(exc, exc.filename or folder) from None


def _open_below(root_fd: int, root: Path, parts: tuple[str, ...]) -> int:
    """Walk ``parts`` down from ``root_fd``, creating folders, following no symlink: the folder
    reached is the one inside the root whatever was swapped in since the scenario was checked."""
    stack = [root_fd]
    shown = root
    try:
        for part in parts:
            if part in ("", "."):
                continue
            if part == "..":
                if len(stack) == 1:
                    raise FileSystemError(f"{shown}/..: outputs are written inside {root}, not above it")
                os.close(stack.pop())
                shown = shown.parent
                continue
            shown = shown / part
            stack.append(_open_child(stack[-1], part, shown))
        return stack.pop()
    finally:
        for fd in stack:
            os.close(fd)


def _open_child(dir_fd: int, part: str, shown: Path) -> int:
    flags = _DIR_FLAGS | os.O_NOFOLLOW
    try:
        try:
            return os.open(part, flags, dir_fd=dir_fd)
        except FileNotFoundError:
            try:
                os.mkdir(part, 0o777, dir_fd=dir_fd)
            except FileExistsError:
                pass
            return os.open(part, flags, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            try:
                link = stat.S_ISLNK(os.stat(part, dir_fd=dir_fd, follow_symlinks=False).st_mode)
            except OSError:
                link = False
            if link:
                raise FileSystemError(f"{shown}: cannot write outputs there: it is a symbolic link, and "
                                      "outputs are never written through one") from None
            raise FileSystemError(f"{shown}: cannot write outputs there: it is not a folder") from None
        raise FileSystemError.from_os(exc, shown) from None


def _new_lock(dir_fd: int) -> tuple[int, str]:
    """A fresh lock file in the folder ``dir_fd``, locked: (its descriptor, its token)."""
    while True:
        # os.urandom is what secrets.token_hex reads; importing secrets (hmac, hashlib with
        # OpenSSL, random) cost every command ~5 ms of start-up
        token = f"{os.getpid()}-{os.urandom(4).hex()}"
        fd = os.open(_lock_name(token), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     _file_mode(), dir_fd=dir_fd)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            # a sweep may have taken the fresh file before our flock and removed it: a new one then
            if os.fstat(fd).st_nlink > 0:
                return fd, token
        except OSError:
            os.close(fd)
            raise
        os.close(fd)


class _Locks:
    """A run's locks: one locked file per file system, hard-linked into every folder the run
    stages into there (a link is the same inode, so the same flock), so that a run holds one
    descriptor for its locks however many folders it writes into."""

    def __init__(self) -> None:
        #: st_dev -> (token, descriptor of a folder holding that lock's name)
        self._by_device: dict[int, tuple[str, int]] = {}
        self._fds: list[int] = []

    def token_for(self, dir_fd: int) -> str:
        """The token of a lock held by this run whose name is in the folder ``dir_fd``."""
        device = os.fstat(dir_fd).st_dev
        if device in self._by_device:
            token, home = self._by_device[device]
            try:
                os.link(_lock_name(token), _lock_name(token), src_dir_fd=home, dst_dir_fd=dir_fd)
                return token
            except OSError:  # no hard links on this file system, or the name was removed: a lock of its own
                pass
        fd, token = _new_lock(dir_fd)
        self._fds.append(fd)
        self._by_device.setdefault(device, (token, dir_fd))
        return token

    def release(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds.clear()
        self._by_device.clear()


class _Folder:
    """A folder a run stages into: its descriptor, and the token of the lock (its name in this
    folder) that says the staged files here are owned by a live process."""

    def __init__(self, fd: int, shown: Path):
        self.fd = fd
        self.shown = shown
        self.token = ""
        self.count = 0

    def stage(self, name: str, locks: _Locks) -> tuple[int, str]:
        """Create the temp file that will become ``name`` in this folder."""
        if not self.token:
            self.token = locks.token_for(self.fd)
            _sweep_at(self.fd, _lock_name(self.token))
        self.count += 1
        kept = name if len(name) <= _NAME_KEPT else name[:_NAME_KEPT]
        tmp = f".{kept}.kl{self.token}-{self.count}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, _file_mode(),
                     dir_fd=self.fd)
        os.fchmod(fd, _file_mode())
        return fd, tmp

    def release(self) -> None:
        """Remove the lock's name here (the lock itself is still held) and close the folder."""
        if self.token:
            _unlink_at(self.fd, _lock_name(self.token))
            self.token = ""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class _Staged:
    __slots__ = ("folder", "tmp", "path")

    def __init__(self, folder: _Folder, tmp: str, path: Path):
        self.folder, self.tmp, self.path = folder, tmp, path


def _unlink_quietly(staged: _Staged) -> None:
    _unlink_at(staged.folder.fd, staged.tmp)


def atomic_open(path: str | os.PathLike[str], mode: str = "wb", *,
                root: str | os.PathLike[str] | None = None) -> AbstractContextManager[IO]:
    """Open a temp file next to ``path``; on success it replaces ``path``, on error it vanishes.
    With ``root``, the folders between it and ``path`` are walked without following symlinks."""
    from contextlib import contextmanager  # where a file is written this way: a run stages an OutputSet

    return contextmanager(_atomic_open)(path, mode, root)


def _atomic_open(path: str | os.PathLike[str], mode: str, root: str | os.PathLike[str] | None) -> Iterator[IO]:
    path = Path(path)
    with OutputSet(root) as outs:
        fd = outs._stage(path)
        try:
            with os.fdopen(fd, mode) as fh:
                yield fh
        except OSError as exc:
            raise FileSystemError.from_os(exc, path) from None
        outs.commit()


def write_bytes(path: str | os.PathLike[str], data: bytes | memoryview, *,
                root: str | os.PathLike[str] | None = None) -> None:
    with atomic_open(path, root=root) as fh:
        fh.write(data)


def write_text(path: str | os.PathLike[str], text: str, *, root: str | os.PathLike[str] | None = None) -> None:
    # surrogates (from a file name or bytes decoded with surrogateescape) must not end a write
    with atomic_open(path, "wb", root=root) as fh:
        fh.write(text.encode("utf-8", "backslashreplace"))


def write_npy(fh: IO[bytes], array: np.ndarray) -> None:
    """Write ``array`` as .npy without an extra copy of its data (it may be a mapped view)."""
    import numpy as np

    np.lib.format.write_array(fh, np.ascontiguousarray(array), allow_pickle=False)


#: fills an opened output (named here: inside OutputSet, ``bytes`` is its method)
if TYPE_CHECKING:
    _Fill = Callable[[IO[bytes]], object]


class OutputSet:
    """Stage a run's output files as temp files and rename them all at :meth:`commit`.

    ``with OutputSet(out) as outs: outs.npy(path, arr) ... outs.commit()``; leaving the block
    without commit (an exception, SIGTERM, SIGHUP) removes every staged file. Paths inside
    ``root`` (the output folder) reach their folder without following a symlink; paths outside it
    (an absolute dst the user allowed, or no root) are written into their folder as named.
    """

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = Path(root) if root is not None else None
        self._staged: list[_Staged] = []
        self._folders: dict[Path, _Folder] = {}
        self._locks = _Locks()
        self._root_fd = -1
        _LIVE.put(self)

    def open(self, path: str | os.PathLike[str]) -> IO[bytes]:
        return os.fdopen(self._stage(Path(path)), "wb")

    def _stage(self, path: Path) -> int:
        if any(s.path == path for s in self._staged):
            raise FileSystemError(f"{path}: two outputs of one run would be written to this file")
        if path.name in ("", ".", ".."):
            raise FileSystemError(f"{path}: cannot write an output there: it names a folder, not a file")
        folder = self._folder(path.parent)
        _check_at(folder.fd, path.name, path)
        try:
            fd, tmp = folder.stage(path.name, self._locks)
        except OSError as exc:
            raise FileSystemError.from_os(exc, path) from None
        self._staged.append(_Staged(folder, tmp, path))
        _staging_changed()
        return fd

    def _folder(self, parent: Path) -> _Folder:
        if parent in self._folders:
            return self._folders[parent]
        parts = _parts_inside(parent, self.root) if self.root is not None else None
        if self.root is not None and parts is not None:
            if self._root_fd < 0:
                self._root_fd = _open_given(self.root)
            fd = _open_below(os.dup(self._root_fd), self.root, parts)
        else:
            fd = _open_given(parent)
        folder = self._folders[parent] = _Folder(fd, parent)
        return folder

    def npy(self, path: str | os.PathLike[str], array: np.ndarray) -> None:
        self._write(path, lambda fh: write_npy(fh, array))

    def bytes(self, path: str | os.PathLike[str], data: bytes | memoryview) -> None:
        self._write(path, lambda fh: fh.write(data))

    def text(self, path: str | os.PathLike[str], text: str) -> None:
        self._write(path, lambda fh: fh.write(text.encode("utf-8", "backslashreplace")))

    def _write(self, path: str | os.PathLike[str], fill: _Fill) -> None:
        try:
            with self.open(path) as fh:
                fill(fh)
        except OSError as exc:
            raise FileSystemError.from_os(exc, path) from None

    @property
    def paths(self) -> list[Path]:
        return [s.path for s in self._staged]

    def commit(self) -> list[Path]:
        """Rename every staged file into place, after checking that each still may be replaced."""
        try:
            for s in self._staged:
                _check_at(s.folder.fd, s.path.name, s.path)
        except FileSystemError:
            self.discard()
            raise
        done: list[Path] = []
        # a signal between two renames left one output new and the next old or absent
        with _SignalsHeld(len(self._staged) > 1 and _CLEANUP.wanted):
            for s in self._staged:
                try:
                    os.rename(s.tmp, s.path.name, src_dir_fd=s.folder.fd, dst_dir_fd=s.folder.fd)
                except OSError as exc:
                    self._staged = self._staged[len(done):]
                    self.discard()
                    raise FileSystemError.from_os(exc, s.path) from None
                done.append(s.path)
        self._staged.clear()
        self._release()
        return done

    def discard(self) -> None:
        for s in self._staged:
            _unlink_quietly(s)
        self._staged.clear()
        self._release()

    def _release(self) -> None:
        for folder in self._folders.values():
            folder.release()
        self._folders.clear()
        self._locks.release()  # after the names: a sweep must never find a free lock beside our files
        if self._root_fd >= 0:
            os.close(self._root_fd)
            self._root_fd = -1
        _LIVE.pop(self)
        _staging_changed()

    def __enter__(self) -> OutputSet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.discard()


def discard_all() -> None:
    """Remove every staged file of this process (signal handlers, fatal errors), and its private
    temporary folders (``scratch``: looked up, never imported here)."""
    for outputs in _LIVE.objects():
        outputs.discard()
    scratch = sys.modules.get("kernellab.scratch")
    if scratch is not None:
        scratch.remove()


#: whether the CLI wants staged files removed on SIGTERM/SIGHUP, and whether the handlers are in
#: place now (only while a file is staged). Process-wide by nature: signal handlers are the
#: process's. A namespace, not a class of its own built on every start (~0.07 M instructions, issue 23)
_CLEANUP = SimpleNamespace(wanted=False, installed=False)


def _handler(signum: int, frame: FrameType | None) -> None:
    discard_all()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


class _SignalsHeld:
    """SIGINT, SIGTERM and SIGHUP that arrive inside the block take effect at its end (sent
    again, to the handlers that were in place): a run's outputs are renamed into place together
    or, before the first rename, not at all. A signal ignored, or handled outside Python, is left
    as it is; outside the main thread nothing is held (Python handles signals in that one), nor
    where ``wanted`` is false (one rename, or no handlers of ours to hold)."""

    def __init__(self, wanted: bool) -> None:
        self.wanted = wanted
        self.saved: dict[int, object] = {}
        self.pending: list[int] = []

    def __enter__(self) -> None:
        if not self.wanted:
            return
        for name in ("SIGINT", "SIGTERM", "SIGHUP"):
            signum = getattr(signal, name, None)
            if signum is None:
                continue
            try:
                current = signal.getsignal(signum)
                if current is not None and current != signal.SIG_IGN:
                    signal.signal(signum, self._hold)
                    self.saved[signum] = current
            except (ValueError, OSError):  # not the main thread
                return

    def _hold(self, signum: int, frame: FrameType | None) -> None:
        self.pending.append(signum)

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self.saved.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]
        for signum in dict.fromkeys(self.pending):
            os.kill(os.getpid(), signum)


def _arm_handlers(on: bool) -> None:
    """Python runs a signal handler only between bytecodes: while a handler is installed, SIGTERM
    waits for a long native call (a kernel on Oclgrind, a driver wait) to return. So the handlers
    are in place only while staged files exist; otherwise the signal kills at once, as usual."""
    if on == _CLEANUP.installed or not _CLEANUP.wanted:
        return
    for signum in (signal.SIGTERM, signal.SIGHUP):
        try:
            current = signal.getsignal(signum)
            if on and current in (signal.SIG_DFL, None):
                signal.signal(signum, _handler)
            elif not on and current is _handler:
                signal.signal(signum, signal.SIG_DFL)
        except (ValueError, OSError):  # not the main thread, or no such signal
            pass
    _CLEANUP.installed = on


def _staging_changed() -> None:
    _arm_handlers(any(outputs._staged for outputs in _LIVE.objects()))


def install_signal_cleanup() -> None:
    """On SIGTERM or SIGHUP while files are staged, remove them, then die of the signal as before."""
    _CLEANUP.wanted = True
    _staging_changed()


def escapes(path: Path, root: Path) -> bool:
    """Whether ``path`` lands outside ``root`` once ``..`` and symlinks (of existing parts) resolve."""
    try:
        path.resolve(strict=False).relative_to(root.resolve(strict=False))
    except ValueError:
        return True
    return False


def usable_output_folder(folder: Path) -> None:
    """Refuse an --output that can never hold outputs (a file, /proc, a read-only folder) before a run."""
    probe = folder
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise FileSystemError(f"{folder}: cannot write outputs there: {probe} is not a folder")
    if probe.exists() and not os.access(probe, os.W_OK | os.X_OK):
        raise FileSystemError(f"{folder}: cannot write outputs there: {probe} is not writable")
    try:
        read_only = bool(os.statvfs(probe).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    if read_only:
        raise FileSystemError(f"{folder}: cannot write outputs there: read-only file system")
    if str(folder.resolve()).startswith(("/proc/", "/sys/")):
        raise FileSystemError(f"{folder}: cannot write outputs there: a kernel file system")


__all__ = ["OutputSet", "atomic_open", "discard_all", "escapes", "install_signal_cleanup",
           "sweep_stale", "usable_output_folder", "write_bytes", "write_npy", "write_text"]
