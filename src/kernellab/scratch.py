"""The process's private temporary folders: where a command puts what it would otherwise keep in
the cache folder (an AmberScript file's scenarios) when there is none (``KERNELLAB_NO_CACHE=1``,
``--no-cache``), so that nothing is written there. Every folder lies under one root of the
process, made by :mod:`tempfile` (mode 0700: no one else can read, put or swap a file in it) and
removed, with all it holds, when the command ends (:func:`remove`: the CLI's end, its error paths
included; else at the interpreter's exit). A suite's worker takes a root of its own inside its parent's (:func:`adopt`), removed
when it exits; one the suite's timeout killed is removed with the parent's root."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

#: the process's root, made on first use; one element or none (a list: no class built at start-up)
_ROOT: list[Path] = []


def root() -> Path:
    """The process's root folder, made now if there is none yet."""
    if not _ROOT:
        import atexit

        _ROOT.append(Path(tempfile.mkdtemp(prefix="kernellab-")))
        # kernellab used as a library (a Session, the pytest plugin) has no command to end
        atexit.register(remove)
    return _ROOT[0]


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
    if parent is not None:
        try:
            _ROOT.append(Path(tempfile.mkdtemp(prefix="worker-", dir=parent)))
        except OSError:
            pass


def remove() -> None:
    """Remove the process's root and everything in it (nothing when none was made)."""
    while _ROOT:
        shutil.rmtree(_ROOT.pop(), ignore_errors=True)
