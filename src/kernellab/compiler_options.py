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
from collections.abc import Iterable, Sequence
from pathlib import Path

from kernellab.errors import InputError, Problem

# the parsed options, the folders' check and the records of one option and of a refusal live in
# parsed_options and option_records (a SPIR-V run needs only the former); the door's callers keep
# finding each of these names here
from kernellab.option_records import (
    _UNSAFE,
    DEFINE,
    FLAG,
    INCLUDE_DIR,
    STD,
    TARGET_ENV,
    UNDEF,
    USER,
    Option,
    OptionsRefused,
    Refusal,
    _printable,
)
from kernellab.parsed_options import Options, allowed_roots, inside  # noqa: F401 - allowed_roots: re-exported
from kernellab.shader_languages import LANGUAGE_FAMILIES

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
#: (compiled on first use, by re's cache, as _INCLUDE is: a run of a SPIR-V module checks no OpenCL option)
_OPENCL_STD = r"^-cl-std=(CL1\.0|CL1\.1|CL1\.2|CL2\.0|CL3\.0|CLC\+\+|CLC\+\+1\.0|CLC\+\+2021)$"



#: spirv-opt's transformation passes a file may name (AmberScript's SHADER_OPTIMIZATION): each a
#: flag of its own that takes no value and reads or writes no file. Left out: options that take a
#: value or a file (``-Oconfig=``, ``--loop-fission``, ``--loop-peeling-threshold``,
#: ``--loop-unroll-partial``), that change what the validator accepts (``--relax-*``,
#: ``--*-block-layout``, ``--skip-validation``) or that only print (``--print-all``, ``--time-report``)
SPIRV_OPT_PASSES = frozenset({
    "-O", "-Os", "--amd-ext-to-khr", "--before-hlsl-legalization", "--ccp", "--cfg-cleanup",
    "--combine-access-chains", "--compact-ids", "--convert-local-access-chains", "--convert-relaxed-to-half",
    "--copy-propagate-arrays", "--descriptor-scalar-replacement", "--eliminate-dead-branches",
    "--eliminate-dead-code-aggressive", "--eliminate-dead-const", "--eliminate-dead-functions",
    "--eliminate-dead-inserts", "--eliminate-dead-input-components", "--eliminate-dead-variables",
    "--eliminate-insert-extract", "--eliminate-local-multi-store", "--eliminate-local-single-block",
    "--eliminate-local-single-store", "--fix-func-call-param", "--flatten-decorations",
    "--fold-spec-const-op-composite", "--freeze-spec-const", "--graphics-robust-access", "--if-conversion",
    "--inline-entry-points-exhaustive", "--legalize-hlsl", "--local-redundancy-elimination", "--loop-fusion",
    "--loop-invariant-code-motion", "--loop-peeling", "--loop-unroll", "--loop-unswitch", "--merge-blocks",
    "--merge-return", "--private-to-local", "--redundancy-elimination", "--relax-float-ops",
    "--remove-duplicates", "--remove-unused-interface-variables", "--replace-desc-array-access-using-var-index",
    "--replace-invalid-opcode", "--scalar-replacement", "--simplify-instructions", "--spread-volatile-semantics",
    "--ssa-rewrite", "--strength-reduction", "--strip-debug", "--strip-nonsemantic", "--strip-reflect",
    "--unify-const", "--upgrade-memory-model", "--vector-dce", "--workaround-1209", "--wrap-opkill",
})


def optimizer_passes(words: Sequence[str]) -> Options:
    """spirv-opt passes a file names, one word each (AmberScript's SHADER_OPTIMIZATION block): each
    must be in :data:`SPIRV_OPT_PASSES`; :class:`OptionsRefused` names every other word."""
    refusals = [Refusal(_printable(w), "not a spirv-opt pass a file may name (a transformation pass that "
                                       "takes no value and names no file)") for w in words if w not in SPIRV_OPT_PASSES]
    if refusals:
        raise OptionsRefused(refusals)
    return Options(tuple(Option(FLAG, w) for w in words), "file")


