"""Paths written in files that cannot name a file here are input problems, not OS errors."""
from __future__ import annotations

import pytest

from kernellab.formats.paths import path_problem


@pytest.mark.parametrize("value, reason", [
    ("a\x00b", "it holds a NUL character"), ("x\ud800.npy", "lone surrogates"),
    ("d/" + "x" * 300, "a part longer than 255 bytes"), ("d/" * 2100, "more than the system allows"),
])
def test_unusable_paths(value: str, reason: str) -> None:
    problem = path_problem(value)
    assert problem is not None and "is not a usable file name: " in problem and reason in problem
    assert problem.encode("utf-8")  # printable: no surrogate reaches the terminal


def test_usable_paths() -> None:
    assert path_problem("data/a.npy") is None and path_problem("/abs/ü.npy") is None
