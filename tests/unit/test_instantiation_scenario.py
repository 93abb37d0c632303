"""A kernel-instantiation launch as the in-memory scenario the executor runs, without a device."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from kernellab import model as m
from kernellab.backends.base import ProgramSpec
from kernellab.backends.opencl import ArgType, KernelArg
from kernellab.backends.opencl_abi import LocalMemory
from kernellab.formats import gpuverify
from kernellab.runtime.instantiation import ArrayValue, PreparedLaunch, as_scenario

ARGS = [KernelArg(0, "out", "global", "float*", type=ArgType("float", "f4")),
        KernelArg(1, "tile", "local", "float*", type=ArgType("float", "f4")),
        KernelArg(2, "n", "private", "uint", type=ArgType("uint", "u4")),
        KernelArg(3, "in", "constant", "float*", type=ArgType("float", "f4"))]


def _launch(tmp_path: Path, **over: object) -> PreparedLaunch:
    (tmp_path / "k.cl").write_text("")
    doc = {"language": "OpenCL", "kernel_file": "k.cl", "global_size": [10], "local_size": [4],
           "global_offset": [2], "entry_point": "k", "compiler_flags": "-DX=1", **over}
    (tmp_path / "k.json").write_text(json.dumps([{k: v for k, v in doc.items() if v is not None}]))
    [inst], _ = gpuverify.load(tmp_path / "k.json", non_uniform=True)
    program = SimpleNamespace(args=ARGS, spec=ProgramSpec("k.cl:k", b"", "opencl-c", "k"))
    values = [ArrayValue(48, bytes(48), ("CL_MEM_WRITE_ONLY",), "f4"), LocalMemory(16), (7).to_bytes(4, "little"),
              ArrayValue(40, bytes(40), (), "f4")]
    return PreparedLaunch(inst, program, ARGS, values)  # type: ignore[arg-type]


def test_a_launch_becomes_buffers_push_data_and_a_dispatch_in_work_items(tmp_path: Path) -> None:
    shaped = as_scenario(_launch(tmp_path))
    shader, out, in_, push = shaped.scenario.resources
    assert isinstance(shader, m.Shader) and shader.build_options == "-DX=1" and shader.push_constants_size == 4
    assert [(c.id, c.value) for c in shader.specialization_constants] == [(0, 4), (3, 4)]
    assert (out.uid, out.shader_access, in_.uid, in_.shader_access) == ("i0_arg0", "writeonly", "i0_arg3", "readonly")
    assert isinstance(push, m.RawData) and shaped.push[push.uid] == (7).to_bytes(4, "little")
    [command] = shaped.scenario.commands
    assert isinstance(command, m.DispatchCompute)
    assert command.rangeND == [3] and command.global_size == (10,) and command.global_offset == [2]
    assert [(b.id, b.resource_ref) for b in command.bindings] == [(0, "i0_arg0"), (1, "i0_arg3")]
    assert [(c.id, c.value) for c in shaped.program.specialization] == [(0, 4), (3, 4)]


def test_a_file_counts_whole_work_groups(tmp_path: Path) -> None:
    launch = _launch(tmp_path, global_size=[64], local_size=None, global_offset=[0])
    command = as_scenario(launch, whole_groups=True).scenario.commands[0]
    assert isinstance(command, m.DispatchCompute)
    assert command.rangeND == [1] and command.global_size is None and command.global_offset is None


def test_the_executors_places_map_to_the_files(tmp_path: Path) -> None:
    shaped = as_scenario(_launch(tmp_path))
    assert shaped.place("/resources/0/shader/specialization_constants") == "/0/local_size"
    assert shaped.place("/resources/0/shader/specialization_constants/1/id") == "/0/kernel_arguments/1/size"
    assert shaped.place("/resources/2/buffer/size") == "/0/kernel_arguments/3/size"
    assert shaped.place("/resources/0/shader/build_options") == "/0/compiler_flags"
    assert shaped.place("/commands/0/dispatch_compute/bindings/1/resource_ref") == "/0/kernel_arguments/3"
    assert shaped.place("/commands/0/dispatch_compute/rangeND/0") == "/0/global_size/0"
    assert shaped.place("/commands/0/dispatch_compute/global_offset") == "/0/global_offset"
    assert shaped.place("/resources") == "/0"
