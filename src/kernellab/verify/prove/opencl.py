"""OpenCL C launches for the proof: the kernel compiled by clspv at ``-O0`` (every access kept),
its arguments mapped through clspv's reflection to the descriptors and push-constant bytes the
engine sees (:class:`~kernellab.verify.prove.engine.Launch`).

The annotations (``__assert``, ``__requires``, ...) become calls of declared functions the engine
recognises (:func:`~kernellab.verify.prove.annotations.annotated`, docs/verify-prove.md).
"""
from __future__ import annotations

import logging
import re
import struct
from dataclasses import field
from pathlib import Path
from typing import Any

from kernellab import compiler_options
from kernellab.records import dataclass
from kernellab.spirvsim.module import Module
from kernellab.verify.prove.annotations import annotated

log = logging.getLogger(__name__)


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
    #: the module adds the launch's global offset to the built-in id itself (clspv's -global-offset)
    offset_in_module: bool = False


#: OpenCL C's async copies, which :mod:`kernellab.verify.prove.copies` models before clspv lowers them
ASYNC_COPIES = re.compile(r"\b(?:async_work_group_copy|async_work_group_strided_copy|wait_group_events)\b")


def _options(options: compiler_options.Options | str) -> compiler_options.Options:
    """A file's options as the door parsed them, or text: the user's own (a command line's)."""
    if isinstance(options, str):
        return compiler_options.parse("opencl-c", options, Path("."), (), origin="user")
    return options


#: a vector type of 8 or 16 components, which clspv compiles only with its ``-long-vector``
_LONG_VECTOR = re.compile(r"\b(?:u?char|u?short|u?int|u?long|float|double|half)(?:8|16)\b")


def clspv_argv(options: compiler_options.Options) -> list[str]:
    """``options`` as clspv takes them: clang's warning switches (``-Wno-...``), which only change
    what is reported and which clspv's own command line refuses, left out."""
    return [t for t in options.argv() if not (t.startswith("-W") and t != "-Werror")]


def compile_source(source: Path, options: compiler_options.Options | str, *, roots: tuple[Path, ...] = (),
                   prelude: str = "", global_offset: bool = False, text: str | None = None,
                   every_access: bool = False) -> bytes:
    """clspv ``-O0 -g`` of ``source`` with the annotation header (every kernel of it), its
    async copies modelled (:mod:`kernellab.verify.prove.copies`).
    ``options``: a file's, parsed by :mod:`kernellab.compiler_options` (their tokens hold no
    whitespace or quote), or the user's own text. ``global_offset``: clspv's ``-global-offset``,
    which keeps an OpenCL launch's global offset in a push constant (without it clspv folds
    ``get_global_offset()`` to 0, whatever the launch's offset: for a kernel-instantiation file).
    ``text``: the source's text as the proof reads it (its undefined values made explicit,
    :mod:`kernellab.verify.prove.undefined`); ``every_access``: every ``__global``/``__local``
    pointee made volatile (:data:`EVERY_ACCESS`)."""
    import shlex
    import tempfile

    from kernellab.compile.pipeline import Compiler, CompileRequest
    from kernellab.errors import CompileError, MissingToolError, ToolError

    if text is None:
        text = source.read_text(errors="replace")
    _refuse_wait_lists(source, text)
    with tempfile.TemporaryDirectory(prefix="kl-prove-") as tmp:
        annotated_path = Path(tmp) / source.name
        annotated_path.write_text(annotated_text(text, prelude, str(source.resolve()), every_access=every_access))
        req = CompileRequest(source=annotated_path, language="opencl-c", entry="",
                             build_options=shlex.join(["-O0", "-g", f"-I{source.parent.resolve()}",
                                                       *(["-global-offset"] if global_offset else []),
                                                       *(["-long-vector"] if _LONG_VECTOR.search(text) else []),
                                                       *clspv_argv(_options(options))]),
                             options_from="user", roots=roots + (source.parent.resolve(), Path(tmp)),
                             target_env=PROOF_ENV)
        try:
            return bytes(Compiler(req).vulkan_module().data)
        except MissingToolError:
            raise
        except CompileError as exc:
            error = _invalid(source, exc)
            if error is exc:
                failure: Exception = exc
            else:
                fixed = _repaired(req)
                if fixed is None:
                    raise error from None
                return fixed
        except ToolError as exc:  # clspv failed or crashed
            failure = exc
        # a struct holding a pointer the kernel only stores and copies: its pointers made bits
        # (clspv's refusal, "structures may not contain pointers", is told at the source's line)
        again = _pointers_as_bits(source, text, annotated_path, options)
        if again is None:
            raise _build_failure(failure, source) from None
    return compile_source(source, options, roots=roots, prelude=prelude, global_offset=global_offset, text=again,
                          every_access=every_access)


