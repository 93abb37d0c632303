"""``python -m kernellab.compile.clspv_child``: OpenCL C on stdin, Vulkan SPIR-V on stdout.

pyclspv prints its compiler log on the process's C-level stderr and raises a bare
``RuntimeError``; running it in a child process lets the log be captured and gives a failure a
repro command that can be pasted into a shell.
"""
from __future__ import annotations

import sys


def main() -> int:
    import pyclspv  # type: ignore[import-not-found]

    source = sys.stdin.buffer.read().decode("utf-8", errors="replace")
    try:
        spirv = pyclspv.compile(source, "--optimize" in sys.argv[1:])
    except RuntimeError as exc:
        sys.stderr.flush()
        print(f"clspv: {exc}", file=sys.stderr)
        return 1
    sys.stdout.buffer.write(spirv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
