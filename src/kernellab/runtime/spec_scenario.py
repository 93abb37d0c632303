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

import copy
from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import field
from pathlib import Path
from typing import Any

import numpy as np

from kernellab import compiler_options
from kernellab import model as m
from kernellab.backends import opencl_abi as abi
from kernellab.backends.base import Backend, Buffer, Program, ProgramSpec, SpecConstant
from kernellab.backends.feature_specs import Image
from kernellab.formats.pyschedcl.kernel import ResolvedBuffer, ResolvedKernel
from kernellab.records import dataclass

#: how a spec's buffer kind reads in a scenario
_ACCESS = {"input": "readonly", "output": "writeonly", "io": "readwrite"}
PUSH_UID = "push_constants"


def buffer_uid(pos: int) -> str:
    return f"arg{pos}"


@dataclass
class SpecScenario:
    """A spec's scenario and the bytes its resources start from."""

    scenario: m.Scenario
    #: buffer uid -> its initial bytes (the spec's host data, not copied)
    data: dict[str, memoryview]
    #: the packed by-value arguments (empty when the kernel has none)
    push: bytes
    #: argument position -> buffer uid
    buffers: dict[int, str]
    #: the packed by-value arguments of each part of a split dispatch, by raw-data uid
    pushes: dict[str, bytes] = field(default_factory=dict)
    #: buffer uid -> (byte offset, bytes): the only bytes written and read back (a part alone on
    #: its device in offset mode: its rows of a whole-size buffer)
    regions: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: buffer uids whose initial bytes are all zero: cleared on the device, nothing copied
    zeroed: set[str] = field(default_factory=set)


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
                      specialization_constants=spec_consts, src_path=spec.src)
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
        # the host array's own bytes, not a copy (a sweep runs the spec many times)
        data[uid] = memoryview(np.ascontiguousarray(host[b.pos]).reshape(-1)).cast("B")  # type: ignore[arg-type]  # stubs: no Buffer
        buffers[b.pos] = uid
    if push:
        resources.append(m.RawData(uid=PUSH_UID, src=f"{PUSH_UID}.npy"))
    range_nd = [g // n for g, n in zip(kernel.global_size, local)]
    command = m.DispatchCompute(shader_ref=spec.name, push_data_ref=PUSH_UID if push else "", rangeND=range_nd,
                                bindings=bindings)
    # outputs the host starts at zero are cleared on the device rather than copied
    zeroed = {buffer_uid(b.pos) for b in kernel.buffers if b.spec.kind == "output" and not host[b.pos].any()}
    return SpecScenario(m.Scenario(resources, [command], file=Path(spec.file)), data, push, buffers, zeroed=zeroed)


@dataclass(frozen=True)
class Part:
    """One part of a split dispatch: its role (``gpu``/``cpu``) and its work-items of dimension 0."""

    role: str
    start: int
    count: int


def part_uid(pos: int, role: str) -> str:
    return f"arg{pos}.{role}"


def split_scenario(kernel: ResolvedKernel, host: Mapping[int, np.ndarray], parts: Sequence[Part], split: str,
                   ranged: Collection[int] = (), of: int | None = None) -> SpecScenario:
    """``kernel`` split over dimension 0 into ``parts`` on one device: one dispatch per part, in
    order. ``split`` ``offset``: every part sees the whole buffers and starts at its first
    work-item (``global_offset``). ``subbuffer``: each part's ids start at 0 and a ``break: 1``
    buffer is seen as the part's rows only: a range of the one buffer for the positions in
    ``ranged`` (aligned for sub-buffers), else a buffer of the part's own (``arg<pos>.<role>``,
    its rows' bytes). A ``break: 0`` buffer that the kernel writes is a copy per part when the
    split has several parts, for the caller to merge (two parts writing one buffer would hide the
    first's). ``of``: the parts of the whole split (default ``len(parts)``), where the others run
    on another device: in offset mode a part alone gets whole-size buffers holding its rows only
    (:attr:`SpecScenario.regions`). A buffer no dispatch binds is left out; so are the local size
    specialization constants where the spec names no local size (the driver chooses, as for a
    whole run of the spec)."""
    whole = spec_scenario(kernel, host)
    shader = whole.scenario.resources[0]
    assert isinstance(shader, m.Shader)
    several = (of or len(parts)) > 1
    if not kernel.local_size:
        shader = copy.copy(shader)
        shader.specialization_constants = [c for c in shader.specialization_constants
                                           if c.id not in abi.LOCAL_SIZE_SPEC_IDS]
    resources: list[Any] = [shader] + [r for r in whole.scenario.resources[1:] if not isinstance(r, m.RawData)]
    data = dict(whole.data)
    regions: dict[str, tuple[int, int]] = {}
    local = kernel.local_size or abi.default_local_size(kernel.global_size)
    commands: list[m.Command] = []
    pushes: dict[str, bytes] = {}
    order = sorted(kernel.buffers, key=lambda r: r.pos)
    for part in parts:
        bindings = []
        for binding, b in enumerate(order):
            uid, rng = buffer_uid(b.pos), None
            first, last = (b.elements_before(row, kernel.global_size[0]) * b.spec.type.itemsize
                           for row in (part.start, part.start + part.count))
            private = ((split == "subbuffer" and b.spec.breakable and b.pos not in ranged and several)
                       or (not b.spec.breakable and b.spec.written_by_kernel and several))
            if private:
                uid = part_uid(b.pos, part.role)
                cut = split == "subbuffer" and b.spec.breakable
                data[uid] = whole.data[buffer_uid(b.pos)][first:last] if cut else whole.data[buffer_uid(b.pos)]
                resources.append(m.Buffer(uid=uid, size=len(data[uid]), shader_access=_ACCESS[b.spec.kind]))
            elif split == "subbuffer" and b.spec.breakable and (first, last) != (0, b.nbytes):
                rng = (first, last - first)
            elif split == "offset" and b.spec.breakable and several and len(parts) == 1:
                regions[uid] = (first, last - first)
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
        # the parts touch disjoint rows (or copies of their own): no barrier between them, so a
        # backend with a second queue on the device runs them at once (PySchedCL's queue a part)
        command.implicit_barrier = part is parts[-1]
        commands.append(command)
    bound_uids = {b.resource_ref for c in commands if isinstance(c, m.DispatchCompute) for b in c.bindings}
    resources = [r for r in resources if not isinstance(r, m.Buffer) or r.uid in bound_uids]
    zeroed = {uid for uid in data if uid.split(".")[0] in whole.zeroed}
    return SpecScenario(m.Scenario(resources, commands, file=whole.scenario.file), data, b"", whole.buffers, pushes,
                        regions, zeroed)


def program_specs(shaped: SpecScenario, code: bytes, options: compiler_options.Options) -> dict[str, ProgramSpec]:
    """The program of the spec scenario's shader, from the kernel's source already expanded and
    its options already read (the caller built it to check the kernel against the spec): the
    executor builds it again from this, not from the file."""
    shader = shaped.scenario.resources[0]
    assert isinstance(shader, m.Shader)
    return {shader.uid: ProgramSpec(uid=shader.uid, code=code, language="opencl-c", entry=shader.entry,
                                    specialization=tuple(SpecConstant(c.id, c.value)
                                                         for c in shader.specialization_constants),
                                    push_constants_size=shader.push_constants_size, options=options)}


class SpecInputs:
    """A spec scenario's initial bytes, from memory (no ``.npy`` file is read)."""

    def __init__(self, shaped: SpecScenario):
        self.shaped = shaped

    def fill_buffer(self, backend: Backend, r: m.Buffer, buf: Buffer, element: str) -> bool:
        if r.uid in self.shaped.zeroed:
            return False  # the executor clears it on the device
        data = self.shaped.data[r.uid]
        if r.uid in self.shaped.regions:
            offset, size = self.shaped.regions[r.uid]
            backend.write_buffer(buf, memoryview(data)[offset:offset + size], offset)
        else:
            backend.write_buffer(buf, data)
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
    #: position -> [(role, flat array)]: the parts' own bytes of a written buffer: a ``break: 1``
    #: buffer's rows of the part (its own buffer, or its region of a whole-size one), a
    #: ``break: 0`` buffer's whole copy to merge
    copies: dict[int, list[tuple[str, np.ndarray]]]
    #: role -> (start ns, end ns) of its dispatch, from the run's profiling (empty without it)
    kernel_times: dict[str, tuple[int, int]]
    #: role -> [(command, start ns, end ns)]: its dispatch (``kernel``) and the transfers of its
    #: buffers (``write``, ``fill``, ``read``; a buffer the parts share counts to the first part)
    commands: dict[str, list[tuple[str, int, int]]] = field(default_factory=dict)


def run_split(kernel: ResolvedKernel, host: Mapping[int, np.ndarray], parts: Sequence[Part], split: str,
              backend: Backend, ranged: Collection[int] = (), *, of: int | None = None,
              programs: Callable[[SpecScenario], Mapping[str, ProgramSpec]] | None = None) -> SplitRun:
    """Run :func:`split_scenario` on ``backend`` through the one executor, read back what the
    kernel wrote and free the run's buffers (the backend stays open for the next run).
    ``programs``: the shader's program from the scenario, where the caller built the kernel."""
    from kernellab.runtime.executor import Executor, RunOptions

    shaped = split_scenario(kernel, host, parts, split, ranged, of)
    backend.transfer_timings()  # what came before this run is not its own
    executor = Executor(shaped.scenario, RunOptions(backend=backend.name), inputs=SpecInputs(shaped),
                        write_files=False, lease=_Kept(backend),
                        programs=programs(shaped) if programs is not None else None)
    try:
        executor.run()
        run = _read_back(kernel, shaped, parts, executor.buffers, backend)
    finally:
        executor.free_buffers()
    roles = {part_uid(b.pos, p.role): p.role for b in kernel.buffers for p in parts}
    for timings in executor.report.timings:
        for t in timings:
            role = parts[int(t.label.split(":", 1)[0])].role
            run.kernel_times[role] = (int(t.start_ns), int(t.end_ns))
            run.commands.setdefault(role, []).append(("kernel", int(t.start_ns), int(t.end_ns)))
    for t in backend.transfer_timings():
        kind, _, uid = t.label.partition(":")
        run.commands.setdefault(roles.get(uid, parts[0].role), []).append((kind, int(t.start_ns), int(t.end_ns)))
    return run


def _read_back(kernel: ResolvedKernel, shaped: SpecScenario, parts: Sequence[Part], buffers: Mapping[str, Buffer],
               backend: Backend) -> SplitRun:
    def read(uid: str, b: ResolvedBuffer) -> np.ndarray:
        return read_array(backend, buffers[uid], b, *shaped.regions.get(uid, (0, buffers[uid].size)))

    run = SplitRun({}, {}, {})
    for b in kernel.buffers:
        if not b.spec.written_by_kernel:
            continue
        own = [(p.role, part_uid(b.pos, p.role)) for p in parts if part_uid(b.pos, p.role) in buffers]
        uid = shaped.buffers[b.pos]
        if own:
            run.copies[b.pos] = [(role, read(uid, b)) for role, uid in own]
        elif uid in shaped.regions:
            run.copies[b.pos] = [(parts[0].role, read(uid, b))]
        else:
            run.outputs[b.pos] = read(uid, b)
    return run


def read_array(backend: Backend, buf: Buffer, b: ResolvedBuffer, offset: int, size: int) -> np.ndarray:
    """``size`` bytes of ``buf`` from ``offset`` as a flat array of the spec's element type, read
    by the device straight into the array (one host copy: the result's own)."""
    dtype = np.dtype(b.spec.type.dtype)
    out = np.empty(size // dtype.itemsize, dtype=dtype)
    backend.read_buffer_into(buf, out, offset)
    return out


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
            buf = executor.buffers[shaped.buffers[b.pos]]
            out[b.pos] = read_array(backend, buf, b, 0, buf.size)
    return out