def _pointers_as_bits(source: Path, text: str, annotated_path: Path, options: compiler_options.Options | str
                      ) -> str | None:
    """``text`` with the pointer members of its structs made integers
    (:mod:`kernellab.verify.prove.pointer_bits`), where clspv failed on it for them; None where
    it has none or they cannot be (then clspv's failure stands, told by :func:`_refused_by_clspv`);
    an :class:`~kernellab.spirvsim.module.Unsupported` naming the use that keeps one a pointer."""
    from kernellab.errors import MissingToolError, Problem
    from kernellab.spirvsim.module import Unsupported
    from kernellab.verify.prove import annotations, pointer_arguments, pointer_bits

    full = annotated_path.read_text()
    if not re.search(r"\b(?:struct|union)\b", text):
        return None
    prepared = annotations.prepare(text)
    at = full.find(prepared)
    if at < 0:
        return None
    try:
        done = pointer_bits.rewritten(text, full, len(full[:at].encode()), _options(options).argv(),
                                      source.parent.resolve(), fallback=pointer_arguments.copies)
    except MissingToolError:
        return None
    if done.text is None:
        if not done.refused:  # none, or clang refused the source too: the failure stands
            return None
        raise Unsupported([Problem(str(source), "", f"a struct holding a pointer: {done.reason}: clspv compiles to "
                                                    "Vulkan's logical addressing, where no pointer is stored in "
                                                    "memory, and cannot compile it")])
    log.debug("%s: pointer members of %s compiled as %s", source, ", ".join(done.structs), pointer_bits.BITS)
    return done.text


