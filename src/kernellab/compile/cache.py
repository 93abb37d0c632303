"""A content-addressed store of compiled artifacts.

Keys are hashes of everything an artifact depends on (input, options, tool versions, device),
so a hit is always right; entries are written to a temp file and renamed so concurrent runs
never see half a file.
"""
from __future__ import annotations

import os
from pathlib import Path

from kernellab import config
from kernellab.outputs import write_bytes


class ArtifactCache:
    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)
        #: keys looked up and not found (for --fail-on-pipeline-cache-miss)
        self.misses: list[str] = []

    def _path(self, key: str, ext: str) -> Path:
        return self.root / "artifacts" / key[:2] / f"{key}.{ext}"

    def get(self, key: str, ext: str) -> bytes | None:
        try:
            return self._path(key, ext).read_bytes()
        except OSError:
            self.misses.append(f"{key}.{ext}")
            return None

    def put(self, key: str, ext: str, data: bytes) -> None:
        try:
            write_bytes(self._path(key, ext), data)
        except OSError:
            pass  # a cache that cannot be written only costs time

    def pipeline_cache_file(self, device_key: str) -> Path:
        """Where the VkPipelineCache blob for one device lives."""
        return self.root / "pipeline-cache" / f"{device_key}.bin"


def default_cache() -> ArtifactCache | None:
    """The user's cache (``$KERNELLAB_CACHE_DIR``, default ``$XDG_CACHE_HOME/kernellab``), or
    None when caching is off (``KERNELLAB_NO_CACHE=1``, ``kernellab run --no-cache``)."""
    settings = config.get()
    return ArtifactCache(settings.cache_dir) if settings.compile_cache else None
