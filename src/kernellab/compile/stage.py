"""The records compilation is made of: a request, a stage, a stage's artifact, a source language;
and the request of a scenario's shader (what ``run`` compiles).

Each language module (``glsl_stages``, ``spirv_stages``, ``spirv_asm_stages``, ``opencl_stages``,
``tensor_glsl``) builds its :class:`Language` from these; ``compile.pipeline`` puts them in one
table and runs them.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

from kernellab import config, parsed_options, shader_languages, spirv_format, tools
from kernellab.errors import CompileError, InputError, MissingToolError, Problem, shown
from kernellab.records import Frozen, Value

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any


def _in_cache(source: Path) -> bool:
    """Whether ``source`` lies in kernellab's cache, or in the process's private temporary folder
    that stands for it when there is none (``scratch``), where the AmberScript materializer writes
    its origins: a record beside a workload's own shader is the workload's data, and must not
    choose which file and line an error names."""
    import sys

    scratch = sys.modules.get("kernellab.scratch")  # loaded by whatever put a file there
    folders = [config.get().cache_dir, *(scratch.made() if scratch is not None else ())]
    for folder in folders:
        try:
            source.resolve().relative_to(folder.resolve())
        except (OSError, ValueError):
            continue
        return True
    return False


def placed(exc: CompileError, place: tuple[str, str] | None, source: Path | None = None) -> CompileError:
    """``exc`` headed by the workload file and the JSON path that name the kernel (as every
    other bad-input error is); unchanged without a place or when it has one already. A
    ``source`` made from an AmberScript file names the script and its line instead."""
    from kernellab.formats.amber.origins import origin_of, translated  # an error's path only (json, shlex)

    if source is not None and _in_cache(source) and (origin := origin_of(source)) is not None:
        return translated(exc, origin, [source.name])
    if place is None or any(p.file or p.where for p in exc.problems):
        return exc
    file, where = place
    out = CompileError(f"{shown(file)}: {where}: {exc}")
    out.failure = exc.failure
    out.problems = [Problem(file, where, str(exc))]
    return out


class CompileRequest(Frozen):
    """What to compile and how. Paths are absolute by the time a request is made. (A frozen record,
    not a dataclass: a run imports no dataclasses, issue 23; ``replace`` makes a changed copy.)"""

    _fields = _compared = ("source", "language", "entry", "build_options", "include_dirs", "target_env", "device",
                           "options_from", "roots", "options_place", "shader_stage", "place", "clspv_layout")
    source: Path
    language: str  # a key of compile.pipeline.LANGUAGES: "glsl" | "spirv" | "opencl-c" | ...
    entry: str
    build_options: str
    include_dirs: tuple[Path, ...]
    #: SPIR-V environment to validate against (``vulkan1.0`` .. ``vulkan1.3``, ``opencl1.2``...)
    target_env: str
    #: identity of the device for device-specific stages (part of their cache key)
    device: str
    #: where ``build_options`` came from: ``"file"`` (a workload file: they pass the language's
    #: allow-list before any tool sees them) or ``"user"`` (kernellab's own ``--options``: the
    #: user's choice, taken as given)
    options_from: str
    #: folders a file's ``-I`` options and ``#include``s may reach (the workload's folder and
    #: those given with ``--allow-outside``); empty: the source's folder and ``include_dirs``
    roots: tuple[Path, ...]
    #: where a file gave the options, for the error that refuses one: (file, JSON pointer)
    options_place: tuple[str, str] | None
    #: the pipeline stage a GLSL source is compiled for: ``compute``, ``vertex`` or ``fragment``
    shader_stage: str
    #: where a workload file names this kernel: (file, JSON pointer); a compile error names it
    place: tuple[str, str] | None
    #: clspv options that move arguments (``compiler_options.CLSPV_LAYOUT_OPTIONS``, from an
    #: AmberScript COMPILE_OPTIONS); the caller reads where they went from clspv's reflection
    clspv_layout: tuple[str, ...]

    def __init__(self, source: Path, language: str, entry: str = "main", build_options: str = "",
                 include_dirs: tuple[Path, ...] = (), target_env: str = "vulkan1.2", device: str = "",
                 options_from: str = "file", roots: tuple[Path, ...] = (),
                 options_place: tuple[str, str] | None = None, shader_stage: str = "compute",
                 place: tuple[str, str] | None = None, clspv_layout: tuple[str, ...] = ()):
        vars(self).update(source=source, language=language, entry=entry, build_options=build_options,
                          include_dirs=include_dirs, target_env=target_env, device=device, options_from=options_from,
                          roots=roots, options_place=options_place, shader_stage=shader_stage, place=place,
                          clspv_layout=clspv_layout)

    @property
    def shown_source(self) -> str:
        """The source as messages name it: beside the workload as the user typed it (``errors.shown``)."""
        return shown(self.source)

    @property
    def options(self) -> list[str]:
        """The build options as argument words, rendered from :attr:`option_list`; options from
        a file are checked first (an InputError naming the option when one is not allowed)."""
        if self.options_from != "user":
            self.check_file_options()
        return self.option_list.argv()

    @functools.cached_property
    def option_list(self) -> parsed_options.Options:
        """The build options parsed once through the door (:func:`compiler_options.read`): what
        every tool's argv and the cache key are made of."""
        roots = self.roots or parsed_options.allowed_roots(self.source.parent, self.include_dirs)
        place = self.options_place or (str(self.source), "build options")
        if shader_languages.LANGUAGE_FAMILIES.get(self.language) is None and self.options_from != "user":
            return parsed_options.Options(origin="file")  # SPIR-V and binaries: no tool takes options
        from kernellab import compiler_options  # the door's parser: only where a tool takes options

        options = compiler_options.read(self.language, self.build_options, roots[0], roots, place,
                                        "user" if self.options_from == "user" else "file")
        return options + compiler_options.clspv_layout_options(self.clspv_layout) if self.clspv_layout else options

    def check_file_options(self) -> None:
        """Refuse (exit 2, the option named) file-given options outside the language's allow-list,
        and ``#include``s that leave the allowed folders: the options are data, not command lines."""
        family = shader_languages.family(self.language)
        if family is None:
            return  # SPIR-V and binaries: no tool takes options from the request
        from kernellab import compiler_options  # the door's parser: only where a tool takes options

        roots = self.roots or compiler_options.allowed_roots(self.source.parent, self.include_dirs)
        roots = (*roots, *config.get().allow_outside)
        # #includes are checked where they are read and inlined (compile.preprocess)
        refusals = compiler_options.check(self.language, self.build_options, roots[0], roots)
        if refusals:
            file, where = self.options_place or (str(self.source), "build options")
            raise InputError([Problem(file, where, str(r)) for r in refusals])


