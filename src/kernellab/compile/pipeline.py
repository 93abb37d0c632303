"""Compilation as an ordered mapping of named stages.

Each stage is a function from one artifact to the next; ``stages_for(request).keys()`` *is* the
stage list. Listing stages, snapshotting one, dumping all, caching each, and starting from an
intermediate file (a ``.spv`` skips the GLSL stages) all come from this one structure.

The table of languages is written out here rather than filled in by imports, so reading it tells
which languages exist and in which order they are offered. A language's module is imported when
its stages are first asked for: a run of a SPIR-V module loads none of the GLSL, OpenCL C or
tensor stages (issue 23: ~20 M instructions of start-up). The table lives here rather than in a
module of its own so that a run imports one module less (issue 23); ``compile.languages`` keeps
its names where the commands import them.
"""
from __future__ import annotations

import importlib
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from kernellab import config, logs, parsed_options, tools
from kernellab.compile.cache import ArtifactCache, default_cache, sha256
from kernellab.compile.source_files import read_checked
from kernellab.compile.stage import (
    Artifact,
    CompileRequest,
    Language,
    Output,
    Stage,
    check_spirv_binary,
    placed,
    spirv_to_text,
    validate_spirv,
)
from kernellab.errors import CompileError, DeviceError, InputError, Problem
from kernellab.formats.paths import escaped_name
from kernellab.outputs import write_bytes, write_text

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any

    from kernellab.compile import preprocess

# the names callers import from here, wherever they are defined
__all__ = ["LANGUAGES", "LANGUAGE_MODULES", "VULKAN_MODULE_STAGE", "Artifact", "CompileRequest", "Compiler", "Stage",
           "all_stages", "compile_tensor_glsl", "dump_stages", "language", "spirv_to_text", "stages_for",
           "validate_spirv"]

log = logs.getLogger("kernellab.compile")


#: language name -> the module of ``kernellab.compile`` whose ``LANGUAGE`` holds its stages (in
#: the order the languages are offered)
LANGUAGE_MODULES: dict[str, str] = {
    "glsl": "glsl_stages",
    "spirv": "spirv_stages",
    "opencl-c": "opencl_stages",
    "spirv-asm": "spirv_asm_stages",
    "glsl-tensors": "tensor_glsl",
}

#: the stage each language's runnable Vulkan module comes from (each module's ``Language`` says
#: the same: tests/unit/test_compile_languages.py compares them), written out so that asking for it
#: imports no compiler's module
VULKAN_MODULE_STAGE: dict[str, str] = {"glsl": "spirv", "spirv": "spirv", "opencl-c": "spirv-vulkan",
                                       "spirv-asm": "spirv", "glsl-tensors": "spirv"}


def _language_of(name: str) -> Language:
    """The :class:`Language` of a name of :data:`LANGUAGE_MODULES`, its module imported now."""
    module = importlib.import_module(f"kernellab.compile.{LANGUAGE_MODULES[name]}")
    lang: Language = module.LANGUAGE
    return lang


def _languages() -> Mapping[str, Language]:
    """:data:`LANGUAGES`, made when first asked for: a run asks :func:`language` only, and a
    ``Mapping`` subclass is an abstract base class, whose making is dear (start-up, issue 23)."""

    class _Languages(Mapping[str, Language]):
        """Language name -> :class:`Language`, each module imported on first use."""

        def __getitem__(self, name: str) -> Language:
            return _language_of(name)

        def __iter__(self) -> Iterator[str]:
            return iter(LANGUAGE_MODULES)

        def __len__(self) -> int:
            return len(LANGUAGE_MODULES)

    return _Languages()


if TYPE_CHECKING:
    #: language name -> its stages (in the order the languages are offered)
    LANGUAGES: Mapping[str, Language]


def __getattr__(name: str) -> Any:
    """``LANGUAGES``: language name -> its stages (in the order the languages are offered),
    made on first use (:func:`_languages`)."""
    if name == "LANGUAGES":
        languages = globals()["LANGUAGES"] = _languages()
        return languages
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def language(name: str) -> Language:
    if name not in LANGUAGE_MODULES:
        raise InputError(f"unknown kernel language {name!r} (have: {', '.join(LANGUAGE_MODULES)})")
    return _language_of(name)


def all_stages(language_name: str) -> OrderedDict[str, Stage]:
    """Every stage defined for a language, in pipeline order, whether or not its tool exists."""
    stages: OrderedDict[str, Stage] = OrderedDict()
    for stage in language(language_name).stages:
        stages[stage.name] = stage
    return stages


def stages_for(request: CompileRequest) -> OrderedDict[str, Stage]:
    """The stages available for ``request`` in pipeline order (stages whose tool is missing are left out)."""
    return OrderedDict((n, s) for n, s in all_stages(request.language).items() if s.run is None or s.available())


