"""``kernellab snapshot``: list a kernel's compilation stages, or capture one as text or binary."""
from __future__ import annotations

import argparse
import sys
from typing import Any

from kernellab.commands import add_target_env, compile_cache_as_asked, resolve_target_env
from kernellab.errors import MissingToolError, UsageError
from kernellab.outputs import write_bytes


def register(sub: Any) -> None:
    p = sub.add_parser(
        "snapshot", help="list a kernel's compilation stages or capture one",
        description="List the compilation stages of a kernel in pipeline order (--list), or capture one "
                    "stage's result as text or binary (--stage NAME). Stages whose tool is missing are "
                    "left out of the list; asking for one says which package provides it.")
    p.add_argument("source", metavar="SRC",
                   help="kernel source: .comp/.glsl, .spv, .spvasm, .cl, or a scenario/kernel-instantiation .json "
                        "or AmberScript file")
    p.add_argument("--kernel", metavar="UID", help="the shader/kernel of a scenario or kernel-instantiation "
                   "file (pipeline.NAME for an AmberScript file's pipeline NAME)")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--list", action="store_true", help="list the available stages in pipeline order")
    what.add_argument("--stage", metavar="NAME", help="capture this stage")
    p.add_argument("--format", choices=["default", "text", "binary"], default="default",
                   help="text (disassembly, IR, source) or binary (SPIR-V, bitcode, device binary); "
                        "default: text for source stages, binary for the others")
    p.add_argument("--options", default=None, metavar="OPTS", help="build options (default: the file's)")
    add_target_env(p)
    p.add_argument("--device", default="", metavar="NAME",
                   help="OpenCL device for device-specific stages (substring of its name; default: the first "
                        "non-simulator device)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the artifact cache")
    p.add_argument("-o", "--output", metavar="FILE", help="write the snapshot here instead of standard output")
    p.set_defaults(func=snapshot)


def snapshot(args: argparse.Namespace) -> int:
    with compile_cache_as_asked(args):
        return _snapshot(args)


def _snapshot(args: argparse.Namespace) -> int:
    # the compiler is imported only when the command runs (the CLI builds every parser for --help)
    from kernellab.compile.languages import all_stages
    from kernellab.compile.snapshot import (
        Device,
        Program,
        SnapshotFormat,
        list_snapshot_stages,
        missing_stages,
        request_snapshot,
    )
    from kernellab.compile.sources import request_for

    req = request_for(args.source, args.kernel, build_options=args.options, target_env=resolve_target_env(args.target_env, "snapshot"),
                      device=args.device)
    # device-independent stages are built for Vulkan, so asking for one never builds a device binary
    vulkan, opencl = Device(args.device, "vulkan"), Device(args.device, "opencl")
    # no cache given: the compilers take the user's, unless the settings turn it off (compile_cache_as_asked)
    program = Program(req, [vulkan, opencl] if req.language == "opencl-c" else [vulkan])
    if args.list:
        device = opencl if req.language == "opencl-c" else vulkan
        stages = all_stages(req.language)
        for name in list_snapshot_stages(program, device):
            print(f"{name:<16} {stages[name].description}")
        for name, need in missing_stages(program).items():
            print(f"(left out: {name}, needs {need})", file=sys.stderr)
        return 0

    stage = all_stages(req.language).get(args.stage)
    device = opencl if stage is not None and stage.device_specific else vulkan
    missing = missing_stages(program).get(args.stage)
    if missing:
        raise MissingToolError(f"stage {args.stage!r} is not available: it needs {missing}")
    got: list[bytes] = []
    request_snapshot(program, device, args.stage, SnapshotFormat[args.format.upper()],
                     lambda size, data, info, sink: sink.append(data), got)
    # only the chain up to the stage asked for: a later stage's tool need not accept the options
    # (clspv refuses clang's -include) for an earlier stage to be shown
    program.compiler(device).artifact(args.stage)
    data = got[0]
    if args.output:
        write_bytes(args.output, data)
    else:
        if _is_binary(data) and sys.stdout.isatty():
            raise UsageError(f"stage {args.stage!r} is binary: not writing it to a terminal; use -o FILE, "
                             "a pipe, or --format text")
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    return 0


def _is_binary(data: bytes) -> bool:
    if b"\x00" in data[:4096]:
        return True
    try:
        data[:4096].decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start < 4092  # a character cut at the 4096-byte mark is still text
    return False
