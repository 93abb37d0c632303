"""Converting between kernel-instantiation files and scenarios.

:func:`import_instantiations` turns each instantiation into an OpenCL C shader, buffers (``.npy``,
the exact bytes ``kernellab run`` would upload, unconstrained arguments filled from the same seed)
and a ``dispatch_compute``; :func:`export_scenario` goes the other way for a scenario's OpenCL C
dispatches. Both follow the argument mapping of :mod:`kernellab.backends.opencl_abi` (the clspv
layout): buffer pointers are bindings (set 0) numbered among themselves, by-value arguments are
the push constants packed in order, the work-group size is specialization constants 0-2 and
``__local`` pointers take their element counts from specialization constants 3, 4, ...
"""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from kernellab import model as m
from kernellab import modelkit
from kernellab.backends import opencl_abi as abi
from kernellab.backends.base import Backend, Buffer, Program, ProgramSpec, SpecConstant
from kernellab.backends.feature_specs import KernelArg
from kernellab.compile.pipeline import expand_request
from kernellab.compile.stage import placed
from kernellab.errors import CompileError, InputError, Problem, json_pointer
from kernellab.formats import gpuverify, npy
from kernellab.formats.jsonfile import load_json
from kernellab.formats.paths import name_problem, uid_where
from kernellab.formats.scenario import load_scenario
from kernellab.outputs import OutputSet
from kernellab.records import dataclass
from kernellab.runtime.executor import driver_options, shader_request
from kernellab.runtime.instantiation import (
    LaunchScenario,
    as_scenario,
    build,
    launches,
    make_arguments,
    open_backend,
    select,
)

Report = Callable[[str], None]


def _write_npy(outs: OutputSet, path: Path, array: np.ndarray) -> None:
    with outs.open(path) as fh:
        np.lib.format.write_array(fh, array, allow_pickle=False)


# --- kernel instantiations -> scenario -------------------------------------------------------


def import_instantiations(path: str | Path, output_dir: str | Path, *, index: int | None = None, seed: int = 0,
                          device: str | None = None, report: Report | None = None) -> Path:
    """Write ``output_dir/scenario.json`` equivalent to the kernel-instantiation file ``path``.

    Each instantiation i gets its own buffers ``i<i>_arg<N>.npy`` and shader ``kernel<i>``; its
    buffers' ``dst`` are ``arg<N>.npy`` (``<i>/arg<N>.npy`` for i > 0), mirroring ``kernellab run``.
    """
    report = report or (lambda s: None)
    path, out = Path(path), Path(output_dir)
    insts, warnings = gpuverify.load(path)
    for w in warnings:
        report(str(w))
    chosen = select(insts, index, path)
    shaders: list[dict[str, Any]] = []
    resources: list[dict[str, Any]] = []
    commands: list[dict[str, Any]] = []
    backend = open_backend(device)
    try:
        with OutputSet(out) as outs:
            kernels: dict[Path, str] = {}
            for inst in chosen:
                program = build(backend, inst)
                launch = make_arguments(backend, inst, program, seed)
                for line in launch.filled:
                    report(line)
                shaped = as_scenario(launch, whole_groups=True)
                src = inst.kernel_path
                if src not in kernels:
                    kernels[src] = f"kernel{len(kernels)}_{src.name}"
                    with outs.open(out / kernels[src]) as fh:
                        fh.write(src.read_bytes())
                shader, used, command = _import_launch(shaped, inst.index, kernels[src], outs, out)
                shaders.append(shader)
                resources += used
                commands.append(command)
            scenario_path = out / "scenario.json"
            with outs.open(scenario_path) as fh:
                fh.write((json.dumps({"resources": shaders + resources, "commands": commands}, indent=2)
                          + "\n").encode())
            outs.commit()
    finally:
        backend.close()
    return scenario_path


def _import_launch(shaped: LaunchScenario, i: int, kernel_file: str, outs: OutputSet,
                   out: Path) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """One launch's scenario written out: (shader resource, its buffer and push-data resources,
    its dispatch); each buffer's initial bytes as ``<uid>.npy``, its ``dst`` where ``kernellab run``
    writes the argument (``arg<N>.npy``, ``<i>/arg<N>.npy`` for i > 0)."""
    resources: list[dict[str, Any]] = []
    argument = {uid: n for n, uid in shaped.arrays.items()}
    shader: dict[str, Any] = {}
    for r in shaped.scenario.resources:
        if isinstance(r, m.Shader):
            r.src = kernel_file
            shader = {"shader": modelkit.dump(r)}
        elif isinstance(r, m.Buffer):
            _write_npy(outs, out / f"{r.uid}.npy", np.frombuffer(shaped.values[r.uid].data, np.uint8))
            n = argument[r.uid]
            r.src, r.dst = f"{r.uid}.npy", f"arg{n}.npy" if i == 0 else f"{i}/arg{n}.npy"
            resources.append({"buffer": modelkit.dump(r)})
        elif isinstance(r, m.RawData):
            _write_npy(outs, out / f"{r.uid}.npy", np.frombuffer(shaped.push[r.uid], np.uint8))
            r.src = f"{r.uid}.npy"
            resources.append({"raw_data": modelkit.dump(r)})
    return shader, resources, {"dispatch_compute": modelkit.dump(shaped.scenario.commands[0])}


