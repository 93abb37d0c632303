"""Where kernellab keeps what it caches, from the environment alone: read before the settings
(:mod:`kernellab.config`) exist, by the start-up's class-code cache (``classcode``), whose hook
must be in place before the settings' own classes are built."""
from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

#: the words of a yes/no variable (``KERNELLAB_NO_CACHE=1``)
TRUE_WORDS, FALSE_WORDS = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")


def cache_dir(env: Mapping[str, str] = os.environ) -> Path:
    """``KERNELLAB_CACHE_DIR``, else ``$XDG_CACHE_HOME/kernellab`` (``~/.cache/kernellab``)."""
    if env.get("KERNELLAB_CACHE_DIR"):
        return Path(env["KERNELLAB_CACHE_DIR"])
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kernellab"


def cache_off(env: Mapping[str, str] = os.environ) -> bool:
    """``KERNELLAB_NO_CACHE`` says yes (a value that is neither yes nor no: the default, on)."""
    return env.get("KERNELLAB_NO_CACHE", "").strip().lower() in TRUE_WORDS
