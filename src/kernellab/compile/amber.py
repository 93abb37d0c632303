"""An AmberScript file as scenario files every command reads: parsed (``formats.amber``), its
SPIRV-ASM shaders assembled with spirv-as, written to a cache folder named by the file's content
and path. ``run``/``test`` run its checkpoints; ``verify``, ``listing``, ``snapshot`` read the last
one, which holds every pipeline and every RUN."""
from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

from kernellab.compiler_options import Options
from kernellab.formats.amber.materialize import Checkpoint, write_scenarios
from kernellab.formats.amber.parse import load_amber
from kernellab.formats.amber.script import AmberScript, KernelArgument

#: Amber's default SPIR-V target for assembly (its ShaderCompiler: universal SPIR-V 1.0)
DEFAULT_SPIRV_ENV = "spv1.0"


def assemble(source: str, target_env: str) -> bytes:
    from kernellab import tools
    from kernellab.errors import CompileError

    spirv_as = tools.require("spirv-as", "assembling an AmberScript SPIRV-ASM shader")
    return spirv_as.transform(["--target-env", target_env or DEFAULT_SPIRV_ENV, tools.INPUT, "-o", tools.OUTPUT],
                              input=source.encode(), input_name="shader.spvasm", output_name="shader.spv",
                              what="assembling a SPIRV-ASM shader", error=CompileError)


#: AmberScript TARGET_ENV names as glslang's --target-env takes them
_GLSLANG_ENV = {f"spv1.{i}": f"spirv1.{i}" for i in range(7)}


def compile_hlsl(source: str, entry: str, target_env: str) -> bytes:
    """An HLSL compute shader's module from glslang (``glslangValidator -D``, as Amber's DXC path
    would make it), for ``entry`` and TARGET_ENV (default Vulkan 1.0); the target environment
    goes through the options door, the entry point must be an identifier."""
    import re

    from kernellab import compiler_options, tools
    from kernellab.errors import CompileError, InputError

    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", entry):
        raise InputError(f"HLSL entry point {entry!r} is not an identifier")
    # glslang's HLSL front end follows #include itself, from its temporary folder: kernellab's
    # include step (docs/security.md) is not on this path, so no directive may name a file
    from kernellab.compile.preprocess import directives

    for d in directives(source.encode(), opencl=True):
        if re.match(rb"(#|%:|\?\?=)\s*(include|include_next|import)\b", d.text) or b"__has_include" in d.text:
            raise InputError(f"line {d.line} of the HLSL shader: {d.text.decode('utf-8', 'replace')!r}: an "
                             "AmberScript HLSL shader cannot include files")
    env = _GLSLANG_ENV.get(target_env, target_env or "vulkan1.0")
    try:
        options = compiler_options.parse("glsl", f"--target-env={env}", Path("."), ())
    except compiler_options.OptionsRefused as exc:
        raise InputError(f"HLSL shader: TARGET_ENV {target_env}: {exc}") from None
    glslang = tools.require("glslangValidator", "compiling an AmberScript HLSL shader")
    return glslang.transform(["-D", "-V", "-S", "comp", "-e", entry, *options.argv(), tools.INPUT,
                              "-o", tools.OUTPUT], input=source.encode(), input_name="shader.hlsl",
                             output_name="shader.spv", what="compiling an HLSL shader", error=CompileError)


def optimize(shader: Path, kind: str, target_env: str, passes: Options) -> bytes:
    """The module of ``shader`` (a scenario shader file of type ``kind``) after spirv-opt's
    ``passes``, which the options door checked (rendered from them, never from the file's text).
    A GLSL source is compiled as Amber does: for TARGET_ENV, else Vulkan 1.0."""
    from kernellab import tools
    from kernellab.compile.pipeline import Compiler
    from kernellab.compile.stage import CompileRequest
    from kernellab.errors import CompileError
    from kernellab.shader_languages import LANGUAGE_OF_SHADER_TYPE

    if kind == "SPIR-V":
        module = shader.read_bytes()
    else:
        env = _GLSLANG_ENV.get(target_env, target_env or "vulkan1.0")
        module = Compiler(CompileRequest(shader, LANGUAGE_OF_SHADER_TYPE[kind], target_env=env,
                                         roots=(shader.parent,))).vulkan_module().data
    spirv_opt = tools.require("spirv-opt", "SHADER_OPTIMIZATION of an AmberScript pipeline")
    return spirv_opt.transform([*passes.argv(), tools.INPUT, "-o", tools.OUTPUT], input=module,
                               input_name="shader.spv", output_name="optimized.spv",
                               what="optimizing a shader (SHADER_OPTIMIZATION)", error=CompileError)


