"""Compiler options that come from a file are data, not command lines.

A scenario's ``build_options``, a kernel-instantiation file's ``compiler_flags`` and a kernel
spec's options reach glslang, clang, clspv or an OpenCL driver. A file may choose *what* to
compile (macros, an include folder of its own, optimization, the language standard), never *how
the tool runs*: no option that loads a plugin, writes a file, reads a file it names, or changes
the tool's mode. Each language has an allow-list; anything else is refused with the option named.
Folders (``-I``, ``include_dirs``) and ``#include``d files must stay inside the workload's folder
unless the user allowed more on the command line (``--allow-outside PATH``). docs/security.md
lists the allow-lists.
"""
from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

_MACRO = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(=.*)?$", re.S)

#: flags allowed as they are, per language
_GLSL_FLAGS = frozenset({"-O", "-Os", "-Od", "-g", "-g0", "-gV", "-gVS", "--relaxed-errors", "--suppress-warnings",
                         "-w", "--enhanced-msgs", "--nan-clamp", "--invert-y"})
_GLSL_TARGET_ENVS = frozenset({"vulkan1.0", "vulkan1.1", "vulkan1.2", "vulkan1.3", "vulkan1.4", "spirv1.0",
                               "spirv1.1", "spirv1.2", "spirv1.3", "spirv1.4", "spirv1.5", "spirv1.6"})
_OPENCL_FLAGS = frozenset({"-w", "-Werror", "-g", "-O0", "-O1", "-O2", "-O3", "-Os"})
#: the OpenCL C options of the OpenCL specification (clBuildProgram), all "-cl-" prefixed
_OPENCL_CL = frozenset({
    "-cl-opt-disable", "-cl-mad-enable", "-cl-no-signed-zeros", "-cl-unsafe-math-optimizations",
    "-cl-finite-math-only", "-cl-fast-relaxed-math", "-cl-single-precision-constant", "-cl-denorms-are-zero",
    "-cl-fp32-correctly-rounded-divide-sqrt", "-cl-kernel-arg-info", "-cl-uniform-work-group-size",
    "-cl-no-subgroup-ifp", "-cl-strict-aliasing"})
_OPENCL_STD = re.compile(r"^-cl-std=(CL1\.0|CL1\.1|CL1\.2|CL2\.0|CL3\.0|CLC\+\+|CLC\+\+1\.0|CLC\+\+2021)$")

LANGUAGE_FAMILIES = {"glsl": "glsl", "GLSL": "glsl", "tensor-glsl": "glsl", "glsl-tensors": "glsl",
                     "opencl-c": "opencl", "OpenCL-C": "opencl", "OpenCL": "opencl"}


@dataclass(frozen=True)
class Refusal:
    """One option a file may not give, and why."""

    option: str
    reason: str

    def __str__(self) -> str:
        return f"compiler option {self.option!r} is not allowed in a file: {self.reason}"


def allowed_roots(workload_folder: Path, allow_outside: Iterable[Path] = ()) -> tuple[Path, ...]:
    """The workload's folder, ``allow_outside`` and the command line's ``--allow-outside``."""
    from kernellab import config  # the command line's choice holds for every reader of every command

    return (workload_folder.resolve(), *(Path(p).resolve() for p in (*allow_outside, *config.get().allow_outside)))


def inside(path: Path, roots: Sequence[Path]) -> bool:
    resolved = path.resolve()
    return any(resolved == root or root in resolved.parents for root in roots)


def check(language: str, text: str, base: Path, roots: Sequence[Path]) -> list[Refusal]:
    """The refusals for ``text`` (the options as the file writes them); empty when all is allowed.

    ``base`` is the folder relative ``-I`` paths resolve against; ``roots`` the folders they may
    lie in. Options of languages without an allow-list (SPIR-V: none are passed) are all refused.
    """
    try:
        words = shlex.split(text)
    except ValueError as exc:
        return [Refusal(text, f"cannot be split into words ({exc})")]
    family = LANGUAGE_FAMILIES.get(language)
    refusals: list[Refusal] = []
    i = 0
    while i < len(words):
        word = words[i]
        value = words[i + 1] if i + 1 < len(words) else None
        taken, refusal = _one(family, word, value, base, roots)
        if refusal:
            refusals.append(refusal)
        i += taken
    return refusals


def _one(family: str | None, word: str, value: str | None, base: Path,
         roots: Sequence[Path]) -> tuple[int, Refusal | None]:
    """How many words the option at ``word`` takes, and its refusal if any."""
    if family is None:
        return 1, Refusal(word, "this shader type takes no compiler options")
    if "\x00" in word:
        return 1, Refusal(word.replace("\x00", "\\0"), "holds a NUL character")
    if word in ("-D", "-U", "-I"):
        if value is None:
            return 1, Refusal(word, "needs a value")
        return 2, _one(family, word + value, None, base, roots)[1]
    if word.startswith(("-D", "-U")):
        name = word[2:]
        ok = _MACRO.match(name) if word.startswith("-D") else re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name)
        return 1, None if ok else Refusal(word, "a macro name is a C identifier")
    if word.startswith("-I"):
        folder = Path(word[2:])
        folder = folder if folder.is_absolute() else base / folder
        if not inside(folder, roots):
            return 1, Refusal(word, f"{folder} is outside the workload's folder (allow it with --allow-outside)")
        return 1, None
    if family == "glsl":
        if word in _GLSL_FLAGS:
            return 1, None
        if word == "--target-env" and value in _GLSL_TARGET_ENVS:
            return 2, None
        if word.startswith("--target-env="):
            known = word.split("=", 1)[1] in _GLSL_TARGET_ENVS
            return 1, None if known else Refusal(word, "unknown target environment")
    else:
        if word in _OPENCL_FLAGS or word in _OPENCL_CL or _OPENCL_STD.match(word):
            return 1, None
        if word.startswith("-cl-"):
            return 1, Refusal(word, "not an OpenCL C option of the OpenCL specification")
    if not word.startswith("-"):
        return 1, Refusal(word, "file names and other arguments never come from a file")
    return 1, Refusal(word, "only macros (-D/-U), include folders inside the workload (-I), optimization, debug "
                            "info and language-standard options are")


_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.M)


def check_includes(source: Path, include_dirs: Sequence[Path], roots: Sequence[Path],
                   limit: int = 256) -> list[Refusal]:
    """``#include`` directives of ``source`` (and of what it includes, found in the same folders)
    that would reach a file outside ``roots``."""
    refusals: list[Refusal] = []
    seen: set[Path] = set()
    todo = [source]
    while todo and len(seen) < limit:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        try:
            text = current.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for match in _INCLUDE.finditer(text):
            name = Path(match.group(2))
            candidates = [name] if name.is_absolute() else [d / name for d in (current.parent, *include_dirs)]
            for found in candidates:
                if not inside(found, roots):
                    if name.is_absolute() or ".." in name.parts:
                        close = ">" if match.group(1) == "<" else '"'
                        refusals.append(Refusal(f"#include {match.group(1)}{match.group(2)}{close}",
                                                f"{current}: includes a file outside the workload's folder "
                                                "(allow it with --allow-outside)"))
                        break
                    continue
                if found.is_file():
                    todo.append(found)
                    break
    return refusals
