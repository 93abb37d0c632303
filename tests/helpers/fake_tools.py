"""Programs that stand in for real tools in tests: broken or old impostors put first on PATH, and
wrappers that record each time kernellab starts a tool."""
from __future__ import annotations

import os
import shlex
from pathlib import Path

from kernellab import tools

#: the tools Debian's packages put on PATH ahead of the pip ones (issue 11)
IMPOSTORS = ("glslangValidator", "spirv-val", "spirv-dis", "spirv-opt", "spirv-as", "llvm-dis")


def write_script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def impostors(folder: Path, names: tuple[str, ...] = IMPOSTORS) -> Path:
    """A folder of programs named like the real tools that print an old version and fail (or, for
    spirv-val, reject everything as Debian 12's does with the tensor capability)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        write_script(folder / name, f"""case "$1" in
  --version|-version) echo "{name} version 1.0.0 (LLVM version 9.0.0, impostor)"; exit 0;;
esac
echo "{name}: impostor: Invalid capability operand: 4174" >&2
exit 3
""")
    return folder


def counting_wrappers(folder: Path, log: Path, names: tuple[str, ...]) -> Path:
    """For each tool kernellab finds now, a wrapper in ``folder`` that appends its command line to
    ``log`` and runs the real one; put ``folder`` on KERNELLAB_TOOL_PATH to count spawns."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        real = tools.find(name)
        assert real is not None, f"{name} is needed for this test"
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in real.env.items())
        write_script(folder / name, f'echo "{name} $*" >> {shlex.quote(str(log))}\n'
                                    f'{env} exec {shlex.quote(str(real.path))} "$@"\n')
    return folder


def spawned(log: Path) -> list[str]:
    """The command lines the wrappers recorded (and forget them)."""
    if not log.exists():
        return []
    lines = log.read_text().splitlines()
    log.unlink()
    return lines


def path_with_first(folder: Path) -> str:
    return str(folder) + os.pathsep + os.environ.get("PATH", "")
