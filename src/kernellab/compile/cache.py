"""The content-addressed store of compiled artifacts (Arm's pipeline-cache file is
``compile/pipeline_cache.py``, loaded only with ``--pipeline-caching``).

Artifact keys are hashes of everything an artifact depends on (input, options, tool versions,
device), so a hit is always right; entries are written to a temp file and renamed so concurrent
runs never see half a file.
"""
from __future__ import annotations

import os
from pathlib import Path

from kernellab import config, logs
from kernellab.cachedir import read_cache_file
from kernellab.errors import FileSystemError
from kernellab.outputs import write_bytes

try:  # CPython's own SHA-256: hashlib would load OpenSSL (11 M instructions) for every run
    from _sha256 import sha256  # Python 3.10 and 3.11
except ImportError:
    try:
        from _sha2 import sha256  # type: ignore[import-not-found,no-redef]  # 3.12 merged the SHA-2 modules
    except ImportError:  # an interpreter without the builtin modules
        from hashlib import sha256  # type: ignore[assignment]

#: an entry's first bytes: a format tag and the SHA-256 of the data that follows, so a truncated
#: or damaged entry (a full disk, another program) is a miss, never a module handed to a driver
_ENTRY_TAG = b"KLA1"
_ENTRY_HEAD = len(_ENTRY_TAG) + 32

log = logs.getLogger("kernellab.cache")


class ArtifactCache:
    """Compiled artifacts by key. A cache is only a cache: any failure to read or write it is one
    warning (naming the path and the reason) and the run goes on without it."""

    def __init__(self, root: str | os.PathLike[str], bound: int | None = None):
        self.root = Path(root)
        #: the bytes the cache folder's growing parts may take (``cachebound``); None: no bound
        self.bound = bound
        #: the entries' folder as text: a run's lookups join and open strings, not paths (start-up, issue 23)
        self._folder = os.path.join(os.fspath(root), "artifacts")
        self._warned = False

    def _path(self, key: str, ext: str) -> Path:
        return Path(self._file(key, ext))

    def _file(self, key: str, ext: str) -> str:
        return os.path.join(self._folder, key[:2], f"{key}.{ext}")

    def _warn(self, what: str, path: Path, reason: str) -> None:
        if not self._warned:  # one line per run, not one per kernel
            self._warned = True
            log.warning("compile cache: cannot %s %s (%s); going on without it", what, path, reason)

    def get(self, key: str, ext: str) -> bytes | None:
        file = self._file(key, ext)
        try:
            # a regular file of the user's own: never a FIFO (a wait), a device or a symlink (an
            # endless read), nor a module another user put in a shared cache folder
            entry = read_cache_file(file, MAX_ENTRY_BYTES, refresh=REFRESH_AGE)
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._warn("read", Path(file), exc.strerror or type(exc).__name__)
            return None
        data = entry[_ENTRY_HEAD:]
        if not entry.startswith(_ENTRY_TAG) or sha256(data).digest() != entry[len(_ENTRY_TAG):_ENTRY_HEAD]:
            self._warn("use the damaged entry", Path(file), "its checksum does not match")
            return None
        return data

    def put(self, key: str, ext: str, data: bytes) -> None:
        path = self._path(key, ext)
        try:
            write_bytes(path, _ENTRY_TAG + sha256(data).digest() + data)
        except OSError as exc:
            self._warn("write", path, exc.strerror or type(exc).__name__)
            return
        except FileSystemError as exc:
            self._warn("write", path, str(exc).rpartition(": ")[2])
            return
        if self.bound is not None:
            from kernellab.cachebound import added  # a write only: a run of hits never loads it

            added(self.root, _ENTRY_HEAD + len(data), self.bound)


#: a hit older than this (seconds) has its mtime set to now, so the least recently used entries
#: are trimmed first (``cachebound``): one ``futimens`` per entry a day, none on most hits
REFRESH_AGE = 86400.0

#: the largest entry read (a module or a device binary is megabytes; more is not an entry of ours)
MAX_ENTRY_BYTES = 1 << 30


def default_cache() -> ArtifactCache | None:
    """The user's cache (``$KERNELLAB_CACHE_DIR``, default ``$XDG_CACHE_HOME/kernellab``), or
    None when caching is off (``KERNELLAB_NO_CACHE=1``, ``kernellab run --no-cache``)."""
    settings = config.get()
    return ArtifactCache(settings.cache_dir, settings.cache_max) if settings.compile_cache else None