def target_env_for_api(api_version: str) -> str:
    """The SPIR-V environment for a Vulkan device of ``api_version`` ("1.3.230" → ``vulkan1.3``;
    newer than 1.3 → 1.3, the newest the compilers know)."""
    try:
        major, minor = (int(x) for x in api_version.split(".")[:2])
    except ValueError:
        return "vulkan1.2"
    return f"vulkan1.{min(minor, 3)}" if major == 1 else "vulkan1.3"


def shader_request(path: Path, index: int, shader: Any, target_env: str, *, device: str = "",
                   entry: str | None = None, build_options: str | None = None) -> CompileRequest:
    """The request for the shader at ``/resources/INDEX`` of the scenario ``path``: its options
    (or ``build_options``, the user's ``--options``), include folders, stage; errors name its place."""
    language = shader_languages.LANGUAGE_OF_SHADER_TYPE[shader.type]
    return CompileRequest(shader.src_path, language, entry=entry or shader.entry,
                          build_options=shader.build_options if build_options is None else build_options,
                          include_dirs=shader.include_paths, target_env=target_env, device=device,
                          options_from=options_origin(build_options), roots=(path.parent,),
                          options_place=(str(path), f"/resources/{index}/shader/build_options"),
                          shader_stage=shader.stage, place=(str(path), f"/resources/{index}/shader/src"))


def options_origin(command_line_options: str | None) -> str:
    """``--options`` on kernellab's command line replace the file's and are the user's own."""
    return "file" if command_line_options is None else "user"


class Artifact(Value):
    """The output of one stage: its binary form (bytes) and where it came from. (A value of a
    plain class: a run makes one, and a dataclass cost its start-up more to build than the
    class, issue 23.)"""

    __slots__ = ("data", "key", "stage")
    _fields = ("stage", "data", "key")

    def __init__(self, stage: str, data: bytes, key: str):
        self.stage = stage
        self.data = data
        #: content key: hash of everything this artifact depends on
        self.key = key

    def text(self, stages: dict[str, Stage]) -> str:
        return stages[self.stage].to_text(self.data)


class Output:
    """What a stage makes, which decides its text form and whether spirv-val checks it: one of
    these names (a plain namespace rather than an ``enum.Enum``, whose class costs a run's
    start-up half a million instructions for three constants)."""

    #: source-like text: the bytes are the text, one form for both
    TEXT = "text"
    #: a SPIR-V module: validated with spirv-val; its text form is its disassembly
    SPIRV = "spirv"
    #: another binary (LLVM bitcode, a device binary): its stage's ``disassemble`` gives the text
    BINARY = "binary"


def spirv_to_text(data: bytes) -> str:
    """SPIR-V's text form is its disassembly."""
    dis = tools.require("spirv-dis", "the text form of SPIR-V")
    return dis.run(["--no-color", "-"], input=data, what="disassembling SPIR-V").stdout.decode()


