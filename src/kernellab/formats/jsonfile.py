"""Reading JSON input files with errors that name the file and the line."""
from __future__ import annotations

import os
import stat
from pathlib import Path

from kernellab import jsontext
from kernellab.errors import InputError, Problem

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any, BinaryIO

#: what a JSON input may be: workloads are small; a larger file is a mistake or an attack
MAX_JSON_BYTES = 16 * 1024 * 1024
MAX_DEPTH = 64
MAX_INT_DIGITS = 40


def _parse_int(digits: str) -> int:
    # OverflowError carries the digits: the JSON scanner raises none of its own (a float too large
    # is inf), and a class of its own would be built on every start (~0.1 M instructions, issue 23)
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise OverflowError(digits)
    return int(digits)


def _line_of(text: str, needle: str) -> str:
    at = text.find(needle)
    return f"line {text.count(chr(10), 0, at) + 1}" if at >= 0 else ""


def _depth(value: Any) -> int:
    deepest, todo = 0, [(value, 1)]
    while todo:
        node, depth = todo.pop()
        if isinstance(node, (dict, list)):
            deepest = max(deepest, depth)
            if depth > MAX_DEPTH:
                break
            todo.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))
    return deepest


def open_input(path: str | os.PathLike[str]) -> BinaryIO:
    """``open(path, "rb")`` that never waits: a FIFO (or a device that blocks) opens at once, for
    the caller's ``fstat`` to refuse it, instead of waiting for a writer that never comes."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
    return os.fdopen(fd, "rb")


def read_text_input(path: str | Path, what: str, limit: int) -> str:
    """A regular file's UTF-8 text, at most ``limit`` bytes (never /dev/zero, a FIFO or a folder)."""
    path = Path(path)
    try:
        with open_input(path) as fh:
            st = os.fstat(fh.fileno())
            if stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError
            if not stat.S_ISREG(st.st_mode):
                raise InputError(f"not a regular file, expected {what}", file=path)
            if st.st_size > limit:
                raise InputError(f"{st.st_size} bytes: {what} may have at most {limit}", file=path)
            data = fh.read(limit + 1)
    except InputError:
        raise
    except FileNotFoundError:
        raise InputError("file not found", file=path) from None
    except IsADirectoryError:
        raise InputError(f"is a directory, expected {what}", file=path) from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InputError(f"cannot read: {reason}", file=_printable(path)) from None
    if len(data) > limit:
        raise InputError(f"{what} may have at most {limit} bytes", file=path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", file=path) from None


def _printable(path: Path) -> str:
    return str(path).encode("utf-8", "backslashreplace").decode("utf-8")


def load_json(path: str | Path) -> Any:
    path = Path(path)
    return decode_json(read_text_input(path, "a JSON file", MAX_JSON_BYTES), path)


def decode_json(text: str, path: str | Path, invalid: str = "invalid JSON") -> Any:
    """Parse JSON text with the readers' caps (depth, integer length); errors name the line."""
    try:
        value = jsontext.loads(text, parse_int=_parse_int)
    except OverflowError as exc:  # from _parse_int
        digits = str(exc.args[0])
        raise InputError([Problem(str(path), _line_of(text, digits),
                                  f"an integer of {len(digits)} digits; at most {MAX_INT_DIGITS} are "
                                  "accepted")]) from None
    except jsontext.DecodeError as exc:
        raise InputError([Problem(str(path), f"line {exc.lineno}, column {exc.colno}",
                                  f"{invalid}: {exc.msg}")]) from None
    except RecursionError:
        raise InputError(f"nested more than {MAX_DEPTH} levels deep", file=path) from None
    # a document of at most MAX_DEPTH brackets cannot nest deeper: the walk is for larger ones
    if text.count("[") + text.count("{") > MAX_DEPTH and _depth(value) > MAX_DEPTH:
        raise InputError(f"nested more than {MAX_DEPTH} levels deep", file=path)
    return value

