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

from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kernellab import model as m
from kernellab.backends import opencl_abi as abi
from kernellab.backends.base import Backend, Buffer, Image, Program, ProgramSpec
from kernellab.formats.pyschedcl.kernel import ResolvedBuffer, ResolvedKernel

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
    #: the packed by-value arguments of each part of a split dispatch, by raw-data uid
    pushes: dict[str, bytes] = field(default_factory=dict)


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


@dataclass(frozen=True)
class Part:
    """One part of a split dispatch: its role (``gpu``/``cpu``) and its work-items of dimension 0."""

    role: str
    start: int
    count: int


def part_uid(pos: int, role: str) -> str:
    return f"arg{pos}.{role}"


def split_scenario(kernel: ResolvedKernel, host: Mapping[int, np.ndarray], parts: Sequence[Part], split: str,
                   ranged: Collection[int] = ()) -> SpecScenario:
    """``kernel`` split over dimension 0 into ``parts`` on one device: one dispatch per part, in
    order. ``split`` ``offset``: every part sees the whole buffers and starts at its first
    work-item (``global_offset``). ``subbuffer``: each part's ids start at 0 and a ``break: 1``
    buffer is seen as the part's rows only: a range of the one buffer for the positions in
    ``ranged`` (aligned for sub-buffers), else a buffer of the part's own (``arg<pos>.<role>``,
    its rows' bytes). A ``break: 0`` buffer that the kernel writes is a copy per part when there
    are several, for the caller to merge (two parts writing one buffer would hide the first's)."""
    whole = spec_scenario(kernel, host)
    shader = whole.scenario.resources[0]
    assert isinstance(shader, m.Shader)
    resources: list[Any] = [r for r in whole.scenario.resources if not isinstance(r, m.RawData)]
    data = dict(whole.data)
    local = kernel.local_size or abi.default_local_size(kernel.global_size)
    commands: list[m.Command] = []
    pushes: dict[str, bytes] = {}
    order = sorted(kernel.buffers, key=lambda r: r.pos)
    for part in parts:
        bindings = []
        for binding, b in enumerate(order):
            uid, rng = buffer_uid(b.pos), None
            rows = part.start, part.start + part.count
            first = b.elements_before(rows[0], kernel.global_size[0]) * b.spec.type.itemsize
            last = b.elements_before(rows[1], kernel.global_size[0]) * b.spec.type.itemsize
            private = ((split == "subbuffer" and b.spec.breakable and b.pos not in ranged and len(parts) > 1)
                       or (not b.spec.breakable and b.spec.written_by_kernel and len(parts) > 1))
            if private:
                uid = part_uid(b.pos, part.role)
                cut = split == "subbuffer" and b.spec.breakable
                data[uid] = whole.data[buffer_uid(b.pos)][first:last] if cut else whole.data[buffer_uid(b.pos)]
                resources.append(m.Buffer(uid=uid, size=len(data[uid]), shader_access=_ACCESS[b.spec.kind]))
            elif split == "subbuffer" and b.spec.breakable and (first, last) != (0, b.nbytes):
                rng = (first, last - first)
            bound = m.Binding(set=0, id=binding, resource_ref=uid)
            bound.buffer_range = rng
            bindings.append(bound)
        push = abi.pack_values((v.tobytes(), v.nbytes) for _, v in sorted(kernel.arg_values(part.start,
                                                                                             part.count).items()))
        push_uid = f"{PUSH_UID}.{part.role}" if push else ""
        if push:
            resources.append(m.RawData(uid=push_uid, src=f"{push_uid}.npy"))
            pushes[push_uid] = push
        size = (part.count,) + tuple(kernel.global_size[1:])
        command = m.DispatchCompute(shader_ref=shader.uid, push_data_ref=push_uid,
                                    rangeND=[-(-g // n) for g, n in zip(size, local)], bindings=bindings)
        command.global_size = size
        if split == "offset" and part.start:
            command.global_offset = [part.start] + [0] * (len(size) - 1)
        commands.append(command)
    return SpecScenario(m.Scenario(resources, commands, file=whole.scenario.file), data, b"", whole.buffers, pushes)


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
        return self.shaped.push if r.uid == PUSH_UID else self.shaped.pushes.get(r.uid)


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


@dataclass
class SplitRun:
    """What a split run left: the written buffers' final bytes and each part's device times."""

    #: position -> flat final array of every written buffer the parts share
    outputs: dict[int, np.ndarray]
    #: position -> [(role, flat array)]: the parts' own copies (private rows or whole copies to merge)
    copies: dict[int, list[tuple[str, np.ndarray]]]
    #: role -> (start ns, end ns) of its dispatch, from the run's profiling (empty without it)
    kernel_times: dict[str, tuple[int, int]]


def run_split(kernel: ResolvedKernel, host: Mapping[int, np.ndarray], parts: Sequence[Part], split: str,
              backend: Backend, ranged: Collection[int] = ()) -> SplitRun:
    """Run :func:`split_scenario` on ``backend`` through the one executor."""
    from kernellab.runtime.executor import Executor, RunOptions

    shaped = split_scenario(kernel, host, parts, split, ranged)
    executor = Executor(shaped.scenario, RunOptions(backend=backend.name), inputs=SpecInputs(shaped),
                        write_files=False, lease=_Kept(backend))
    executor.run()

    def read(uid: str, b: ResolvedBuffer) -> np.ndarray:
        raw = backend.read_buffer_bytes(executor.buffers[uid])
        return np.frombuffer(bytes(raw), dtype=b.spec.type.dtype).copy()

    run = SplitRun({}, {}, {})
    for b in kernel.buffers:
        if not b.spec.written_by_kernel:
            continue
        own = [(p.role, part_uid(b.pos, p.role)) for p in parts if part_uid(b.pos, p.role) in executor.buffers]
        if own:
            run.copies[b.pos] = [(role, read(uid, b)) for role, uid in own]
        else:
            run.outputs[b.pos] = read(shaped.buffers[b.pos], b)
    for timings in executor.report.timings:
        for t in timings:
            index = int(t.label.split(":", 1)[0])
            run.kernel_times[parts[index].role] = (int(t.start_ns), int(t.end_ns))
    return run


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