# --- scenario -> kernel instantiations -------------------------------------------------------


def dispatch_pointers(path: str | Path) -> list[str]:
    """JSON pointers of a scenario's dispatch_compute commands, in order: instantiation i of an
    exported file came from ``dispatch_pointers(S)[i]``."""
    data = load_json(path)
    cmds = data.get("commands", []) if isinstance(data, dict) else []
    return [json_pointer(["commands", n]) for n, c in enumerate(cmds)
            if isinstance(c, dict) and "dispatch_compute" in c]


@dataclass
class _Dispatch:
    index: int
    command: Any
    shader: Any


def _exportable_dispatches(scenario: m.Scenario, path: Path) -> list[_Dispatch]:
    """The scenario's dispatches, or every reason it cannot be exported as bad input."""
    dispatches: list[_Dispatch] = []
    problems = []
    for n, c in enumerate(scenario.commands):
        if isinstance(c, m.DispatchCompute):
            shader = scenario.by_uid[c.shader_ref]
            assert isinstance(shader, m.Shader)  # the reader checked the reference
            if shader.type != "OpenCL-C":
                problems.append(Problem(str(path), json_pointer(["commands", n]),
                                        f"dispatch of {shader.type} shader \"{shader.uid}\": only OpenCL C "
                                        "dispatches can be exported as kernel instantiations"))
            elif ((why := name_problem(shader.uid)) is not None  # it names the exported kernel file
                  and not any(d.shader is shader for d in dispatches)):
                problems.append(Problem(str(path), json_pointer(uid_where(scenario, shader.uid)),
                                        f"shader uid: {why}"))
            dispatches.append(_Dispatch(n, c, shader))
        elif isinstance(c, (m.DispatchGraph, m.DispatchFragment)):
            problems.append(Problem(str(path), json_pointer(["commands", n]),
                                    f"{c.kind} has no kernel-instantiation equivalent"))
    if not dispatches:
        problems.append(Problem(str(path), "/commands", "the scenario has no dispatch_compute to export"))
    for r in scenario.resources:
        if isinstance(r, (m.Image, m.Tensor)):
            problems.append(Problem(str(path), "/resources", f"{r.kind} \"{r.uid}\": only buffers can be exported"))
    if problems:
        raise InputError(problems)
    return dispatches


def export_scenario(path: str | Path, output_dir: str | Path, *, device: str | None = None,
                    report: Report | None = None, scenario: m.Scenario | None = None) -> Path:
    """Write ``output_dir/instantiations.json``: one instantiation per OpenCL C dispatch of the
    scenario, with each bound buffer's contents at that dispatch (the dispatches before the last
    are run on an OpenCL device to know them).

    Returns the file; ``export_scenario.last_commands`` is not kept: the i-th instantiation is the
    i-th ``dispatch_compute`` of the scenario (see :func:`dispatch_pointers`). ``scenario``: the
    file already loaded (verify loads it once), its warnings already given."""
    report = report or (lambda s: None)
    path, out = Path(path), Path(output_dir)
    if scenario is None:
        scenario, warnings = load_scenario(path)
        for w in warnings:
            report(str(w))
    dispatches = _exportable_dispatches(scenario, path)
    backend = open_backend(device)
    try:
        exporter = _Exporter(backend, scenario, path, out)
        with OutputSet(out) as outs:
            insts = []
            for k, d in enumerate(dispatches):
                insts.append(exporter.instantiation(k, d, outs))
                if k + 1 < len(dispatches):  # run it so the next dispatch sees its results (the last need not run)
                    exporter.run(d)
            result = out / "instantiations.json"
            with outs.open(result) as fh:
                fh.write((json.dumps(insts, indent=2) + "\n").encode())
            outs.commit()
    finally:
        backend.close()
    return result


