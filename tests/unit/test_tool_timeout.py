"""Every external tool runs under a time limit: past it the tool and everything it started are
killed, and the user reads which tool, which file, which limit and how to raise it."""
from __future__ import annotations

import tempfile
import time
from pathlib import Path

import pytest

from helpers.fake_tools import write_script
from kernellab import cli, config, tools
from kernellab.errors import CompileError, ToolError, ToolTimeoutError, UsageError


def _hanging_tool(folder: Path, name: str = "clspv") -> tuple[tools.Tool, Path]:
    """A program that starts a grandchild (as a compiler driver starts its back end), says where
    it is, and then waits forever, as clspv does on GPUVerify's globalarray/fail."""
    pids = folder / "pids"
    script = write_script(folder / name, f"""echo "starting the back end" >&2
sleep 60 &
echo "$$ $!" > {pids}
wait
""")
    return tools.Tool(name, script), pids


def _gone(pid: int) -> bool:
    """No such process, or only its zombie (dead, waiting for a parent to reap it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")


def _live_in_group(pgid: int) -> list[int]:
    """The processes of group ``pgid`` that are still running (zombies do not count)."""
    live = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                state, _, group = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:3]
            except (OSError, ValueError):
                continue
            if int(group) == pgid and state not in ("Z", "X"):
                live.append(int(entry.name))
    return live


def _wait_until_gone(pids: list[int], within: float = 10.0) -> bool:
    # generous: a killed process exits when it is next scheduled, which on a loaded machine can
    # take a while; one the kill missed lives on (the tools here sleep 60 s) and still fails
    deadline = time.monotonic() + within
    while not all(_gone(p) for p in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_a_tool_past_its_limit_is_killed_with_its_children(tmp_path: Path) -> None:
    tool, pids = _hanging_tool(tmp_path)
    started = time.monotonic()
    with pytest.raises(ToolTimeoutError) as caught:
        tool.run(["kernel.cl"], what="compiling kernel.cl with clspv", timeout=0.4, error=CompileError)
    assert time.monotonic() - started < 3
    shell, grandchild = map(int, pids.read_text().split())
    assert _wait_until_gone([shell, grandchild]), "the tool or the process it started outlived the limit"
    assert _live_in_group(shell) == []  # the tool's whole process group is gone
    message = str(caught.value)
    assert message.startswith("compiling kernel.cl with clspv: clspv did not finish within 0.4 s and was stopped; "
                              "if it only needs longer, raise the limit with --tool-timeout SECONDS or "
                              "KERNELLAB_TOOL_TIMEOUT=SECONDS (0: no limit)")
    assert "starting the back end" in message  # what the tool wrote before it was stopped
    assert f"repro: {tool.path} kernel.cl" in message
    # not a CompileError though the caller asked for one: the input may be fine, and a caller that
    # answers a CompileError by compiling again (verify --vulkan's fallback) must not wait twice
    assert not isinstance(caught.value, CompileError) and caught.value.exit_status == 1


def test_the_configured_limit_applies_and_transform_leaves_no_folder(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    tool, pids = _hanging_tool(tmp_path)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    with config.override(tool_timeout=0.3), pytest.raises(ToolTimeoutError, match=r"within 0\.3 s"):
        tool.transform([tools.INPUT, "-o", tools.OUTPUT], input=b"__kernel void k() {}", what="compiling k.cl")
    assert list(scratch.iterdir()) == []  # the temporary folder, half-written output and all, is removed
    assert _wait_until_gone(list(map(int, pids.read_text().split())))


def test_a_tool_that_finishes_in_time_is_unaffected(tmp_path: Path) -> None:
    tool = tools.Tool("echoer", write_script(tmp_path / "echoer", 'cat; echo " $1"\n'))
    with config.override(tool_timeout=5.0):
        assert tool.run(["done"], input=b"in", what="echoing").stdout == b"in done\n"
    # without input the tool reads an empty standard input, never the terminal
    assert tool.run(["x"], what="echoing", timeout=5).stdout == b" x\n"


@pytest.mark.parametrize("text, seconds", [("300", 300.0), ("0.5", 0.5), ("0", None)])
def test_limit_values(text: str, seconds: float | None) -> None:
    assert config.parse_tool_timeout(text) == seconds


@pytest.mark.parametrize("text", ["abc", "-1", "nan", "inf", ""])
def test_bad_limit_values_are_refused(text: str) -> None:
    with pytest.raises(UsageError, match=r"^--tool-timeout: expected a number of seconds \(0 for no limit\)"):
        config.parse_tool_timeout(text)


def test_the_environment_sets_the_limit(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("KERNELLAB_TOOL_TIMEOUT", "12")
    assert config.Config.from_environ().tool_timeout == 12.0
    monkeypatch.setenv("KERNELLAB_TOOL_TIMEOUT", "0")
    assert config.Config.from_environ().tool_timeout is None
    monkeypatch.delenv("KERNELLAB_TOOL_TIMEOUT")
    assert config.Config.from_environ().tool_timeout == config.DEFAULT_TOOL_TIMEOUT == 300.0
    monkeypatch.setenv("KERNELLAB_TOOL_TIMEOUT", "soon")
    assert config.Config.from_environ().tool_timeout == config.DEFAULT_TOOL_TIMEOUT
    assert "KERNELLAB_TOOL_TIMEOUT: expected a number of seconds (0 for no limit), got 'soon'; using 300 s" \
        in caplog.text


def test_the_command_line_limit_stops_a_hanging_compiler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """`kernellab snapshot k.cl --stage spirv-vulkan` with a clspv that never finishes: exit 1, one
    message naming the tool, the file and the limit, no traceback."""
    tool, pids = _hanging_tool(tmp_path)
    kernel = tmp_path / "k.cl"
    kernel.write_text("__kernel void k(__global int *p) { p[0] = 1; }\n")
    monkeypatch.setenv("KERNELLAB_TOOL_TIMEOUT", "600")  # the flag wins over the environment
    with config.override(tool_path=(str(tmp_path),), compile_cache=False):
        status = cli.main(["snapshot", str(kernel), "--stage", "spirv-vulkan", "--no-cache",
                           "--tool-timeout", "0.4"])
    err = capsys.readouterr().err
    assert status == 1, err
    assert "Traceback" not in err
    assert err.startswith(f"kernellab: error: compiling {kernel} with clspv: clspv did not finish within 0.4 s "
                          "and was stopped; if it only needs longer, raise the limit with --tool-timeout"), err
    assert _wait_until_gone(list(map(int, pids.read_text().split())))


def test_a_bad_command_line_limit_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["validate", "missing.json", "--tool-timeout", "soon"]) == 2
    assert capsys.readouterr().err.strip() == \
        "--tool-timeout: expected a number of seconds (0 for no limit), got 'soon'"


def test_a_tool_that_floods_its_log_is_stopped_and_its_log_kept_short(tmp_path: Path) -> None:
    """clspv stuck on misc/fail/4d_array_with_casting writes megabytes of `Err: ...` a second."""
    tool = tools.Tool("flood", write_script(tmp_path / "flood", "yes 'Err: SrcTy = i8' >&2\n"))
    with pytest.raises(ToolTimeoutError) as caught:
        tool.run([], what="compiling k.cl", timeout=0.4)
    message = str(caught.value)
    assert "flood did not finish within 0.4 s" in message
    assert message.count("Err: SrcTy = i8") > 10 and len(message) < 10_000


def test_a_long_log_keeps_its_start_and_its_end(tmp_path: Path) -> None:
    tool = tools.Tool("talker", write_script(tmp_path / "talker", """echo first >&2
