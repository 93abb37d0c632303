"""The files an AmberScript names with ``FILE`` (a shader's source, a BUFFER's or an IMAGE's data:
``BINARY``, ``TEXT``, ``PNG``): one boundary for all of them (docs/security.md) and one reader of
each kind of content.

``src`` is the parser's source (``formats.amber.parse``'s line reader: ``path``, ``error``,
``next_tokens``); this module does not import the parser, which imports it.
"""
from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kernellab.errors import InputError
from kernellab.formats.amber.tokens import Token
from kernellab.formats.amber.types import Element

#: the largest file a script may name (a shader, a buffer's or an image's data), and the most
#: texel bytes a PNG may decode to
MAX_FILE_BYTES = 64 << 20

#: (source, token, dtype) -> the value, as ``formats.amber.parse.number`` reads it
NumberReader = Callable[[Any, Token, str], "int | float"]


def read_beside(src: Any, ref: Token) -> bytes:
    """A file the script names, read only when it is a regular file inside the script's folder
    (after ``..`` and symlinks) and at most :data:`MAX_FILE_BYTES`; otherwise an error naming
    ``ref``'s line and column."""
    from kernellab.compiler_options import inside
    from kernellab.formats.jsonfile import open_input
    from kernellab.formats.paths import path_problem

    if (why := path_problem(ref.text)) is not None:
        raise src.error(ref, why)
    folder = src.path.parent
    path = folder / ref.text
    if Path(ref.text).is_absolute() or not inside(path, [folder.resolve()]):
        raise src.error(ref, f"{ref.text!r} lies outside the script's folder {folder}")
    try:
        with open_input(path) as fh:
            info = os.fstat(fh.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise src.error(ref, f"{path} is not a regular file")
            if info.st_size > MAX_FILE_BYTES:
                raise src.error(ref, f"{path} is {info.st_size} bytes; a file a script names may have at most "
                                     f"{MAX_FILE_BYTES}")
            data: bytes = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise src.error(ref, f"cannot read {path}: {exc.strerror or exc}") from None
    return data


def values_of_bytes(elem: Element, data: bytes) -> list[int | float]:
    """The component values of the whole elements ``data`` holds, in the buffer's layout (``FILE
    BINARY``)."""
    import numpy as np

    count = len(data) // elem.size
    raw = np.frombuffer(data[:count * elem.size], dtype=np.uint8).reshape(count, elem.size)
    columns = [raw[:, off:off + np.dtype(d).itemsize].copy().view(d).ravel().tolist() for off, d in elem.components]
    return [v for row in zip(*columns) for v in row]


def text_values(src: Any, ref: Token, data: bytes, dtypes: Sequence[str], limit: int,
                number: NumberReader) -> list[int | float]:
    """Up to ``limit`` values of a ``FILE TEXT`` (written as DATA writes them, component types in
    turn), each error naming its place in that file."""
    text = type(src)(src.path.parent / ref.text, data.decode("utf-8", errors="replace"))
    values: list[int | float] = []
    while len(values) < limit and (tokens := text.next_tokens()) is not None:
        values += [number(text, t, dtypes[(len(values) + i) % len(dtypes)]) for i, t in enumerate(tokens)]
    return values[:limit]


def png_size(src: Any, ref: Token, data: bytes) -> tuple[int, int]:
    """(width, height) of a ``FILE PNG``, read before anything is inflated."""
    from kernellab.formats import png

    try:
        header = png.read_header(data, src.path.parent / ref.text)
    except InputError as exc:
        raise src.error(ref, _problems(exc)) from None
    return header.width, header.height


def _problems(exc: InputError) -> str:
    return "; ".join(f"{p.file}: {p.where}: {p.message}" if p.where else f"{p.file}: {p.message}"
                     for p in exc.problems)


def png_texels(src: Any, ref: Token, data: bytes, size: tuple[int, int] | None = None) -> tuple[int, int, bytes]:
    """(width, height, RGBA8 texels) of a ``FILE PNG``, decoded by kernellab's reader; ``size``:
    the width and height it must have (an IMAGE's), else the file's own (a BUFFER's), of at most
    :data:`MAX_FILE_BYTES` of texels."""
    from kernellab.formats import png

    path = src.path.parent / ref.text
    try:
        header = png.read_header(data, path)
        if size is None and header.width * header.height * 4 <= MAX_FILE_BYTES:
            size = header.width, header.height
        texels = png.decode(data, path, size[0], size[1]) if size is not None else b""
    except InputError as exc:
        raise src.error(ref, _problems(exc)) from None
    if size is None:
        raise src.error(ref, f"{path} is a {header.width}x{header.height} PNG: more than {MAX_FILE_BYTES} bytes "
                             "of texels")
    return size[0], size[1], texels
