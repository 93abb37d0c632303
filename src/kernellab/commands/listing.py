"""``kernellab listing``: a kernel's SPIR-V instructions as IGA-style JSON, text, dot or HTML."""
from __future__ import annotations

import argparse
import gc
import json
import sys
from pathlib import Path
from typing import Any

from kernellab.commands import add_target_env, resolve_target_env
from kernellab.errors import InputError, UsageError
from kernellab.outputs import write_text


def register(sub: Any) -> None:
    p = sub.add_parser(
        "listing", help="list a kernel's instructions with control flow, def/use links and live totals",
        description="List a kernel's SPIR-V as JSON in the IGA listing schema (labels with CFG edges, "
                    "instructions with operands, def/use links, live totals), or render it as text, "
                    "Graphviz dot or HTML. With --input, read and render a listing JSON file (IGA's "
                    "-Xprint-json output or kernellab's own).")
    p.add_argument("source", nargs="?", metavar="SRC",
                   help="kernel source: .comp/.glsl, .spv, .spvasm, .cl, or a scenario/kernel-instantiation .json "
                        "or AmberScript file")
    p.add_argument("--input", metavar="FILE.json", help="render this listing file instead of compiling SRC")
    p.add_argument("--kernel", metavar="UID", help="the shader/kernel of a scenario or kernel-instantiation "
                   "file (pipeline.NAME for an AmberScript file's pipeline NAME)")
    p.add_argument("--stage", help="the SPIR-V stage to list (default: the module Vulkan runs; e.g. spirv-opt, "
                                   "spirv-kernel)")
    p.add_argument("--function", metavar="NAME", help="only this function (entry point name or OpName)")
    p.add_argument("--options", default=None, metavar="OPTS", help="build options (-D...; default: the file's)")
    add_target_env(p)
    p.add_argument("--defs", action="store_true", help="add def/use links (dst 'uses', src 'defs')")
    p.add_argument("--pcs", action="store_true", help="add each element's word offset in the module as 'pc'")
    p.add_argument("--hex-floats", action="store_true", help="float immediates as hex floats")
    p.add_argument("--format", choices=["json", "text", "dot", "html"], default=None,
                   help="output format (default: json, or text with --input)")
    p.add_argument("-o", "--output", metavar="FILE", help="write here instead of standard output")
    p.set_defaults(func=listing)


def listing(args: argparse.Namespace) -> int:
    # a short-lived command that allocates ~10^5 small objects: collection passes only cost time
    gc.disable()
    try:
        return _listing(args)
    finally:
        gc.enable()


def _listing(args: argparse.Namespace) -> int:
    if (args.input is None) == (args.source is None):
        raise UsageError("give either SRC or --input FILE.json")
    if args.input is not None:
        from kernellab.listing.iga import load_listings

        listings = load_listings(args.input)
        fmt = args.format or "text"
        title = str(args.input)
    else:
        listings = _compile_and_list(args)
        fmt = args.format or "json"
        title = str(args.source)
    if args.function is not None:
        chosen = [x for x in listings if x.get("function") == args.function]
        if not chosen:
            names = ", ".join(str(x.get("function")) for x in listings)
            raise UsageError(f"--function {args.function}: no such function (have {names})")
        listings = chosen
    if fmt == "json":
        doc: Any = listings[0] if len(listings) == 1 else listings
        text = json.dumps(doc, separators=(",", ":")) + "\n"
        return _write(args, text)
    from kernellab.listing import render

    if fmt == "text":
        text = "\n".join(render.render_text(x) for x in listings)
    elif fmt == "dot":
        text = render.render_dot(listings)
    else:
        text = render.render_html(listings, title=f"kernellab listing: {title}")
    return _write(args, text)


def _write(args: argparse.Namespace, text: str) -> int:
    if args.output:
        write_text(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


def _compile_and_list(args: argparse.Namespace) -> list[dict[str, Any]]:
    # the decoder and the compiler are imported only when the command runs (the CLI builds every
    # parser for --help; --input needs neither)
    from kernellab.listing.build import ListingOptions, build_listings
    from kernellab.listing.spirv import decode

    opts = ListingOptions(defs=args.defs, pcs=args.pcs, hex_floats=args.hex_floats)
    path = Path(args.source)
    if path.suffix.lower() == ".spv" and args.stage in (None, "spirv") and args.kernel is None:
        # a SPIR-V file is listed as it is: no compiler, no validator in the way
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read SPIR-V: {exc.strerror}", file=path) from exc
        return build_listings(decode(data, path), opts)
    from kernellab.compile.languages import VULKAN_MODULE_STAGE, all_stages
    from kernellab.compile.pipeline import Compiler
    from kernellab.compile.sources import request_for

    req = request_for(path, args.kernel, build_options=args.options, target_env=resolve_target_env(args.target_env, "listing"))
    compiler = Compiler(req)  # the user's cache, unless KERNELLAB_NO_CACHE turns it off
    stage = args.stage or VULKAN_MODULE_STAGE.get(req.language, "spirv")
    every = compiler.stages
    if stage in every and not every[stage].is_spirv:
        spirv = [n for n, s in every.items() if s.is_spirv]
        raise UsageError(f"--stage {stage}: not a SPIR-V stage (SPIR-V stages here: {', '.join(spirv)})")
    art = compiler.artifact(stage)
    # validated for the environment its stage was (OpenCL's for llvm-spirv's Kernel SPIR-V)
    env = all_stages(req.language)[stage].spirv_env or req.target_env
    opts = ListingOptions(defs=opts.defs, pcs=opts.pcs, hex_floats=opts.hex_floats, target_env=env)
    return build_listings(decode(art.data, f"{req.shown_source} [{stage}]"), opts)
