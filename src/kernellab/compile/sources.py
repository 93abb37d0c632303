"""From what the user names on a command line (a shader file, or a workload file and a kernel
uid) to a :class:`CompileRequest`."""
from __future__ import annotations

from pathlib import Path

from kernellab import spirv_format
from kernellab.compile.stage import CompileRequest, options_origin, shader_request, target_env_for_api
from kernellab.errors import InputError, UsageError, shown

# shader_request and target_env_for_api live in compile/stage.py, so that a run, which needs only
# them, does not load this module (issue 23); importable from here as before
__all__ = ["EXTENSIONS", "language_of", "request_for", "shader_request", "target_env_for_api"]

#: file extension -> source language
EXTENSIONS = {".comp": "glsl", ".glsl": "glsl", ".spv": "spirv", ".spvasm": "spirv-asm", ".cl": "opencl-c",
              ".ocl": "opencl-c", ".vert": "glsl", ".frag": "glsl"}
#: GLSL files named for a graphics stage are compiled for it (glslang's own convention)
_STAGE_OF_EXTENSION = {".vert": "vertex", ".frag": "fragment"}


def language_of(path: Path) -> str:
    lang = EXTENSIONS.get(path.suffix.lower())
    if lang:
        return lang
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        raise InputError(f"cannot read kernel source: {exc.strerror}", file=path) from exc
    if head in spirv_format.MAGIC_BYTES:
        return "spirv"
    raise UsageError(f"{shown(path)}: cannot tell the kernel language from the extension "
                     f"(known: {', '.join(sorted(EXTENSIONS))}; "
                     "or a scenario/kernel-instantiation .json with --kernel)")


def request_for(path: str | Path, kernel: str | None = None, *, build_options: str | None = None,
                entry: str | None = None, target_env: str = "vulkan1.2", device: str = "") -> CompileRequest:
    """The compile request for a kernel source file or for one kernel (``--kernel UID``) of a
    scenario or kernel-instantiation file."""
    given, path = path, Path(path).resolve()
    if not path.exists():
        raise InputError("no such file", file=path)
    named: str | Path = path
    if path.suffix.lower() == ".amber":  # an AmberScript file: its pipelines, as the scenario it becomes
        from kernellab.compile.amber import scenario_of

        # its errors name the file as the user did, not the scenario made of it in the cache
        path, named = scenario_of(given), given
    if path.suffix.lower() == ".json":
        return _from_workload(path, kernel, build_options, entry, target_env, device, named)
    if kernel is not None:
        raise UsageError("--kernel selects a kernel of a scenario or kernel-instantiation .json file")
    # a kernel named directly has no file-given options: only the user's --options
    return CompileRequest(path, language_of(path), entry=entry or "main", build_options=build_options or "",
                          target_env=target_env, device=device, options_from="user",
                          shader_stage=_STAGE_OF_EXTENSION.get(path.suffix.lower(), "compute"))


def _from_workload(path: Path, kernel: str | None, build_options: str | None, entry: str | None,
                   target_env: str, device: str, named: str | Path) -> CompileRequest:
    # the readers are loaded only for workload files, not for a .cl or .comp
    from kernellab.formats.detect import detect

    fmt = detect(path)
    if fmt == "scenario":
        from kernellab import model as m
        from kernellab.formats.scenario import load_scenario

        scenario, _ = load_scenario(path, check_files=False)
        shaders = [r for r in scenario.resources if isinstance(r, m.Shader)]
        chosen = _choose(named, kernel, {s.uid: s for s in shaders}, "shader")
        return shader_request(path, scenario.resources.index(chosen), chosen, target_env, device=device,
                              entry=entry, build_options=build_options)
    if fmt == "kernel-instantiation":
        from kernellab.formats import gpuverify

        insts, problems = gpuverify.load(path)
        by_name: dict[str, object] = {}
        for i, inst in enumerate(insts):
            by_name.setdefault(inst.entry_point, inst)
            by_name.setdefault(str(i), inst)
        chosen = _choose(named, kernel, by_name, "kernel instantiation")
        return CompileRequest(chosen.kernel_path, "opencl-c", entry=entry or chosen.entry_point,
                              build_options=(chosen.compiler_flags or "") if build_options is None else build_options,
                              target_env=target_env, device=device, options_from=options_origin(build_options),
                              roots=(path.parent,), options_place=(str(path), f"/{insts.index(chosen)}/compiler_flags"),
                              place=(str(path), f"/{insts.index(chosen)}/kernel_file"))
    raise UsageError(f"{shown(named)}: a {fmt} file has no kernel source to compile here; name the .cl file instead")


def _choose(path: str | Path, kernel: str | None, by_uid: dict, what: str):  # type: ignore[no-untyped-def]
    if not by_uid:
        raise InputError(f"no {what} in this file", file=path)
    if kernel is None:
        uniq = {id(v): k for k, v in by_uid.items()}
        if len(uniq) == 1:
            return next(iter(by_uid.values()))
        raise UsageError(f"{shown(path)} has several kernels: choose one with --kernel ({', '.join(by_uid)})")
    if kernel not in by_uid:
        raise UsageError(f"--kernel {kernel}: no {what} with that uid in {shown(path)} (have {', '.join(by_uid)})")
    return by_uid[kernel]
