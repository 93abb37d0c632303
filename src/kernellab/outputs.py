"""Writing output files so that nothing is ever half-written.

Every output goes to a temp file in the destination folder and is renamed into place; a run that
fails part-way removes the temp files it made, and a :class:`OutputSet` commits all of a run's
files together at the end so a failed run leaves no ``dst`` file behind.

Staged files are named ``.NAME.kl<pid>-<random>.tmp``: a run killed with SIGKILL cannot remove
them, so the next run that writes into the same folder removes those of processes that are gone
(:func:`sweep_stale`). SIGTERM and SIGHUP remove them at once (:func:`install_signal_cleanup`).
Files get the permissions the user's umask gives, like any file the user creates.
"""
from __future__ import annotations

import contextlib
import os
import re
import signal
import stat
import tempfile
import weakref
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported by the writers that need it: the CLI starts without it
    import numpy as np

from kernellab.errors import FileSystemError

_STALE = re.compile(r"^\..+\.kl(\d+)-[^.]+\.tmp$")
#: every OutputSet not yet committed or discarded, for the signal handlers
_LIVE: weakref.WeakSet[OutputSet] = weakref.WeakSet()
#: the umask, read once (reading it means setting it; doing that per file would race with threads)
_UMASK: int | None = None


def _file_mode() -> int:
    global _UMASK
    if _UMASK is None:
        _UMASK = os.umask(0)
        os.umask(_UMASK)
    return 0o666 & ~_UMASK


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def sweep_stale(folder: Path) -> list[Path]:
    """Remove the staged files that a killed kernellab process left in ``folder``."""
    removed: list[Path] = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        match = _STALE.match(name)
        if match and not _pid_alive(int(match.group(1))):
            with contextlib.suppress(OSError):
                os.unlink(folder / name)
                removed.append(folder / name)
    return removed


