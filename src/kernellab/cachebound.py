"""The size bound of the cache folder's growing parts: the compiled artifacts
(``artifacts/<2 hex>/<key>.<ext>``) and the AmberScript folders (``amber/<20 hex>/``).

Only a write counts: :func:`added` appends one byte per 4 KiB block written to the ledger file
``cache-usage`` (``O_APPEND``: processes writing at once each add their own), so its size is the
blocks written since the last trim. A run that only reads never opens it (start-up, issue 23).
When the ledger passes the bound, one process (a ``flock`` on the ledger) lists both parts and
removes the least recently used entries (by mtime: a cache hit refreshes an entry's mtime once a
day, ``cachedir.read_cache_file``) until the total is under 80 % of the bound, then sets the
ledger to that total. Only names kernellab writes are removed; no symlink is followed; an
AmberScript folder changed within the hour (a run may be reading it) is kept; a removed artifact
is a miss for a reader. A failure is one warning: a cache is only a cache.
"""
from __future__ import annotations

import errno
import os
import time
from collections.abc import Iterator

from kernellab import logs

#: the unit counted: a file takes whole blocks of the file system
BLOCK = 4096
#: the ledger's name in the cache folder
LEDGER = "cache-usage"
#: a trim goes down to this share of the bound, so the next one is a bound's fifth of writes away
KEEP = 0.8
#: an AmberScript folder changed more recently than this (seconds) may be in use by a run
AMBER_MIN_AGE = 3600.0

_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_FOLDER = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NO_FOLLOW
# O_NONBLOCK: a FIFO put in the ledger's place is refused at once, never waited on
_LEDGER = os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK | _NO_FOLLOW
_HEX = frozenset("0123456789abcdef")

log = logs.getLogger("kernellab.cache")
_warned = False


