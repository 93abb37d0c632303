"""Converting between kernel-instantiation files and scenarios.

:func:`import_instantiations` turns each instantiation into an OpenCL C shader, buffers (``.npy``,
the exact bytes ``kernellab run`` would upload, unconstrained arguments filled from the same seed)
and a ``dispatch_compute``; :func:`export_scenario` goes the other way for a scenario's OpenCL C
dispatches. Both follow the argument mapping of ``kernellab/backends/opencl.py`` (the clspv
layout): buffer pointers are bindings (set 0) numbered among themselves, by-value arguments are
the push constants packed in order, the work-group size is specialization constants 0-2 and
``__local`` pointers take their element counts from specialization constants 3, 4, ...
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from kernellab.backends.opencl import KernelArg, LocalMemory, OpenCLBackend, OpenCLBuffer, OpenCLProgram
from kernellab.errors import InputError, Problem, json_pointer
from kernellab.formats import gpuverify
from kernellab.formats.jsonfile import load_json
from kernellab.outputs import OutputSet

Report = Callable[[str], None]


def _align(offset: int, alignment: int) -> int:
    return -(-offset // alignment) * alignment


Layout = dict[str, tuple[int, int]]  # type name -> (sizeof, alignof), for structs


def _size_align(a: KernelArg, layout: Layout | None) -> tuple[int, int]:
    if a.type.size is not None:
        return a.type.size, a.type.alignment
    if layout and a.type_name in layout:
        return layout[a.type_name]
    raise InputError(f"argument {a.index} ({a.type_name} {a.name}): its size is unknown")


def pack_push_constants(args: list[KernelArg], values: dict[int, bytes], layout: Layout | None = None) -> bytes:
    """By-value arguments packed as a C struct (natural alignment), padded to a multiple of 4."""
    out = bytearray()
    for a in args:
        if a.kind != "scalar":
            continue
        data = values[a.index]
        _, alignment = _size_align(a, layout) if a.type.size is None and layout else (len(data), a.type.alignment)
        out += bytes(_align(len(out), alignment) - len(out))
        out += data
    out += bytes(_align(len(out), 4) - len(out))
    return bytes(out)


def unpack_push_constants(args: list[KernelArg], data: bytes, layout: Layout | None = None) -> dict[int, bytes]:
    values: dict[int, bytes] = {}
    offset = 0
    for a in args:
        if a.kind != "scalar":
            continue
        size, alignment = _size_align(a, layout)
        offset = _align(offset, alignment)
        values[a.index] = bytes(data[offset:offset + size]).ljust(size, b"\0")
        offset += size
    return values


def choose_local_size(global_size: tuple[int, ...]) -> tuple[int, ...]:
    """A work-group size for a launch that left it to the runtime: the largest divisor of the
    first dimension up to 64, 1 in the others (a scenario must name one)."""
    first = next(d for d in range(min(64, global_size[0]), 0, -1) if global_size[0] % d == 0)
    return (first,) + (1,) * (len(global_size) - 1)


def _npy_bytes(path: Path, data: Any) -> None:
    from kernellab.outputs import save_npy
    save_npy(path, np.frombuffer(bytes(data), dtype=np.uint8))


def _access(flags: tuple[str, ...] | None, space: str) -> str:
    flags = flags or ()
    if space == "constant" or "CL_MEM_READ_ONLY" in flags:
        return "readonly"
    if "CL_MEM_WRITE_ONLY" in flags:
        return "writeonly"
    return "readwrite"


def import_instantiations(path: str | Path, output_dir: str | Path, *, index: int | None = None, seed: int = 0,
                          device: str | None = None, report: Report | None = None) -> Path:
    """Write ``output_dir/scenario.json`` equivalent to the kernel-instantiation file ``path``.

    Each instantiation i gets its own buffers ``i<i>_arg<N>.npy`` and shader ``kernel<i>``; its
    buffers' ``dst`` are ``arg<N>.npy`` (``<i>/arg<N>.npy`` for i > 0), mirroring ``kernellab run``.
    """
    from kernellab.runtime.instantiation import build, prepare, select
    report = report or (lambda s: None)
    path, out = Path(path), Path(output_dir)
    insts, warnings = gpuverify.load(path)
    for w in warnings:
        report(str(w))
    chosen = select(insts, index, path)
    problems: list[Problem] = []
    for inst in chosen:
        if inst.global_offset and any(inst.global_offset):
            problems.append(Problem(str(path), inst.pointer("global_offset"),
                                    "a scenario dispatch has no global offset; this launch cannot be imported"))
    if problems:
        raise InputError(problems)
    shaders: list[dict[str, Any]] = []
    resources: list[dict[str, Any]] = []
    commands: list[dict[str, Any]] = []
    backend = OpenCLBackend.open(device)
    try:
        with OutputSet() as outs:
            kernels: dict[Path, str] = {}
            for inst in chosen:
                program = build(backend, inst)
                launch = prepare(backend, inst, program, seed)
                for line in launch.filled:
                    report(line)
                i = inst.index
                src = inst.kernel_path
                if src not in kernels:
                    kernels[src] = f"kernel{len(kernels)}_{src.name}"
                    with outs.open(out / kernels[src]) as fh:
                        fh.write(src.read_bytes())
                local = inst.local_size or choose_local_size(inst.global_size)
                specs = [{"id": d, "value": int(v)} for d, v in enumerate(local)]
                bindings = []
                scalars: dict[int, bytes] = {}
                local_id = 3
                binding = 0
                for arg, value in zip(program.args, launch.args):
                    kind = arg.kind
                    if kind == "buffer":
                        assert isinstance(value, OpenCLBuffer)
                        uid = f"i{i}_arg{arg.index}"
                        rec = inst.kernel_arguments[arg.index] if inst.kernel_arguments else None
                        flags = rec.flags if isinstance(rec, gpuverify.ArrayArgument) else None
                        with outs.open(out / f"{uid}.npy") as fh:
                            np.lib.format.write_array(fh, backend.read_buffer(value), allow_pickle=False)
                        dst = f"arg{arg.index}.npy" if i == 0 else f"{i}/arg{arg.index}.npy"
                        resources.append({"buffer": {"uid": uid, "size": value.size,
                                                     "shader_access": _access(flags, arg.address_space),
                                                     "src": f"{uid}.npy", "dst": dst}})
                        bindings.append({"set": 0, "id": binding, "resource_ref": uid})
                        binding += 1
                    elif kind == "local":
                        assert isinstance(value, LocalMemory)
                        elem = arg.type.size or 1
                        specs.append({"id": local_id, "value": -(-value.size // elem)})
                        local_id += 1
                    elif kind == "scalar":
                        scalars[arg.index] = bytes(value)
                    else:
                        raise InputError([Problem(str(path), inst.pointer("kernel_arguments", arg.index),
                                                  f"{kind} arguments have no scenario equivalent; this launch "
                                                  "cannot be imported")])
                push = pack_push_constants(program.args, scalars, backend.type_layout(
                    program, [a.type_name for a in program.args if a.kind == "scalar" and a.type.size is None]))
                shader: dict[str, Any] = {"uid": f"kernel{i}", "src": kernels[src], "type": "OpenCL-C",
                                          "entry": inst.entry_point}
                if inst.compiler_flags:
                    shader["build_options"] = inst.compiler_flags
                if push:
                    shader["push_constants_size"] = len(push)
                shader["specialization_constants"] = specs
                shaders.append({"shader": shader})
                dispatch: dict[str, Any] = {"shader_ref": f"kernel{i}",
                                            "rangeND": [g // l for g, l in zip(inst.global_size, local)],
                                            "bindings": bindings}
                if push:
                    with outs.open(out / f"i{i}_push.npy") as fh:
                        np.lib.format.write_array(fh, np.frombuffer(push, np.uint8), allow_pickle=False)
                    resources.append({"raw_data": {"uid": f"i{i}_push", "src": f"i{i}_push.npy"}})
                    dispatch["push_data_ref"] = f"i{i}_push"
                commands.append({"dispatch_compute": dispatch})
                for buf in launch.arrays.values():
                    buf.mem.release()
            scenario_path = out / "scenario.json"
            with outs.open(scenario_path) as fh:
                fh.write((json.dumps({"resources": shaders + resources, "commands": commands}, indent=2)
                          + "\n").encode())
            outs.commit()
    finally:
        backend.close()
    return scenario_path


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


def export_scenario(path: str | Path, output_dir: str | Path, *, device: str | None = None,
                    report: Report | None = None) -> Path:
    """Write ``output_dir/instantiations.json``: one instantiation per OpenCL C dispatch of the
    scenario, with each bound buffer's contents at that dispatch (the dispatches before the last
    are run on an OpenCL device to know them).

    Returns the file; ``export_scenario.last_commands`` is not kept: the i-th instantiation is the
    i-th ``dispatch_compute`` of the scenario (see :func:`dispatch_pointers`)."""
    from kernellab import model as m
    from kernellab.backends.base import ProgramSpec, SpecConstant
    from kernellab.formats import npy
    from kernellab.formats.scenario import load_scenario
    report = report or (lambda s: None)
    path, out = Path(path), Path(output_dir)
    scenario, warnings = load_scenario(path)
    for w in warnings:
        report(str(w))
    dispatches = []
    problems = []
    for n, c in enumerate(scenario.commands):
        if isinstance(c, m.DispatchCompute):
            shader = scenario.by_uid[c.shader_ref]
            if shader.type != "OpenCL-C":
                problems.append(Problem(str(path), json_pointer(["commands", n]),
                                        f"dispatch of {shader.type} shader \"{shader.uid}\": only OpenCL C "
                                        "dispatches can be exported as kernel instantiations"))
            dispatches.append(_Dispatch(n, c, shader))
        elif isinstance(c, m.DispatchGraph):
            problems.append(Problem(str(path), json_pointer(["commands", n]),
                                    "dispatch_graph has no kernel-instantiation equivalent"))
    if not dispatches:
        problems.append(Problem(str(path), "/commands", "the scenario has no dispatch_compute to export"))
    for r in scenario.resources:
        if isinstance(r, (m.Image, m.Tensor)):
            problems.append(Problem(str(path), "/resources", f"{r.kind} \"{r.uid}\": only buffers can be exported"))
    if problems:
        raise InputError(problems)
    backend = OpenCLBackend.open(device)
    insts = []
    try:
        buffers: dict[str, OpenCLBuffer] = {}
        for r in scenario.resources:
            if isinstance(r, m.Buffer):
                buffers[r.uid] = backend.alloc_buffer(r.size, r.uid)
                data = npy.load_bytes(r.src_path) if r.src_path is not None else np.zeros(r.size, np.uint8)
                backend.write_buffer(buffers[r.uid], np.asarray(data)[:r.size])
        push_data = {r.uid: bytes(npy.load_bytes(r.src_path)) for r in scenario.resources
                     if isinstance(r, m.RawData) and r.src_path is not None}
        programs: dict[str, OpenCLProgram] = {}
        kernel_files: dict[str, str] = {}
        with OutputSet() as outs:
            for k, d in enumerate(dispatches):
                shader = d.shader
                if shader.uid not in programs:
                    spec = ProgramSpec(uid=f"{shader.src}:{shader.entry}", code=shader.src_path.read_bytes(),
                                       language="opencl-c", entry=shader.entry, build_options=shader.build_options,
                                       push_constants_size=shader.push_constants_size,
                                       specialization=tuple(SpecConstant(s.id, s.value)
                                                            for s in shader.specialization_constants))
                    programs[shader.uid] = backend.create_program(spec)  # type: ignore[assignment]
                    kernel_files[shader.uid] = f"{shader.uid}.cl"
                    with outs.open(out / kernel_files[shader.uid]) as fh:
                        fh.write(shader.src_path.read_bytes())
                program = programs[shader.uid]
                specs = {s.id: int(s.value) for s in shader.specialization_constants}
                if any(i in specs for i in (0, 1, 2)):
                    local = [max(1, specs.get(i, 1)) for i in range(3)]
                elif any(program.compile_work_group_size):
                    local = [max(1, x) for x in program.compile_work_group_size]
                else:
                    local = [1, 1, 1]
                groups = list(d.command.workgroups)
                dims = max(len(d.command.rangeND), 1 + max((i for i in range(3) if local[i] > 1), default=0))
                bound = {(b.set, b.id): b.resource_ref for b in d.command.bindings}
                push = push_data.get(d.command.push_data_ref, b"")
                scalars = unpack_push_constants(program.args, push, backend.type_layout(
                    program, [a.type_name for a in program.args if a.kind == "scalar" and a.type.size is None]))
                args: list[dict[str, Any]] = []
                binding = 0
                local_id = 3
                for a in program.args:
                    if a.kind == "buffer":
                        uid = bound.get((0, binding))
                        if uid is None:
                            raise InputError([Problem(str(path), json_pointer(["commands", d.index]),
                                                      f"kernel argument {a.index} ({a.name}) is buffer argument "
                                                      f"{binding} but binding (set 0, id {binding}) is not bound")])
                        binding += 1
                        res = scenario.by_uid[uid]
                        name = f"d{k}_arg{a.index}.bin"
                        with outs.open(out / name) as fh:
                            fh.write(backend.read_buffer(buffers[uid]).tobytes())
                        flag = {"readonly": "CL_MEM_READ_ONLY", "writeonly": "CL_MEM_WRITE_ONLY"}.get(
                            res.shader_access, "CL_MEM_READ_WRITE")
                        args.append({"type": "array", "size": res.size, "address_space": a.address_space,
                                     "flags": [flag], "data": name})
                    elif a.kind == "local":
                        count = max(1, specs.get(local_id, 1))
                        local_id += 1
                        args.append({"type": "array", "size": count * (a.type.size or 1), "address_space": "local"})
                    elif a.kind == "scalar":
                        args.append({"type": "scalar", "value": gpuverify.hex_value(scalars[a.index], "little")})
                    else:
                        raise InputError([Problem(str(path), json_pointer(["commands", d.index]),
                                                  f"kernel argument {a.index} ({a.name}) is an {a.kind}; not exportable")])
                inst: dict[str, Any] = {"language": "OpenCL", "endianness": "little",
                                        "kernel_file": kernel_files[shader.uid],
                                        "local_size": local[:dims], "global_size": [g * l for g, l in
                                                                                    zip(groups[:dims], local[:dims])],
                                        "entry_point": shader.entry, "kernel_arguments": args}
                if shader.build_options:
                    inst["compiler_flags"] = shader.build_options
                insts.append(inst)
                if k + 1 < len(dispatches):  # run it so the next dispatch sees its results (the last need not run)
                    backend.dispatch(program, d.command.workgroups,
                                     {(b.set, b.id): buffers[b.resource_ref] for b in d.command.bindings}, push)
                    backend.submit()
            result = out / "instantiations.json"
            with outs.open(result) as fh:
                fh.write((json.dumps(insts, indent=2) + "\n").encode())
            outs.commit()
    finally:
        backend.close()
    return result