#: the languages whose compilers read ``#include``d files: kernellab inlines them (preprocess)
INCLUDING_LANGUAGES = frozenset({"glsl", "opencl-c", "glsl-tensors"})


def _read_source(req: CompileRequest) -> bytes:
    """The kernel's bytes, read as each file it includes is: a regular file, bounded, inside the
    workload's folder or ``--allow-outside`` (a scenario's ``src: "/etc/passwd"`` once reached the
    compiler, whose log quotes it, while validate refused it)."""
    roots = [*(req.roots or (req.source.parent, *req.include_dirs)), *config.get().allow_outside]
    try:
        return read_checked(req.source, roots)[1]
    except ValueError as exc:
        place = req.place or source_place(req)
        if place is None:
            raise InputError(f"cannot read kernel source: {exc}", file=req.source) from None
        raise InputError([Problem(place[0], place[1], f"cannot read the kernel: {exc}")]) from None


def source_place(req: CompileRequest) -> tuple[str, str] | None:
    """The workload file and JSON path of the request's kernel source (for an include refused)."""
    if req.options_place is None:
        return None
    file, where = req.options_place
    head, _, last = where.rpartition("/")
    if last == "build_options":
        return file, f"{head}/src"
    if last == "compiler_flags":
        return file, f"{head}/kernel_file"
    return file, where


def expand_request(req: CompileRequest, data: bytes | None = None) -> preprocess.Expanded:
    """The request's source with its includes inlined and checked against the workload's folder
    and ``--allow-outside`` (an InputError naming the include when one is refused)."""
    # the include step, imported by the languages that include files (a SPIR-V module includes none)
    from kernellab.compile import preprocess

    roots = [*(req.roots or (req.source.parent, *req.include_dirs)), *config.get().allow_outside]
    dirs = [*req.include_dirs, *preprocess.option_include_dirs(req.options, roots[0])]
    if req.options_from == "user":
        roots += dirs  # kernellab's own --options -I: the user's choice, as every option of theirs is
    return preprocess.expand(req.source, req.language, dirs, roots, data, source_place(req), marked=True)


def _digest(*parts: bytes | str) -> str:
    h = sha256()
    for p in parts:
        b = p.encode() if isinstance(p, str) else p
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


def driver_source(source: Path, workload: Path, place: tuple[str, str] | None, *,
                  include_dirs: Sequence[Path] = (), options: parsed_options.Options | None = None,
                  language: str = "opencl-c") -> bytes:
    """The OpenCL C text an OpenCL driver builds from source: the kernel with its includes inlined
    and checked against the workload file's folder and ``--allow-outside`` (the driver gets no
    file to open); ``place`` names the kernel's field in the workload file for a refusal."""
    from kernellab.compile import preprocess

    roots = [Path(workload).resolve().parent, *config.get().allow_outside]
    argv = options.argv() if options is not None else []
    dirs = [*include_dirs, *preprocess.option_include_dirs(argv, roots[0])]
    return preprocess.expand(source, language, dirs, roots, None, place).text


