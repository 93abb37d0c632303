"""Counted nouns in the CLI's output: "1 command", "2 commands"."""
from __future__ import annotations

from pathlib import Path

import pytest

from helpers.scenarios import vector_add
from kernellab.cli import main
from kernellab.suite.wording import plural


def test_plural() -> None:
    assert plural(1, "output") == "1 output"
    assert plural(0, "output") == "0 outputs"
    assert plural(2, "match", "matches") == "2 matches"


def test_validate_counts_in_the_singular(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = vector_add(tmp_path, 8)
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert "1 command)" in out and "1 commands" not in out and " resources, " in out
