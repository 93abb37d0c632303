"""Writing the files of :mod:`kernellab.classcode`: imported only by a run that has new code to
keep (a run that finds all its code kept writes nothing and loads none of this: start-up)."""
from __future__ import annotations

import marshal
import os
import sys
from importlib._bootstrap_external import MAGIC_NUMBER, SourceFileLoader
from pathlib import Path
from types import CodeType

TYPE_CHECKING = False
if TYPE_CHECKING:  # the caches are classcode's, which imports this module: typed loosely here
    from typing import Any


def write_replacing(file: Path, data: bytes) -> bool:
    """``data`` into ``file`` through a temporary file renamed over it (a reader never sees half a
    file), private to the user, in a folder of the user's own that no one else may write (made so
    when absent; one that is a symlink or that others may write is left alone: code read from it
    would never be run, :func:`kernellab.cachedir.read_private`). False when it cannot be written
    (a cache only costs time)."""
    from kernellab.cachedir import private_folder

    try:
        file.parent.parent.mkdir(parents=True, exist_ok=True)
        file.parent.mkdir(exist_ok=True, mode=0o700)
    except OSError:
        return False
    dir_fd = private_folder(file.parent)
    if dir_fd is None:
        return False
    # the temporary file is made, written and renamed in the folder that was checked, by its descriptor
    tmp = f".{file.name}.{os.getpid()}.{os.urandom(6).hex()}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        try:
            fd = os.open(tmp, flags, 0o600, dir_fd=dir_fd)
        except OSError:
            return False
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, file.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            return True
        except (OSError, ValueError):
            try:
                os.unlink(tmp, dir_fd=dir_fd)
            except OSError:
                pass
            return False
    finally:
        os.close(dir_fd)


def save_codes(cache: Any, max_entries: int, regrouped: str) -> None:
    """The body of :meth:`CodeCache.save` once it has something to write: what this process used
    into ``cache.file`` as code objects, every other entry into ``cache.cold_file`` as bytes."""
    cache.load_cold()  # its entries are written again (or dropped over the bound)
    keys = (cache.blobs.keys() | cache.codes.keys()) - {regrouped}
    if len(keys) > max_entries:  # keep what this process used
        keys = cache.used
    hot: dict[str, bytes | CodeType] = {}
    cold: dict[str, bytes] = {}
    for key in keys:
        code = cache.codes.get(key)
        if key not in cache.used:
            cold[key] = marshal.dumps(code) if code is not None else cache.blobs[key]
            continue
        if code is None:
            code = cache._kept(key)
        hot[key] = code if code is not None else cache.blobs[key]
    if not cache.added:
        hot[regrouped] = b""
    # the second file first: a reader of the new first file finds the entries it left out (files
    # from two writers only cost a compile: an entry is code of its own key, whoever wrote it)
    if cold:
        written = write_replacing(cache.cold_file, marshal.dumps(cold))
    else:
        written = True
        try:
            os.unlink(cache.cold_file)  # a link put there goes, never what it names
        except OSError:
            pass
    if written and write_replacing(cache.file, marshal.dumps(hot)):
        cache.added = 0


def save_modules(finder: Any, module_format: str, max_bytes: int, regroup: bool = False) -> None:
    """The body of :meth:`ModuleCode.save` once modules were declined (or the shared group holds
    modules this run did not import: ``regroup``) and bytecode may be written: the code of the
    modules this run imported as one marshalled tuple, every other module's as its own bytes."""
    fresh = {}
    for name, (where, stamp) in finder.declined.items():
        found = _module_entry(name, where, stamp)
        kept = finder.entries.get(name)
        if found is not None and (kept is None or kept[0] != found[0]):
            fresh[name] = found
    if not fresh and not regroup:
        return  # nothing keepable changed: no write on every run for a module never kept
    codes: dict[str, tuple[Any, CodeType | bytes | memoryview]] = {}
    for name, kept in finder.entries.items():
        if not _well_formed(kept):
            continue  # a damaged index: dropped here, not a traceback at every exit
        entry, start, end = kept
        if name in finder.declined or finder.folders.get(entry[0], entry[3]) != entry[3]:
            continue  # imported anew, or known stale
        kept_code = _kept_code(finder, start, end)
        if kept_code is not None:
            codes[name] = (entry, kept_code)
    codes.update(fresh)
    hot: dict[str, tuple[Any, CodeType]] = {}
    cold: dict[str, tuple[Any, bytes | memoryview]] = {}
    for name, (entry, code) in codes.items():
        if name in sys.modules:  # imported this run
            loaded = _code_object(code)
            if loaded is not None:
                hot[name] = (entry, loaded)
        else:
            cold[name] = (entry, marshal.dumps(code) if isinstance(code, CodeType) else code)
    shared = marshal.dumps(tuple(code for _, code in hot.values())) if hot else b""
    if len(shared) + sum(len(blob) for _, blob in cold.values()) > max_bytes:
        cold = {}  # only the modules of this run
    index = {name: (entry, -1, place) for place, (name, (entry, _)) in enumerate(hot.items())}
    start = 0
    for name, (entry, blob) in cold.items():
        index[name] = (entry, start, start + len(blob))
        start += len(blob)
    head = marshal.dumps((module_format, sys.pycache_prefix, index, len(shared), not fresh))
    if write_replacing(finder.file, b"".join([len(head).to_bytes(8, "little"), head, shared,
                                              *(c for _, c in cold.values())])):
        finder.declined.clear()