#: clspv options a file may name (AmberScript's COMPILE_OPTIONS) that change where a kernel's
#: arguments and built-in values reach it: by-value arguments in a uniform buffer or clustered
#: push constants, the work dimension and global offset as specialization constants. Whoever
#: passes them reads the layout back from clspv's reflection (``compile.amber.kernel_arguments``).
CLSPV_LAYOUT_OPTIONS = frozenset({"-pod-ubo", "-pod-pushconstant", "-cluster-pod-kernel-args", "-work-dim",
                                  "-global-offset"})


def clspv_layout_options(words: Sequence[str]) -> Options:
    """Options of :data:`CLSPV_LAYOUT_OPTIONS`, one word each; :class:`OptionsRefused` names any other."""
    refusals = [Refusal(_printable(w), "not a clspv argument-layout option kernellab reads back "
                                       f"({', '.join(sorted(CLSPV_LAYOUT_OPTIONS))})")
                for w in words if w not in CLSPV_LAYOUT_OPTIONS]
    if refusals:
        raise OptionsRefused(refusals)
    return Options(tuple(Option(FLAG, w) for w in words), "file")


def own(*words: str) -> Options:
    """Options kernellab adds itself (``-cl-kernel-arg-info``, ``-cl-opt-disable``, ``-cl-std=..``),
    which are flags of the OpenCL allow-list; anything else is a programming error."""
    items = []
    for word in words:
        kind = STD if word.startswith("-cl-std=") else FLAG
        if not (word in _OPENCL_FLAGS or word in _OPENCL_CL or re.match(_OPENCL_STD, word)):
            raise ValueError(f"{word!r} is not an OpenCL option kernellab adds")
        items.append(Option(kind, word))
    return Options(tuple(items), "kernellab")


def folders(paths: Iterable[Path]) -> Options:
    """``-I`` options kernellab adds for folders it has already checked (a scenario's
    ``include_paths``, the kernel's own folder)."""
    return Options(tuple(Option(INCLUDE_DIR, str(p), str(p)) for p in paths), "kernellab")


def parse(language: str, text: str, base: Path, roots: Sequence[Path], origin: str = "file") -> Options:
    """The options ``text`` gives, parsed once into :class:`Options`; :class:`OptionsRefused` when
    any is not allowed (a file's) or the text cannot be split.

    ``base`` is the folder relative ``-I`` paths resolve against; ``roots`` the folders they may
    lie in. Options of languages without an allow-list (SPIR-V: none are passed) are all refused.
    ``origin="user"`` (kernellab's own ``--options``) takes each word as given."""
    import shlex  # options given as text (a SPIR-V shader's have none)

    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise OptionsRefused([Refusal(text, f"cannot be split into words ({exc})")]) from None
    if origin == "user":
        return Options(tuple(Option(USER, w) for w in words), "user")
    family = LANGUAGE_FAMILIES.get(language)
    items: list[Option] = []
    refusals: list[Refusal] = []
    i = 0
    while i < len(words):
        value = words[i + 1] if i + 1 < len(words) else None
        taken, parsed = _one(family, words[i], value, base, roots)
        if isinstance(parsed, Refusal):
            refusals.append(parsed)
        else:
            items.append(parsed)
        i += taken
    if refusals:
        raise OptionsRefused(refusals)
    return Options(tuple(items), origin)


def read(language: str, text: str, base: Path, roots: Sequence[Path], place: tuple[str, str],
         origin: str = "file") -> Options:
    """:func:`parse`, a refusal being bad input (exit 2) at ``place``: (file, JSON pointer)."""
    try:
        return parse(language, text, base, roots, origin)
    except OptionsRefused as exc:
        raise InputError([Problem(place[0], place[1], str(r)) for r in exc.refusals]) from None


def parsed_or_none(language: str, text: str, base: Path, roots: Sequence[Path]) -> Options | None:
    """:func:`parse`, or None when an option is refused (for a reader that reports refusals
    elsewhere and only needs the options when they are allowed)."""
    try:
        return parse(language, text, base, roots)
    except OptionsRefused:
        return None