def prepare(path: str | Path, folder: Path | None = None) -> tuple[AmberScript, list[Checkpoint]]:
    """Parse ``path`` and write its scenarios (into ``folder``, default a cache folder named by
    the file's content and path; with the cache off, a private temporary folder removed when the
    command ends: nothing is written into the cache folder)."""
    from kernellab import config

    path = Path(path)
    script = load_amber(path)
    in_cache = folder is None and config.get().compile_cache
    if folder is None and not in_cache:
        from kernellab import scratch

        folder = scratch.folder("amber-")
    elif folder is None:
        digest = hashlib.sha256(path.read_bytes() + str(path.resolve()).encode()).hexdigest()[:20]
        folder = config.get().cache_dir / "amber" / digest
    # resolved: a kernel compiled from it is checked against its own folder (`import -o DIR`
    # with a relative DIR refused its own clspv kernels as outside)
    folder = Path(folder).resolve()
    checkpoints = write_scenarios(script, folder, assemble, optimize, compile_kernel, compile_hlsl)
    if in_cache:  # the cache folder's bound (KERNELLAB_CACHE_MAX) counts what was written
        from kernellab.cachebound import added_folder

        added_folder(config.get().cache_dir, folder, config.get().cache_max)
    return script, checkpoints


def scenario_of(path: str | Path) -> Path:
    """The scenario holding all of the file's pipelines and RUNs (its last checkpoint)."""
    return prepare(path)[1][-1].scenario


def compile_kernel(source: Path, entry: str, build_options: str, layout: Options
                   ) -> tuple[bytes, dict[int, KernelArgument]]:
    """An OpenCL C kernel compiled by clspv with layout options (checked by the options door), and
    where clspv's reflection puts each of its arguments, by ordinal."""
    from kernellab.compile.pipeline import Compiler
    from kernellab.compile.stage import CompileRequest

    req = CompileRequest(source, "opencl-c", entry=entry, build_options=build_options, roots=(source.parent,),
                         clspv_layout=tuple(layout.argv()))
    module = Compiler(req).vulkan_module().data
    return module, kernel_arguments(module, entry)


def kernel_arguments(module: bytes, entry: str) -> dict[int, KernelArgument]:
    """The ``Argument*`` instructions of clspv's ``NonSemantic.ClspvReflection`` for kernel
    ``entry``: each argument's kind, descriptor set and binding, and a by-value one's offset and size,
    by ordinal; the module's ``LiteralSampler``s under -1, -2, ..."""
    from kernellab.listing.spirv import decode

    decoded = decode(module, "clspv module")

    def value(operand: object) -> int:
        inst = decoded.defs.get(int(operand))  # type: ignore[call-overload]
        return int(inst.operands[0].value) if inst is not None and inst.operands else -1

    kernels: dict[int, str] = {}
    out: dict[int, KernelArgument] = {}
    masks: dict[int, int] = {}
    literals: list[KernelArgument] = []
    for inst in decoded.instructions:
        if inst.opname != "OpExtInst" or not inst.ext_set.startswith("NonSemantic.ClspvReflection"):
            continue
        ops = [o.value for o in inst.operands[2:]]
        if inst.ext_op == "Kernel" and inst.result is not None:
            kernels[inst.result] = decoded.strings.get(int(ops[1]), "")  # type: ignore[call-overload]
        elif inst.ext_op.startswith("Argument") and inst.ext_op != "ArgumentInfo" and \
                kernels.get(int(ops[0])) == entry:  # type: ignore[call-overload]
            numbers = [value(o) for o in ops[1:6]]
            position = numbers[0]
            if inst.ext_op == "ArgumentPodPushConstant":
                out[position] = KernelArgument(inst.ext_op, offset=numbers[1], size=numbers[2])
            elif inst.ext_op in ("ArgumentPodUniform", "ArgumentPodStorageBuffer"):
                out[position] = KernelArgument(inst.ext_op, numbers[1], numbers[2], numbers[3], numbers[4])
            elif inst.ext_op != "ArgumentWorkgroup":
                out[position] = KernelArgument(inst.ext_op, numbers[1], numbers[2])
        elif inst.ext_op == "LiteralSampler":  # DescriptorSet, Binding, Mask: module-wide
            literals.append(KernelArgument("LiteralSampler", value(ops[0]), value(ops[1]), literal_bits=value(ops[2])))
        elif inst.ext_op == "NormalizedSamplerMaskPushConstant" and kernels.get(int(ops[0])) == entry:  # type: ignore[call-overload]
            # Kernel, Ordinal (of the sampler_t argument), Offset, Size: where the kernel reads
            # the sampler's OpenCL bits, so that it can normalize coordinates itself
            ordinal, offset = value(ops[1]), value(ops[2])
            masks[ordinal] = offset
    out = {i: dataclasses.replace(a, sampler_mask_offset=masks.get(i, -1)) for i, a in out.items()}
    return {**out, **{-1 - n: a for n, a in enumerate(literals)}}
