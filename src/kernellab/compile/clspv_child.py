"""``python -m kernellab.compile.clspv_child SRC [-o OUT] [BUILD OPTIONS...]``: OpenCL C to Vulkan
SPIR-V with pip's pyclspv (written to OUT, or to standard output).

pyclspv prints its compiler log on the process's C-level stderr and raises a bare
``RuntimeError``; running it in a child process lets the log be captured and gives a failure a
repro command that can be pasted into a shell.
"""
from __future__ import annotations

import sys

from kernellab.compile.opencl_stages import clspv_source


def main(argv: list[str]) -> int:
    # pip's pyclspv is optional: only this child process, run when it is installed, needs it
    import pyclspv  # type: ignore[import-not-found]

    if not argv:
        print("usage: python -m kernellab.compile.clspv_child SRC [-o OUT] [BUILD OPTIONS...]", file=sys.stderr)
        return 2
    src, rest = argv[0], argv[1:]
    out = None
    if len(rest) >= 2 and rest[0] == "-o":
        out, rest = rest[1], rest[2:]
    with open(src, encoding="utf-8", errors="replace") as fh:
        text = clspv_source(fh.read(), rest)
    try:
        spirv = pyclspv.compile(text, False)
    except RuntimeError as exc:
        sys.stderr.flush()
        print(f"clspv: {exc}", file=sys.stderr)
        return 1
    if out:
        with open(out, "wb") as fh:
            fh.write(spirv)
    else:
        sys.stdout.buffer.write(spirv)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