def check(language: str, text: str, base: Path, roots: Sequence[Path]) -> list[Refusal]:
    """The refusals for ``text`` (the options as the file writes them); empty when all is allowed."""
    try:
        parse(language, text, base, roots)
    except OptionsRefused as exc:
        return exc.refusals
    return []


def _one(family: str | None, word: str, value: str | None, base: Path,
         roots: Sequence[Path]) -> tuple[int, Option | Refusal]:
    """How many words the option at ``word`` takes, and the option or its refusal."""
    if family is None:
        return 1, Refusal(word, "this shader type takes no compiler options")
    if word in ("-D", "-U", "-I"):
        if value is None:
            return 1, Refusal(word, "needs a value")
        return 2, _one(family, word + value, None, base, roots)[1]
    if word.startswith(("-D", "-U")):
        return 1, _macro(word)
    if re.search(_UNSAFE, word):
        return 1, Refusal(_printable(word), "an option is one word: no whitespace, newline, quote, backslash, "
                                            "'#' or control character")
    if word.startswith("-I"):
        return 1, _include_dir(word, base, roots)
    known = _glsl_option(word, value) if family == "glsl" else _opencl_option(word)
    if known is not None:
        return known
    if not word.startswith("-"):
        return 1, Refusal(word, "file names and other arguments never come from a file")
    return 1, Refusal(word, "only macros (-D/-U), include folders inside the workload (-I), optimization, debug "
                            "info and language-standard options are")


def _macro(word: str) -> Option | Refusal:
    """``-DNAME``, ``-DNAME=value`` or ``-UNAME``."""
    name, eq, macro_value = word[2:].partition("=")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or (eq and word.startswith("-U")):
        return Refusal(_printable(word), "a macro name is a C identifier")
    if re.search(_UNSAFE, macro_value):
        return Refusal(_printable(word), "a macro's value is one word: no whitespace, newline, quote, "
                                         "backslash, '#' or control character")
    if word.startswith("-U"):
        return Option(UNDEF, name)
    return Option(DEFINE, name, macro_value if eq else None)


def _include_dir(word: str, base: Path, roots: Sequence[Path]) -> Option | Refusal:
    """``-Ifolder``: allowed inside ``roots`` (relative to ``base``), passed on resolved."""
    folder = Path(word[2:])
    folder = folder if folder.is_absolute() else base / folder
    if not inside(folder, roots):
        return Refusal(word, f"{folder} is outside the workload's folder (allow it with --allow-outside)")
    resolved = str(folder.resolve())
    if re.search(_UNSAFE, resolved):
        return Refusal(word, f"the folder {resolved!r} cannot be passed as one word (whitespace or quotes)")
    return Option(INCLUDE_DIR, word[2:], resolved)


def _glsl_option(word: str, value: str | None) -> tuple[int, Option | Refusal] | None:
    """A glslc flag or target environment; None when ``word`` is neither."""
    if word in _GLSL_FLAGS:
        return 1, Option(FLAG, word)
    if word == "--target-env" and value in _GLSL_TARGET_ENVS:
        return 2, Option(TARGET_ENV, word, value)
    if word.startswith("--target-env="):
        env = word.split("=", 1)[1]
        return 1, Option(TARGET_ENV, "--target-env", env) if env in _GLSL_TARGET_ENVS \
            else Refusal(word, "unknown target environment")
    return None


def _opencl_option(word: str) -> tuple[int, Option | Refusal] | None:
    """An OpenCL C language standard or build flag; None when ``word`` is neither."""
    if re.match(_OPENCL_STD, word):
        return 1, Option(STD, word)
    if word in _OPENCL_FLAGS or word in _OPENCL_CL:
        return 1, Option(FLAG, word)
    if word.startswith("-cl-"):
        return 1, Refusal(word, "not an OpenCL C option of the OpenCL specification")
    return None


_INCLUDE = r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]'  # with re.M


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
        for match in re.finditer(_INCLUDE, text, re.M):
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
