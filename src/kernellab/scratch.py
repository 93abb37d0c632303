"""The process's private temporary folders: where a command puts what it would otherwise keep in
the cache folder (an AmberScript file's scenarios) when there is none (``KERNELLAB_NO_CACHE=1``,
``--no-cache``), so that nothing is written there. Every folder lies under one root of the
process, made by :mod:`tempfile` (mode 0700: no one else can read, put or swap a file in it) and
removed, with all it holds, when the command ends (:func:`remove`: the CLI's end, its error paths
included; else at the interpreter's exit). A suite's worker takes a root of its own inside its parent's (:func:`adopt`), removed
when it exits; one the suite's timeout killed is removed with the parent's root.

A process killed before it could remove its root (SIGTERM from ``timeout`` or a CI runner: its
handlers are armed only while outputs are staged, so that the signal never waits for a long
driver call; SIGKILL; a crash) leaves it: the next process that makes a root removes every root
of the temporary folder that no live process holds. Each process holds an ``flock`` on its root
for its life, released by the kernel however it ends (a PID would be reused, and another PID
namespace sharing the folder would read as dead)."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

#: the process's root, made on first use; one element or none (a list: no class built at start-up)
_ROOT: list[Path] = []
#: descriptors of the roots this process holds locked (its own, and its parent's in a forked worker)
_HELD: list[int] = []
#: every root's name starts so (and nothing else kernellab makes in the temporary folder does)
PREFIX = "kernellab-scratch-"
#: a root younger than this (seconds) is never taken for a left one: its maker may not have locked it yet
LEFT_MIN_AGE = 60.0


def root() -> Path:
    """The process's root folder, made now if there is none yet (and the roots that killed
    processes left in the temporary folder removed)."""
    if not _ROOT:
        import atexit

        made = tempfile.mkdtemp(prefix=PREFIX)
        fd = _locked(made, wait=True)
        if fd is not None:
            _HELD.append(fd)
        _ROOT.append(Path(made))
        # kernellab used as a library (a Session, the pytest plugin) has no command to end
        atexit.register(remove)
        remove_left(os.path.dirname(made) or ".")
    return _ROOT[0]


def _locked(path: str, *, wait: bool) -> int | None:
    """A descriptor of the folder ``path`` (never through a symlink) holding its ``flock``; None
    when it cannot be opened or, without ``wait``, another process holds it."""
    import fcntl

    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def remove_left(parent: str) -> None:
    """Remove the roots in ``parent`` that their processes left (none holds its lock): only
    folders, not symlinks, of this user's, named as :data:`PREFIX` names them, older than
    :data:`LEFT_MIN_AGE`."""
    import stat
    import time

    try:
        with os.scandir(parent) as entries:
            found = [(e.path, e.stat(follow_symlinks=False)) for e in entries if e.name.startswith(PREFIX)]
    except OSError:
        return
    now = time.time()
    for path, st in found:
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or now - st.st_mtime < LEFT_MIN_AGE:
            continue
        fd = _locked(path, wait=False)
        if fd is None:
            continue  # a live process's, or not a folder we can open
        try:
            if _same(fd, st):
                shutil.rmtree(path, ignore_errors=True)
        finally:
            os.close(fd)


def _same(fd: int, st: os.stat_result) -> bool:
    try:
        now = os.fstat(fd)
    except OSError:
        return False
    return (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino)


def made() -> tuple[Path, ...]:
    """The process's root, when it has one (nothing is made here)."""
    return tuple(_ROOT)


def folder(prefix: str) -> Path:
    """A new private folder under the process's root."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir=root()))


def adopt(parent: str | None) -> None:
    """A worker process: its root a new folder inside ``parent`` (its parent process's root, which
    the parent removes whatever becomes of the worker); a root of its own where ``parent`` is None
    or cannot hold one (a worker on another machine). A root this process inherited (a fork) is
    its parent's, left to it."""
    _ROOT.clear()
    if parent is None:
        return
    from kernellab.cachedir import private_folder

    # the parent's root is the user's own, 0700; a folder of that name on another machine (a Ray
    # worker's) may be anyone's, who could swap the worker's folder for a link: a root of its own
    fd = private_folder(parent)
    if fd is None:
        return
    os.close(fd)
    try:
        _ROOT.append(Path(tempfile.mkdtemp(prefix="worker-", dir=parent)))
    except OSError:
        pass


def remove() -> None:
    """Remove the process's root and everything in it (nothing when none was made)."""
    while _ROOT:
        shutil.rmtree(_ROOT.pop(), ignore_errors=True)
    while _HELD:
        os.close(_HELD.pop())