class Compiler:
    """Runs stages for one request, memoizing artifacts in-process and (optionally) on disk.

    A plain class, not a record: it holds state, and a run's start-up builds no dataclass for it
    (about 0.25 M instructions, issue 23)."""

    def __init__(self, request: CompileRequest, cache: ArtifactCache | None = None,
                 on_stage: Callable[[Artifact], None] | None = None):
        self.request = request
        # compiled artifacts are kept by content by default (the user's cache folder), so a
        # repeated run spawns no compiler; KERNELLAB_NO_CACHE / --no-cache turn that off
        self.cache = cache if cache is not None else default_cache()
        #: called with each artifact as its stage completes (the snapshot mechanism hooks in here)
        self.on_stage = on_stage
        self._done: dict[str, Artifact] = {}
        self._expanded: preprocess.Expanded | None = None

    @property
    def stages(self) -> OrderedDict[str, Stage]:
        return stages_for(self.request)

    def _input_of(self, name: str, stages: OrderedDict[str, Stage]) -> str:
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
        try:
            art = self._source(stage) if stage.run is None else self._made(stage, every)
        except CompileError as exc:
            raise placed(exc, self.request.place, self.request.source) from exc.__cause__
        self._done[name] = art
        if self.on_stage:
            self.on_stage(art)
        return art

    def _source(self, stage: Stage) -> Artifact:
        data = _read_source(self.request)
        if self.request.language in INCLUDING_LANGUAGES:
            self._expanded = expand_request(self.request, data)
        if stage.is_spirv:
            data = check_spirv_binary(data, self.request.source)
            self._validate(data, stage)
        return Artifact(stage.name, data, _digest(stage.name, data))

    def _validate(self, data: bytes, stage: Stage) -> None:
        """spirv-val on a module given as the source, once per module content (a pass is cached)."""
        env = stage.spirv_env or self.request.target_env
        key = ""
        if self.cache:
            val = tools.find("spirv-val")
            # the binary's stamp, not its version text: as safe a key, without the version store
            key = _digest("spirv-val", data, env, val.stamp if val else "")
            if self.cache.get(key, "valid") is not None:
                return
        validate_spirv(data, self.request, stage.spirv_env)
        if self.cache:
            self.cache.put(key, "valid", b"")

    def _made(self, stage: Stage, every: OrderedDict[str, Stage]) -> Artifact:
        """The artifact of a stage that runs a tool: made, or found in the cache."""
        assert stage.run is not None
        stage.check_available()
        src = self.artifact(self._input_of(stage.name, every))
        # a compiler given the source gets it with its includes inlined, and no include folder
        given = src
        if every[src.stage].run is None and self._expanded is not None:
            given = Artifact(src.stage, self._expanded.text, src.key)
        if stage.content_keyed:
            data = stage.run(given, self.request)
            return Artifact(stage.name, data, _digest(stage.name, data))
        key = self._key(stage.name, stage, src) if self.cache else ""
        cached = self.cache.get(key, stage.binary_ext) if self.cache else None
        if cached is not None:
            return Artifact(stage.name, cached, key)
        data = stage.run(given, self.request)
        if stage.is_spirv:
            validate_spirv(data, self.request, stage.spirv_env)
        if self.cache:
            self.cache.put(key, stage.binary_ext, data)
        return Artifact(stage.name, data, key)

    def _key(self, name: str, stage: Stage, src: Artifact) -> str:
        """The content key of a stage's output: input, options, tool versions, device.

        A stage made from the source is keyed by every file the include step read (each one's
        name relative to the source's folder and its hash, as ccache's direct mode keeps them),
        so no process runs to key it, a changed header anywhere is a miss, and the same kernel in
        another folder is a hit; the folder counts only where the output can name it
        (``__FILE__``, debug info)."""
        key_input = ""
        if all_stages(self.request.language)[src.stage].run is None and self._expanded is not None:
            folder = str(self.request.source.parent) if self._names_folder() else ""
            key_input = _digest("sources", self._expanded.key, folder)
        if not key_input and stage.keyed_by:
            src = self.artifact(stage.keyed_by)
        key_input = key_input or src.key or _digest(src.stage, src.data)
        # a compute shader's key leaves the stage out, as it did before graphics stages existed
        stage_words = () if self.request.shader_stage == "compute" else (self.request.shader_stage,)
        return _digest(name, key_input, self.request.entry, self.request.option_list.key(),
                       self.request.target_env, stage.tool_version(),
                       self.request.device if stage.device_specific else "", *stage_words)

    def _names_folder(self) -> bool:
        assert self._expanded is not None
        return self._expanded.names_paths or any(o.startswith("-g") for o in self.request.options)

    def vulkan_module(self) -> Artifact:
        """The SPIR-V module a Vulkan device runs for this request."""
        stage = VULKAN_MODULE_STAGE.get(self.request.language)
        if stage is None:
            raise InputError(f"{self.request.source}: {self.request.language} kernels cannot run on Vulkan")
        return self.artifact(stage)

    def run_all(self) -> list[Artifact]:
        """Every available stage's artifact, in pipeline order."""
        return [self.artifact(n) for n in self.stages]


def compile_tensor_glsl(source: Path, build_options: str = "", include_dirs: Sequence[Path] = (),
                        target_env: str = "vulkan1.3") -> bytes:
    """SPIR-V for a GL_ARM_tensors compute shader, from Arm's glslc through the stage table (so it
    is validated and cached as every module is); raises CompileError with the compiler's log."""
    req = CompileRequest(source, "glsl-tensors", build_options=build_options,
                         include_dirs=tuple(include_dirs), target_env=target_env)
    return Compiler(req).vulkan_module().data


def dump_stages(compiler: Compiler, directory: Path, uid: str) -> list[Path]:
    """Write every available stage of a kernel as ``<uid>.<stage>.<ext>`` (text form where one exists);
    the uid comes from the workload, so it is escaped into a name that stays inside ``directory``."""
    written = []
    base = escaped_name(uid)
    stages = compiler.stages
    for name, stage in stages.items():
        try:
            art = compiler.artifact(name)
        except DeviceError as exc:
            if not stage.device_specific:
                raise
            # e.g. an OpenCL device's binary while the run is on a Vulkan device: not this run's
            log.warning("%s: stage %s not dumped: %s", uid, name, exc)
            continue
        if stage.output is Output.TEXT:
            path = directory / f"{base}.{art.stage}.{stage.text_ext}"
            write_bytes(path, art.data, root=directory)
        else:
            path = directory / f"{base}.{art.stage}.{stage.binary_ext}"
            write_bytes(path, art.data, root=directory)
            write_text(directory / f"{base}.{art.stage}.{stage.text_ext}", art.text(stages), root=directory)
        written.append(path)
    return written
