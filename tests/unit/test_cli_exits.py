"""Every exit is designed: one line for a file-system failure (exit 1), one line and a traceback
file for an internal error (exit 1); never a traceback on the terminal."""
from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import pytest

from kernellab import cli


def _parser_running(func: Any) -> Any:
    def build(argv: Any = None, *, only_named: bool = False) -> argparse.ArgumentParser:
        parser = argparse.ArgumentParser(prog="kernellab")
        parser.set_defaults(func=func)
        return parser
    return build


def test_an_internal_error_is_one_line_and_a_traceback_file(monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    def boom(args: Any) -> int:
        raise RuntimeError("first line\nsecond line")
    monkeypatch.setattr(cli, "build_parser", _parser_running(boom))
    assert cli.main([]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert lines[0] == "kernellab: internal error: RuntimeError: first line"
    where = re.search(r"the full traceback is in (\S+);", lines[1])
    assert where, lines
    text = Path(where.group(1)).read_text()
    Path(where.group(1)).unlink()
    assert "Traceback" in text and "in boom" in text


def test_a_file_system_failure_is_one_line_naming_the_path(monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str],
                                                           tmp_path: Path) -> None:
    def vanished(args: Any) -> int:
        (tmp_path / "gone" / "x.npy").read_bytes()
        return 0
    monkeypatch.setattr(cli, "build_parser", _parser_running(vanished))
    assert cli.main([]) == 1
    err = capsys.readouterr().err
    assert err == f"kernellab: error: {tmp_path / 'gone' / 'x.npy'}: No such file or directory\n"
