"""kernellab.logs: a command that writes no log line does not load :mod:`logging`; one that does
writes it as before (the command's level, its format, escaped), and with logging loaded (a
library caller, a test) every record goes through logging unchanged."""
from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from kernellab import logs

PROGRAM = """
import sys
from kernellab import logs
ran = []
logs.set_up(sys.argv[1], lambda: ran.append(1) or __import__("logging").basicConfig(
    level=sys.argv[1], format="%(levelname)s %(name)s %(funcName)s: %(message)s"))
def caller():
    log = logs.getLogger("kernellab.probe")
    log.debug("d %s", 1)
    log.info("i %s", 2)
    print("loaded" if "logging" in sys.modules else "not loaded", len(ran), flush=True)
    log.warning("w %s", 3)
    print("loaded" if "logging" in sys.modules else "not loaded", len(ran), flush=True)
caller()
"""


@pytest.mark.parametrize("level, before, written", [
    ("WARNING", "not loaded 0", ["WARNING kernellab.probe caller: w 3"]),
    ("DEBUG", "loaded 1", ["DEBUG kernellab.probe caller: d 1", "INFO kernellab.probe caller: i 2",
                           "WARNING kernellab.probe caller: w 3"]),
])
def test_records_below_the_level_load_nothing(level: str, before: str, written: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-S", "-c", PROGRAM, level], capture_output=True, text=True,
                          env={"PYTHONPATH": ":".join(p for p in sys.path if p)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [before, "loaded 1"]
    assert proc.stderr.splitlines() == written


def test_with_logging_loaded_records_go_through_it(caplog: pytest.LogCaptureFixture) -> None:
    log = logs.getLogger("kernellab.probe")
    with caplog.at_level(logging.DEBUG, logger="kernellab.probe"):
        log.debug("one %d", 1)
        log.error("two")
    assert [(r.levelname, r.getMessage(), r.funcName) for r in caplog.records] == [
        ("DEBUG", "one 1", "test_with_logging_loaded_records_go_through_it"),
        ("ERROR", "two", "test_with_logging_loaded_records_go_through_it")]
    assert log.isEnabledFor(logging.WARNING)


def test_the_command_line_writes_its_records_escaped() -> None:
    """A warning of a run (a bad setting) still comes out as ``WARNING name: message``."""
    proc = subprocess.run([sys.executable, "-m", "kernellab", "schema"], capture_output=True, text=True,
                          env={**__import__("os").environ, "KERNELLAB_TOOL_TIMEOUT": "soon\x1b[2J"})
    assert proc.returncode == 0, proc.stderr
    assert "WARNING kernellab.config: KERNELLAB_TOOL_TIMEOUT" in proc.stderr
    assert "\x1b" not in proc.stderr and "\\x1b" in proc.stderr
