"""Counted nouns in what the commands print: "1 output", "2 outputs"."""
from __future__ import annotations


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``plural(1, "output")`` -> ``"1 output"``; ``plural(3, "match", "matches")`` -> ``"3 matches"``."""
    return f"{count} {noun if count == 1 else (many or noun + 's')}"
