"""Bounded everything (issue 18, point 4, the parts of files named inside modules and of memory
sizes): a source file a SPIR-V module names is read only when it is a regular file of the
workload's folder under a size cap; workgroup memory is checked against the device's limit by
``run`` and against the checker's by ``verify`` before anything is allocated; a full disk names
the file."""
from __future__ import annotations

import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from helpers.scenarios import vector_add, write
from kernellab import cli, tools
from kernellab.backends.base import Limits
from kernellab.errors import InputError
from kernellab.formats.scenario import load_scenario
from kernellab.runtime.limits import check_limits
from kernellab.spirvsim import memory
from kernellab.spirvsim.types import Leaves, Type, finish_layout
from kernellab.verify import terms

#: enough for the interpreter, NumPy, lavapipe and the compilers; far less than a 1 GiB array's
#: one Python object per element
MEMORY_LIMIT = 4 << 30


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def cli_run(*args: object, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kernellab", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "XDG_RUNTIME_DIR": "/tmp"}, timeout=timeout,
                          preexec_fn=_limited)


def one_dispatch(folder: Path, source: str, name: str = "k.comp", kind: str = "GLSL",
                 entry: str | None = None) -> Path:
    (folder / name).write_text(source)
    shader: dict[str, Any] = {"uid": "k", "src": name, "type": kind}
    if entry:
        shader["entry"] = entry
    return write(folder / "scenario.json", {
        "resources": [{"shader": shader},
                      {"buffer": {"uid": "o", "size": 64, "shader_access": "readwrite"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [1],
                                           "bindings": [{"set": 0, "id": 0, "resource_ref": "o"}]}}]})


# --- files named inside modules ------------------------------------------------------------------

RACE = """#version 450
layout(local_size_x = 16) in;
layout(set = 0, binding = 0) buffer Data { uint data[]; };
void main() { data[0] = gl_LocalInvocationID.x; }
"""


def _module_naming(folder: Path, named: str) -> Path:
    """A racy module whose debug OpString (its OpLine's and OpSource's file) is ``named``."""
    glslang, dis, asm = (tools.find(n) for n in ("glslangValidator", "spirv-dis", "spirv-as"))
    if glslang is None or dis is None or asm is None:
        pytest.skip("glslang and SPIRV-Tools are needed to make the module")
    (folder / "g.comp").write_text(RACE)
    env = {**os.environ, **glslang.env}
    subprocess.run([str(glslang.path), "-V", "-S", "comp", "-g", "-o", "g.spv", "g.comp"],
                   check=True, capture_output=True, env=env, cwd=folder)
    text = subprocess.run([str(dis.path), folder / "g.spv"], check=True, capture_output=True, text=True,
                          env={**os.environ, **dis.env}).stdout
    assert 'OpString "g.comp"' in text
    (folder / "k.spvasm").write_text(text.replace('OpString "g.comp"', f'OpString "{named}"'))
    subprocess.run([str(asm.path), "--target-env", "vulkan1.0", folder / "k.spvasm", "-o", folder / "k.spv"],
                   check=True, capture_output=True, env={**os.environ, **asm.env})
    return write(folder / "scenario.json", {
        "resources": [{"shader": {"uid": "k", "src": "k.spv", "type": "SPIR-V"}},
                      {"buffer": {"uid": "o", "size": 64, "shader_access": "readwrite"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [1],
                                           "bindings": [{"set": 0, "id": 0, "resource_ref": "o"}]}}]})


@pytest.mark.parametrize("target", ["fifo", "/dev/zero"])
def test_verify_does_not_read_a_fifo_or_a_device_a_module_names(tmp_path: Path, target: str) -> None:
    if target == "fifo":
        os.mkfifo(tmp_path / "pipe")  # inside the folder: only the file-type check stands in the way
        target = str(tmp_path / "pipe")
    path = _module_naming(tmp_path, target)
    started = time.monotonic()
    proc = cli_run("verify", path, cwd=tmp_path, timeout=60)
    assert time.monotonic() - started < 30
    assert proc.returncode == 1, proc.stderr
    assert "data-race" in proc.stdout and "Traceback" not in proc.stderr


