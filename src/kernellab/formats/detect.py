"""Which format a workload file is in, from its content (``--format`` overrides): the one detector
of ``run``, ``validate``, ``bless``, ``import``, ``verify`` and the compile helpers."""
from __future__ import annotations

import os
import stat
from collections.abc import Collection
from pathlib import Path

from kernellab.errors import InputError
from kernellab.formats.jsonfile import load_json, open_input

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any

#: every workload format, in the order a file is tested against them
FORMATS = ("scenario", "kernel-instantiation", "pyschedcl", "amber")
#: what marks a file as each format, for the message when none does
_MARKS = {"scenario": "a scenario (\"resources\"/\"commands\")",
          "kernel-instantiation": "a kernel instantiation (\"kernel_file\")",
          "pyschedcl": "a kernel spec (\"globalWorkSize\")",
          "amber": "an AmberScript file (.amber, or a first line #!amber)"}


def is_amber(path: Path) -> bool:
    """An AmberScript file: text, told by its extension or its ``#!amber`` first line (it is
    not JSON, so this is asked before the JSON formats)."""
    if path.suffix == ".amber":
        return True
    try:
        with open_input(path) as fh:  # a FIFO opens without waiting, and is not read
            return stat.S_ISREG(os.fstat(fh.fileno()).st_mode) and fh.read(7) == b"#!amber"
    except OSError:
        return False


def format_of(data: Any) -> str | None:
    """The format of a workload file's parsed JSON, or None when nothing marks it."""
    if isinstance(data, dict) and ("resources" in data or "commands" in data):
        return "scenario"
    # a kernel-instantiation file is a JSON array; its reader explains what is wrong inside one
    if isinstance(data, list) or isinstance(data, dict) and {"kernel_file", "global_size"} & set(data):
        return "kernel-instantiation"
    if isinstance(data, dict) and {"globalWorkSize", "inputBuffers", "outputBuffers", "ioBuffers"} & set(data):
        return "pyschedcl"
    return None


def detect(path: Path, among: Collection[str] = FORMATS, otherwise: str | None = None) -> str:
    """The format of the file at ``path``, one of ``among``; a file marked as none of them is
    ``otherwise`` when given (that format's reader then says what is missing), else an error."""
    return detect_document(path, among, otherwise)[0]


def detect_document(path: Path, among: Collection[str] = FORMATS,
                    otherwise: str | None = None) -> tuple[str, Any]:
    """:func:`detect`'s format with the JSON document it was told from (None for AmberScript),
    for the format's reader to take instead of reading the file again."""
    document = None
    if is_amber(path):
        found: str | None = "amber"
    else:
        document = load_json(path)
        found = format_of(document)
    if found in among:
        return found, document  # type: ignore[return-value]
    if otherwise is not None:
        return otherwise, document
    expected = [_MARKS[f] for f in FORMATS if f in among]
    listed = ", ".join(expected[:-1]) + " or " + expected[-1] if len(expected) > 1 else expected[0]
    raise InputError(f"cannot tell the format of this file: expected {listed}; use --format", file=path)
