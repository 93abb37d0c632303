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


#: the time limit of one external tool run: clspv runs for minutes on large kernels but never
#: finishes on a few (issue: GPUVerify's globalarray/fail), and a workload must not hang kernellab
DEFAULT_TOOL_TIMEOUT = 300.0


def parse_tool_timeout(text: str, name: str = "--tool-timeout") -> float | None:
    """Seconds from the environment or the command line: a positive number, or 0 for no limit."""
    from kernellab.errors import UsageError
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    if not seconds >= 0 or seconds == float("inf"):
        raise UsageError(f"{name}: expected a number of seconds (0 for no limit), got {text!r}")
    return seconds or None


def _environ_tool_timeout(text: str) -> float | None:
    """KERNELLAB_TOOL_TIMEOUT; a bad value is warned about, not raised: settings are read before
    the command line is, where an error would end in a traceback."""
    from kernellab.errors import UsageError
    if not text.strip():
        return DEFAULT_TOOL_TIMEOUT
    try:
        return parse_tool_timeout(text, "KERNELLAB_TOOL_TIMEOUT")
    except UsageError as exc:
        import logging
        logging.getLogger("kernellab.config").warning("%s; using %g s", exc, DEFAULT_TOOL_TIMEOUT)
        return DEFAULT_TOOL_TIMEOUT


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
    #: seconds an external tool (compiler, validator, disassembler) may run before it is killed;
    #: None for no limit (KERNELLAB_TOOL_TIMEOUT=0, or ``--tool-timeout 0``)
    tool_timeout: float | None = DEFAULT_TOOL_TIMEOUT
    #: folders outside a workload's own that its kernels may ``#include`` from and its include
    #: folders may lie in (``--allow-outside PATH`` on a command; KERNELLAB_ALLOW_OUTSIDE, as
    #: os.pathsep-separated folders, for the workers a command starts)
    allow_outside: tuple[Path, ...] = ()

    @classmethod
    def from_environ(cls) -> Config:
        env = os.environ
        return cls(
            cache_dir=Path(env["KERNELLAB_CACHE_DIR"]) if env.get("KERNELLAB_CACHE_DIR") else _default_cache_dir(),
            tool_path=tuple(p for p in env.get("KERNELLAB_TOOL_PATH", "").split(os.pathsep) if p),
            log_level=env.get("KERNELLAB_LOG_LEVEL", "WARNING").upper(),
            vulkan_validation=env.get("KERNELLAB_VULKAN_VALIDATION", "") not in ("", "0"),
            compile_cache=env.get("KERNELLAB_NO_CACHE", "") in ("", "0"),
            tool_timeout=_environ_tool_timeout(env.get("KERNELLAB_TOOL_TIMEOUT", "")),
            allow_outside=tuple(Path(p) for p in env.get("KERNELLAB_ALLOW_OUTSIDE", "").split(os.pathsep) if p),
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