def _returns_quickly(call: Any) -> Any:
    out: list[Any] = []
    worker = threading.Thread(target=lambda: out.append(call()), daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "the read blocked"
    return out[0]


def test_source_lines_only_from_small_regular_files_inside_the_roots(tmp_path: Path) -> None:
    inside, outside = tmp_path / "w", tmp_path / "elsewhere"
    inside.mkdir()
    outside.mkdir()
    (inside / "k.comp").write_text("first\nsecond\n")
    (outside / "secret.txt").write_text("secret\n")
    (inside / "link.txt").symlink_to(outside / "secret.txt")
    os.mkfifo(inside / "pipe")
    with open(inside / "huge.txt", "wb") as fh:
        fh.truncate(terms.MAX_SOURCE_BYTES + 1)
    with terms.reading_within([inside]):
        assert terms.line_text(str(inside / "k.comp"), 2) == "second"
        assert terms.line_text(str(outside / "secret.txt"), 1) == ""
        assert terms.line_text(str(inside / "link.txt"), 1) == ""  # resolved: outside
        assert _returns_quickly(lambda: terms.line_text(str(inside / "pipe"), 1)) == ""
        assert terms.line_text(str(inside / "huge.txt"), 1) == ""
    assert _returns_quickly(lambda: terms.source_line("/dev/zero", 1)) is None


# --- workgroup memory ----------------------------------------------------------------------------

BIG_SHARED = """#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer B { uint x[]; } b;
shared uint big[268435456];
void main() { big[gl_LocalInvocationID.x] = 1u; barrier(); b.x[0] = big[0]; }
"""


def test_run_refuses_shared_memory_past_the_device_limit(tmp_path: Path) -> None:
    path = one_dispatch(tmp_path, BIG_SHARED)
    proc = cli_run("run", path, "--output", tmp_path / "out", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "/resources/0/shader: shader 'k' uses 1073741824 bytes of workgroup" in proc.stderr
    assert "(maxComputeSharedMemorySize)" in proc.stderr and "Traceback" not in proc.stderr


def test_run_on_opencl_refuses_local_memory_past_the_device_limit(tmp_path: Path) -> None:
    source = ("__kernel void k(__global uint *o) { __local uint big[268435456]; big[get_local_id(0)] = 1;\n"
              "  barrier(CLK_LOCAL_MEM_FENCE); o[0] = big[0]; }\n")
    path = one_dispatch(tmp_path, source, "k.cl", "OpenCL-C", entry="k")
    proc = cli_run("run", path, "--output", tmp_path / "out", "--backend", "opencl", cwd=tmp_path)
    if "no OpenCL device" in proc.stderr or "no device" in proc.stderr:
        pytest.skip(proc.stderr)
    assert proc.returncode == 2, proc.stderr
    assert "/resources/0/shader: shader 'k' uses 1073741824 bytes" in proc.stderr
    assert "(CL_DEVICE_LOCAL_MEM_SIZE)" in proc.stderr


def test_verify_refuses_shared_memory_past_the_checker_limit(tmp_path: Path) -> None:
    path = one_dispatch(tmp_path, BIG_SHARED)
    started = time.monotonic()
    proc = cli_run("verify", path, cwd=tmp_path)
    assert time.monotonic() - started < 30
    assert proc.returncode == 2, proc.stderr
    assert "/commands/0/dispatch_compute" in proc.stderr and "1073741824 bytes of workgroup" in proc.stderr
    assert f"at most {memory.MAX_WORKGROUP_MEMORY} (maxComputeSharedMemorySize)" in proc.stderr


def test_verify_refuses_private_memory_one_workgroup_cannot_hold(tmp_path: Path) -> None:
    source = ("#version 450\nlayout(local_size_x = 64) in;\nlayout(set = 0, binding = 0) buffer B { uint x[]; } b;\n"
              "uint p[67108864];\nvoid main() { p[gl_LocalInvocationID.x] = 1u; b.x[0] = p[0]; }\n")
    proc = cli_run("verify", one_dispatch(tmp_path, source), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "private and function memory" in proc.stderr and "Traceback" not in proc.stderr


def test_verify_of_a_huge_declared_buffer_array_builds_no_object_per_element(tmp_path: Path) -> None:
    source = ("#version 450\nlayout(local_size_x = 4) in;\n"
              "layout(set = 0, binding = 0) buffer B { uint x[268435456]; } b;\n"
              "void main() { b.x[gl_LocalInvocationID.x] = 1u; }\n")
    started = time.monotonic()
    proc = cli_run("verify", one_dispatch(tmp_path, source), cwd=tmp_path)
    assert time.monotonic() - started < 30
    assert proc.returncode == 0, proc.stderr


def test_check_limits_names_the_shader_and_the_limit(tmp_path: Path) -> None:
    path, _ = vector_add(tmp_path)
    scenario, _ = load_scenario(path)
    problems = check_limits(scenario, Limits(max_shared_memory_size=32768), path, shared_memory={"add": 32769})
    assert [(p.where, p.message) for p in problems] == [
        ("/resources/0/shader", "shader 'add' uses 32769 bytes of workgroup (shared/__local) memory; the device "
                                "allows at most 32768 (maxComputeSharedMemorySize)")]
    assert not check_limits(scenario, Limits(max_shared_memory_size=32768), path, shared_memory={"add": 32768})


def test_the_checker_sizes_memory_before_allocating() -> None:
    with pytest.raises(InputError, match="65537 bytes of workgroup"):
        memory.check_memory([("a", 65536), ("b", 1)], 0, 1)
    with pytest.raises(InputError, match="private and function memory"):
        memory.check_memory([], 1 << 24, 128)
    assert memory.check_memory([("a", 1024)], 16, 64) == memory.workgroup_row_bytes(1024) + 64 * 16


def test_array_leaves_are_computed_when_read() -> None:
    u32 = Type(1, "int", width=32)
    finish_layout(u32)
    small, big = Type(2, "array", elem=u32, count=4), Type(3, "array", elem=u32, count=1 << 28)
    finish_layout(small)
    finish_layout(big)
    assert small.leaves == [(0, u32), (4, u32), (8, u32), (12, u32)]
    assert isinstance(big.leaves, Leaves) and len(big.leaves) == 1 << 28 and big.size == 1 << 30
    assert big.leaves[-1] == ((1 << 30) - 4, u32) and list(big.leaves[:2]) == [(0, u32), (4, u32)]
    pair = Type(4, "struct", members=(u32, big))
    finish_layout(pair)
    assert len(pair.leaves) == (1 << 28) + 1 and pair.leaves[1] == (4, u32)


# --- a full disk ---------------------------------------------------------------------------------

def test_a_full_disk_names_the_output_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    from kernellab.outputs import OutputSet
    path, _ = vector_add(tmp_path)
    staged = OutputSet.open

    def full(self: OutputSet, target: Any) -> Any:
        staged(self, target).close()  # staged as usual; its bytes go to a full device
        return open("/dev/full", "wb")
    monkeypatch.setattr(OutputSet, "open", full)
    assert cli.main(["run", str(path), "--output", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err == f"kernellab: error: {tmp_path / 'out' / 'c.npy'}: No space left on device\n"
    assert not (tmp_path / "out" / "c.npy").exists()


def test_a_full_standard_output_is_named(tmp_path: Path) -> None:
    path, _ = vector_add(tmp_path)
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "kernellab", "validate", str(path)], stdout=full,
                              stderr=subprocess.PIPE, text=True, env={**os.environ, "XDG_RUNTIME_DIR": "/tmp"})
    assert proc.returncode == 1
    assert proc.stderr == "kernellab: error: standard output: No space left on device\n"


LOCAL_ARRAYS = ("__kernel void k(__global uint *o, __local uint *l) { __local uint big[268435456];\n"
                "  big[get_local_id(0)] = 1; l[0] = 1; barrier(CLK_LOCAL_MEM_FENCE); o[0] = big[0] + l[0]; }\n")
LOCAL_ARGUMENT = ("__kernel void k(__global uint *o, __local uint *l) { l[get_local_id(0)] = 1;\n"
                  "  barrier(CLK_LOCAL_MEM_FENCE); o[0] = l[0]; }\n")


@pytest.mark.parametrize(("source", "where"), [(LOCAL_ARRAYS, "/0/kernel_file"), (LOCAL_ARGUMENT, "/0/kernel_arguments/1")],
                         ids=["__local-array", "__local-argument"])
@pytest.mark.parametrize("command", [("verify",), ("run", "--device", "Oclgrind"), ("run",)],
                         ids=["verify", "run-oclgrind", "run-pocl"])
def test_a_launch_past_the_device_local_memory_is_refused_before_it_runs(
        tmp_path: Path, source: str, where: str, command: tuple[str, ...]) -> None:
    """verify once reported Oclgrind's CL_OUT_OF_RESOURCES as a warning and called the file verified;
    PoCL died of SIGSEGV allocating a 1 GiB __local array per work-group."""
    pytest.importorskip("pyopencl")
    import json
    (tmp_path / "k.cl").write_text(source)
    size = 4096 if source is LOCAL_ARRAYS else 4_000_000_000
    path = tmp_path / "k.json"
    path.write_text(json.dumps([{"language": "OpenCL", "kernel_file": "k.cl", "global_size": [4], "local_size": [4],
                                 "entry_point": "k", "kernel_arguments": [
                                     {"type": "array", "size": 16},
                                     {"type": "array", "address_space": "local", "size": size}]}]))
    proc = cli_run(*command, path, cwd=tmp_path, timeout=120)
    assert proc.returncode == 2, proc.stderr + proc.stdout
    assert f"{path}: {where}: kernel k needs" in proc.stderr and "(CL_DEVICE_LOCAL_MEM_SIZE)" in proc.stderr
    assert "verified" not in proc.stdout + proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("kind", ["buffer", "tensor"])
def test_a_memory_group_offset_past_the_device_is_refused_at_its_path(kind: str, tmp_path: Path) -> None:
    """A memory group's one allocation reaches past each member's offset: 2^63 reached the
    driver's vkAllocateMemory (exit 1, no file or place named) instead of the limit check."""
    import json

    body = {"uid": "r", "shader_access": "readwrite", "memory_group": {"id": "m", "offset": 1 << 63}}
    body.update({"size": 64} if kind == "buffer" else {"dims": [4], "format": "VK_FORMAT_R32_SINT"})
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"resources": [{kind: body}], "commands": []}))
    scenario, _ = load_scenario(path)
    problems = check_limits(scenario, Limits(max_allocation_size=1 << 31), path)
    end = (1 << 63) + (64 if kind == "buffer" else 0)
    assert [(p.where, p.message) for p in problems] == [
        (f"/resources/0/{kind}/memory_group/offset", f"{kind} 'r' reaches byte {end} of memory group 'm'; the device "
                                                     "allows at most 2147483648 (maxMemoryAllocationSize)")]


def test_a_tensor_past_the_device_is_refused_at_its_dims(tmp_path: Path) -> None:
    """2^31 x 2^31 elements of 4 bytes wrapped to a tensor of no memory in the driver: the run
    ended in an internal error reading it back, not at the tensor's dims."""
    import json

    path = tmp_path / "s.json"
    path.write_text(json.dumps({"resources": [{"tensor": {"uid": "t", "dims": [1 << 31, 1 << 31],
                                                          "format": "VK_FORMAT_R32_SINT",
                                                          "shader_access": "readwrite"}}], "commands": []}))
    scenario, _ = load_scenario(path)
    problems = check_limits(scenario, Limits(max_allocation_size=1 << 31), path)
    assert [(p.where, p.message) for p in problems] == [
        ("/resources/0/tensor/dims", "tensor 't' takes 18446744073709551616 bytes; the device allows at most "
                                     "2147483648 (maxMemoryAllocationSize)")]
    path.write_text(path.read_text().replace("2147483648, 2147483648", "4, 4"))
    assert not check_limits(load_scenario(path)[0], Limits(max_allocation_size=1 << 31), path)