def check_replaceable(path: Path) -> None:
    """An output may replace a regular file, never a folder, a device node, a FIFO or a socket."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise FileSystemError.from_os(exc, path) from None
    if stat.S_ISLNK(st.st_mode):
        try:
            st = os.stat(path)
        except FileNotFoundError:  # a dangling link: the rename replaces the link itself
            return
    if not stat.S_ISREG(st.st_mode):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise FileSystemError(f"{path}: cannot write an output there: it exists and is {kind}")


def _stage(path: Path) -> tuple[int, str]:
    """Create the temp file that will become ``path``."""
    check_replaceable(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        sweep_stale(path.parent)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.kl{os.getpid()}-", suffix=".tmp", dir=path.parent)
        os.fchmod(fd, _file_mode())
    except OSError as exc:
        raise FileSystemError.from_os(exc, exc.filename or path) from None
    return fd, tmp


def _unlink_quietly(tmp: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(tmp)


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "wb") -> Iterator[IO]:
    """Open a temp file next to ``path``; on success it replaces ``path``, on error it vanishes."""
    path = Path(path)
    fd, tmp = _stage(path)
    try:
        with os.fdopen(fd, mode) as fh:
            yield fh
        os.replace(tmp, path)
    except OSError as exc:
        _unlink_quietly(tmp)
        raise FileSystemError.from_os(exc, path) from None
    except BaseException:
        _unlink_quietly(tmp)
        raise


def write_bytes(path: str | os.PathLike[str], data: bytes | memoryview) -> None:
    with atomic_open(path) as fh:
        fh.write(data)


def write_text(path: str | os.PathLike[str], text: str) -> None:
    # surrogates (from a file name or bytes decoded with surrogateescape) must not end a write
    with atomic_open(path, "wb") as fh:
        fh.write(text.encode("utf-8", "backslashreplace"))


def write_npy(fh: IO[bytes], array: np.ndarray) -> None:
    """Write ``array`` as .npy without an extra copy of its data (it may be a mapped view)."""
    import numpy as np

    np.lib.format.write_array(fh, np.ascontiguousarray(array), allow_pickle=False)


def save_npy(path: str | os.PathLike[str], array: np.ndarray) -> None:
    with atomic_open(path) as fh:
        write_npy(fh, array)


class OutputSet:
    """Stage a run's output files as temp files and rename them all at :meth:`commit`.

    ``with OutputSet() as outs: outs.npy(path, arr) ... outs.commit()``; leaving the block
    without commit (an exception, SIGTERM, SIGHUP) removes every staged file.
    """

    def __init__(self) -> None:
        self._staged: list[tuple[str, Path]] = []
        _LIVE.add(self)

    def open(self, path: str | os.PathLike[str]) -> IO[bytes]:
        path = Path(path)
        if any(p == path for _, p in self._staged):
            raise FileSystemError(f"{path}: two outputs of one run would be written to this file")
        fd, tmp = _stage(path)
        self._staged.append((tmp, path))
        _staging_changed()
        return os.fdopen(fd, "wb")

    def npy(self, path: str | os.PathLike[str], array: np.ndarray) -> None:
        self._write(path, lambda fh: write_npy(fh, array))

    def bytes(self, path: str | os.PathLike[str], data: bytes | memoryview) -> None:
        self._write(path, lambda fh: fh.write(data))

    def text(self, path: str | os.PathLike[str], text: str) -> None:
        self._write(path, lambda fh: fh.write(text.encode("utf-8", "backslashreplace")))

    def _write(self, path: str | os.PathLike[str], fill: object) -> None:
        try:
            with self.open(path) as fh:
                fill(fh)  # type: ignore[operator]
        except OSError as exc:
            raise FileSystemError.from_os(exc, path) from None

    @property
    def paths(self) -> list[Path]:
        return [p for _, p in self._staged]

    def commit(self) -> list[Path]:
        """Rename every staged file into place, after checking that each still may be replaced."""
        for _, path in self._staged:
            check_replaceable(path)
        done: list[Path] = []
        for tmp, path in self._staged:
            try:
                os.replace(tmp, path)
            except OSError as exc:
                self._staged = self._staged[len(done):]
                self.discard()
                raise FileSystemError.from_os(exc, path) from None
            done.append(path)
        self._staged.clear()
        _LIVE.discard(self)
        _staging_changed()
        return done

    def discard(self) -> None:
        for tmp, _ in self._staged:
            _unlink_quietly(tmp)
        self._staged.clear()
        _LIVE.discard(self)
        _staging_changed()

    def __enter__(self) -> OutputSet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.discard()


def discard_all() -> None:
    """Remove every staged file of this process (signal handlers, fatal errors)."""
    for outputs in list(_LIVE):
        outputs.discard()


#: set by the CLI: handlers are wanted, and put in place only while a file is staged
_CLEANUP = {"wanted": False, "installed": False}


def _handler(signum: int, frame: FrameType | None) -> None:
    discard_all()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _arm_handlers(on: bool) -> None:
    """Python runs a signal handler only between bytecodes: while a handler is installed, SIGTERM
    waits for a long native call (a kernel on Oclgrind, a driver wait) to return. So the handlers
    are in place only while staged files exist; otherwise the signal kills at once, as usual."""
    if on == _CLEANUP["installed"] or not _CLEANUP["wanted"]:
        return
    for signum in (signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(ValueError, OSError):  # not the main thread, or no such signal
            current = signal.getsignal(signum)
            if on and current in (signal.SIG_DFL, None):
                signal.signal(signum, _handler)
            elif not on and current is _handler:
                signal.signal(signum, signal.SIG_DFL)
    _CLEANUP["installed"] = on


def _staging_changed() -> None:
    _arm_handlers(any(outputs._staged for outputs in list(_LIVE)))


def install_signal_cleanup() -> None:
    """On SIGTERM or SIGHUP while files are staged, remove them, then die of the signal as before."""
    _CLEANUP["wanted"] = True
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
    with contextlib.suppress(OSError):
        if os.statvfs(probe).f_flag & os.ST_RDONLY:
            raise FileSystemError(f"{folder}: cannot write outputs there: read-only file system")
    if str(folder.resolve()).startswith("/proc/") or str(folder.resolve()).startswith("/sys/"):
        raise FileSystemError(f"{folder}: cannot write outputs there: a kernel file system")


__all__ = ["OutputSet", "atomic_open", "check_replaceable", "discard_all", "escapes", "install_signal_cleanup",
           "save_npy", "sweep_stale", "usable_output_folder", "write_bytes", "write_npy", "write_text"]
