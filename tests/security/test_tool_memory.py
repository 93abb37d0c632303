"""Every external tool runs with its address space capped (issue 18, point 4): a kernel that makes a
compiler allocate without end (a macro explosion, a huge initializer) ends that compiler with an
error, not the machine. The cap is RLIMIT_AS in the tool's process (KERNELLAB_TOOL_MEMORY, default
4 GiB), set before ``exec``; kernellab's own process keeps its limits."""
from __future__ import annotations

import resource
import sys
from pathlib import Path

import pytest

from kernellab import config
from kernellab.errors import ToolError
from kernellab.tools import Tool

GREEDY = "import resource, sys; print(resource.getrlimit(resource.RLIMIT_AS)[0]); sys.stdout.flush(); x = bytearray(3 << 30)"


def test_a_tool_allocating_past_the_limit_fails_and_kernellab_goes_on() -> None:
    python = Tool("python", Path(sys.executable))
    before = resource.getrlimit(resource.RLIMIT_AS)
    with config.override(tool_memory=512 << 20), pytest.raises(ToolError) as caught:
        python.run(["-c", GREEDY], what="greedy.cl")
    failure = caught.value.failure
    assert failure is not None and "MemoryError" in failure.log
    assert str(512 << 20) in failure.log  # the limit the child had
    assert resource.getrlimit(resource.RLIMIT_AS) == before  # only the child was limited


def test_the_default_limit_reaches_the_tool_and_zero_removes_it() -> None:
    python = Tool("python", Path(sys.executable))
    code = "import resource; print(resource.getrlimit(resource.RLIMIT_AS)[0])"
    out = python.run(["-c", code], what="probe").stdout.decode()
    assert int(out) == config.DEFAULT_TOOL_MEMORY
    with config.override(tool_memory=None):
        out = python.run(["-c", code], what="probe").stdout.decode()
    assert int(out) == resource.getrlimit(resource.RLIMIT_AS)[0]


@pytest.mark.parametrize(("text", "expected", "warned"), [
    ("", config.DEFAULT_TOOL_MEMORY, False), ("2e9", 2_000_000_000, False), ("0", None, False),
    ("lots", config.DEFAULT_TOOL_MEMORY, True), ("12", config.DEFAULT_TOOL_MEMORY, True),
    ("\x1b[31m", config.DEFAULT_TOOL_MEMORY, True)])
def test_kernellab_tool_memory_is_read_like_every_setting(monkeypatch: pytest.MonkeyPatch, text: str,
                                                           expected: int | None, warned: bool) -> None:
    monkeypatch.setenv("KERNELLAB_TOOL_MEMORY", text)
    read = config.Config.from_environ()
    assert read.tool_memory == expected
    assert bool(read.warnings) == warned
    assert all("\x1b" not in line for line in read.warnings)
