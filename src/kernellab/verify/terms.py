"""Findings in the user's terms: which variable, which element, which line of which file.

Oclgrind speaks in addresses (``buffer << 48 | byte offset``) and lines of the program it built.
The kernel source says which ``__local`` variables exist and how big their elements are; the
launch says which argument each global buffer is; a capture says (through the enqueue's call site)
which Python file the kernel source was written in.
"""
from __future__ import annotations

import ast
import contextlib
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path
from typing import Any

from kernellab.opencl_types import parse_type, source_typedefs

_LOCAL_ARRAY = re.compile(r"\b(?:__local|local)\s+(?:const\s+|volatile\s+)*([A-Za-z_]\w*(?:\s+[A-Za-z_]\w*)?)\s+"
                          r"([A-Za-z_]\w*)\s*\[")
_LOCAL_POINTER = re.compile(r"\b(?:__local|local)\s+(?:const\s+|volatile\s+)*([A-Za-z_]\w*(?:\s+[A-Za-z_]\w*)?)\s*"
                            r"\*\s*(?:const\s+|restrict\s+|__restrict\s+)*([A-Za-z_]\w*)")
_WORD = re.compile(r"[A-Za-z_]\w*")


#: the largest source file whose lines a finding quotes: a file named inside a module may be
#: anything, and a line's text is only a courtesy
MAX_SOURCE_BYTES = 16 << 20

#: the folders a file named inside a module (a SPIR-V OpString, a ``#line``) may be read from,
#: while a check runs (:func:`reading_within`); None: no folder restriction
_ROOTS: ContextVar[tuple[Path, ...] | None] = ContextVar("kernellab_verify_source_roots", default=None)


@contextlib.contextmanager
def reading_within(roots: Iterable[str | Path]) -> Iterator[None]:
    """Quote source lines only from files inside ``roots`` (after resolving symlinks) meanwhile."""
    token = _ROOTS.set(tuple(Path(os.path.realpath(r)) for r in roots))
    try:
        yield
    finally:
        _ROOTS.reset(token)


def _allowed(path: str) -> bool:
    roots = _ROOTS.get()
    if roots is None:
        return True
    real = Path(os.path.realpath(path))
    return any(real == root or root in real.parents for root in roots)


