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

from kernellab import model as m
from kernellab.backends import opencl_abi as abi
from kernellab.errors import InputError, Problem
from kernellab.formats.pyschedcl.kernel import ResolvedKernel
from kernellab.formats.pyschedcl.spec import load_spec
from kernellab.formats.scenario import write_scenario
from kernellab.outputs import OutputSet
from kernellab.runtime.host_data import fill_inputs, output_array


def push_constant_bytes(kernel: ResolvedKernel) -> bytes:
    """The by-value arguments packed in argument order, each at its natural alignment, as the
    OpenCL backend unpacks a scenario's push constants; padded to a multiple of 4 bytes."""
    values = kernel.arg_values(0, kernel.global_size[0])
    return abi.pack_values((values[pos].tobytes(), values[pos].nbytes) for pos in sorted(values))


def import_spec(path: str | Path, output_dir: str | Path, *, variables: Mapping[str, Any] | None = None,
                seed: int = 0, inputs: Mapping[int, str | Path] | None = None, name: str = "scenario.json") -> Path:
    """``kernellab import SPEC.json --set dataset=N -o DIR``: write ``DIR/scenario.json`` (an
    OpenCL-C shader, one buffer per buffer argument with its input data as ``arg<pos>.npy``,
    bound at set 0 in parameter order, the scalars as push constants, the workgroup size and
    local argument sizes as specialization constants, one dispatch) plus the kernel source. Running the scenario on
    one OpenCL device computes what ``kernellab run SPEC.json`` computes; a buffer's ``dst`` is
    ``arg<pos>.out.npy`` (raw bytes, as Arm's runner writes buffers)."""
    spec = load_spec(path)
    kernel = spec.resolve(variables or {}, 10)
    out = Path(output_dir)
    host = fill_inputs(kernel, seed, inputs)
    local = kernel.local_size or abi.default_local_size(kernel.global_size)
    try:
        source = spec.src.read_bytes()
    except OSError as exc:
        raise InputError([Problem(spec.file, "/src", f"cannot read {spec.src}: {exc.strerror or exc}")]) from None
    src_name = spec.src.name
    access = {"input": "readonly", "output": "writeonly", "io": "readwrite"}
    resources: list[Any] = []
    push = push_constant_bytes(kernel)
    spec_consts = [m.SpecializationConstant(id=i, value=int(v)) for i, v in enumerate(local)]
    for n, pos in enumerate(sorted(kernel.local_bytes)):
        arg = next(a for a in spec.local_args if a.pos == pos)
        spec_consts.append(m.SpecializationConstant(id=abi.FIRST_LOCAL_ARGUMENT_SPEC_ID + n,
                                                    value=abi.local_count(kernel.local_bytes[pos], arg.type.itemsize)))
    resources.append(m.Shader(uid=spec.name, src=src_name, entry=spec.name, type="OpenCL-C",
                              build_options=kernel.build_options, push_constants_size=len(push),
                              specialization_constants=spec_consts))
    bindings = []
    # binding B is the B-th buffer argument in parameter order (clspv's layout, which the OpenCL
    # backend follows too), not the argument's position
    for binding, b in enumerate(sorted(kernel.buffers, key=lambda r: r.pos)):
        uid = f"arg{b.pos}"
        fields: dict[str, Any] = {"uid": uid, "size": b.nbytes, "shader_access": access[b.spec.kind]}
        if b.spec.read_by_kernel:
            fields["src"] = f"arg{b.pos}.npy"
        if b.spec.written_by_kernel:
            fields["dst"] = f"arg{b.pos}.out.npy"
        resources.append(m.Buffer(**fields))
        bindings.append(m.Binding(set=0, id=binding, resource_ref=uid))
    if push:
        resources.append(m.RawData(uid="push_constants", src="push_constants.npy"))
    rangeND = [g // n for g, n in zip(kernel.global_size, local)]
    command = m.DispatchCompute(shader_ref=spec.name, push_data_ref="push_constants" if push else "",
                                rangeND=rangeND, bindings=bindings)
    scenario = m.Scenario(resources, [command])
    with OutputSet(out) as files:
        files.bytes(out / src_name, source)
        for b in kernel.buffers:
            if b.spec.read_by_kernel:
                files.npy(out / f"arg{b.pos}.npy", output_array(b, host[b.pos]))
        if push:
            files.npy(out / "push_constants.npy", np.frombuffer(push, dtype=np.uint8))
        files.commit()
    target = out / name
    write_scenario(scenario, target)
    return target
