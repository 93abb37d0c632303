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


def test_text_that_is_not_utf8_is_printed_escaped(tmp_path: Path) -> None:
    import subprocess
    import sys

    program = ("import sys; from kernellab import cli; import argparse\n"
               "def show(args): print('name: \\udcff'); return 0\n"
               "cli.build_parser = lambda argv=None, only_named=False: "
               "(lambda p: (p.set_defaults(func=show), p)[1])(argparse.ArgumentParser())\n"
               "sys.exit(cli.main([]))\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"name: \\udcff\n"


def test_a_full_disk_is_one_line_and_leaves_nothing(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import errno
    import os

    from kernellab.outputs import OutputSet

    def write(args: Any) -> int:
        with OutputSet() as outs:
            outs.bytes(tmp_path / "a.npy", b"first")

            def full(fh: Any) -> None:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            outs._write(tmp_path / "b.npy", full)
            outs.commit()
        return 0
    monkeypatch.setattr(cli, "build_parser", _parser_running(write))
    assert cli.main([]) == 1
    assert capsys.readouterr().err == f"kernellab: error: {tmp_path / 'b.npy'}: No space left on device\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("argv", "usage", "hint"), [
    (["run", "x.json", "--scenari", "s"], "kernellab run", "unrecognized arguments: --scenari s (did you mean --scenario?)"),
    (["test", "d", "--job", "2"], "kernellab test", "(did you mean --jobs?)"),
    (["rnu", "x.json"], "kernellab", "invalid choice: 'rnu'"),
])
def test_a_mistyped_flag_or_command_suggests_the_nearest(argv: list[str], usage: str, hint: str,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert hint in err and f"usage: {usage} " in err, err
    if argv[0] == "rnu":
        assert "(did you mean 'run'?)" in err


def test_an_unknown_flag_far_from_every_option_gets_no_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["validate", "x.json", "--qqqqqqqq"])
    err = capsys.readouterr().err
    assert "unrecognized arguments: --qqqqqqqq" in err and "did you mean" not in err


@pytest.mark.parametrize("argv", [["run", "-v"], ["schema"], ["--help"]])
def test_a_reader_that_went_away_is_no_traceback(argv: list[str]) -> None:
    # `kernellab run -v | head -0`: the version is printed by an argparse action, while the
    # command line is still being read, before the command's own error handling
    import os
    import subprocess
    import sys

    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run([sys.executable, "-m", "kernellab", *argv], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write_end)
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
    assert done.returncode in (0, 1)
