"""Which format a workload file is in, from its content (``--format`` overrides)."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Callable

from kernellab.errors import InputError
from kernellab.formats.jsonfile import load_json


def detect(path: Path) -> str:
    data = load_json(path)
    if isinstance(data, dict) and ("resources" in data or "commands" in data):
        return "scenario"
    # a kernel-instantiation file is a JSON array; its reader explains what is wrong inside one
    if isinstance(data, list) or isinstance(data, dict) and {"kernel_file", "global_size"} & set(data):
        return "kernel-instantiation"
    if isinstance(data, dict) and {"globalWorkSize", "inputBuffers", "outputBuffers", "ioBuffers"} & set(data):
        return "pyschedcl"
    raise InputError("cannot tell the format of this file: expected a scenario (\"resources\"/\"commands\"), "
                     "a kernel instantiation (\"kernel_file\") or a kernel spec (\"globalWorkSize\"); "
                     "use --format", file=path)


def runner_for(fmt: str) -> Callable[[Path, argparse.Namespace], int]:
    """The run function for a non-scenario format."""
    if fmt == "kernel-instantiation":
        from kernellab.runtime import instantiation  # type: ignore[attr-defined]
        return instantiation.run_from_cli
    if fmt == "pyschedcl":
        from kernellab.runtime import partition  # type: ignore[attr-defined]
        return partition.run_from_cli
    raise InputError(f"unknown format {fmt!r}")


__all__ = ["detect", "runner_for", "Any"]
