from __future__ import annotations

from kernellab.cli import program

program()
