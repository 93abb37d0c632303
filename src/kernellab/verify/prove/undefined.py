"""Variables read before they are written, given any value (docs/verify-prove.md, "OpenCL C front
end").

A variable read before anything is stored to it has an undefined value, which clspv folds to
whatever suits it (``int x; __assert(x == 0);`` compiles to a passing assertion), so a proof over
clspv's module of such a source says nothing. GPUVerify reads the value as arbitrary; so does
the proof, by making it so in the source before clspv sees it: clang's ``-Wuninitialized``
(an error here) names each such variable and, with ``-fdiagnostics-parseable-fixits``, the
place after its declarator where an initialiser goes. There the variable gets
``= (__typeof__(x))__kl_undefined()``: a call of a function declared without a body, which the
engine reads as any value at each call (:mod:`kernellab.verify.prove.stubs`), made once where the
variable is declared. Only integer variables (clang's fix-it ``= 0`` or ``= '\\0'``; ``bool``
too): a 64-bit value of any bits converted to one takes every value of it. A pointer, a floating
point variable or one in an included file is left as it is, and the proof stays ``unknown``.
"""
from __future__ import annotations

import re
from collections.abc import Callable

from kernellab.records import dataclass

#: the function whose every call is any value (a stub of kind FRESH: declared without a body)
FUNCTION = "__kl_undefined"
#: its declaration, put before the source where the source calls it
PROTOTYPE = f"long {FUNCTION}(void);\n"

_NOTE = re.compile(r"^(.*?):(\d+):(\d+): note: initialize the variable '(\w+)' to silence this warning$")
_FIXIT = re.compile(r'^fix-it:"(.*?)":\{(\d+):(\d+)-(\d+):(\d+)\}:"(.*)"$')
#: clang's fix-its for the integer types (char's is a character constant)
_INTEGER = (" = 0", " = '\\\\0'")


@dataclass(frozen=True)
class Uninitialised:
    """One variable clang says is read before it is written: where its initialiser goes (in
    ``file``, 1-based line and column) and clang's fix-it text (``" = 0"``)."""

    file: str
    line: int
    column: int
    name: str
    fixit: str


def parse(diagnostics: str) -> list[Uninitialised]:
    """The variables of clang's ``-Wuninitialized`` notes, each with the fix-it that follows it."""
    out = []
    lines = diagnostics.splitlines()
    for k, line in enumerate(lines):
        m = _NOTE.match(line)
        if not m:
            continue
        fix = next((f for f in map(_FIXIT.match, lines[k + 1:k + 6]) if f), None)
        # the fix-it's line is the compiled file's own (a #line directive does not map it), its column the note's
        text = fix.group(6) if fix and fix.group(3) == m.group(3) and fix.group(2) == fix.group(4) else ""
        out.append(Uninitialised(m.group(1), int(m.group(2)), int(m.group(3)), m.group(4), text))
    return out


def initialised(text: str, found: list[Uninitialised], is_source: Callable[[str], bool]) -> str | None:
    """``text`` with each variable of ``found`` initialised to any value, or None where one of them
    cannot be (not an integer, not in ``text``: ``is_source(file)`` says whether a diagnostic's
    file is it). Columns count bytes, as clang's do; the line numbers are kept."""
    if not found:
        return None
    lines = text.split("\n")
    edits: dict[int, list[tuple[int, str]]] = {}
    for u in found:
        if u.fixit not in _INTEGER or not is_source(u.file) or u.line > len(lines):
            return None
        edits.setdefault(u.line - 1, []).append((u.column - 1, f" = (__typeof__({u.name})){FUNCTION}()"))
    for index, items in edits.items():
        raw = lines[index].encode()
        for column, insert in sorted(set(items), reverse=True):
            if column > len(raw):
                return None
            raw = raw[:column] + insert.encode() + raw[column:]
        lines[index] = raw.decode(errors="replace")
    return "\n".join(lines)
