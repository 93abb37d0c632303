"""OpenCL C launches for the proof: the kernel compiled by clspv at ``-O0`` (every access kept),
its arguments mapped through clspv's reflection to the descriptors and push-constant bytes the
engine sees (:class:`~kernellab.verify.prove.engine.Launch`).

The annotations (``__assert``, ``__requires``, ...) become calls of declared functions the engine
recognises (:func:`~kernellab.verify.prove.annotations.annotated`, docs/verify-prove.md).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernellab import compiler_options
from kernellab.spirvsim.module import Module
from kernellab.verify.prove.annotations import annotated


@dataclass
class ArgumentSpec:
    """One kernel argument as the launch gives it: a ``__global``/``__constant`` buffer of
    ``size`` bytes (None: unbounded), a ``__local`` buffer of ``size`` bytes, or a scalar whose
    ``value`` bytes are fixed (None: any value)."""

    kind: str  # buffer | local | scalar
    name: str
    size: int | None = None
    value: bytes | None = None


@dataclass
class Compiled:
    module: Module
    kernel: Any  # spirvsim.clspv.Kernel
    spirv: bytes


#: OpenCL C built-ins whose meaning clspv's lowering does not keep: an async copy becomes plain
#: loads and stores done at once, so the races of a copy still in flight would be proven absent
UNMODELLED_BUILTINS = ("async_work_group_copy", "async_work_group_strided_copy", "wait_group_events")


def _options(options: compiler_options.Options | str) -> compiler_options.Options:
    """A file's options as the door parsed them, or text: the user's own (a command line's)."""
    if isinstance(options, str):
        return compiler_options.parse("opencl-c", options, Path("."), (), origin="user")
    return options


def compile_source(source: Path, options: compiler_options.Options | str, *, roots: tuple[Path, ...] = ()) -> bytes:
    """clspv ``-O0 -g`` of ``source`` with the annotation header (every kernel of it). A source
    calling one of :data:`UNMODELLED_BUILTINS` is refused (:class:`Unsupported`: verdict unknown).
    ``options``: a file's, parsed by :mod:`kernellab.compiler_options` (their tokens hold no
    whitespace or quote), or the user's own text."""
    import re
    import shlex
    import tempfile

    from kernellab.compile.pipeline import Compiler, CompileRequest
    from kernellab.spirvsim.module import Unsupported

    text = source.read_text(errors="replace")
    for number, line in enumerate(text.splitlines(), 1):
        found = next((name for name in UNMODELLED_BUILTINS if re.search(rf"\b{name}\s*\(", line)), None)
        if found:
            from kernellab.errors import Problem
            raise Unsupported([Problem(str(source), f"line {number}",
                                       f"{found}: clspv lowers it to plain code, which loses its meaning "
                                       f"(line {number}: {line.strip()[:80]})")])
    with tempfile.TemporaryDirectory(prefix="kl-prove-") as tmp:
        annotated_path = Path(tmp) / source.name
        annotated_path.write_text(annotated(text, str(source.resolve())))
        req = CompileRequest(source=annotated_path, language="opencl-c", entry="",
                             build_options=shlex.join(["-O0", "-g", f"-I{source.parent.resolve()}",
                                                       *_options(options).argv()]),
                             options_from="user", roots=roots + (source.parent.resolve(), Path(tmp)))
        return bytes(Compiler(req).vulkan_module().data)


@dataclass
class SourceIR:
    """clang's ``-O0`` IR of a source (``text``), or why there is none (``missing``)."""

    text: str | None
    missing: str = ""


def source_ir(source: Path, options: compiler_options.Options | str) -> SourceIR:
    """clang's ``-O0`` IR of ``source`` with the annotation header (the text clspv compiles), for
    :func:`lost_accesses`."""
    import tempfile

    from kernellab.errors import MissingToolError, ToolError
    from kernellab.verify.prove import kept

    with tempfile.TemporaryDirectory(prefix="kl-prove-") as tmp:
        annotated_path = Path(tmp) / source.name
        annotated_path.write_text(annotated(source.read_text(errors="replace"), str(source.resolve())))
        try:
            return SourceIR(kept.clang_ir(annotated_path, _options(options).argv(), source.parent.resolve()))
        except MissingToolError:
            return SourceIR(None, "clang not found")
        except ToolError as exc:
            return SourceIR(None, f"clang failed: {str(exc).strip().splitlines()[0][:120] if str(exc).strip() else ''}")


def lost_accesses(ir: SourceIR, module: Module, entry: str) -> str | None:
    """Why a ``proven`` verdict over ``module`` (clspv's, of ``entry``) cannot stand: clspv removed accesses the source
    makes (docs/verify-prove.md, "Accesses clspv deletes"), or clang was not there to check."""
    from kernellab.verify.prove import kept

    if ir.text is None:
        return f"cannot check clspv kept every access ({ir.missing}): not proven"
    missing = kept.lost(kept.llvm_accesses(ir.text, entry), kept.spirv_accesses(module))
    return kept.describe(missing) if missing else None


def guarded(outcome: Any, ir: SourceIR, module: Module, entry: str) -> Any:
    """``outcome`` (an engine :class:`~kernellab.verify.prove.engine.Outcome`), made ``unknown``
    where it is ``proven`` but :func:`lost_accesses` gives a reason."""
    if outcome.verdict != "proven":
        return outcome
    reason = lost_accesses(ir, module, entry)
    if reason is None:
        return outcome
    from dataclasses import replace
    return replace(outcome, verdict="unknown", reason=reason)


def kernel_names(spirv: bytes) -> list[str]:
    from kernellab.spirvsim.clspv import reflection
    return sorted(reflection(spirv))


def load_kernel(spirv: bytes, source: Path, entry: str, local_size: tuple[int, int, int],
                args: list[ArgumentSpec]) -> Compiled:
    """``entry`` of a clspv module decoded with the launch's specialization (work-group size,
    ``__local`` argument lengths)."""
    from kernellab.errors import InputError
    from kernellab.spirvsim.clspv import reflection
    from kernellab.spirvsim.machine import eval_spec_op
    from kernellab.spirvsim.module import load

    kernel = reflection(spirv).get(entry)
    if kernel is None:
        raise InputError(f"no kernel named {entry!r} in {source}")
    spec: dict[int, int] = {}
    if kernel.workgroup_size_ids is not None:
        spec.update(zip(kernel.workgroup_size_ids, local_size))
    for ordinal, arg in kernel.arguments.items():
        if arg.kind == "ArgumentWorkgroup":
            size = args[ordinal].size if ordinal < len(args) and args[ordinal].size else None
            # a __local array without a size has no bound (as GPUVerify): past any index computed
            spec[arg.spec_id] = (size // arg.elem_size) if size else (1 << 24)
    module = load(spirv, entry, file=str(source), spec_constants=spec, eval_spec_op=eval_spec_op)
    text = source.read_text(errors="replace").split("\n")
    module.sources.setdefault("source", text)
    # the file the #line directive names, as the debug lines give it (the build may shorten it
    # to a relative path): clspv's DebugSource text under that name is the annotated copy's
    full = str(source.resolve())
    for name in {i.line[0] for i in _instructions(module) if i.line} | {full}:
        if is_named(full, name):
            module.sources[name] = text
    return Compiled(module, kernel, spirv)


def is_named(path: str, name: str) -> bool:
    """Whether a debug line's file ``name`` (perhaps relative) is the file at ``path``."""
    return path == name or (not name.startswith("/") and path.endswith("/" + name))


def _instructions(module: Module) -> list[Any]:
    return [inst for fn in module.functions.values() for block in fn.blocks.values() for inst in block.insts]


def compile_kernel(source: Path, entry: str, options: compiler_options.Options | str, local_size: tuple[int, int, int],
                   args: list[ArgumentSpec], *, roots: tuple[Path, ...] = ()) -> Compiled:
    """:func:`compile_source` and :func:`load_kernel` for one kernel."""
    return load_kernel(compile_source(source, options, roots=roots), source, entry, local_size, args)


def launch(compiled: Compiled, global_size: tuple[int, ...], local_size: tuple[int, int, int],
           args: list[ArgumentSpec], global_offset: tuple[int, int, int] = (0, 0, 0),
           symbolic_sizes: bool = False) -> Any:
    """The engine's :class:`~kernellab.verify.prove.engine.Launch` for an OpenCL launch."""
    from kernellab.errors import InputError
    from kernellab.verify.prove.engine import Launch

    gs = tuple(global_size) + (1,) * (3 - len(global_size))
    groups = tuple(g // max(1, n) for g, n in zip(gs, local_size))
    if any(g % max(1, n) for g, n in zip(gs, local_size)):
        raise InputError(f"global size {tuple(global_size)} is not a multiple of local size {local_size}: "
                         "verify --prove takes uniform work-groups")
    out = Launch(local_size, groups, global_offset, symbolic_sizes=symbolic_sizes)  # type: ignore[arg-type]
    push: dict[int, int] = {}

    def put(target: dict[int, int], offset: int, data: bytes) -> None:
        for k, b in enumerate(data):
            target[offset + k] = b

    for what, offset, size in compiled.kernel.builtin_push:
        values = {"PushConstantGlobalOffset": global_offset, "PushConstantRegionOffset": (0, 0, 0),
                  "PushConstantRegionGroupOffset": (0, 0, 0), "PushConstantEnqueuedLocalSize": local_size,
                  "PushConstantGlobalSize": gs, "PushConstantNumWorkgroups": groups}[what]
        if not symbolic_sizes or what in ("PushConstantGlobalOffset", "PushConstantRegionOffset",
                                          "PushConstantRegionGroupOffset"):
            put(push, offset, struct.pack("<3I", *values)[:size])
    for ordinal, arg in sorted(compiled.kernel.arguments.items()):
        spec = args[ordinal] if ordinal < len(args) else ArgumentSpec("scalar", f"arg{ordinal}")
        if arg.kind in ("ArgumentStorageBuffer", "ArgumentUniform"):
            out.buffer_sizes[(arg.set, arg.binding)] = spec.size
            out.names[(arg.set, arg.binding)] = spec.name
        elif arg.kind == "ArgumentPodPushConstant":
            out.names[("push", arg.offset)] = spec.name
            if spec.value is not None:
                put(push, arg.offset, spec.value[:arg.size].ljust(arg.size, b"\0"))
        elif arg.kind in ("ArgumentPodStorageBuffer", "ArgumentPodUniform"):
            out.names[(arg.set, arg.binding)] = spec.name
            if spec.value is not None:
                put(out.fixed.setdefault((arg.set, arg.binding), {}), arg.offset,
                    spec.value[:arg.size].ljust(arg.size, b"\0"))
    out.fixed["push"] = push
    return out


def scalar_arguments(compiled: Compiled, push: dict[int, int], buffers: dict[tuple[int, int], dict[int, int]]
                     ) -> dict[int, bytes]:
    """The scalar arguments' bytes in a counterexample, by ordinal."""
    out: dict[int, bytes] = {}
    for ordinal, arg in compiled.kernel.arguments.items():
        if arg.kind == "ArgumentPodPushConstant":
            out[ordinal] = bytes(push.get(arg.offset + k, 0) for k in range(arg.size))
        elif arg.kind in ("ArgumentPodStorageBuffer", "ArgumentPodUniform"):
            got = buffers.get((arg.set, arg.binding), {})
            out[ordinal] = bytes(got.get(arg.offset + k, got.get(-1, 0)) for k in range(arg.size))
    return out
