"""Every environment setting kernellab reads, in one typed place.

Tests override with :func:`override`; nothing else reads ``os.environ`` for these names.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from kernellab import logs
from kernellab.cachedir import FALSE_WORDS, TRUE_WORDS, cache_dir
from kernellab.records import Frozen

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable
    from contextlib import AbstractContextManager

    _Block = Callable[[dict[str, object]], AbstractContextManager['Config']]

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


#: the address space one external tool may map (RLIMIT_AS in its process): a kernel that makes a
#: compiler grow (a huge constant array, a macro explosion) ends that compiler, not the machine;
#: glslang, clang and clspv need far less than this for any kernel of the examples
DEFAULT_TOOL_MEMORY = 4 << 30


#: the bytes the cache folder's artifacts and AmberScript folders may take (KERNELLAB_CACHE_MAX)
DEFAULT_CACHE_MAX = 1 << 30
#: K, M, G, T as KERNELLAB_CACHE_MAX takes them (powers of 1024, as du and ccache count)
_BYTE_SUFFIXES = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_byte_size(text: str) -> int | None:
    """Bytes written like ``500M``, ``1.5G``, ``2GiB`` or ``1073741824``; None when not."""
    text = text.strip().upper()
    for unit in ("IB", "B"):
        if text.endswith(unit) and text[:-len(unit)][-1:] in _BYTE_SUFFIXES:
            text = text[:-len(unit)]
            break
    scale = _BYTE_SUFFIXES.get(text[-1:], 1)
    number = text[:-1] if scale > 1 else text
    if not number.replace(".", "", 1).isdigit() or not number.isascii():
        return None
    # a fraction of a byte counts as a byte: "0.5" is a tiny size, not 0 (which means "none")
    value = -(-float(number) * scale // 1)
    return int(value) if value < 2 ** 63 else None


#: the log levels ``KERNELLAB_LOG_LEVEL`` and ``--log-level`` take
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")
_TRUE, _FALSE = TRUE_WORDS, FALSE_WORDS


def _shown(text: str) -> str:
    """A value from the environment as a warning quotes it: escaped, at most 60 characters."""
    from kernellab.textsafe import escape_line
    return repr(escape_line(text if len(text) <= 60 else text[:60] + "..."))


class _Reader:
    """Reads ``KERNELLAB_*`` settings; a bad value is one warning line and the default is used:
    settings are read before the command line is, where an error would end in a traceback."""

    def __init__(self, env: Mapping[str, str]):
        self.env = env
        self.warnings: list[str] = []

    def bad(self, name: str, text: str, expected: str, default: object) -> None:
        self.warnings.append(f"{name}={_shown(text)} is not {expected}; using {default}")

    def tool_timeout(self, name: str = "KERNELLAB_TOOL_TIMEOUT") -> float | None:
        from kernellab.errors import UsageError
        text = self.env.get(name, "")
        if not text.strip():
            return DEFAULT_TOOL_TIMEOUT
        try:
            return parse_tool_timeout(text, name)
        except UsageError as exc:
            self.warnings.append(f"{exc}; using {DEFAULT_TOOL_TIMEOUT:g} s")
            return DEFAULT_TOOL_TIMEOUT

    def tool_memory(self, name: str = "KERNELLAB_TOOL_MEMORY") -> int | None:
        """Bytes (like 4e9), or 0 for no limit."""
        text = self.env.get(name, "").strip()
        if not text:
            return DEFAULT_TOOL_MEMORY
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if value == 0:
            return None
        if not 1 << 20 <= value < 2 ** 63:
            self.bad(name, text, "a number of bytes of at least 1 MiB (like 4e9), or 0 for no limit",
                     f"{DEFAULT_TOOL_MEMORY >> 30} GiB")
            return DEFAULT_TOOL_MEMORY
        return int(value)

    def cache_max(self, name: str = "KERNELLAB_CACHE_MAX") -> int | None:
        """Bytes (``500M``, ``2G``) of at least 1 MiB, or 0 for no bound."""
        text = self.env.get(name, "")
        if not text.strip():
            return DEFAULT_CACHE_MAX
        value = parse_byte_size(text)
        if value == 0:
            return None
        if value is None or value < 1 << 20:
            self.bad(name, text, "a size of at least 1M (like 500M or 2G: bytes with a K, M or G "
                     "suffix), or 0 for no bound", f"{DEFAULT_CACHE_MAX >> 30}G")
            return DEFAULT_CACHE_MAX
        return value

    def log_level(self, name: str = "KERNELLAB_LOG_LEVEL") -> str:
        text = self.env.get(name, "")
        if not text.strip():
            return "WARNING"
        if text.strip().lower() not in LOG_LEVELS:
            self.bad(name, text, f"a log level ({', '.join(LOG_LEVELS)})", "warning")
            return "WARNING"
        return text.strip().upper()

    def flag(self, name: str, default: bool = False) -> bool:
        text = self.env.get(name, "")
        if text.strip().lower() in _TRUE:
            return True
        if text.strip().lower() in _FALSE:
            return default if not text.strip() else False
        self.bad(name, text, "1 or 0 (true/false, yes/no, on/off)", "1" if default else "0")
        return default

    def positive_count(self, name: str) -> int | None:
        """A positive whole number, written like 4000000000 or 4e9; None when unset or bad."""
        text = self.env.get(name, "")
        if not text.strip():
            return None
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not 1 <= value < 2 ** 63:
            self.bad(name, text, "a positive number (like 4e9)", "the default")
            return None
        return int(value)


def verify_max_work() -> int | None:
    """``KERNELLAB_VERIFY_MAX_WORK``: invocation-instructions the SPIR-V checker may run per
    dispatch (None: its default). Read when a check starts, so a caller can set it between two;
    a bad value is a warning."""
    reader = _Reader(os.environ)
    value = reader.positive_count("KERNELLAB_VERIFY_MAX_WORK")
    for line in reader.warnings:
        logs.getLogger("kernellab.config").warning("%s", line)
    return value


class Config(Frozen):
    """kernellab's settings, from the environment and the command line (:func:`get`). (A frozen
    record, not a dataclass: a run imports no dataclasses, issue 23; ``replace`` makes a changed copy.)"""

    _fields = ("cache_dir", "tool_path", "log_level", "vulkan_validation", "compile_cache", "tool_timeout",
               "tool_memory", "cache_max", "warnings", "allow_outside")
    _compared = tuple(n for n in _fields if n != "warnings")  # warnings, as field(compare=False) said
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
    compile_cache: bool
    #: seconds an external tool (compiler, validator, disassembler) may run before it is killed;
    #: None for no limit (KERNELLAB_TOOL_TIMEOUT=0, or ``--tool-timeout 0``)
    tool_timeout: float | None
    #: bytes of address space an external tool may map (KERNELLAB_TOOL_MEMORY; None: no limit)
    tool_memory: int | None
    #: bytes the cache folder's compiled artifacts and AmberScript folders may take before the
    #: least recently used are removed (KERNELLAB_CACHE_MAX; None: no bound)
    cache_max: int | None
    #: one line per ``KERNELLAB_*`` variable whose value was bad (its default is used instead)
    warnings: tuple[str, ...]
    #: folders outside a workload's own that its kernels may ``#include`` from and its include
    #: folders may lie in (``--allow-outside PATH`` on a command; KERNELLAB_ALLOW_OUTSIDE, as
    #: os.pathsep-separated folders, for the workers a command starts)
    allow_outside: tuple[Path, ...]

    def __init__(self, cache_dir: Path, tool_path: tuple[str, ...], log_level: str, vulkan_validation: bool,
                 compile_cache: bool = True, tool_timeout: float | None = DEFAULT_TOOL_TIMEOUT,
                 tool_memory: int | None = DEFAULT_TOOL_MEMORY, cache_max: int | None = DEFAULT_CACHE_MAX,
                 warnings: tuple[str, ...] = (), allow_outside: tuple[Path, ...] = ()):
        vars(self).update(cache_dir=cache_dir, tool_path=tool_path, log_level=log_level,
                          vulkan_validation=vulkan_validation, compile_cache=compile_cache, tool_timeout=tool_timeout,
                          tool_memory=tool_memory, cache_max=cache_max, warnings=warnings, allow_outside=allow_outside)

    @classmethod
    def from_environ(cls) -> Config:
        env = os.environ
        read = _Reader(env)
        # each reading in the record's order (its warnings come in that order), then one record
        log_level, vulkan_validation = read.log_level(), read.flag("KERNELLAB_VULKAN_VALIDATION")
        compile_cache = not read.flag("KERNELLAB_NO_CACHE")
        tool_timeout, tool_memory = read.tool_timeout(), read.tool_memory()
        cache_max = read.cache_max()
        config = cls(
            cache_dir=cache_dir(env),
            tool_path=tuple(p for p in env.get("KERNELLAB_TOOL_PATH", "").split(os.pathsep) if p),
            log_level=log_level,
            vulkan_validation=vulkan_validation,
            compile_cache=compile_cache,
            tool_timeout=tool_timeout,
            tool_memory=tool_memory,
            cache_max=cache_max,
            warnings=tuple(read.warnings),
            allow_outside=tuple(Path(p) for p in env.get("KERNELLAB_ALLOW_OUTSIDE", "").split(os.pathsep) if p),
        )
        logging = sys.modules.get("logging")  # not loaded: nobody has set it up yet
        if logging is not None and logging.getLogger().handlers:  # set up (a library caller, a test): warn now
            report_warnings(config)
        return config


#: this process's settings, read from the environment at first use; overridden() swaps them for a block
_current: Config | None = None


def get() -> Config:
    global _current
    if _current is None:
        _current = Config.from_environ()
    return _current


#: the settings whose warnings were logged (by identity: two reads of one bad value warn twice)
_reported: list[Config] = []


def report_warnings(config: Config | None = None) -> None:
    """Log each bad setting's warning once per reading: when the settings are read if logging is
    set up by then, else when the CLI has set it up (settings are read before the command line is)."""
    config = config or get()
    if not config.warnings or any(seen is config for seen in _reported):
        return
    _reported.append(config)
    for line in config.warnings:
        logs.getLogger("kernellab.config").warning("%s", line)


def override(**changes: object) -> AbstractContextManager[Config]:
    """Temporarily replace settings (for tests): ``with config.override(cache_dir=tmp): ...``."""
    return _override_class()(changes)


_override_classes: list[_Block] = []


def _override_class() -> _Block:
    """The block of :func:`override`, a class built on first use: a plain run never overrides a
    setting, and a class costs ~0.07 M instructions to build at import (issue 23)."""
    if not _override_classes:
        class _Override:
            """The block of :func:`override` (a class: a run does without :mod:`contextlib`, issue 23)."""

            def __init__(self, changes: dict[str, object]) -> None:
                self.changes = changes
                self.saved: Config | None = None

            def __enter__(self) -> Config:
                global _current
                saved = get()
                unknown = set(self.changes) - set(Config._fields)
                if unknown:
                    raise TypeError(f"unknown config settings: {sorted(unknown)}")
                self.saved = saved
                _current = saved.replace(**self.changes)
                return _current

            def __exit__(self, *exc: object) -> None:
                global _current
                _current = self.saved

        _override_classes.append(_Override)
    return _override_classes[0]
