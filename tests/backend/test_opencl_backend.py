"""The OpenCL backend on PoCL, and kernel-instantiation runs through it."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kernellab.backends.base import BackendOptions, ProgramSpec, SpecConstant, choose_device
from kernellab.backends.opencl import OpenCLBackend
from kernellab.backends.opencl_abi import LocalMemory
from kernellab.backends.registry import backend_class
from kernellab.runtime.instantiation import run_instantiations


@pytest.fixture(scope="module")
def pocl() -> OpenCLBackend:
    backend = OpenCLBackend.open("Portable")
    yield backend
    backend.close()


def test_devices_and_default_choice() -> None:
    devices = backend_class("opencl").devices()
    names = [d.name for d in devices]
    # CI's devices, each named (a GPU host lists its own drivers first)
    assert any("Portable Computing Language" in n for n in names), f"PoCL is not installed (have {names})"
    assert any("Oclgrind" in n for n in names), f"Oclgrind is not installed (have {names})"
    # the simulator is never the default device
    assert "Oclgrind" not in choose_device(devices, None).name
    assert all(d.backend == "opencl" and d.details["platform"] for d in devices)


SCALE = b"""
__kernel void scale(__global float *out, __global const float *in, __local float *tile, float s, uint n) {
  uint i = get_global_id(0);
  tile[get_local_id(0)] = in[i];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (i < n) out[i] = tile[(get_local_id(0) + 1) % get_local_size(0)] * s;
}
"""


def test_dispatch_maps_bindings_push_constants_and_spec_constants(pocl: OpenCLBackend) -> None:
    spec = ProgramSpec("scale", SCALE, "opencl-c", "scale", push_constants_size=8,
                       specialization=(SpecConstant(0, 4), SpecConstant(3, 4)))
    prog = pocl.create_program(spec)
    out, inp = pocl.alloc_buffer(64, "out"), pocl.alloc_buffer(64, "in")
    pocl.write_buffer(inp, np.arange(16, dtype=np.float32))
    pocl.write_buffer(out, np.full(16, -1, np.float32))
    push = np.float32(2).tobytes() + np.uint32(12).tobytes()
    pocl.dispatch(prog, [4], {(0, 0): out, (0, 1): inp}, push)
    pocl.submit()
    got = pocl.read_buffer(out).view(np.float32)
    src = np.arange(16, dtype=np.float32).reshape(4, 4)
    expected = (np.roll(src, -1, axis=1) * 2).ravel()
    expected[12:] = -1  # i >= n
    np.testing.assert_array_equal(got, expected)


def test_dispatch_reports_unbound_argument(pocl: OpenCLBackend) -> None:
    prog = pocl.create_program(ProgramSpec("scale2", SCALE, "opencl-c", "scale", push_constants_size=8))
    buf = pocl.alloc_buffer(64)
    with pytest.raises(ValueError, match=r"argument 1 \(in\) is buffer argument 1, but binding \(set 0, id 1\) "
                                         r"is not bound"):
        pocl.dispatch(prog, [1], {(0, 0): buf}, bytes(8))


def test_bindings_count_buffer_arguments_only(pocl: OpenCLBackend) -> None:
    # clspv's numbering: k(float s, global a, int n, global b) binds a at 0 and b at 1
    src = (b"__kernel void k(float s, __global float *a, int n, __global const float *b) "
           b"{ int i = get_global_id(0); if (i < n) a[i] = b[i] * s; }")
    prog = pocl.create_program(ProgramSpec("k", src, "opencl-c", "k", push_constants_size=8))
    a, b = pocl.alloc_buffer(16), pocl.alloc_buffer(16)
    pocl.write_buffer(a, np.zeros(4, np.float32))
    pocl.write_buffer(b, np.arange(4, dtype=np.float32))
    pocl.dispatch(prog, [4], {(0, 0): a, (0, 1): b}, np.float32(3).tobytes() + np.int32(3).tobytes())
    pocl.submit()
    assert pocl.read_buffer(a).view(np.float32).tolist() == [0, 3, 6, 0]


def test_launch_with_global_offset(pocl: OpenCLBackend) -> None:
    prog = pocl.create_program(ProgramSpec("ids", b"__kernel void ids(__global int *o) "
                                                  b"{ o[get_global_id(0)] = get_global_id(0) * 10; }",
                                           "opencl-c", "ids"))
    buf = pocl.alloc_buffer(32)
    pocl.write_buffer(buf, np.zeros(8, np.int32))
    pocl.launch(prog, [buf], [4], None, [2])
    pocl.submit()
    assert pocl.read_buffer(buf).view(np.int32).tolist() == [0, 0, 20, 30, 40, 50, 0, 0]


def test_dispatch_from_a_global_offset_in_work_items(pocl: OpenCLBackend) -> None:
    prog = pocl.create_program(ProgramSpec("ids2", b"__kernel void ids(__global int *o) "
                                                   b"{ o[get_global_id(0)] = get_global_id(0) * 10; }",
                                           "opencl-c", "ids", specialization=(SpecConstant(0, 2),)))
    buf = pocl.alloc_buffer(32)
    pocl.write_buffer(buf, np.zeros(8, np.int32))
    pocl.dispatch(prog, [2], {(0, 0): buf}, offset=[3])  # two work-groups of two from id 3
    pocl.submit()
    assert pocl.read_buffer(buf).view(np.int32).tolist() == [0, 0, 0, 30, 40, 50, 60, 0]
    pocl.write_buffer(buf, np.zeros(8, np.int32))
    # counted in work-items, no work-group size of its own: the driver chooses one
    free = pocl.create_program(ProgramSpec("ids3", prog.spec.code, "opencl-c", "ids"))
    pocl.dispatch(free, [1], {(0, 0): buf}, offset=[1], global_size=[5])
    pocl.submit()
    assert pocl.read_buffer(buf).view(np.int32).tolist() == [0, 10, 20, 30, 40, 50, 0, 0]


def test_local_memory_argument(pocl: OpenCLBackend) -> None:
    prog = pocl.create_program(ProgramSpec("scale3", SCALE, "opencl-c", "scale"))
    out, inp = pocl.alloc_buffer(32), pocl.alloc_buffer(32)
    pocl.write_buffer(inp, np.arange(8, dtype=np.float32))
    pocl.launch(prog, [out, inp, LocalMemory(16), np.float32(1).tobytes(), np.uint32(8).tobytes()], [8], [4])
    pocl.submit()
    assert pocl.read_buffer(out).view(np.float32).tolist() == [1, 2, 3, 0, 5, 6, 7, 4]


def test_build_error_is_bad_input(pocl: OpenCLBackend) -> None:
    from kernellab.errors import CompileError
    with pytest.raises(CompileError) as info:
        pocl.create_program(ProgramSpec("bad.cl:k", b"__kernel void k(__global int *a) { a[0] = ; }",
                                        "opencl-c", "k"))
    assert info.value.exit_status == 2
    assert "bad.cl:1:" in str(info.value) and "OpenCL C build failed" in str(info.value)


def test_build_error_reaches_the_user_once(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """PoCL's clang prints "1 error generated." straight to fd 2; the error kernellab words from
    the build log is the only report of a failed build (and the fd is the process's again after)."""
    import os
    import uuid

    from kernellab.native import cl as ncl
    # a text PoCL has never built: its kernel cache would skip the compiler
    source = f"__kernel void k(__global int *a) {{ a[0] = undeclared_{uuid.uuid4().hex}; }}\n"
    backend = OpenCLBackend.open("Portable")
    try:
        with pytest.raises(ncl.BuildFailure) as info:
            ncl.build(backend._cl.Program(backend.context, source), ncl.compiler_options.Options(), what="k.cl:k",
                      cache_dir=False)
    finally:
        backend.close()
    assert "undeclared_" in info.value.log
    os.write(2, b"after the build\n")
    err = capfd.readouterr().err
    assert "error generated" not in err and "after the build" in err
    assert ncl._stderr_fd == 2


# --- kernel-instantiation runs ---------------------------------------------------------------

WRITE = "__kernel void w(__global uint *o, uint v, float f) { o[get_global_id(0)] = v + (uint)f; }\n"


def _file(tmp_path: Path, insts: list[dict]) -> Path:
    (tmp_path / "w.cl").write_text(WRITE)
    path = tmp_path / "k.json"
    path.write_text(json.dumps(insts))
    return path


def _inst(**over: object) -> dict:
    base = {"language": "OpenCL", "kernel_file": "w.cl", "global_size": [4], "entry_point": "w",
            "kernel_arguments": [{"type": "array", "size": 16, "address_space": "global"},
                                 {"type": "scalar", "value": "0x10"}, {"type": "scalar", "value": "0x3F800000"}]}
    base.update(over)
    return base


def test_endianness_decodes_scalars(tmp_path: Path) -> None:
    big = _inst(endianness="big")
    big["kernel_arguments"][1]["value"] = "0x10"  # the number 16 on a big-endian device is still 16
    big["kernel_arguments"][2]["value"] = "0x40000000"  # 2.0f
    (tmp_path / "zero.bin").write_bytes(bytes(16))
    big["kernel_arguments"][0]["data"] = "zero.bin"
    out = tmp_path / "out"
    run_instantiations(_file(tmp_path, [big]), out, device="Portable", report=lambda s: None)
    # outputs are written in the file's byte order, like its data files
    assert np.fromfile(out / "arg0.bin", ">u4").tolist() == [18, 18, 18, 18]


def test_multi_instantiation_layout_and_index(tmp_path: Path) -> None:
    second = _inst(global_size=[2], global_offset=[2])
    second["kernel_arguments"][1]["value"] = "0x7"
    path = _file(tmp_path, [_inst(), second])
    out = tmp_path / "out"
    run_instantiations(path, out, device="Portable", report=lambda s: None)
    assert np.fromfile(out / "arg0.bin", np.uint32).tolist() == [17, 17, 17, 17]
    assert np.fromfile(out / "1" / "arg0.bin", np.uint32)[2:].tolist() == [8, 8]
    only = tmp_path / "only"
    run_instantiations(path, only, index=1, device="Portable", report=lambda s: None)
    assert sorted(p.relative_to(only).as_posix() for p in only.rglob("*.bin")) == ["1/arg0.bin"]


def test_unconstrained_arguments_are_seeded_and_reported(tmp_path: Path) -> None:
    inst = _inst()
    inst["kernel_arguments"][1] = {"type": "scalar"}
    path = _file(tmp_path, [inst])
    notes: list[str] = []
    runs = []
    for seed, name in ((0, "a"), (0, "b"), (1, "c")):
        run_instantiations(path, tmp_path / name, seed=seed, device="Portable", report=notes.append)
        runs.append((tmp_path / name / "arg0.bin").read_bytes())
    assert runs[0] == runs[1] and runs[0] != runs[2]
    assert any("/0/kernel_arguments/1: argument 1 (uint v) is unconstrained; filled from seed 0" in n for n in notes)


def test_short_data_is_zero_padded(tmp_path: Path) -> None:
    (tmp_path / "c.cl").write_text("__kernel void c(__global int *a) { a[get_global_id(0)] += 1; }\n")
    (tmp_path / "short.bin").write_bytes(np.array([5, 6], np.int32).tobytes())
    path = tmp_path / "c.json"
    path.write_text(json.dumps([{"language": "OpenCL", "kernel_file": "c.cl", "global_size": [4], "entry_point": "c",
                                 "kernel_arguments": [{"type": "array", "size": 16, "data": "short.bin"}]}]))
    run_instantiations(path, tmp_path / "o", device="Portable", report=lambda s: None)
    assert np.fromfile(tmp_path / "o" / "arg0.bin", np.int32).tolist() == [6, 7, 1, 1]


def test_image_and_sampler_arguments(tmp_path: Path) -> None:
    (tmp_path / "i.cl").write_text(
        "__kernel void i(read_only image2d_t im, sampler_t s, __global float *o) {\n"
        "  int x = get_global_id(0), y = get_global_id(1);\n"
        "  o[y * get_global_size(0) + x] = read_imagef(im, s, (int2)(x, y)).x;\n}\n")
    path = tmp_path / "i.json"
    path.write_text(json.dumps([{"language": "OpenCL", "kernel_file": "i.cl", "global_size": [4, 2],
                                 "entry_point": "i", "kernel_arguments": [{"type": "image"}, {"type": "sampler"},
                                                                          {"type": "array", "size": 32}]}]))
    notes: list[str] = []
    run_instantiations(path, tmp_path / "o", device="Portable", report=notes.append)
    got = np.fromfile(tmp_path / "o" / "arg2.bin", np.float32)
    assert got.shape == (8,) and np.all((got >= 0) & (got < 1)) and len(set(got.tolist())) > 1
    assert any("RGBA float image of 4x2 texels" in n for n in notes)
    assert any("sampler argument 1" in n for n in notes)


def test_cli_index_and_seed(tmp_path: Path) -> None:
    from kernellab.cli import main
    inst = _inst()
    inst["kernel_arguments"][1] = {"type": "scalar"}
    path = _file(tmp_path, [_inst(), inst])
    assert main(["run", str(path), "--index", "1", "--seed", "4", "--output", str(tmp_path / "a")]) == 0
    run_instantiations(path, tmp_path / "b", index=1, seed=4, device="Portable", report=lambda s: None)
    assert (tmp_path / "a" / "1" / "arg0.bin").read_bytes() == (tmp_path / "b" / "1" / "arg0.bin").read_bytes()
    assert not (tmp_path / "a" / "arg0.bin").exists()


STRUCT = ("typedef struct { int a; float b; } pair;\n"
          "__kernel void k(__global float *o, pair p) { o[get_global_id(0)] = p.a + p.b; }\n")


def test_struct_argument_sized_by_the_compiler(tmp_path: Path) -> None:
    (tmp_path / "s.cl").write_text(STRUCT)
    path = tmp_path / "s.json"
    # the hex is the number the struct's 8 bytes hold (little-endian): a = 2, b = 1.0f
    path.write_text(json.dumps([{"language": "OpenCL", "kernel_file": "s.cl", "global_size": [2], "entry_point": "k",
                                 "kernel_arguments": [{"type": "array", "size": 8},
                                                      {"type": "scalar", "value": "0x3F80000000000002"}]},
                                {"language": "OpenCL", "kernel_file": "s.cl", "global_size": [2], "entry_point": "k",
                                 "kernel_arguments": [{"type": "array", "size": 8},
                                                      {"type": "scalar", "value": "0x2"}]}]))
    run_instantiations(path, tmp_path / "o", device="Portable", report=lambda s: None)
    assert np.fromfile(tmp_path / "o" / "arg0.bin", np.float32).tolist() == [3.0, 3.0]
    # a shorter hex is the same number: zero-extended to the struct's size (a = 2, b = 0)
    assert np.fromfile(tmp_path / "o" / "1" / "arg0.bin", np.float32).tolist() == [2.0, 2.0]


def test_struct_value_too_wide(tmp_path: Path) -> None:
    from kernellab.errors import InputError
    (tmp_path / "s.cl").write_text(STRUCT)
    path = tmp_path / "s.json"
    path.write_text(json.dumps([{"language": "OpenCL", "kernel_file": "s.cl", "global_size": [2], "entry_point": "k",
                                 "kernel_arguments": [{"type": "array", "size": 8},
                                                      {"type": "scalar", "value": "0x1" + "0" * 16}]}]))
    with pytest.raises(InputError) as info:
        run_instantiations(path, None, device="Portable", report=lambda s: None)
    [p] = info.value.problems
    assert p.where == "/0/kernel_arguments/1/value" and "needs 9 bytes but parameter 1 (pair p) has 8" in p.message


def test_a_launch_runs_as_a_scenario_through_the_executor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 19: one engine; an image launch, which the scenario model cannot hold yet, runs directly
    from kernellab.runtime.executor import Executor

    ran: list[object] = []
    real = Executor.run

    def counted(self: Executor) -> object:
        ran.append(self.scenario)
        return real(self)

    monkeypatch.setattr(Executor, "run", counted)
    uneven = _inst(global_size=[6], local_size=[4], global_offset=[2])
    uneven["kernel_arguments"][0]["size"] = 32
    run_instantiations(_file(tmp_path, [uneven]), tmp_path / "o", device="Oclgrind", report=lambda s: None)
    [scenario] = ran
    [command] = scenario.commands
    assert command.global_offset == [2] and command.global_size == (6,) and command.rangeND == [2]
    # work-items 2..7 in two work-groups, the second partial (the first two elements keep their seeded values)
    assert np.fromfile(tmp_path / "o" / "arg0.bin", np.uint32).tolist()[2:] == [17] * 6
    ran.clear()
    (tmp_path / "i.cl").write_text("__kernel void i(read_only image2d_t im, __global float *o) "
                                   "{ o[0] = read_imagef(im, (int2)(0, 0)).x; }\n")
    path = tmp_path / "i.json"
    path.write_text(json.dumps([{"language": "OpenCL", "kernel_file": "i.cl", "global_size": [1, 1],
                                 "entry_point": "i", "kernel_arguments": [{"type": "image"},
                                                                          {"type": "array", "size": 4}]}]))
    run_instantiations(path, tmp_path / "p", device="Portable", report=lambda s: None)
    assert ran == [] and (tmp_path / "p" / "arg1.bin").stat().st_size == 4


def test_the_executors_problems_name_the_instantiation_files_places(tmp_path: Path) -> None:
    # checked against the device's limits before it runs (it was the driver's CL_INVALID_WORK_GROUP_SIZE)
    from kernellab.errors import InputError

    path = _file(tmp_path, [_inst(global_size=[1 << 16], local_size=[1 << 16])])
    with pytest.raises(InputError) as info:
        run_instantiations(path, None, device="Portable", report=lambda s: None)
    assert {(p.file, p.where) for p in info.value.problems} == {(str(path), "/0/local_size")}
    assert any("the device allows at most" in p.message for p in info.value.problems)


@pytest.mark.parametrize("direct", [False, True], ids=["pyopencl", "oclgrind-direct"])
def test_read_buffer_into_reads_a_range_into_the_callers_array(pocl: OpenCLBackend, direct: bool) -> None:
    backend = pocl if not direct else OpenCLBackend.open("Oclgrind", direct=True)
    try:
        data = np.arange(64, dtype=np.float32)
        buf = backend.alloc_buffer(data.nbytes, "into")
        backend.write_buffer(buf, data)
        out = np.full(16, -1, dtype=np.float32)
        backend.read_buffer_into(buf, out, 8 * 4)  # elements 8..23, straight into ``out``
        assert np.array_equal(out, data[8:24])
        whole = np.empty(64, dtype=np.float32)
        backend.read_buffer_into(buf, whole)
        assert np.array_equal(whole, data)
        with pytest.raises(ValueError, match="exceeds its 256 bytes"):
            backend.read_buffer_into(buf, np.empty(16, np.float32), 200)
        with pytest.raises(ValueError, match="read-only"):
            backend.read_buffer_into(buf, bytes(16))
        backend.free_buffer(buf)
    finally:
        if direct:
            backend.close()


COPY_TWICE = b"""
__kernel void twice(__global const float *in, __global float *out) {
  uint i = get_global_id(0);
  out[i] = in[i] * 2.0f;
}
"""


def test_dispatches_with_no_barrier_between_them_go_to_two_queues_of_one_context() -> None:
    """A split's parts on one device run at once, as PySchedCL's queue per part: open_queues(2)
    puts a dispatch with no barrier before it on the second queue; a barrier joins them."""
    backend = OpenCLBackend.open("Portable", BackendOptions(timestamps=True))
    try:
        assert backend.open_queues(2) == 2
        spec = ProgramSpec(uid="twice", code=COPY_TWICE, language="opencl-c", entry="twice")
        program = backend.create_program(spec)
        data = np.arange(256, dtype=np.float32)
        a, b, c = (backend.alloc_buffer(data.nbytes, uid) for uid in ("a", "b", "c"))
        backend.write_buffer(a, data)
        halves = [backend.sub_buffer(b, 0, 512), backend.sub_buffer(b, 512, 512)]
        for i, half in enumerate(halves):  # two parts, no barrier between them
            backend.dispatch(program, (2,), {(0, 0): backend.sub_buffer(a, 512 * i, 512), (0, 1): half},
                             label=f"{i}:part", global_size=(128,))
        queues = [rec.event.command_queue for rec in backend._recorded]
        assert queues[0] != queues[1]  # the second part did not wait behind the first
        backend.barrier()
        backend.dispatch(program, (4,), {(0, 0): b, (0, 1): c}, label="2:after", global_size=(256,))
        assert [rec.event.command_queue for rec in backend._recorded][2] == queues[0]  # the barrier joined
        timings = backend.submit()
        assert [t.label for t in timings] == ["0:part", "1:part", "2:after"]
        out = np.empty(256, dtype=np.float32)
        backend.read_buffer_into(c, out)
        assert np.array_equal(out, data * 4)  # the dispatch after the barrier saw both parts' writes
    finally:
        backend.close()


def test_oclgrind_called_directly_keeps_one_queue() -> None:
    backend = OpenCLBackend.open("Oclgrind", direct=True)
    try:
        assert backend.open_queues(2) == 1
    finally:
        backend.close()