@lru_cache(maxsize=64)
def _read(path: str) -> tuple[str, ...]:
    """The lines of a regular file of at most MAX_SOURCE_BYTES; nothing for anything else. The
    file is opened without blocking and checked on its descriptor: a FIFO or a device named
    inside a module (verify would wait forever on a FIFO, or read ``/dev/zero`` until killed)
    is refused before a byte is read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError):
        return ()
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_SOURCE_BYTES:
            return ()
        data = os.read(fd, MAX_SOURCE_BYTES + 1)
    except OSError:
        return ()
    finally:
        os.close(fd)
    if len(data) > MAX_SOURCE_BYTES:  # grew since fstat
        return ()
    return tuple(data.decode("utf-8", errors="replace").splitlines())


def _lines(path: str) -> tuple[str, ...]:
    return _read(path) if _allowed(path) else ()


def source_line(path: str | None, line: int | None) -> str | None:
    """Line ``line`` (1-based) of ``path`` as the user wrote it, stripped; None when unknown."""
    if not path or not line:
        return None
    lines = _lines(str(path))
    return lines[line - 1].strip() if 0 < line <= len(lines) else None


def line_text(path: str | None, line: int | None) -> str:
    if not path or not line:
        return ""
    lines = _lines(str(path))
    return lines[line - 1] if 0 < line <= len(lines) else ""


@lru_cache(maxsize=64)
def local_variables(path: str | None) -> dict[str, int | None]:
    """``__local`` arrays and pointers the kernel file declares: name -> element size in bytes."""
    if not path:
        return {}
    text = "\n".join(_lines(str(path)))
    typedefs = source_typedefs(text)
    out: dict[str, int | None] = {}
    for pattern in (_LOCAL_ARRAY, _LOCAL_POINTER):
        for type_name, name in pattern.findall(text):
            out.setdefault(name, parse_type(type_name, typedefs).size)
    return out


def variable_at(path: str | None, line: int | None, column: int | None, names: dict[str, Any]) -> str | None:
    """The declared name nearest before ``column`` on the source line (the array being indexed)."""
    text = line_text(path, line)
    best: tuple[int, str] | None = None
    for m in _WORD.finditer(text):
        if m.group(0) in names:
            distance = abs((column or 0) - 1 - m.start())
            if best is None or distance < best[0]:
                best = (distance, m.group(0))
    return best[1] if best else None


def column_of(path: str | None, line: int | None, word: str) -> int | None:
    m = re.search(r"\b" + re.escape(word) + r"\b", line_text(path, line))
    return m.start() + 1 if m else None


@lru_cache(maxsize=64)
def _embedded_at(host_file: str, kernel_file: str) -> int | None:
    """The 1-based line of ``host_file`` where the text of ``kernel_file`` starts, when the host
    program holds the kernel source literally (a pyopencl program's triple-quoted string)."""
    kernel = "\n".join(_lines(kernel_file))
    host = "\n".join(_lines(host_file))
    if not kernel.strip() or not host:
        return None
    at = host.find(kernel.strip("\n"))
    if at < 0:
        first = next((l for l in _lines(kernel_file) if l.strip()), "")
        at = host.find(first) if len(first.strip()) > 20 else -1
        if at < 0:
            return None
        skipped = next(i for i, l in enumerate(_lines(kernel_file)) if l.strip())
        return host.count("\n", 0, at) + 1 - skipped
    skipped = len(kernel) - len(kernel.lstrip("\n"))
    return host.count("\n", 0, at) + 1 - skipped


def user_location(kernel_file: str | None, line: int | None, host_files: list[str]) -> dict[str, Any] | None:
    """Where the user wrote kernel line ``line``: for a capture, the line of the host program
    holding the kernel source (found by its text); None when the kernel file is the user's own."""
    if not kernel_file or not line:
        return None
    for host in host_files:
        start = _embedded_at(host, kernel_file)
        if start is not None:
            return {"file": host, "line": start + line - 1}
    return None


_ARRAY_DECLARATION = re.compile(r"([\w}*])\s*\b([A-Za-z_]\w*)\s*((?:\[[^\[\]]*\]\s*)+)(?=[;,=)])")
_DEFINE = re.compile(r"^\s*#\s*define\s+([A-Za-z_]\w*)\s+(.+?)\s*$", re.M)
_NOT_A_TYPE = {"return", "case", "sizeof", "else", "do", "goto"}


def _constant(text: str, defines: dict[str, str], depth: int = 0) -> int | None:
    """An array dimension's value: an integer, or a #define'd (simple arithmetic) constant."""
    text = re.sub(r"\b(\d+)[uUlL]*\b", r"\1", text.strip())
    if depth < 8:
        text = re.sub(r"\b[A-Za-z_]\w*\b",
                      lambda m: f"({defines[m.group(0)]})" if m.group(0) in defines else m.group(0), text)
        if re.search(r"[A-Za-z_]", text) and any(w in defines for w in re.findall(r"[A-Za-z_]\w*", text)):
            return _constant(text, defines, depth + 1)
    if not re.fullmatch(r"[\d\s+\-*/%()]+", text):
        return None
    try:
        return _arithmetic(ast.parse(text, mode="eval").body)
    except (SyntaxError, ValueError, ZeroDivisionError, RecursionError):
        return None


#: C's integer operators on array sizes; no power (``**`` parses, and 9**9**9 would never end)
_BINARY: dict[type, Callable[[int, int], int]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: int(a / b), ast.FloorDiv: lambda a, b: int(a / b),
    ast.Mod: lambda a, b: a - b * int(a / b)}
_LARGEST = 1 << 64


def _arithmetic(node: ast.expr) -> int | None:
    """An integer expression of a kernel's #defines, evaluated as C would (truncating division);
    None for anything else or a value no array dimension can have."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        value: int | None = node.value
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _arithmetic(node.operand)
        value = None if inner is None else (-inner if isinstance(node.op, ast.USub) else inner)
    elif isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _arithmetic(node.left), _arithmetic(node.right)
        value = None if left is None or right is None else _BINARY[type(node.op)](left, right)
    else:
        return None
    return value if value is not None and abs(value) < _LARGEST else None


@lru_cache(maxsize=64)
def array_declarations(path: str | None) -> dict[str, tuple[tuple[int | None, ...], ...]]:
    """Arrays the kernel file declares (variables and struct members): name -> the dimensions of each
    declaration of that name (None where a dimension is not a constant)."""
    if not path:
        return {}
    text = "\n".join(_lines(str(path)))
    defines = {m.group(1): m.group(2) for m in _DEFINE.finditer(text)}
    text = re.sub(r"//[^\n]*|/\*.*?\*/", " ", text, flags=re.S)
    out: dict[str, tuple[tuple[int | None, ...], ...]] = {}
    for m in _ARRAY_DECLARATION.finditer(text):
        before = text[:m.start(1) + 1].split()
        if m.group(1) == "}" and text[m.end():m.end() + 1] == "=":
            continue  # an assignment after a block, not `struct {...} name[N];`
        if m.group(1).isalnum() or m.group(1) == "_":
            if before and before[-1].rsplit(None, 1)[-1] in _NOT_A_TYPE:
                continue
        dims = tuple(_constant(d, defines) for d in re.findall(r"\[([^\[\]]*)\]", m.group(3)))
        out[m.group(2)] = out.get(m.group(2), ()) + (dims,)
    return out


def static_index_leaves_array(path: str | None, line: int | None, index: int, size: int) -> tuple[str, bool] | None:
    """For Oclgrind's ``Index (index) exceeds static array size (size)`` on ``line``: the array indexed
    there and whether the access leaves it. An index past the first (outermost) dimension leaves the
    declared array whatever the other indices; one past an inner dimension may stay inside it (the
    flattened index GPUVerify checks). None when no declared array on the line has that dimension."""
    text = line_text(path, line)
    declared = array_declarations(path)
    inner = None
    for name in dict.fromkeys(re.findall(r"\b([A-Za-z_]\w*)\s*\[", text)):
        for dims in declared.get(name, ()):
            if dims and dims[0] == size and size not in dims[1:]:
                return name, True
            if size in dims[1:] and inner is None:
                inner = name
    return (inner, False) if inner else None