def _code_object(code: CodeType | bytes | memoryview) -> CodeType | None:
    """``code`` as a code object; None for bytes that hold none (a module imported before the
    finder was in place never had its kept bytes read: they may be damaged)."""
    if isinstance(code, CodeType):
        return code
    from kernellab.cachedir import code_in

    return code_in(code)


def _well_formed(kept: tuple[Any, ...]) -> bool:
    """Whether an index entry has the shape :data:`kernellab.classcode.ModuleEntry` and two
    offsets (the file's start checks only that it is a triple: the rest costs every start, and
    a module that is not imported never needs it)."""
    entry, start, end = kept
    return (type(entry) is tuple and len(entry) == 7 and type(entry[0]) is str and type(entry[3]) is int
            and type(start) is int and type(end) is int)


def _kept_code(finder: Any, start: int, end: int) -> CodeType | memoryview | None:
    """A kept module's code: its object from the shared group, or its bytes; None for an entry
    that names no code object in the group."""
    if start != -1:
        return finder.codes[start:end]  # type: ignore[no-any-return]
    code = finder.shared[end] if 0 <= end < len(finder.shared) else None
    return code if isinstance(code, CodeType) else None


def _module_entry(name: str, where: str, where_stamp: int) -> tuple[tuple[Any, ...], bytes] | None:
    """The entry and code of module ``name`` as imported this run, if the standard source loader
    imported it from ``where`` and a timestamp ``.pyc`` holds its code; None for anything else
    (a module a test or a user put in its place, a namespace package, an extension, a hash-based
    ``.pyc``, no ``.pyc``). The source's stamp is the one in the ``.pyc``'s header, that of its code."""
    module = sys.modules.get(name)
    spec = getattr(module, "__spec__", None)
    if where_stamp < 0 or type(getattr(spec, "loader", None)) is not SourceFileLoader:
        return None
    leaf = name.rpartition(".")[2]
    is_package = spec.submodule_search_locations is not None  # type: ignore[union-attr]
    file = os.path.join(where, leaf, "__init__.py") if is_package else os.path.join(where, leaf + ".py")
    if spec.origin != file or getattr(module, "__file__", None) != file:  # type: ignore[union-attr]
        return None
    if is_package and list(spec.submodule_search_locations) != [os.path.dirname(file)]:  # type: ignore[union-attr]
        return None
    cached = spec.cached  # type: ignore[union-attr]
    try:
        with open(cached, "rb") as fh:
            data = fh.read()
        st = os.stat(file)
    except (OSError, TypeError):
        return None
    # PEP 552: flags 0 is a timestamp .pyc; a hash-based one is checked by the source's hash
    if len(data) < 16 or data[:4] != MAGIC_NUMBER or data[4:8] != bytes(4):
        return None
    mtime, size = int.from_bytes(data[8:12], "little"), int.from_bytes(data[12:16], "little")
    if (int(st.st_mtime) & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF) != (mtime, size):
        return None  # the source changed since: it would only be declined
    code = data[16:]
    from kernellab.cachedir import code_in

    if code_in(code) is None:
        return None
    return (where, file, is_package, where_stamp, mtime, size, cached), code