head -c 2000000 /dev/zero | tr '\\0' x >&2
echo >&2; echo last >&2
exit 3
"""))
    with pytest.raises(ToolError) as caught:
        tool.run([], what="compiling k.cl", timeout=5)
    message = str(caught.value)
    assert message.startswith("compiling k.cl: talker failed (exit 3)\nfirst\nxxx")
    assert "bytes of the log left out ...]" in message and "\nlast\nrepro: " in message
    assert len(message) < 800_000


def test_sigterm_to_kernellab_ends_the_running_tool_too(tmp_path: Path) -> None:
    # the tool runs in a session of its own (so the limit can kill its whole group); a SIGTERM to
    # kernellab must not leave it running on after kernellab is gone
    import os
    import signal
    import subprocess
    import sys

    tool, pids = _hanging_tool(tmp_path)
    child = subprocess.Popen([sys.executable, "-c", (
        "from pathlib import Path\nfrom kernellab import tools\n"
        f"tools.Tool('clspv', Path({str(tool.path)!r})).run(['k.cl'], what='compiling k.cl', timeout=60)\n")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while not pids.exists() or len(pids.read_text().split()) < 2:
        assert time.monotonic() < deadline, "the tool did not start"
        time.sleep(0.02)
    shell, grandchild = map(int, pids.read_text().split())
    os.kill(child.pid, signal.SIGTERM)
    assert child.wait(timeout=10) == -signal.SIGTERM  # kernellab still dies of the signal
    assert _wait_until_gone([shell, grandchild]), "the tool outlived kernellab"
    assert _live_in_group(shell) == []
