"""Which format a workload file is in, from its content (``--format`` overrides)."""
from __future__ import annotations

from pathlib import Path

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
