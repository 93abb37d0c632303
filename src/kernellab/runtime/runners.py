"""The run of each workload format besides scenarios (``kernellab run --format``), with typed
options: the commands turn their command line into :class:`FormatRunOptions`, the runtime never
sees an argparse namespace."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import Any

from kernellab.errors import InputError, UsageError
from kernellab.records import dataclass


@dataclass(frozen=True)
class FormatRunOptions:
    """What a run of a kernel-instantiation file or a PySchedCL spec is asked to do."""

    #: folder of the outputs; None: a kernel-instantiation run writes nothing, a spec run writes
    #: beside the spec
    output: Path | None = None
    #: the OpenCL device of a kernel-instantiation run (index or name substring)
    device: str | None = None
    #: seed of the data made for arguments the file leaves unconstrained
    seed: int = 0
    #: kernel-instantiation: run only instantiation N (None: all)
    index: int | None = None
    #: PySchedCL: the values of the spec's variables (``--set``)
    variables: Mapping[str, Any] = field(default_factory=dict)
    #: PySchedCL: P/10 of the NDRange on the GPU-class device (None: the spec's)
    partition: int | None = None
    #: PySchedCL: the CPU-class and GPU-class devices
    devices: str | None = None
    #: PySchedCL: data for buffer argument POS, by POS
    inputs: Mapping[int, Path] = field(default_factory=dict)
    #: PySchedCL: how the parts see their buffers (runtime/split_modes.py)
    split: str = "subbuffer"
    #: PySchedCL: every command's device times as JSON
    profiling_path: Path | None = None


def parse_inputs(items: Sequence[str] | None) -> dict[int, Path]:
    """``--input POS=FILE.npy`` items by POS."""
    out: dict[int, Path] = {}
    for item in items or ():
        pos, sep, file = item.partition("=")
        if not sep or not pos.strip().isdigit() or not file:
            raise UsageError(f"--input {item!r}: expected POS=FILE.npy, e.g. --input 0=a.npy")
        out[int(pos)] = Path(file)
    return out


def run_format(fmt: str, path: Path, options: FormatRunOptions) -> int:
    """Run ``path`` of format ``fmt`` (not a scenario); the exit status."""
    if fmt == "kernel-instantiation":
        from kernellab.runtime.instantiation import run_instantiations

        return run_instantiations(path, options.output, index=options.index, seed=options.seed,
                                  device=options.device)
    if fmt == "pyschedcl":
        from kernellab.runtime.partition import run_spec

        return run_spec(path, options.output if options.output is not None else Path(path).parent,
                        variables=options.variables, partition=options.partition, devices=options.devices,
                        seed=options.seed, inputs=options.inputs, split=options.split,
                        profiling_path=options.profiling_path)
    raise InputError(f"unknown format {fmt!r}")
