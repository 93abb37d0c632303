"""Every environment setting kernellab reads, in one typed place.

Tests override with :func:`override`; nothing else reads ``os.environ`` for these names.
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, fields, replace
from pathlib import Path
from collections.abc import Iterator


def _default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kernellab"


@dataclass(frozen=True)
class Config:
    #: where compiled artifacts (SPIR-V, pipeline caches, stage outputs) are kept
    cache_dir: Path
    #: extra directories searched for external tools before PATH and the pip prefixes
    tool_path: tuple[str, ...]
    #: log level name for the ``kernellab`` logger
    log_level: str
    #: when set, the Vulkan backend enables the Khronos validation layer if installed
    vulkan_validation: bool
    #: whether compiled artifacts are kept in ``cache_dir`` by default (off: KERNELLAB_NO_CACHE=1
    #: or ``kernellab run --no-cache``)
    compile_cache: bool = True

    @classmethod
    def from_environ(cls) -> Config:
        env = os.environ
        return cls(
            cache_dir=Path(env["KERNELLAB_CACHE_DIR"]) if env.get("KERNELLAB_CACHE_DIR") else _default_cache_dir(),
            tool_path=tuple(p for p in env.get("KERNELLAB_TOOL_PATH", "").split(os.pathsep) if p),
            log_level=env.get("KERNELLAB_LOG_LEVEL", "WARNING").upper(),
            vulkan_validation=env.get("KERNELLAB_VULKAN_VALIDATION", "") not in ("", "0"),
            compile_cache=env.get("KERNELLAB_NO_CACHE", "") in ("", "0"),
        )


_current: Config | None = None


def get() -> Config:
    global _current
    if _current is None:
        _current = Config.from_environ()
    return _current


@contextlib.contextmanager
def override(**changes: object) -> Iterator[Config]:
    """Temporarily replace settings (for tests): ``with config.override(cache_dir=tmp): ...``."""
    global _current
    saved = get()
    names = {f.name for f in fields(Config)}
    unknown = set(changes) - names
    if unknown:
        raise TypeError(f"unknown config settings: {sorted(unknown)}")
    _current = replace(saved, **changes)  # type: ignore[arg-type]
    try:
        yield _current
    finally:
        _current = saved
