"""Whether a path written in a file can name a file on this system at all.

A file is data: its paths may hold a NUL, lone surrogates or names longer than the file system
takes. Each reader asks here first and reports a problem at the path's JSON pointer, instead of
letting the operating system's error (ValueError, UnicodeEncodeError, ENAMETOOLONG) escape.
"""
from __future__ import annotations

import os

#: Linux's limits: PATH_MAX counts the terminating NUL, NAME_MAX is per component
PATH_MAX = 4095
NAME_MAX = 255


def path_problem(value: str) -> str | None:
    """Why ``value`` cannot name a file here, or None when it can."""
    if "\x00" in value:
        return f"{_shown(value)} is not a usable file name: it holds a NUL character"
    try:
        encoded = os.fsencode(value)
    except UnicodeError:
        return f"{_shown(value)} is not a usable file name: it holds lone surrogates (not valid UTF-8)"
    if len(encoded) > PATH_MAX:
        return (f"{_shown(value)} is not a usable file name: {len(encoded)} bytes, more than the system "
                f"allows ({PATH_MAX})")
    if any(len(part) > NAME_MAX for part in encoded.split(b"/")):
        return f"{_shown(value)} is not a usable file name: a part longer than {NAME_MAX} bytes"
    return None


def _shown(value: str) -> str:
    text = value if len(value) <= 60 else value[:57] + "..."
    return repr(text.encode("utf-8", "backslashreplace").decode("utf-8"))