def validate_spirv(data: bytes, req: CompileRequest, target_env: str = "") -> None:
    """Every module is checked with spirv-val before a driver sees it (for ``target_env``, by
    default the request's)."""
    env = target_env or req.target_env
    from kernellab.compile import spirv_tools_lib  # the library answers a valid module without spirv-val

    if spirv_tools_lib.is_valid(data, env):
        return
    val = tools.require("spirv-val", "validating SPIR-V")
    val.transform(["--target-env", env, tools.INPUT], input=data, input_name="module.spv",
                  what=f"{req.shown_source}: SPIR-V is not valid for {env}", error=CompileError)


def check_spirv_binary(data: bytes, file: Path) -> bytes:
    """``data`` if it can be a SPIR-V module (magic number, whole words), else an InputError."""
    if not spirv_format.looks_like_module(data[:4], len(data)):
        raise InputError("not a SPIR-V binary (bad magic number or length)", file=file)
    return data


class Stage(Frozen):
    """One stage of a compilation: how it runs and what it writes. (A frozen record, not a
    dataclass: a run imports no dataclasses, issue 23; a subclass changes methods only.)"""

    _fields = _compared = ("name", "run", "binary_ext", "text_ext", "output", "disassemble", "tools",
                           "device_specific", "after", "keyed_by", "description", "content_keyed", "spirv_env")
    name: str
    #: (input artifact, request) -> output bytes; None for the source stage
    run: Callable[[Artifact, CompileRequest], bytes] | None
    binary_ext: str
    text_ext: str
    #: an :class:`Output` name
    output: str
    #: the text form of a BINARY output
    disassemble: Callable[[bytes], str] | None
    #: external programs the stage needs; a stage whose tool is missing is left out of the list
    tools: tuple[str, ...]
    #: whether the stage's output depends on the device (then the device is part of its key)
    device_specific: bool
    #: the stage the input comes from (None = the previous stage in the mapping)
    after: str | None
    #: the stage whose artifact stands for the input in the cache key: a compiler that reads the
    #: user's file itself (includes, -D options) is keyed by the preprocessed text
    keyed_by: str | None
    description: str
    #: the output depends on files the compiler opens (includes), which no key can list up front:
    #: the stage runs every time and its artifact is keyed by its content, so later stages'
    #: keys change when an included file does (preprocessing is cheap)
    content_keyed: bool
    #: the SPIR-V environment a SPIRV output is validated for when it is not the request's
    #: (llvm-spirv's Kernel-capability SPIR-V is OpenCL's, whatever Vulkan the request targets)
    spirv_env: str

    def __init__(self, name: str, run: Callable[[Artifact, CompileRequest], bytes] | None, binary_ext: str,
                 text_ext: str, output: str = Output.TEXT, disassemble: Callable[[bytes], str] | None = None,
                 tools: tuple[str, ...] = (), device_specific: bool = False, after: str | None = None,
                 keyed_by: str | None = None, description: str = "", content_keyed: bool = False,
                 spirv_env: str = ""):
        vars(self).update(name=name, run=run, binary_ext=binary_ext, text_ext=text_ext, output=output,
                          disassemble=disassemble, tools=tools, device_specific=device_specific, after=after,
                          keyed_by=keyed_by, description=description, content_keyed=content_keyed,
                          spirv_env=spirv_env)

    @property
    def is_spirv(self) -> bool:
        return self.output is Output.SPIRV

    def to_text(self, data: bytes) -> str:
        if self.output is Output.SPIRV:
            return spirv_to_text(data)
        if self.output is Output.BINARY and self.disassemble is not None:
            return self.disassemble(data)
        return data.decode("utf-8", errors="replace")

    def available(self) -> bool:
        return all(tools.find(t) is not None for t in self.tools)

    def check_available(self) -> None:
        """Raise MissingToolError naming what to install when the stage cannot run here."""
        if not self.available():
            missing = [t for t in self.tools if tools.find(t) is None]
            raise MissingToolError(f"stage {self.name!r} needs {', '.join(missing)}: "
                                   + "; ".join(tools.PROVIDERS.get(t, "install it") for t in missing))

    def tool_version(self) -> str:
        """Which programs make this stage: each one's path and version (part of the cache key)."""
        return ";".join(tools.require(t).identity for t in self.tools)


class Language(Value):
    """A source language: its stages in pipeline order, the first being the source itself. (A
    value of a plain class: a run makes one, and a dataclass cost its start-up more to build than
    the class, issue 23.)"""

    __slots__ = ("name", "stages", "vulkan_module")
    _fields = ("name", "stages", "vulkan_module")

    def __init__(self, name: str, stages: tuple[Stage, ...], vulkan_module: str | None = None):
        self.name = name
        self.stages = stages
        #: the stage whose SPIR-V a Vulkan device runs; None when the language cannot run on Vulkan
        self.vulkan_module = vulkan_module
