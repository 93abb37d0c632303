"""Compiled artifacts planted in a cache folder, for the size bound's tests."""
from __future__ import annotations

import os
import time
from pathlib import Path

from kernellab.cachebound import BLOCK
from kernellab.compile.cache import ArtifactCache


def key(n: int) -> str:
    return f"{n:064x}"[::-1]  # varied first digits: entries spread over the two-digit folders


def fill(cache: ArtifactCache, count: int, size: int = 3000, start: float | None = None) -> list[Path]:
    """``count`` entries of one block each, entry k last used ``count - k`` hours ago."""
    start = time.time() - count * 3600.0 if start is None else start
    paths = []
    for n in range(count):
        cache.put(key(n), "spv", bytes(size))
        path = cache._path(key(n), "spv")
        os.utime(path, (start + n * 3600.0,) * 2)
        paths.append(path)
    return paths


def used(root: Path) -> int:
    """The bytes the artifacts take, in whole blocks."""
    return sum(-(-p.stat().st_size // BLOCK) * BLOCK for p in (root / "artifacts").rglob("*.spv"))
