"""The run function of each workload format besides scenarios (``kernellab run --format``)."""
from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from kernellab.errors import InputError
from kernellab.runtime import instantiation, partition


def runner_for(fmt: str) -> Callable[[Path, argparse.Namespace], int]:
    """The run function for a non-scenario format."""
    if fmt == "kernel-instantiation":
        return instantiation.run_from_cli
    if fmt == "pyschedcl":
        return partition.run_from_cli
    raise InputError(f"unknown format {fmt!r}")
