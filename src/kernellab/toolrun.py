"""Running an external program found by :mod:`kernellab.tools`: its output captured, its time and
memory bounded, killed with everything it started when it passes its limit or kernellab is
interrupted. Loaded on a run's first program: a run that finds every artifact in the cache starts
none, so it reads none of this."""
from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from kernellab import config, logs
from kernellab.errors import ToolError, ToolFailure, ToolTimeoutError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    import subprocess
    from typing import Any

log = logs.getLogger("kernellab.tools")

#: how much of the output of a program stopped at its time limit the error shows (its end)
_TIMEOUT_LOG = 4000
#: how much of a program's standard error (its log) is kept from its start and from its end: clspv
#: stuck on some kernels writes megabytes a second there until it is stopped
_LOG_KEEP = 256 * 1024


class _Expired(Exception):
    """A program passed its time limit and was killed; what it wrote until then."""

    def __init__(self, stdout: bytes, stderr: bytes):
        super().__init__("time limit passed")
        self.stdout, self.stderr = stdout, stderr


class _Log:
    """A program's standard error: its first and last :data:`_LOG_KEEP` bytes."""

    def __init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        room = _LOG_KEEP - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        if len(self.tail) > 2 * _LOG_KEEP:
            cut = len(self.tail) - _LOG_KEEP
            self.dropped += cut
            del self.tail[:cut]

    def bytes(self) -> bytes:
        gap = f"\n[... {self.dropped} bytes of the log left out ...]\n".encode() if self.dropped else b""
        return bytes(self.head + gap + self.tail)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill the program and everything it started (its own session: see :func:`run_bounded`),
    close the pipes and reap it."""
    import signal
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()  # the group is gone already; the program itself may not be reaped yet
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            try:
                pipe.close()
            except OSError:
                pass
    proc.wait()


def _memory_limit(nbytes: int | None) -> Any:
    """What the child runs before ``exec``: its address space capped at ``nbytes`` (RLIMIT_AS),
    so a tool that allocates without end fails its allocation instead of taking the machine."""
    if nbytes is None:
        return None
    import resource
    setrlimit, which = resource.setrlimit, resource.RLIMIT_AS
    soft, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        nbytes = min(nbytes, hard)

    def limit() -> None:  # in the forked child: bound names only, nothing imported or allocated
        setrlimit(which, (nbytes, hard))
    return limit


def run_bounded(argv: Sequence[str], *, input: bytes | None, cwd: str | os.PathLike[str] | None,
                env: dict[str, str], timeout: float | None,
                memory: int | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run ``argv`` with its output captured, for at most ``timeout`` seconds (None: no limit).

    The program runs in a session of its own, so the time limit, an interrupt (Ctrl-C reaches
    kernellab only) or any other exception here kills it with every process it started: none is
    left running, nor holding the pipes open. Raises :class:`_Expired` past the limit. Standard
    input is ``input`` (from a temporary file) or empty: a program never waits for the terminal.
    Standard output is kept whole; standard error as :class:`_Log` keeps it. With ``memory``, the
    program may map at most that many bytes (RLIMIT_AS, set in the child before ``exec``).
    """
    import subprocess  # here: a run that finds every artifact in the cache starts no program

    stdin: Any = subprocess.DEVNULL
    if input is not None:
        import tempfile  # not on a run's start-up: tempfile brings random, shutil, bz2, lzma

        stdin = tempfile.TemporaryFile()
        stdin.write(input)
        stdin.seek(0)
    try:
        proc = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                                env=env, start_new_session=True, preexec_fn=_memory_limit(memory))
    finally:
        if input is not None:
            stdin.close()  # the program has its own descriptor of the file
    try:
        previous = _dies_with_kernellab(proc)
        try:
            out, err = _collect(proc, timeout)
        finally:
            _restore_handlers(previous)
    except BaseException:
        _kill_group(proc)
        raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def _dies_with_kernellab(proc: subprocess.Popen[bytes]) -> dict[int, Any]:
    """SIGTERM or SIGHUP to kernellab while the program runs kill its process group first: in a
    session of its own, the program would otherwise outlive kernellab (and its time limit). Then
    the signal takes its course as before (the staged-file clean-up, or death by the signal).
    The handlers replaced, for :func:`_restore_handlers` once the program has ended."""
    import signal
    import threading

    previous: dict[int, Any] = {}
    if threading.current_thread() is not threading.main_thread():
        return previous  # only the main thread can handle signals; the exception path still kills the group

    def handler(signum: int, frame: Any) -> None:
        _kill_group(proc)
        for num, old in previous.items():
            signal.signal(num, old)
        previous.clear()
        signal.raise_signal(signum)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        previous[signum] = signal.signal(signum, handler)
    return previous


def _restore_handlers(previous: dict[int, Any]) -> None:
    """Put back the handlers :func:`_dies_with_kernellab` replaced (those a signal has not already)."""
    if previous:
        import signal

        for num, old in previous.items():
            signal.signal(num, old)