class _Exporter:
    """A scenario's buffers and programs on a backend that launches OpenCL C kernels (the
    contract's :class:`~kernellab.backends.base.KernelLaunchFeature`), written out dispatch by
    dispatch."""

    def __init__(self, backend: Backend, scenario: m.Scenario, path: Path, out: Path):
        self.backend, self.scenario, self.path, self.out = backend, scenario, path, out
        self.launches = launches(backend)
        self.buffers: dict[str, Buffer] = {}
        for r in scenario.resources:
            if isinstance(r, m.Buffer):
                self.buffers[r.uid] = backend.alloc_buffer(r.size, r.uid)
                data = npy.load_bytes(r.src_path) if r.src_path is not None else np.zeros(r.size, np.uint8)
                backend.write_buffer(self.buffers[r.uid], np.asarray(data)[:r.size])
        self.push_data = {r.uid: bytes(npy.load_bytes(r.src_path)) for r in scenario.resources
                          if isinstance(r, m.RawData) and r.src_path is not None}
        self.programs: dict[str, Program] = {}
        self.kernel_files: dict[str, str] = {}

    def program(self, shader: Any, outs: OutputSet) -> Program:
        """The shader's program, built once; its source is written beside the instantiations."""
        if shader.uid not in self.programs:
            # the exported kernel is the source with its includes inlined and checked (#line keeps lines)
            code = expand_request(shader_request(self.scenario, shader)).text
            spec = ProgramSpec(uid=f"{shader.src}:{shader.entry}", code=code,
                               language="opencl-c", entry=shader.entry,
                               options=driver_options(self.scenario, shader),
                               push_constants_size=shader.push_constants_size,
                               specialization=tuple(SpecConstant(s.id, s.value)
                                                    for s in shader.specialization_constants))
            try:
                self.programs[shader.uid] = self.backend.create_program(spec)
            except CompileError as exc:  # named by the shader's place in the scenario, as `run` names it
                raise placed(exc, shader_request(self.scenario, shader).place, shader.src_path) from exc.__cause__
            self.kernel_files[shader.uid] = f"{shader.uid}.cl"
            with outs.open(self.out / self.kernel_files[shader.uid]) as fh:
                fh.write(shader.src_path.read_bytes())
        return self.programs[shader.uid]

    def instantiation(self, k: int, d: _Dispatch, outs: OutputSet) -> dict[str, Any]:
        """Dispatch ``d`` (the k-th) as an instantiation, its buffers as they are now."""
        shader = d.shader
        program = self.program(shader, outs)
        specs = {s.id: int(s.value) for s in shader.specialization_constants}
        local = abi.local_size(specs, self.launches.required_work_group_size(program))
        groups = list(d.command.workgroups)
        dims = max(len(d.command.rangeND), 1 + max((i for i in range(3) if local[i] > 1), default=0))
        inst: dict[str, Any] = {"language": "OpenCL", "endianness": "little",
                                "kernel_file": self.kernel_files[shader.uid],
                                "local_size": list(local[:dims]),
                                "global_size": [g * n for g, n in zip(groups[:dims], local[:dims])],
                                "entry_point": shader.entry,
                                "kernel_arguments": self.arguments(k, d, program, specs, outs)}
        if d.command.global_offset and any(d.command.global_offset):
            inst["global_offset"] = (list(d.command.global_offset) + [0] * dims)[:dims]
        if shader.build_options:
            inst["compiler_flags"] = shader.build_options
        return inst

    def arguments(self, k: int, d: _Dispatch, program: Program, specs: dict[int, int],
                  outs: OutputSet) -> list[dict[str, Any]]:
        bound = {(b.set, b.id): b.resource_ref for b in d.command.bindings}
        params = self.launches.kernel_arguments(program)
        scalars = abi.unpack_push_constants(params, self.push_data.get(d.command.push_data_ref, b""),
                                            self.launches.type_layout(program, abi.unsized_types(params)))
        binding_of = abi.buffer_bindings(params)
        counts = abi.local_counts(params, specs)
        args: list[dict[str, Any]] = []
        for a in params:
            if a.kind == "buffer":
                binding = binding_of[a.index]
                args.append(self.buffer_argument(k, d, a, bound.get((0, binding)), binding, outs))
            elif a.kind == "local":
                args.append({"type": "array", "size": counts[a.index] * abi.local_element_size(a),
                             "address_space": "local"})
            elif a.kind == "scalar":
                args.append({"type": "scalar", "value": gpuverify.hex_value(scalars[a.index], "little")})
            else:
                raise InputError([Problem(str(self.path), json_pointer(["commands", d.index]),
                                          f"kernel argument {a.index} ({a.name}) is an {a.kind}; not exportable")])
        return args

    def buffer_argument(self, k: int, d: _Dispatch, a: KernelArg, uid: str | None, binding: int,
                        outs: OutputSet) -> dict[str, Any]:
        """A bound buffer's current bytes as ``d<k>_arg<N>.bin`` and its array argument."""
        if uid is None:
            raise InputError([Problem(str(self.path), json_pointer(["commands", d.index]),
                                      f"kernel argument {a.index} ({a.name}) is buffer argument "
                                      f"{binding} but binding (set 0, id {binding}) is not bound")])
        res = self.scenario.by_uid[uid]
        assert isinstance(res, m.Buffer)  # a binding names a buffer here (the dispatch was checked)
        name = f"d{k}_arg{a.index}.bin"
        with outs.open(self.out / name) as fh:
            fh.write(self.backend.read_buffer(self.buffers[uid]).tobytes())
        flag = {"readonly": "CL_MEM_READ_ONLY", "writeonly": "CL_MEM_WRITE_ONLY"}.get(
            res.shader_access, "CL_MEM_READ_WRITE")
        return {"type": "array", "size": res.size, "address_space": a.address_space, "flags": [flag], "data": name}

    def run(self, d: _Dispatch) -> None:
        program = self.programs[d.shader.uid]
        self.backend.dispatch(program, d.command.workgroups,
                              {(b.set, b.id): self.buffers[b.resource_ref] for b in d.command.bindings},
                              self.push_data.get(d.command.push_data_ref, b""), offset=d.command.global_offset or ())
        self.backend.submit()