def blocks(size: int) -> int:
    """The blocks a file of ``size`` bytes takes (a folder or an empty file: one)."""
    return max(1, -(-size // BLOCK))


def added(root: str | os.PathLike[str], size: int, bound: int | None) -> None:
    """Count ``size`` bytes just written into the cache folder ``root`` and trim it when the
    count passes ``bound`` (None: no bound). Never raises: a failure is one warning per process."""
    if bound is None:
        return
    try:
        _count(os.fspath(root), blocks(size), bound)
    except OSError as exc:
        global _warned
        if not _warned:
            _warned = True
            log.warning("cache: cannot keep %s under its bound (%s: %s); going on", root,
                        getattr(exc, "filename", None) or LEDGER, exc.strerror or type(exc).__name__)


def _count(root: str, count: int, bound: int) -> None:
    ledger = os.path.join(root, LEDGER)
    fd, new = _open_ledger(ledger)
    try:
        os.write(fd, bytes(count))
        if not new and os.fstat(fd).st_size * BLOCK <= bound:
            return
        if not _lock(fd):
            return  # another process is trimming
        before = os.fstat(fd).st_size
        total = trim(root, bound)
        # what others appended while the folders were listed still counts; never above the
        # target, so a cache that cannot get under it (young folders) is not listed on every write
        os.ftruncate(fd, min(total, int(bound * KEEP)) // BLOCK + os.fstat(fd).st_size - before)
    finally:
        os.close(fd)


def _open_ledger(ledger: str) -> tuple[int, bool]:
    """The ledger opened to append, and whether it was made now (then the folder is listed once).
    What is not the cache's own ledger in its place (a symlink, a FIFO, a file with another link
    or of another user: truncating it would cut a file outside the cache) is removed, never
    written, and a new ledger made: a planted name neither reaches a file nor turns the bound off."""
    try:
        fd = os.open(ledger, _LEDGER)
    except FileNotFoundError:
        fd = -1
    except OSError as exc:
        if exc.errno == errno.EISDIR:
            os.rmdir(ledger)  # an empty folder only: one holding anything is not kernellab's to remove
        elif exc.errno in (errno.ELOOP, errno.ENXIO, errno.EACCES):  # a symlink, a FIFO, another's
            _unlink(ledger)
        else:
            raise
        fd = -1
    if fd >= 0:
        try:
            if _own_ledger(os.fstat(fd)):
                return fd, False
        except OSError:
            os.close(fd)
            raise
        os.close(fd)
        _unlink(ledger)  # the name only: what it links to keeps its bytes
    try:  # a cache older than the bound (or a new one): list it once now
        return os.open(ledger, _LEDGER | os.O_CREAT | os.O_EXCL, 0o600), True
    except FileExistsError:  # another process made it meanwhile
        fd = os.open(ledger, _LEDGER)
        if not _own_ledger(os.fstat(fd)):
            os.close(fd)
            raise OSError(0, "not a ledger kernellab made", ledger) from None
        return fd, False


def _unlink(name: str) -> None:
    try:
        os.unlink(name)
    except FileNotFoundError:
        pass  # another process replaced it first


def _own_ledger(st: os.stat_result) -> bool:
    getuid = getattr(os, "getuid", None)
    return (st.st_mode & 0o170000) == 0o100000 and st.st_nlink == 1 and (getuid is None or st.st_uid == getuid())


def _lock(fd: int) -> bool:
    try:
        import fcntl
    except ImportError:  # no flock (Windows): two trims at once each remove what is still there
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def _is_hex(text: str) -> bool:
    return bool(text) and set(text) <= _HEX


def _is_artifact(folder: str, name: str) -> bool:
    """``<key>.<ext>`` in the folder of the key's first two digits (``compile.cache``)."""
    key, dot, ext = name.partition(".")
    return bool(dot and ext) and len(key) >= 16 and key.startswith(folder) and _is_hex(key) \
        and ext.replace(".", "").replace("_", "").isalnum()


def _scandir(fd: int) -> Iterator[os.DirEntry[str]]:
    with os.scandir(fd) as it:
        yield from it


def _open_folder(name: str, dir_fd: int) -> int | None:
    """A descriptor of the folder ``name`` in ``dir_fd``; None when it is absent or not a
    folder (a symlink in its place is not followed)."""
    try:
        return os.open(name, _FOLDER, dir_fd=dir_fd)
    except OSError:
        return None


#: an entry: (mtime, blocks, the part, its folder in the part or "", its name)
_Entry = tuple[float, int, str, str, str]


def _artifacts(fd: int) -> Iterator[_Entry]:
    for sub in _scandir(fd):
        if len(sub.name) != 2 or not _is_hex(sub.name) or not sub.is_dir(follow_symlinks=False):
            continue
        sub_fd = _open_folder(sub.name, fd)
        if sub_fd is None:
            continue
        try:
            for e in _scandir(sub_fd):
                if _is_artifact(sub.name, e.name) and e.is_file(follow_symlinks=False):
                    try:
                        st = e.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue  # removed by another process
                    yield st.st_mtime, blocks(st.st_size), "artifacts", sub.name, e.name
        finally:
            os.close(sub_fd)


def _amber_folder(fd: int) -> tuple[float, int]:
    """The latest mtime of the folder and its files, and the blocks they take."""
    st = os.fstat(fd)
    latest, used = st.st_mtime, 1
    for e in _scandir(fd):
        if e.is_file(follow_symlinks=False):
            try:
                st = e.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            latest, used = max(latest, st.st_mtime), used + blocks(st.st_size)
    return latest, used


def _is_tomb(name: str) -> bool:
    """A folder a trim renamed before removing its files (``.<digest>.trim-<pid>``)."""
    digest, _, pid = name[1:].partition(".trim-")
    return name.startswith(".") and len(digest) == 20 and _is_hex(digest) and pid.isdigit()


def _ambers(fd: int) -> Iterator[_Entry]:
    for e in _scandir(fd):
        tomb = _is_tomb(e.name)
        if not (tomb or len(e.name) == 20 and _is_hex(e.name)) or not e.is_dir(follow_symlinks=False):
            continue
        sub_fd = _open_folder(e.name, fd)
        if sub_fd is None:
            continue
        try:
            latest, used = _amber_folder(sub_fd)
        finally:
            os.close(sub_fd)
        # a tomb is a trim that ended early: first to go, whatever its age
        yield (0.0 if tomb else latest), used, "amber", "", e.name


def added_folder(root: str | os.PathLike[str], folder: str | os.PathLike[str], bound: int | None) -> None:
    """Count the files of ``folder`` (an AmberScript folder just written) as :func:`added` does."""
    if bound is None:
        return
    try:
        fd = os.open(folder, _FOLDER)
    except OSError:
        return  # not a folder of the cache's: nothing to count
    try:
        used = _amber_folder(fd)[1]
    except OSError:
        return
    finally:
        os.close(fd)
    added(root, used * BLOCK, bound)


def trim(root: str | os.PathLike[str], bound: int, now: float | None = None) -> int:
    """Remove the least recently used entries of ``root`` until its growing parts take at most
    ``KEEP`` of ``bound`` bytes, when they take more than ``bound``; the bytes they take after."""
    now = time.time() if now is None else now
    root_fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    parts: dict[str, int] = {}
    try:
        entries: list[_Entry] = []
        for part, listing in (("artifacts", _artifacts), ("amber", _ambers)):
            part_fd = _open_folder(part, root_fd)
            if part_fd is not None:
                parts[part] = part_fd
                entries += listing(part_fd)
        total = sum(e[1] for e in entries) * BLOCK
        if total <= bound:
            return total
        target = bound * KEEP
        for mtime, used, part, sub, name in sorted(entries):
            if total <= target:
                break
            if part == "amber" and mtime > now - AMBER_MIN_AGE:
                continue
            if _remove(parts[part], part, sub, name, now):
                total -= used * BLOCK
        return total
    finally:
        for fd in parts.values():
            os.close(fd)
        os.close(root_fd)


def _remove(part_fd: int, part: str, sub: str, name: str, now: float) -> bool:
    """Remove one entry; False when it is gone already or was used meanwhile."""
    if part == "artifacts":
        sub_fd = _open_folder(sub, part_fd)
        if sub_fd is None:
            return False
        try:
            os.unlink(name, dir_fd=sub_fd)
        except FileNotFoundError:
            return False
        finally:
            os.close(sub_fd)
        return True
    tomb = name if _is_tomb(name) else f".{name}.trim-{os.getpid()}"
    if tomb != name:
        fd = _open_folder(name, part_fd)
        if fd is None:
            return False
        try:  # a run that wrote into it since it was listed keeps it
            if _amber_folder(fd)[0] > now - AMBER_MIN_AGE:
                return False
        finally:
            os.close(fd)
        try:  # out of its name at once: a run looking for it now writes it anew
            os.rename(name, tomb, src_dir_fd=part_fd, dst_dir_fd=part_fd)
        except FileNotFoundError:
            return False
    fd = _open_folder(tomb, part_fd)
    if fd is None:
        return False
    try:
        for e in _scandir(fd):
            if e.is_file(follow_symlinks=False):
                try:
                    os.unlink(e.name, dir_fd=fd)
                except FileNotFoundError:
                    pass
    finally:
        os.close(fd)
    try:
        os.rmdir(tomb, dir_fd=part_fd)
    except OSError:
        pass  # something not ours is in it (a symlink, a folder): left in place
    return True
