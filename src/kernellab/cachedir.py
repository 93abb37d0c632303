"""Where kernellab keeps what it caches, from the environment alone: read before the settings
(:mod:`kernellab.config`) exist, by the start-up's class-code cache (``classcode``), whose hook
must be in place before the settings' own classes are built; and how a file of it is read when
its content is run (:func:`read_private`)."""
from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from types import CodeType

#: the words of a yes/no variable (``KERNELLAB_NO_CACHE=1``)
TRUE_WORDS, FALSE_WORDS = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")

#: opening a cache file or folder: never waiting on a FIFO, never following a symlink put in its place
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | _NO_FOLLOW
_FOLDER_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NO_FOLLOW
_S_IFMT, _S_IFREG, _S_IFDIR = 0o170000, 0o100000, 0o040000


def cache_dir(env: Mapping[str, str] = os.environ) -> Path:
    """``KERNELLAB_CACHE_DIR``, else ``$XDG_CACHE_HOME/kernellab`` (``~/.cache/kernellab``). A
    relative ``XDG_CACHE_HOME`` is ignored, as the XDG specification asks: it would put the cache
    in whatever folder kernellab is started from (a downloaded workload's, say)."""
    if env.get("KERNELLAB_CACHE_DIR"):
        return Path(env["KERNELLAB_CACHE_DIR"])
    base = env.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(env.get("HOME") or os.path.expanduser("~"), ".cache")
    return Path(base) / "kernellab"


def cache_off(env: Mapping[str, str] = os.environ) -> bool:
    """``KERNELLAB_NO_CACHE`` says yes (a value that is neither yes nor no: the default, on)."""
    return env.get("KERNELLAB_NO_CACHE", "").strip().lower() in TRUE_WORDS


def _own(st: os.stat_result, kind: int) -> bool:
    """Of ``kind``, the user's own, and writable by no one else (POSIX; elsewhere the mode alone)."""
    getuid = getattr(os, "getuid", None)
    return ((st.st_mode & _S_IFMT) == kind and not st.st_mode & 0o022
            and (getuid is None or st.st_uid == getuid()))


def private_folder(folder: str | os.PathLike[str]) -> int | None:
    """A descriptor of ``folder`` when it is a folder (not a symlink to one) of the user's own
    that no one else may write, so that no one else can put, rename or swap a file in it; else
    None. The caller closes it."""
    try:
        fd = os.open(folder, _FOLDER_FLAGS)
    except OSError:
        return None
    try:
        if _own(os.fstat(fd), _S_IFDIR):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def read_private(file: str | os.PathLike[str], limit: int) -> bytes | None:
    """The bytes of the cache file ``file`` when code may be run from it: a regular file (not a
    symlink, FIFO or device: nothing waits or reads without end) of at most ``limit`` bytes, the
    user's own and writable by no one else, in a folder of the same kind. None when it is absent,
    unreadable or not."""
    head, name = os.path.split(os.fspath(file))
    dir_fd = private_folder(head or ".")
    if dir_fd is None:
        return None
    try:
        return read_cache_file(name, limit, dir_fd=dir_fd, others_may_write=False)
    except OSError:
        return None
    finally:
        os.close(dir_fd)


def code_in(blob: bytes | memoryview) -> CodeType | None:
    """The code object marshalled in ``blob`` (kept code read by :func:`read_private`); None for
    bytes that hold none: damaged, of another layout, or a count too large to allocate."""
    import marshal

    try:
        code = marshal.loads(blob)
    except (EOFError, ValueError, TypeError, MemoryError):
        return None
    return code if isinstance(code, CodeType) else None


def read_cache_file(file: str | os.PathLike[str], limit: int, *, dir_fd: int | None = None,
                    others_may_write: bool = True, refresh: float | None = None) -> bytes:
    """The bytes of a file of the cache folder, read only when it is a regular file (opened
    without waiting or following a symlink: never a FIFO, ``/dev/zero`` or a file elsewhere) of
    the user's own, writable by anyone only where ``others_may_write`` (the group, that is: the
    world never), of at most ``limit`` bytes. OSError saying why otherwise (FileNotFoundError
    when it is absent). With ``refresh``, a file whose mtime is more than that many seconds
    old gets the present time as its mtime (the cache's trim removes the least recently used)."""
    fd = os.open(file, _FILE_FLAGS, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if (st.st_mode & _S_IFMT) != _S_IFREG:
            raise OSError(0, "not a regular file")
        getuid = getattr(os, "getuid", None)
        if (getuid is not None and st.st_uid != getuid()) or st.st_mode & (0o002 if others_may_write else 0o022):
            raise OSError(0, "another user's file, or one others may write")
        if st.st_size > limit:
            raise OSError(0, f"larger than {limit} bytes")
        # one read, one byte past the size: a regular file's short read is its end (no second
        # read to find it), and a file that grew is refused; one cut short is damaged, as a
        # truncated file is, and each reader takes it for none
        data = os.read(fd, st.st_size + 1)
        if len(data) > st.st_size:
            raise OSError(0, "it grew while it was read")
        if refresh is not None and st.st_mtime < time.time() - refresh and os.utime in os.supports_fd:
            try:
                os.utime(fd)
            except OSError:
                pass  # a read-only cache: its entries age, as a cache of another's does
        return data
    finally:
        os.close(fd)
