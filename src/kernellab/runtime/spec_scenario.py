"""A PySchedCL kernel spec as a scenario in memory: the one mapping that ``kernellab import``
writes to files and the executor runs (issue 19 point 1).

The layout is the OpenCL backend's (clspv's): buffer arguments are bindings of set 0 numbered in
parameter order, by-value arguments are the push constants (packed by
:mod:`kernellab.backends.opencl_abi`), the workgroup size is specialization constants 0-2 and
``__local`` arguments take their element counts from specialization constants 3, 4, ... The
spec's macros are the shader's ``build_options``, read through the options door as any
scenario's.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any
from collections.abc import Callable

import numpy as np

from kernellab import model as m
from kernellab.backends import opencl_abi as abi
from kernellab.backends.base import Backend, Buffer, Image, Program, ProgramSpec
from kernellab.formats.pyschedcl.kernel import ResolvedKernel

#: how a spec's buffer kind reads in a scenario
_ACCESS = {"input": "readonly", "output": "writeonly", "io": "readwrite"}
PUSH_UID = "push_constants"


def buffer_uid(pos: int) -> str:
    return f"arg{pos}"


@dataclass
class SpecScenario:
    """A spec's scenario and the bytes its resources start from."""

    scenario: m.Scenario
    #: buffer uid -> its initial bytes (the spec's host data)
    data: dict[str, bytes]
    #: the packed by-value arguments (empty when the kernel has none)
    push: bytes
    #: argument position -> buffer uid
    buffers: dict[int, str]


def push_constant_bytes(kernel: ResolvedKernel) -> bytes:
    """The by-value arguments packed in argument order, each at its natural alignment, as the
    OpenCL backend unpacks a scenario's push constants; padded to a multiple of 4 bytes."""
    values = kernel.arg_values(0, kernel.global_size[0])
    return abi.pack_values((values[pos].tobytes(), values[pos].nbytes) for pos in sorted(values))


def spec_scenario(kernel: ResolvedKernel, host: Mapping[int, np.ndarray]) -> SpecScenario:
    """``kernel`` (resolved for its variables) as one dispatch over its whole NDRange, its buffers
    starting from ``host`` (position -> flat array). Read buffers name ``arg<pos>.npy`` and
    written ones ``arg<pos>.out.npy``, the files ``kernellab import`` writes beside the scenario."""
    spec = kernel.spec
    local = kernel.local_size or abi.default_local_size(kernel.global_size)
    push = push_constant_bytes(kernel)
    spec_consts = [m.SpecializationConstant(id=i, value=int(v)) for i, v in enumerate(local)]
    for n, pos in enumerate(sorted(kernel.local_bytes)):
        arg = next(a for a in spec.local_args if a.pos == pos)
        spec_consts.append(m.SpecializationConstant(id=abi.FIRST_LOCAL_ARGUMENT_SPEC_ID + n,
                                                    value=abi.local_count(kernel.local_bytes[pos], arg.type.itemsize)))
    shader = m.Shader(uid=spec.name, src=spec.src.name, entry=spec.name, type="OpenCL-C",
                      build_options=kernel.build_options, push_constants_size=len(push),
                      specialization_constants=spec_consts)
    shader._src_path = spec.src
    resources: list[Any] = [shader]
    bindings, data, buffers = [], {}, {}
    # binding B is the B-th buffer argument in parameter order (clspv's layout, which the OpenCL
    # backend follows too), not the argument's position
    for binding, b in enumerate(sorted(kernel.buffers, key=lambda r: r.pos)):
        uid = buffer_uid(b.pos)
        fields: dict[str, Any] = {"uid": uid, "size": b.nbytes, "shader_access": _ACCESS[b.spec.kind]}
        if b.spec.read_by_kernel:
            fields["src"] = f"{uid}.npy"
        if b.spec.written_by_kernel:
            fields["dst"] = f"{uid}.out.npy"
        resources.append(m.Buffer(**fields))
        bindings.append(m.Binding(set=0, id=binding, resource_ref=uid))
        data[uid] = np.ascontiguousarray(host[b.pos]).tobytes()
        buffers[b.pos] = uid
    if push:
        resources.append(m.RawData(uid=PUSH_UID, src=f"{PUSH_UID}.npy"))
    range_nd = [g // n for g, n in zip(kernel.global_size, local)]
    command = m.DispatchCompute(shader_ref=spec.name, push_data_ref=PUSH_UID if push else "", rangeND=range_nd,
                                bindings=bindings)
    return SpecScenario(m.Scenario(resources, [command], file=Path(spec.file)), data, push, buffers)


class SpecInputs:
    """A spec scenario's initial bytes, from memory (no ``.npy`` file is read)."""

    def __init__(self, shaped: SpecScenario):
        self.shaped = shaped

    def fill_buffer(self, backend: Backend, r: m.Buffer, buf: Buffer, element: str) -> bool:
        backend.write_buffer(buf, self.shaped.data[r.uid])
        return True

    def fill_image(self, backend: Backend, r: m.Image, image: Image) -> None:
        return None

    def raw_data(self, r: m.RawData) -> bytes | None:
        return self.shaped.push if r.uid == PUSH_UID else None


class _Kept:
    """A backend opened by the caller and lent to the executor, left open for the read-back."""

    def __init__(self, backend: Backend):
        self.backend = backend

    def lease(self, own: Callable[[], Backend], needs_own_device: bool) -> AbstractContextManager[Backend]:
        return nullcontext(self.backend)

    def alloc_buffer(self, backend: Backend, size: int, uid: str) -> Buffer:
        return backend.alloc_buffer(size, uid)

    def create_program(self, backend: Backend, spec: ProgramSpec) -> Program:
        return backend.create_program(spec)


def run_unsplit(kernel: ResolvedKernel, host: Mapping[int, np.ndarray], backend: Backend) -> dict[int, np.ndarray]:
    """Run ``kernel`` whole on ``backend`` through the one executor; position -> the flat final
    array of every written buffer (the spec's element type)."""
    from kernellab.runtime.executor import Executor, RunOptions

    shaped = spec_scenario(kernel, host)
    executor = Executor(shaped.scenario, RunOptions(backend=backend.name), inputs=SpecInputs(shaped),
                        write_files=False, lease=_Kept(backend))
    executor.run()
    out = {}
    for b in kernel.buffers:
        if b.spec.written_by_kernel:
            raw = backend.read_buffer_bytes(executor.buffers[shaped.buffers[b.pos]])
            out[b.pos] = np.frombuffer(bytes(raw), dtype=b.spec.type.dtype).copy()
    return out