def _build_failure(exc: Exception, source: Path) -> Exception:
    """A failed build of the annotated copy, told as the user's: clang's errors about ``source``
    (bad input), else the proof's own shortfall (clspv crashed or refused valid OpenCL C: the
    verdict is unknown, never a tool error that ends the command)."""
    from kernellab.errors import CompileError
    from kernellab.spirvsim.module import Unsupported

    errors = source_errors(exc, source)
    if errors:
        return CompileError(errors)
    # the annotated copy's temporary folder means nothing to the user: their file's name instead
    first = re.sub(r"\S*/kl-prove-[^/\s]*/", "", str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    return Unsupported(f"clspv could not build the kernel for the proof: {first}")


def source_errors(exc: Exception, source: Path) -> str:
    """The errors clang gave about the user's ``source`` in a failed clspv build of it (named as the
    user names the file, with their caret lines), without the annotation header's warnings and the
    temporary copy's name; empty when the build failed for another reason (clspv crashed, or
    refused a construct): then the kernel is valid and the proof, not the user, is short."""
    failure = getattr(exc, "failure", None)
    log = failure.log if failure is not None else str(exc)
    prefix = str(source.resolve()) + ":"
    kept: list[str] = []
    inside = False
    for line in log.splitlines():
        if line.startswith(prefix):
            inside = ": error:" in line or ": fatal error:" in line
            if inside:
                kept.append(source.name + ":" + line[len(prefix):])
        elif inside and line.startswith(" "):
            kept.append(line)
        else:
            inside = False
    return "\n".join(kept)


def _repaired(req: Any) -> bytes | None:
    """clspv's module for ``req`` with the breaks of SPIR-V's rules that have one meaning repaired
    (:mod:`kernellab.verify.prove.repair`) where that makes it valid, else None. (The pipeline
    validates every module it makes, so clspv is run again here, on the same inlined text.)"""
    from kernellab.compile.languages import all_stages
    from kernellab.compile.pipeline import expand_request
    from kernellab.compile.stage import Artifact, validate_spirv
    from kernellab.errors import CompileError
    from kernellab.verify.prove import repair

    stage = all_stages("opencl-c")[VULKAN_STAGE]
    assert stage.run is not None
    fixed = repair.repaired(stage.run(Artifact("opencl-c", expand_request(req).text, ""), req))
    if fixed is None:
        return None
    try:
        validate_spirv(fixed, req)
    except CompileError:
        return None
    return fixed


#: the pipeline's stage that makes clspv's module
VULKAN_STAGE = "spirv-vulkan"


#: the rules a module the engine reads is validated by: SPIR-V's own (well typed, structured
#: control flow) for the version clspv writes, not Vulkan's environment rules, which say what a
#: Vulkan driver takes (a memory barrier's semantics naming a storage class, as `mem_fence(0)`
#: does not): the proof runs the module on no driver (docs/verify-prove.md, "OpenCL C front end")
PROOF_ENV = "spv1.0"

#: spirv-val's error for a rule clspv's ``-O0`` module breaks, as the reason of an ``unknown``
_INVALID = re.compile(r"^error: line \d+: (.*)$", re.M)


def _invalid(source: Path, exc: Exception) -> Exception:
    """A compile error that is spirv-val refusing clspv's module, as an ``unknown``'s reason
    (:class:`~kernellab.spirvsim.module.Unsupported`) naming the rule; any other as it is."""
    from kernellab.errors import Problem
    from kernellab.spirvsim.module import Unsupported

    text = str(exc)
    m = _INVALID.search(text)
    if "SPIR-V is not valid for" not in text or not m:
        return exc
    rest = text[m.end():].lstrip("\n").splitlines()
    shown = f" ({rest[0].strip()})" if rest and rest[0].startswith(" ") else ""
    return Unsupported([Problem(str(source), "", f"clspv's -O0 module breaks a rule of SPIR-V, so the engine "
                                                 f"cannot read it as written: spirv-val says \"{m.group(1)}\"{shown}")])


_WAIT = re.compile(r"\bwait_group_events\s*\(\s*[^,]+,\s*([^;]*?)\s*\)\s*;")


def _refuse_wait_lists(source: Path, text: str) -> None:
    """A ``wait_group_events`` whose event list is reached through a pointer variable is refused:
    clspv at ``-O0`` lowers a pointer chosen between two private variables wrongly (it keeps
    the first; seen with GPUVerify's ``async_work_group_copy/fail/test11``), so the events the
    module waits for need not be the source's. ``&event``, ``&events[k]`` and an array's name are
    taken."""
    from kernellab.errors import Problem
    from kernellab.spirvsim.module import Unsupported

    for m in _WAIT.finditer(text):
        arg = m.group(1)
        if re.fullmatch(r"&\s*\w+(?:\s*\[[^\]]*\])?", arg):
            continue
        if re.fullmatch(r"\w+", arg) and re.search(rf"\b{arg}\s*\[", text):
            continue
        line = text.count("\n", 0, m.start()) + 1
        raise Unsupported([Problem(str(source), f"line {line}",
                                   f"wait_group_events given its events through {arg!r}: the proof follows an "
                                   f"event list given as &event or an array (line {line})")])


#: put before every header where clspv deleted accesses the source makes (docs/verify-prove.md,
#: "Accesses clspv deletes"): every ``__global`` and ``__local`` pointee volatile, so that clspv
#: keeps every access; ``__constant`` too, so that it does not fold a read of a constant array
#: and delete the code that read makes dead. A macro's own name is not expanded again in its
#: expansion, and ``global`` goes through ``__global``, so each gets one ``volatile``
EVERY_ACCESS = """\
#define __global __global volatile
#define __local __local volatile
#define __constant __constant volatile
#define global __global
#define local __local
#define constant __constant
"""


def annotated_text(text: str, prelude: str = "", name: str | None = None, *, every_access: bool = False) -> str:
    """What clspv and clang compile: the annotation header, the stubs' header, ``prelude``
    (directives that change what an annotation means, such as GPUVerify's ``--only-requires``),
    the source at its own line numbers, then bodies for the functions it declares without one
    (:mod:`kernellab.verify.prove.stubs`); with the async copies' header
    (:mod:`kernellab.verify.prove.copies`) where it makes one."""
    from kernellab.verify.prove import copies, stubs, undefined

    # the undefined values given any value (compile_kept): a function declared without a body
    declared = undefined.PROTOTYPE if re.search(rf"\b{undefined.FUNCTION}\b", text) else ""
    found = stubs.find(declared + text)
    tail = f"\n#line 1000000\n{stubs.bodies(found)}\n" if found else ""
    async_copies = copies.HEADER if ASYNC_COPIES.search(text) else ""
    return annotated(text, (EVERY_ACCESS if every_access else "") + stubs.HEADER + declared + async_copies
                     + (f"{prelude}\n" if prelude else ""), name) + tail


@dataclass
class SourceIR:
    """clang's ``-O0`` IR of a source (``text``), or why there is none (``missing``)."""

    text: str | None
    missing: str = ""
    #: ``missing`` is why the source cannot be proven, not why clang could not check it
    refused: bool = False
    #: the variables read before they are written, where clang refused the source for them
    uninitialised: list[Any] = field(default_factory=list)


def source_ir(source: Path, options: compiler_options.Options | str, *, prelude: str = "",
              text: str | None = None) -> SourceIR:
    """clang's ``-O0`` IR of ``source`` (or of ``text``, the source as the proof reads it) with the
    annotation header (the text clspv compiles), for :func:`lost_accesses`."""
    import tempfile

    from kernellab.errors import MissingToolError, ToolError
    from kernellab.verify.prove import kept, undefined

    if text is None:
        text = source.read_text(errors="replace")
    with tempfile.TemporaryDirectory(prefix="kl-prove-") as tmp:
        annotated_path = Path(tmp) / source.name
        annotated_path.write_text(annotated_text(text, prelude, str(source.resolve())))
        try:
            # a variable read before it is written has an undefined value, which clspv folds to
            # whatever suits it (`int x; __assert(x == 0);` compiles to a passing assertion): such
            # a source is not proven as it is (after the source's own -Wno-uninitialized, this
            # wins); the fix-its say where to give it any value (compile_kept)
            return SourceIR(kept.clang_ir(annotated_path, [*_options(options).argv(), "-Werror=uninitialized",
                                                           "-fdiagnostics-parseable-fixits"],
                                          source.parent.resolve()))
        except MissingToolError:
            return SourceIR(None, "clang not found")
        except ToolError as exc:
            message = str(exc)
            where = re.search(r":(\d+):\d+: error: variable '(\w+)' is (?:used )?uninitialized", message)
            if where:
                return SourceIR(None, f"variable {where.group(2)!r} is read before it is written (line "
                                      f"{where.group(1)}): its value is undefined, and clspv may fold it",
                                refused=True, uninitialised=undefined.parse(message))
            return SourceIR(None, f"clang failed: {message.strip().splitlines()[0][:120] if message.strip() else ''}")


def lost_accesses(ir: SourceIR, module: Module, entry: str) -> str | None:
    """Why a ``proven`` verdict over ``module`` (clspv's, of ``entry``) cannot stand: clspv removed accesses the source
    makes (docs/verify-prove.md, "Accesses clspv deletes"), or clang was not there to check."""
    from kernellab.verify.prove import kept

    if ir.text is None:
        return f"{ir.missing}: not proven" if ir.refused else \
            f"cannot check clspv kept every access ({ir.missing}): not proven"
    from kernellab.verify.prove import stubs
    hidden = stubs.pointer_stubs(ir.text)
    if hidden:
        return (f"unsupported construct: a pointer passed to or returned by a function without a body "
                f"({', '.join(hidden)}): not proven")
    missing = kept.lost(kept.llvm_accesses(ir.text, entry), kept.spirv_accesses(module))
    return kept.describe(missing) if missing else None


def compile_kept(source: Path, options: compiler_options.Options | str, *, roots: tuple[Path, ...] = (),
                 prelude: str = "", global_offset: bool = False, first: bytes | None = None
                 ) -> tuple[bytes, SourceIR]:
    """clspv's module of ``source`` (:func:`compile_source`) and clang's IR of the same text
    (:func:`source_ir`), for :func:`guarded`. Two things are made explicit first:

    - a variable read before it is written (clang refuses the source for it) is given any value
      where it is declared (:mod:`kernellab.verify.prove.undefined`), where it is an integer;
    - where clspv deleted accesses the source makes (an unused load), the source is compiled
      again with every ``__global``/``__local`` pointee volatile (:data:`EVERY_ACCESS`), which
      keeps them. Where that build fails (a built-in that takes no volatile pointer: ``vload``,
      ``prefetch``) the first module stands, and the guard says what it lacks.

    ``first``: :func:`compile_source`'s module of the same source and options, made already
    (then clspv runs only where the text changes). A caller that proves that module first needs
    this only for a ``proven`` verdict: a defect in it is one of the source."""
    from kernellab.errors import CompileError
    from kernellab.spirvsim.module import Unsupported
    from kernellab.verify.prove import undefined

    text = original = source.read_text(errors="replace")
    ir = source_ir(source, options, prelude=prelude, text=text)
    if ir.uninitialised:
        full = str(source.resolve())
        given = undefined.initialised(text, ir.uninitialised, lambda name: is_named(full, name))
        if given is not None:
            again = source_ir(source, options, prelude=prelude, text=given)
            if again.text is not None:
                text, ir = given, again
    try:
        spirv = first if first is not None and text is original else \
            compile_source(source, options, roots=roots, prelude=prelude, global_offset=global_offset, text=text)
    except (CompileError, Unsupported) as exc:  # clang's errors, or clspv's failure on valid OpenCL C
        raise _refused_by_clspv(source, ir, exc) from None
    if ir.text is None or not any(lost_accesses(ir, load_for_counting(spirv, source, name), name)
                                  for name in kernel_names(spirv)):
        return spirv, ir
    try:
        return compile_source(source, options, roots=roots, prelude=prelude, global_offset=global_offset,
                              text=text, every_access=True), ir
    except (CompileError, Unsupported) as exc:  # clspv failed, or its module breaks a rule of SPIR-V
        log.debug("%s: the build with every access volatile failed: %s", source, exc)
        return spirv, ir


#: a struct type of clang's IR with a pointer in it (``%struct.s = type { i32 addrspace(1)* }``)
_STRUCT_WITH_POINTER = re.compile(r"^(%struct\.[\w.]+) = type \{[^\n]*\*", re.M)


def _refused_by_clspv(source: Path, ir: SourceIR, exc: Exception) -> Exception:
    """clspv's failure on a source clang takes, as an ``unknown``'s reason where it is one clspv
    cannot compile by design: a struct holding a pointer (clspv's logical addressing has no
    pointer in memory: it refuses "structures may not contain pointers", or crashes). Any other
    failure as it is."""
    from kernellab.errors import Problem
    from kernellab.spirvsim.module import Unsupported

    m = _STRUCT_WITH_POINTER.search(ir.text or "")
    if m is None or "a struct holding a pointer:" in str(exc):  # pointer_bits named the use
        return exc
    return Unsupported([Problem(str(source), "", f"a struct holding a pointer ({m.group(1)[1:]}): clspv compiles to "
                                                 "Vulkan's logical addressing, where no pointer is stored in memory, "
                                                 "and cannot compile it")])


def load_for_counting(spirv: bytes, source: Path, entry: str) -> Module:
    """``entry`` of a clspv module decoded with its specialization constants' defaults: enough to
    count its accesses (:func:`kernellab.verify.prove.kept.spirv_accesses`)."""
    from kernellab.spirvsim.machine import eval_spec_op
    from kernellab.spirvsim.module import load
    return load(spirv, entry, file=str(source), eval_spec_op=eval_spec_op)


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


def reflected_spec_ids(spirv: bytes) -> dict[str, list[int]]:
    """The specialization constants clspv's reflection names: ``SpecConstantWorkDim`` (what
    ``get_work_dim()`` reads) and ``SpecConstantGlobalOffset`` (the three offsets, with
    ``-global-offset``), by name."""
    from kernellab import spirv_format
    from kernellab.spirvsim.module import extinst_name

    words = spirv_format.words(spirv)
    sets: dict[int, str] = {}
    consts: dict[int, int] = {}
    out: dict[str, list[int]] = {}
    for pos, count, opcode in spirv_format.instructions(words):
        w = words[pos + 1:pos + count]
        if opcode == 11:  # OpExtInstImport
            sets[w[0]] = spirv_format.literal_string(w, 1, len(w))[0]
        elif opcode == 43:  # OpConstant
            consts[w[1]] = w[2]
        elif opcode == 12 and sets.get(w[2], "").startswith("NonSemantic.ClspvReflection"):
            name = extinst_name(sets[w[2]], w[3])
            if name in ("SpecConstantWorkDim", "SpecConstantGlobalOffset"):
                out[name] = [consts.get(x, x) for x in w[4:]]
    return out


def load_kernel(spirv: bytes, source: Path, entry: str, local_size: tuple[int, int, int],
                args: list[ArgumentSpec], *, work_dim: int = 3,
                global_offset: tuple[int, int, int] = (0, 0, 0)) -> Compiled:
    """``entry`` of a clspv module decoded with the launch's specialization (work-group size,
    ``__local`` argument lengths, ``get_work_dim()``: ``work_dim``, the launch's number of
    dimensions; the global offset, where the module reads it from specialization constants)."""
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
    reflected = reflected_spec_ids(spirv)
    for dim_id in reflected.get("SpecConstantWorkDim", []):
        spec[dim_id] = work_dim
    spec.update(zip(reflected.get("SpecConstantGlobalOffset", []), global_offset))
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
    return Compiled(module, kernel, spirv, offset_in_module="SpecConstantGlobalOffset" in reflected or any(
        what == "PushConstantGlobalOffset" for what, _, _ in kernel.builtin_push))


def is_named(path: str, name: str) -> bool:
    """Whether a debug line's file ``name`` (perhaps relative) is the file at ``path``."""
    return path == name or (not name.startswith("/") and path.endswith("/" + name))


def _instructions(module: Module) -> list[Any]:
    return [inst for fn in module.functions.values() for block in fn.blocks.values() for inst in block.insts]


def compile_kernel(source: Path, entry: str, options: compiler_options.Options | str, local_size: tuple[int, int, int],
                   args: list[ArgumentSpec], *, roots: tuple[Path, ...] = (), work_dim: int = 3,
                   global_offset: tuple[int, int, int] = (0, 0, 0)) -> Compiled:
    """:func:`compile_source` (with the global offset kept) and :func:`load_kernel` for one kernel."""
    return load_kernel(compile_source(source, options, roots=roots, global_offset=True), source, entry, local_size,
                       args, work_dim=work_dim, global_offset=global_offset)


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
    # with clspv's -global-offset the module adds the offset to the built-in id
    in_module = compiled.offset_in_module
    out = Launch(local_size, groups, (0, 0, 0) if in_module else global_offset,  # type: ignore[arg-type]
                 symbolic_sizes=symbolic_sizes)
    if in_module:
        out.reported_offset = global_offset
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
        else:  # the engine ties them to the symbolic sizes
            out.size_push.append((what, offset, size))
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
        elif arg.kind in ("ArgumentSampledImage", "ArgumentStorageImage"):
            _image_argument(out, compiled.module, arg, spec.name, gs, len(global_size))
    out.fixed["push"] = push
    return out


#: the image types a kernel-instantiation launch creates (``runtime/instantiation.py``), by dimensions
_LAUNCH_IMAGES = {"image1d_t": 1, "image2d_t": 2, "image3d_t": 3}


def _image_argument(out: Any, module: Module, arg: Any, name: str, gs: tuple[int, ...], launch_dims: int) -> None:
    """An image argument's extent: the launch's global size in the image's dimensions, as the
    image a kernel-instantiation launch creates (:mod:`kernellab.verify.prove.images`); none for
    another type (a depth image, which clspv types as a plain one) or where the launch has fewer
    dimensions: the dynamic ``verify`` makes no such image, and the image's accesses are
    ``unknown``."""
    from kernellab.verify.prove import images

    binding = (arg.set, arg.binding)
    out.names[binding] = name
    vid = images.variable_at(module, binding)
    dims = images.image_dims(module, vid) if vid is not None else None
    base = " ".join(w for w in arg.type_name.split() if w not in ("const", "__read_only", "__write_only",
                                                                   "__read_write", "read_only", "write_only",
                                                                   "read_write"))
    if dims is None or dims > launch_dims or _LAUNCH_IMAGES.get(base) != dims:
        return
    out.images[binding] = images.Extent(dims)
    out.buffer_sizes[binding] = out.images[binding].bytes(gs)


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
