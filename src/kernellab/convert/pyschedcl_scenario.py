"""A PySchedCL kernel spec as an equivalent scenario (``kernellab import SPEC.json``).

The scenario follows the argument mapping of the OpenCL backend (the clspv layout): buffer
arguments are bindings of set 0 numbered in parameter order, by-value arguments are the push
constants, the workgroup size is specialization constants 0-2 and ``__local`` arguments take
their element counts from specialization constants 3, 4, ...
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from kernellab.errors import InputError, Problem
from kernellab.formats.pyschedcl.spec import load_spec
from kernellab.formats.scenario import write_scenario
from kernellab.outputs import OutputSet
from kernellab.runtime.host_data import fill_inputs, output_array
from kernellab.runtime.spec_scenario import push_constant_bytes, spec_scenario

__all__ = ["import_spec", "push_constant_bytes"]


def import_spec(path: str | Path, output_dir: str | Path, *, variables: Mapping[str, Any] | None = None,
                seed: int = 0, inputs: Mapping[int, str | Path] | None = None, name: str = "scenario.json") -> Path:
    """``kernellab import SPEC.json --set dataset=N -o DIR``: write ``DIR/scenario.json`` (an
    OpenCL-C shader, one buffer per buffer argument with its input data as ``arg<pos>.npy``,
    bound at set 0 in parameter order, the scalars as push constants, the workgroup size and
    local argument sizes as specialization constants, one dispatch) plus the kernel source. Running the scenario on
    one OpenCL device computes what ``kernellab run SPEC.json`` computes; a buffer's ``dst`` is
    ``arg<pos>.out.npy`` (raw bytes, as Arm's runner writes buffers). The scenario is
    :func:`~kernellab.runtime.spec_scenario.spec_scenario`'s, the one ``kernellab run`` executes."""
    spec = load_spec(path)
    kernel = spec.resolve(variables or {}, 10)
    out = Path(output_dir)
    host = fill_inputs(kernel, seed, inputs)
    try:
        source = spec.src.read_bytes()
    except OSError as exc:
        raise InputError([Problem(spec.file, "/src", f"cannot read {spec.src}: {exc.strerror or exc}")]) from None
    shaped = spec_scenario(kernel, host)
    with OutputSet(out) as files:
        files.bytes(out / spec.src.name, source)
        for b in kernel.buffers:
            if b.spec.read_by_kernel:
                files.npy(out / f"arg{b.pos}.npy", output_array(b, host[b.pos]))
        if shaped.push:
            files.npy(out / "push_constants.npy", np.frombuffer(shaped.push, dtype=np.uint8))
        files.commit()
    target = out / name
    write_scenario(shaped.scenario, target)
    return target
