"""Compilation as an ordered mapping of named stages.

Each stage is a function from one artifact to the next; ``stages_for(request).keys()`` *is* the
stage list. Listing stages, snapshotting one, dumping all, caching each, and starting from an
intermediate file (a ``.spv`` skips the GLSL stages) all come from this one structure.
"""
from __future__ import annotations

import hashlib
import shlex
import tempfile
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping

from kernellab import tools
from kernellab.compile.cache import ArtifactCache
from kernellab.errors import CompileError, InputError, MissingToolError

#: source languages and the stage each starts at
LANGUAGES = {"glsl": "glsl", "spirv": "spirv", "opencl-c": "opencl-c"}


@dataclass(frozen=True)
class CompileRequest:
    """What to compile and how. Paths are absolute by the time a request is made."""

    source: Path
    language: str  # "glsl" | "spirv" | "opencl-c"
    entry: str = "main"
    build_options: str = ""
    include_dirs: tuple[Path, ...] = ()
    #: SPIR-V environment to validate against (``vulkan1.0`` .. ``vulkan1.3``, ``opencl1.2``...)
    target_env: str = "vulkan1.2"
    #: identity of the device for device-specific stages (part of their cache key)
    device: str = ""

    @property
    def options(self) -> list[str]:
        return shlex.split(self.build_options)


@dataclass(frozen=True)
class Artifact:
    """The output of one stage: its binary form (bytes) and where it came from."""

    stage: str
    data: bytes
    #: content key: hash of everything this artifact depends on
    key: str

    def text(self, stages: Mapping[str, "Stage"]) -> str:
        return stages[self.stage].to_text(self.data)


