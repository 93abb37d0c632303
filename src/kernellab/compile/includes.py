"""The content key of a source file together with every file it ``#include``s.

A compiler that reads the user's file itself (glslang, clang, clspv, the OpenCL driver) depends
on the included files too. Hashing the source and its includes, found as the compiler finds
them, keys such a stage without running the preprocessor, so a cached kernel costs no process
at all; an ``#include`` that cannot be followed without preprocessing (``#include MACRO``) gives
no key, and the caller falls back to keying by the preprocessed text.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include\b[ \t]*(.*)$', re.MULTILINE)
_TARGET = re.compile(rb'^(?:"([^"\n]+)"|<([^>\n]+)>)')
#: more included files than this and the key gives up (the preprocessed text keys instead)
MAX_FILES = 256


def option_include_dirs(options: Sequence[str]) -> list[Path]:
    """The ``-I`` folders of a build option list (``-Idir`` and ``-I dir``)."""
    dirs: list[Path] = []
    for i, o in enumerate(options):
        if o == "-I" and i + 1 < len(options):
            dirs.append(Path(options[i + 1]))
        elif o.startswith("-I") and len(o) > 2:
            dirs.append(Path(o[2:]))
    return dirs


def sources_digest(source: Path, include_dirs: Sequence[Path], data: bytes | None = None) -> str | None:
    """A hash of ``source`` (its path and bytes, ``data`` when already read) and of every file
    it includes, recursively; None when an include cannot be followed without preprocessing.

    Each ``#include "x"`` is looked up in the including file's folder, then ``include_dirs``;
    ``<x>`` in ``include_dirs``. A name found nowhere (a compiler's own header, such as clang's
    OpenCL headers) counts by its name: the compiler's version is in the key already. Directives
    inside comments or ``#if 0`` are followed too, which can only make the key change more often.
    """
    h = hashlib.sha256()
    seen: set[Path] = set()
    todo: list[tuple[Path, bytes | None]] = [(source, data)]
    while todo:
        path, content = todo.pop()
        if path in seen:
            continue
        if len(seen) >= MAX_FILES:
            return None
        seen.add(path)
        if content is None:
            try:
                content = path.read_bytes()
            except OSError:
                return None
        _add(h, str(path).encode("utf-8", "surrogateescape"), content)
        for directive in _INCLUDE.finditer(content):
            target = _TARGET.match(directive.group(1).strip())
            if target is None:
                return None  # #include MACRO: only the preprocessor knows the file
            quoted = target.group(1) is not None
            name = (target.group(1) or target.group(2)).decode("utf-8", "surrogateescape")
            found = _lookup(Path(name), ([path.parent] if quoted else []) + list(include_dirs))
            if found is None:
                _add(h, b"unresolved", name.encode("utf-8", "surrogateescape"))
            else:
                todo.append((found, None))
    return h.hexdigest()


def _lookup(name: Path, folders: Sequence[Path]) -> Path | None:
    candidates = [name] if name.is_absolute() else [folder / name for folder in folders]
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    return None


def _add(h: hashlib._Hash, *parts: bytes) -> None:
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
