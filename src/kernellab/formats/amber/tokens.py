"""AmberScript's words, each with its line and column (1-based), for messages that point at it.

A line is split at whitespace and commas; ``#`` starts a comment outside a quoted string. Shader
sources are not tokenized: the parser takes their lines as they are (``raw_lines``).
"""
from __future__ import annotations

from kernellab.records import dataclass


@dataclass(frozen=True)
class Token:
    text: str
    line: int
    column: int

    def __str__(self) -> str:
        return self.text


def tokenize_line(text: str, line: int) -> list[Token]:
    """The words of one line (a comment and the separators dropped)."""
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r\v\f,":
            i += 1
            continue
        if c == "#":
            break
        start = i
        if c == '"':
            end = text.find('"', i + 1)
            i = n if end < 0 else end + 1
            tokens.append(Token(text[start + 1:i - 1 if end >= 0 else n], line, start + 1))
            continue
        while i < n and text[i] not in " \t\r\v\f,#":
            i += 1
        tokens.append(Token(text[start:i], line, start + 1))
    return tokens