def _collect(proc: subprocess.Popen[bytes], timeout: float | None) -> tuple[bytes, bytes]:
    """The program's standard output and error once it has ended; :class:`_Expired` at the limit."""
    import selectors
    import subprocess
    import time

    deadline = None if timeout is None else time.monotonic() + timeout
    out, err = bytearray(), _Log()
    with selectors.DefaultSelector() as selector:
        assert proc.stdout is not None and proc.stderr is not None
        selector.register(proc.stdout, selectors.EVENT_READ, out.extend)
        selector.register(proc.stderr, selectors.EVENT_READ, err.add)
        while selector.get_map():
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                raise _Expired(bytes(out), err.bytes())
            for key, _ in selector.select(wait):
                chunk = os.read(key.fd, 1 << 16)
                if chunk:
                    key.data(chunk)
                else:
                    selector.unregister(key.fileobj)
    try:
        proc.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:  # it closed its output but runs on
        raise _Expired(bytes(out), err.bytes()) from None
    return bytes(out), err.bytes()


def _argv(path: Path, args: Sequence[str | os.PathLike[str]]) -> list[str]:
    return [str(path), *map(str, args)]


def run(name: str, path: Path, env_extra: dict[str, str], args: Sequence[str | os.PathLike[str]], *, what: str, input: bytes | None = None,
        cwd: str | os.PathLike[str] | None = None, error: type[ToolError] = ToolError,
        timeout: float | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run program ``name`` at ``path`` (``env_extra`` added to the environment); on a non-zero
    exit raise ``error`` with its log and a repro command.

    ``timeout`` is in seconds; None takes the configured limit (:data:`config.DEFAULT_TOOL_TIMEOUT`,
    KERNELLAB_TOOL_TIMEOUT, ``--tool-timeout``). A program that passes it is killed with every
    process it started, and :class:`ToolTimeoutError` says which limit to raise.
    """
    argv = _argv(path, args)
    env = {**os.environ, **env_extra}
    limit = config.get().tool_timeout if timeout is None else timeout
    log.debug("run: %s", " ".join(argv))
    try:
        proc = run_bounded(argv, input=input, cwd=cwd, env=env, timeout=limit, memory=config.get().tool_memory)
    except _Expired as exc:
        text = (exc.stdout + exc.stderr).decode(errors="replace")
        if len(text) > _TIMEOUT_LOG:  # its end, from a line's start
            text = text[-_TIMEOUT_LOG:].partition("\n")[2]
        raise ToolTimeoutError(f"{what}: {name} did not finish within {limit:g} s and was stopped; "
                               f"if it only needs longer, raise the limit with --tool-timeout SECONDS "
                               f"or KERNELLAB_TOOL_TIMEOUT=SECONDS (0: no limit)",
                               ToolFailure(name, argv, -1, text, env_extra, os.fspath(cwd or ""))) from None
    if proc.returncode != 0:
        text = (proc.stdout + proc.stderr).decode(errors="replace")
        memory = config.get().tool_memory
        if proc.returncode < 0 and memory:  # an allocation refused at the limit often ends in abort()
            text += (f"\n[{name} was ended by a signal; it may have needed more than the {memory >> 20} MiB "
                     "it may map: KERNELLAB_TOOL_MEMORY=BYTES raises the limit, 0 removes it]")
        raise error(f"{what}: {name} failed (exit {proc.returncode})",
                    ToolFailure(name, argv, proc.returncode, text, env_extra, os.fspath(cwd or "")))
    return proc


def transform(name: str, path: Path, env_extra: dict[str, str], args: Sequence[Any],
              placeholders: tuple[object, object], *, what: str, input: bytes | None = None,
              input_name: str = "input", output_name: str = "output",
              error: type[ToolError] = ToolError, timeout: float | None = None) -> bytes:
    """Run the program on files in a fresh temporary folder and return its output bytes.

    ``placeholders`` are the input and output files' stand-ins (``tools.INPUT``, ``tools.OUTPUT``):
    in ``args`` they become ``input_name`` and ``output_name`` in that folder; ``input`` (when
    given) is written to the input file first. The result is the output file's content, or the
    program's standard output when ``args`` names no output stand-in (a checker such as
    spirv-val). Failures raise ``error`` as :func:`run` does
    (a program past ``timeout`` is stopped as there); the folder, with anything half-written
    in it, is removed in every case.
    """
    prefix = "kernellab-" + re.sub(r"[^A-Za-z0-9_.-]+", "-", name) + "-"
    import tempfile

    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        input_ref, output_ref = placeholders
        files = {id(input_ref): Path(tmp) / input_name, id(output_ref): Path(tmp) / output_name}
        if input is not None:
            files[id(input_ref)].write_bytes(input)
        argv = [files.get(id(a), a) for a in args]
        proc = run(name, path, env_extra, argv, what=what, error=error, timeout=timeout)
        if not any(a is output_ref for a in args):
            return proc.stdout
        try:
            return files[id(output_ref)].read_bytes()
        except OSError:
            text = (proc.stdout + proc.stderr).decode(errors="replace")
            raise error(f"{what}: {name} wrote no {output_name}",
                        ToolFailure(name, _argv(path, argv), 0, text, env_extra)) from None


def ask_version(path: Path, env_extra: dict[str, str]) -> str:
    """The ``--version`` (or ``-version``) output of the program at ``path``; "unknown" when neither answers."""
    for flag in ("--version", "-version"):
        try:
            proc = run_bounded([str(path), flag], input=None, cwd=None, env={**os.environ, **env_extra},
                               timeout=30)
        except (OSError, _Expired):
            continue
        text = (proc.stdout or proc.stderr).decode(errors="replace").strip()
        if proc.returncode == 0 and text:
            return text
    return "unknown"
