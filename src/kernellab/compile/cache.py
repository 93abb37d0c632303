"""Caches: a content-addressed store of compiled artifacts, and Arm's pipeline-cache file.

Artifact keys are hashes of everything an artifact depends on (input, options, tool versions,
device), so a hit is always right; entries are written to a temp file and renamed so concurrent
runs never see half a file.

``--pipeline-caching`` keeps a VkPipelineCache blob the way Arm's runner does (its
src/pipeline_cache.cpp, src/main.cpp): one file ``<cache-path>/<scenario stem>.cache``, taken only
when its header names this device.
"""
from __future__ import annotations

import os
import struct
from collections.abc import Callable
from pathlib import Path

from kernellab import config, logs
from kernellab.errors import FileSystemError, KernellabError
from kernellab.outputs import write_bytes
from kernellab.records import dataclass

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

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)
        self._warned = False

    def _path(self, key: str, ext: str) -> Path:
        return self.root / "artifacts" / key[:2] / f"{key}.{ext}"

    def _warn(self, what: str, path: Path, reason: str) -> None:
        if not self._warned:  # one line per run, not one per kernel
            self._warned = True
            log.warning("compile cache: cannot %s %s (%s); going on without it", what, path, reason)

    def get(self, key: str, ext: str) -> bytes | None:
        path = self._path(key, ext)
        try:
            entry = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._warn("read", path, exc.strerror or type(exc).__name__)
            return None
        data = entry[_ENTRY_HEAD:]
        if not entry.startswith(_ENTRY_TAG) or sha256(data).digest() != entry[len(_ENTRY_TAG):_ENTRY_HEAD]:
            self._warn("use the damaged entry", path, "its checksum does not match")
            return None
        return data

    def put(self, key: str, ext: str, data: bytes) -> None:
        path = self._path(key, ext)
        try:
            write_bytes(path, _ENTRY_TAG + sha256(data).digest() + data)
        except OSError as exc:
            self._warn("write", path, exc.strerror or type(exc).__name__)
        except FileSystemError as exc:
            self._warn("write", path, str(exc).rpartition(": ")[2])


def default_cache() -> ArtifactCache | None:
    """The user's cache (``$KERNELLAB_CACHE_DIR``, default ``$XDG_CACHE_HOME/kernellab``), or
    None when caching is off (``KERNELLAB_NO_CACHE=1``, ``kernellab run --no-cache``)."""
    settings = config.get()
    return ArtifactCache(settings.cache_dir) if settings.compile_cache else None


#: sizeof(VkPipelineCacheHeaderVersionOne): headerSize, headerVersion, vendorID, deviceID, UUID[16]
PIPELINE_CACHE_HEADER = struct.Struct("<IIII16s")
PIPELINE_CACHE_HEADER_VERSION_ONE = 1

#: how a pipeline-cache step is reported: (level, message), Arm's words (scripts match on them)
Say = Callable[[str, str], None]


@dataclass(frozen=True)
class PipelineCacheFile:
    """Arm's ``--pipeline-caching`` file of one scenario."""
    path: Path

    @classmethod
    def for_scenario(cls, folder: Path, scenario_file: Path) -> PipelineCacheFile:
        # Arm: cacheDir / scenarioFile.filename().replace_extension("cache")
        return cls(Path(folder) / f"{Path(scenario_file).stem}.cache")

    def load(self, vendor_id: int, device_id: int, clear: bool, say: Say) -> bytes | None:
        """The blob to start the device's pipeline cache with, or None; ``clear`` deletes the file."""
        if clear:
            self.path.unlink(missing_ok=True)
            say("INFO", "Pipeline Cache cleared")
            return None
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return None  # not a miss: nothing was cached yet
        except OSError as exc:
            raise KernellabError(f"Failed to read the pipeline cache {self.path}: {exc.strerror}") from None
        if not data:
            say("WARNING", "Pipeline Cache skipped: size invalid")
            return None
        if not header_matches(data, vendor_id, device_id, say):
            say("WARNING", "Pipeline Cache skipped: failed to validate.")
            return None
        say("INFO", "Pipeline Cache loaded and validated.")
        return data

    def save(self, data: bytes, say: Say) -> None:
        try:
            write_bytes(self.path, data)
        except (OSError, FileSystemError) as exc:
            raise KernellabError(f"Error storing pipeline cache into: {self.path} ({exc})") from None
        say("INFO", "Pipeline Cache stored")


def header_matches(data: bytes, vendor_id: int, device_id: int, say: Say) -> bool:
    """Arm's ``isValidPipelineCache``: the header's size, version and device, each refusal said."""
    if len(data) < PIPELINE_CACHE_HEADER.size:
        return False
    size, version, vendor, device, _ = PIPELINE_CACHE_HEADER.unpack_from(data)
    if size != PIPELINE_CACHE_HEADER.size:
        say("WARNING", "Pipeline validation: Incorrect pipeline cache header size")
        return False
    if version != PIPELINE_CACHE_HEADER_VERSION_ONE:
        say("WARNING", f"Pipeline validation: Incorrect pipeline header version ({version}). "
                       f"Expected ({PIPELINE_CACHE_HEADER_VERSION_ONE})")
        return False
    if (vendor, device) != (vendor_id, device_id):
        say("WARNING", f"Pipeline validation: Incorrect device used with cache. (VendorID, DeviceID) = "
                       f"({vendor}, {device}). Expected ({vendor_id}, {device_id})")
        return False
    return True