def _utf8(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def spirv_to_text(data: bytes) -> str:
    """SPIR-V's text form is its disassembly."""
    dis = tools.require("spirv-dis", "the text form of SPIR-V")
    return dis.run(["--no-color", "-"], input=data, what="disassembling SPIR-V").stdout.decode()


@dataclass(frozen=True)
class Stage:
    name: str
    #: (input artifact, request) -> output bytes; None for the source stage
    run: Callable[[Artifact, CompileRequest], bytes] | None
    binary_ext: str
    text_ext: str
    to_text: Callable[[bytes], str] = _utf8
    #: external programs the stage needs; a stage whose tool is missing is left out of the list
    tools: tuple[str, ...] = ()
    #: whether the stage's output depends on the device (then the device is part of its key)
    device_specific: bool = False
    #: the stage the input comes from (None = the previous stage in the mapping)
    after: str | None = None
    description: str = ""
    #: the output depends on files the compiler opens (includes), which no key can list up front:
    #: the stage runs every time and its artifact is keyed by its content, so later stages'
    #: keys change when an included file does (preprocessing is cheap)
    content_keyed: bool = False

    def available(self) -> bool:
        return all(tools.find(t) is not None for t in self.tools)

    def tool_version(self) -> str:
        return ";".join(tools.require(t).version for t in self.tools)


# --- GLSL -------------------------------------------------------------------------------------

def _glslang_common(req: CompileRequest) -> list[str]:
    args: list[str] = []
    for d in req.include_dirs:
        args.append(f"-I{d}")
    args += req.options
    return args


def _glsl_preprocess(src: Artifact, req: CompileRequest) -> bytes:
    glslang = tools.require("glslangValidator", "compiling GLSL")
    proc = glslang.run(["-E", "-S", "comp", *_glslang_common(req), str(req.source)],
                       what=f"preprocessing {req.source}", error=CompileError)
    return proc.stdout


def _glslang_target(env: str) -> str:
    return env if env.startswith("vulkan") else "vulkan1.2"


def _glsl_to_spirv(src: Artifact, req: CompileRequest) -> bytes:
    glslang = tools.require("glslangValidator", "compiling GLSL")
    with tempfile.TemporaryDirectory(prefix="kernellab-glsl-") as tmp:
        out = Path(tmp) / "out.spv"
        args = ["-V", "-S", "comp", "--target-env", _glslang_target(req.target_env), *_glslang_common(req)]
        if req.entry != "main":
            # GLSL's entry function is always main(); `entry` names the SPIR-V entry point
            args += ["-e", req.entry, "--source-entrypoint", "main"]
        glslang.run([*args, "-o", str(out), str(req.source)], what=f"compiling {req.source}", error=CompileError)
        return out.read_bytes()


def _spirv_opt(src: Artifact, req: CompileRequest) -> bytes:
    opt = tools.require("spirv-opt", "optimizing SPIR-V")
    with tempfile.TemporaryDirectory(prefix="kernellab-opt-") as tmp:
        inp, out = Path(tmp) / "in.spv", Path(tmp) / "out.spv"
        inp.write_bytes(src.data)
        opt.run(["-O", f"--target-env={req.target_env}", str(inp), "-o", str(out)],
                what=f"optimizing {req.source}", error=CompileError)
        return out.read_bytes()


def validate_spirv(data: bytes, req: CompileRequest) -> None:
    """Every module is checked with spirv-val before a driver sees it."""
    val = tools.require("spirv-val", "validating SPIR-V")
    with tempfile.TemporaryDirectory(prefix="kernellab-val-") as tmp:
        inp = Path(tmp) / "module.spv"
        inp.write_bytes(data)
        val.run(["--target-env", req.target_env, str(inp)],
                what=f"{req.source}: SPIR-V is not valid for {req.target_env}", error=CompileError)


def _read_source(req: CompileRequest) -> bytes:
    try:
        return req.source.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read kernel source: {exc.strerror}", file=req.source) from exc


def _spirv_source(src: Artifact, req: CompileRequest) -> bytes:
    data = src.data
    if len(data) < 20 or len(data) % 4 or data[:4] not in (b"\x03\x02\x23\x07", b"\x07\x23\x02\x03"):
        raise InputError("not a SPIR-V binary (bad magic number or length)", file=req.source)
    return data


GLSL_STAGES: tuple[Stage, ...] = (
    Stage("glsl", None, "comp", "comp", description="the GLSL compute shader source"),
    Stage("preprocessed", _glsl_preprocess, "comp", "comp", tools=("glslangValidator",),
          description="GLSL after the preprocessor (glslangValidator -E)", content_keyed=True),
    Stage("spirv", _glsl_to_spirv, "spv", "spvasm", spirv_to_text, tools=("glslangValidator",), after="glsl",
          description="SPIR-V from glslang, validated with spirv-val"),
    Stage("spirv-opt", _spirv_opt, "spv", "spvasm", spirv_to_text, tools=("spirv-opt",),
          description="SPIR-V optimized by spirv-opt -O"),
)

SPIRV_STAGES: tuple[Stage, ...] = (
    Stage("spirv", None, "spv", "spvasm", spirv_to_text, description="the SPIR-V module as given"),
    Stage("spirv-opt", _spirv_opt, "spv", "spvasm", spirv_to_text, tools=("spirv-opt",),
          description="SPIR-V optimized by spirv-opt -O"),
)

#: language -> stage tuple; other modules (OpenCL C, backends) register theirs here
STAGE_TABLE: dict[str, tuple[Stage, ...]] = {"glsl": GLSL_STAGES, "spirv": SPIRV_STAGES}
#: stages whose output is SPIR-V that must pass spirv-val
SPIRV_OUTPUTS = {"spirv", "spirv-opt"}
#: the stage each language's runnable Vulkan module comes from
VULKAN_MODULE_STAGE: dict[str, str] = {"glsl": "spirv", "spirv": "spirv"}


def register_stages(language: str, stages: Iterable[Stage], vulkan_module_stage: str | None = None) -> None:
    STAGE_TABLE[language] = tuple(stages)
    if vulkan_module_stage:
        VULKAN_MODULE_STAGE[language] = vulkan_module_stage


def all_stages(language: str) -> "OrderedDict[str, Stage]":
    """Every stage defined for ``language``, in pipeline order, whether or not its tool exists."""
    try:
        table = STAGE_TABLE[language]
    except KeyError:
        raise InputError(f"unknown kernel language {language!r} (have: {', '.join(STAGE_TABLE)})") from None
    return OrderedDict((s.name, s) for s in table)


def stages_for(request: CompileRequest) -> "OrderedDict[str, Stage]":
    """The stages available for ``request`` in pipeline order (stages whose tool is missing are left out)."""
    return OrderedDict((n, s) for n, s in all_stages(request.language).items() if s.run is None or s.available())


def _digest(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for p in parts:
        b = p.encode() if isinstance(p, str) else p
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


@dataclass
class Compiler:
    """Runs stages for one request, memoizing artifacts in-process and (optionally) on disk."""

    request: CompileRequest
    cache: ArtifactCache | None = None
    #: called with each artifact as its stage completes (the snapshot mechanism hooks in here)
    on_stage: Callable[[Artifact], None] | None = None
    _done: dict[str, Artifact] = field(default_factory=dict)

    @property
    def stages(self) -> "OrderedDict[str, Stage]":
        return stages_for(self.request)

    def _input_of(self, name: str, stages: "OrderedDict[str, Stage]") -> str:
        stage = stages[name]
        if stage.after:
            return stage.after
        names = list(all_stages(self.request.language))
        return names[names.index(name) - 1]

    def artifact(self, name: str) -> Artifact:
        """The artifact of stage ``name``, running (or loading) every stage before it."""
        if name in self._done:
            return self._done[name]
        every = all_stages(self.request.language)
        if name not in every:
            raise InputError(f"{self.request.source}: no stage {name!r} for {self.request.language} "
                             f"(stages: {', '.join(every)})")
        stage = every[name]
        if stage.run is None:
            data = _read_source(self.request)
            if self.request.language == "spirv":
                data = _spirv_source(Artifact(name, data, ""), self.request)
            art = Artifact(name, data, _digest(name, data))
        else:
            if not stage.available():
                missing = [t for t in stage.tools if tools.find(t) is None]
                raise MissingToolError(f"stage {name!r} needs {', '.join(missing)}: "
                                       + "; ".join(tools.PROVIDERS.get(t, "install it") for t in missing))
            src = self.artifact(self._input_of(name, every))
            if stage.content_keyed:
                data = stage.run(src, self.request)
                art = Artifact(name, data, _digest(name, data))
            else:
                key = self._key(name, stage, src) if self.cache else ""
                data = self.cache.get(key, stage.binary_ext) if self.cache else None
                if data is None:
                    data = stage.run(src, self.request)
                    if name in SPIRV_OUTPUTS:
                        validate_spirv(data, self.request)
                    if self.cache:
                        self.cache.put(key, stage.binary_ext, data)
                art = Artifact(name, data, key)
        if art.stage in SPIRV_OUTPUTS and stage.run is None:
            validate_spirv(art.data, self.request)
        self._done[name] = art
        if self.on_stage:
            self.on_stage(art)
        return art

    def _key(self, name: str, stage: Stage, src: Artifact) -> str:
        """The content key of a stage's output: input, options, tool versions, device."""
        key_input = src.key or _digest(src.stage, src.data)
        if name == "spirv" and self.request.language == "glsl":
            # includes and -D options change the result without changing the source file,
            # so the key is taken over the preprocessed text
            pre = self.artifact("preprocessed")
            key_input = pre.key or _digest(pre.stage, pre.data)
        return _digest(name, key_input, self.request.entry, self.request.build_options,
                       self.request.target_env, stage.tool_version(),
                       self.request.device if stage.device_specific else "")

    def vulkan_module(self) -> Artifact:
        """The SPIR-V module a Vulkan device runs for this request."""
        try:
            stage = VULKAN_MODULE_STAGE[self.request.language]
        except KeyError:
            raise InputError(f"{self.request.source}: {self.request.language} kernels cannot run on Vulkan") from None
        return self.artifact(stage)

    def run_all(self) -> list[Artifact]:
        """Every available stage's artifact, in pipeline order."""
        return [self.artifact(n) for n in self.stages]


def dump_stages(compiler: Compiler, directory: Path, uid: str) -> list[Path]:
    """Write every available stage of a kernel as ``<uid>.<stage>.<ext>`` (text form where one exists)."""
    from kernellab.outputs import write_bytes, write_text

    import logging

    from kernellab.errors import DeviceError

    written = []
    stages = compiler.stages
    for name, stage in stages.items():
        try:
            art = compiler.artifact(name)
        except DeviceError as exc:
            if not stage.device_specific:
                raise
            # e.g. an OpenCL device's binary while the run is on a Vulkan device: not this run's
            logging.getLogger("kernellab.compile").warning("%s: stage %s not dumped: %s", uid, name, exc)
            continue
        if stage.to_text is _utf8:
            path = directory / f"{uid}.{art.stage}.{stage.text_ext}"
            write_bytes(path, art.data)
        else:
            path = directory / f"{uid}.{art.stage}.{stage.binary_ext}"
            write_bytes(path, art.data)
            write_text(directory / f"{uid}.{art.stage}.{stage.text_ext}", art.text(stages))
        written.append(path)
    return written


# other languages register their stage tables on import (kept last: they import this module)
from kernellab.compile import opencl_stages, spirv_asm_stages  # noqa: E402,F401
