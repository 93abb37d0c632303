"""The snapshot API (after cl_codeplay_program_snapshot): stage lists, callbacks, every error code."""
from __future__ import annotations

import importlib.util
import threading
from pathlib import Path

import pytest

from kernellab import tools
from kernellab.compile.cache import ArtifactCache
from kernellab.compile.pipeline import CompileRequest
from kernellab.compile.snapshot import (
    Device,
    InvalidArgValue,
    InvalidDevice,
    InvalidProgram,
    InvalidProgramExecutable,
    InvalidValue,
    Program,
    SnapshotError,
    SnapshotFormat,
    SnapshotInfo,
    list_snapshot_stages,
    missing_stages,
    request_snapshot,
)

HAS_CLSPV = tools.find("clspv") is not None or importlib.util.find_spec("pyclspv") is not None
SHADERS = Path(__file__).parent / "shaders"
ROOT = Path(__file__).resolve().parents[2]
VULKAN = Device("", "vulkan")
SPIRV_MAGIC = b"\x03\x02\x23\x07"
HAS_CLANG = tools.find("clang") is not None and tools.find("llvm-spirv") is not None and tools.find("llvm-dis") is not None


def glsl_program(name: str = "loop_branch.comp", **kw) -> Program:
    return Program(CompileRequest(SHADERS / name, "glsl"), **kw)


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[int, bytes, SnapshotInfo, object]] = []
        self.threads: list[threading.Thread] = []

    def __call__(self, size: int, data: bytes, info: SnapshotInfo, user_data: object) -> None:
        self.calls.append((size, data, info, user_data))
        self.threads.append(threading.current_thread())


# --- stage lists ----------------------------------------------------------------------------------

def test_glsl_stages_in_pipeline_order():
    p = glsl_program()
    assert list_snapshot_stages(p, VULKAN) == ["glsl", "preprocessed", "spirv", "spirv-opt"]
    assert list_snapshot_stages(p, VULKAN, 2) == ["glsl", "preprocessed"]
    assert list_snapshot_stages(p, VULKAN, 99) == ["glsl", "preprocessed", "spirv", "spirv-opt"]


def test_spirv_file_skips_the_glsl_stages(tmp_path: Path):
    spv = tmp_path / "k.spv"
    recorder = Recorder()
    p = glsl_program()
    request_snapshot(p, VULKAN, "spirv", SnapshotFormat.BINARY, recorder)
    p.build()
    spv.write_bytes(recorder.calls[0][1])
    q = Program(CompileRequest(spv, "spirv"))
    assert list_snapshot_stages(q, VULKAN) == ["spirv", "spirv-opt"]
    rec = Recorder()
    request_snapshot(q, VULKAN, "spirv-opt", SnapshotFormat.TEXT, rec)
    assert q.build().data == spv.read_bytes()  # the module as given is what Vulkan runs
    assert "OpEntryPoint GLCompute" in rec.calls[0][1].decode()


@pytest.mark.skipif(not HAS_CLANG, reason="needs clang-14, llvm-14 and llvm-spirv-14 (scripts/setup.sh installs them)")
def test_opencl_c_stages_in_pipeline_order():
    p = Program(CompileRequest(SHADERS / "reduce.cl", "opencl-c"), [VULKAN, Device("", "opencl")])
    assert list_snapshot_stages(p, Device("", "opencl")) == [
        "opencl-c", "preprocessed", "llvm-ir", "spirv-kernel", "spirv-vulkan", "device-binary", "device-llvm-ir"]


@pytest.mark.skipif(not HAS_CLSPV, reason="needs clspv: pip install pyclspv (wheels for CPython 3.11 on Linux x86-64)")
def test_stages_whose_tool_is_missing_are_left_out_and_named(monkeypatch: pytest.MonkeyPatch):
    real_find = tools.find
    monkeypatch.setattr(tools, "find", lambda name: None if name in ("clang", "llvm-spirv") else real_find(name))
    p = Program(CompileRequest(SHADERS / "reduce.cl", "opencl-c"))
    stages = list_snapshot_stages(p, p.devices[0])
    assert "llvm-ir" not in stages and "spirv-kernel" not in stages and "preprocessed" not in stages
    assert "spirv-vulkan" in stages  # clspv from pyclspv needs no clang
    assert "apt-get install clang" in missing_stages(p)["llvm-ir"]
    with pytest.raises(InvalidArgValue, match="stage 'llvm-ir' is not available: it needs clang: .*apt-get install clang"):
        request_snapshot(p, p.devices[0], "llvm-ir", callback=Recorder())


# --- snapshots ------------------------------------------------------------------------------------

def test_binary_snapshot_of_spirv_is_handed_to_the_callback():
    p = glsl_program()
    rec = Recorder()
    token = object()
    request_snapshot(p, VULKAN, "spirv", SnapshotFormat.BINARY, rec, token)
    art = p.build()
    assert len(rec.calls) == 1
    size, data, info, user_data = rec.calls[0]
    assert data.startswith(SPIRV_MAGIC) and size == len(data) and data == art.data
    assert user_data is token
    assert info.stage == "spirv" and info.format == SnapshotFormat.BINARY and info.program is p


def test_text_snapshot_of_spirv_is_its_disassembly():
    p = glsl_program()
    rec = Recorder()
    request_snapshot(p, VULKAN, "spirv", SnapshotFormat.TEXT, rec)
    p.build()
    text = rec.calls[0][1].decode()
    assert "OpEntryPoint GLCompute %main \"main\"" in text


def test_default_format_is_text_for_sources_binary_for_spirv():
    for stage, check in [("glsl", lambda d: d.startswith(b"#version 450")),
                         ("preprocessed", lambda d: b"void main()" in d),
                         ("spirv-opt", lambda d: d.startswith(SPIRV_MAGIC))]:
        p = glsl_program()
        rec = Recorder()
        request_snapshot(p, VULKAN, stage, SnapshotFormat.DEFAULT, rec)
        p.build()
        assert check(rec.calls[0][1]), stage


def test_a_stage_after_the_built_module_still_completes_during_the_build():
    p = glsl_program()
    rec = Recorder()
    request_snapshot(p, VULKAN, "spirv-opt", SnapshotFormat.BINARY, rec)
    built = p.build()
    assert built.stage == "spirv"
    assert rec.calls and rec.calls[0][1] != built.data


def test_at_most_one_stage_at_a_time():
    p = glsl_program()
    first, second = Recorder(), Recorder()
    request_snapshot(p, VULKAN, "glsl", SnapshotFormat.TEXT, first)
    request_snapshot(p, VULKAN, "spirv", SnapshotFormat.BINARY, second)
    p.build()
    assert first.calls == [] and len(second.calls) == 1


def test_callback_runs_on_the_compiling_thread_with_build_async():
    p = glsl_program()
    rec = Recorder()
    request_snapshot(p, VULKAN, "spirv", SnapshotFormat.BINARY, rec)
    art = p.build_async().result(timeout=120)
    assert rec.threads and rec.threads[0] is not threading.main_thread()
    assert rec.calls[0][1] == art.data


def test_snapshots_are_delivered_from_the_artifact_cache_too(tmp_path: Path):
    cache = ArtifactCache(tmp_path)
    keys = []
    for _ in range(2):
        p = glsl_program(cache=cache)
        rec = Recorder()
        request_snapshot(p, VULKAN, "spirv", SnapshotFormat.BINARY, rec)
        p.build()
        keys.append((rec.calls[0][2].key, rec.calls[0][1]))
    assert keys[0] == keys[1]
    assert list((tmp_path / "artifacts").rglob(f"{keys[0][0]}.spv"))


@pytest.mark.skipif(not HAS_CLSPV, reason="needs clspv: pip install pyclspv (wheels for CPython 3.11 on Linux x86-64)")
def test_opencl_c_to_vulkan_spirv_snapshot():
    p = Program(CompileRequest(SHADERS / "reduce.cl", "opencl-c", build_options="-DWG=32"), [VULKAN])
    rec = Recorder()
    request_snapshot(p, VULKAN, "spirv-vulkan", SnapshotFormat.TEXT, rec)
    p.build(VULKAN)
    text = rec.calls[0][1].decode()
    assert "OpEntryPoint GLCompute" in text and "NonSemantic.ClspvReflection" in text
    assert "OpConstant %uint 32" in text or "%uint_32 = OpConstant %uint 32" in text  # WG=32 reached clspv


@pytest.mark.skipif(not HAS_CLANG, reason="needs clang-14, llvm-14 and llvm-spirv-14 (scripts/setup.sh installs them)")
@pytest.mark.parametrize("stage,needle", [("preprocessed", "__kernel void reduce"), ("llvm-ir", "define"),
                                          ("spirv-kernel", "OpCapability Kernel")])
def test_opencl_c_clang_stage_snapshots(stage: str, needle: str):
    p = Program(CompileRequest(SHADERS / "reduce.cl", "opencl-c"), [VULKAN])
    rec = Recorder()
    request_snapshot(p, VULKAN, stage, SnapshotFormat.TEXT, rec)
    p.build(VULKAN)
    assert needle in rec.calls[0][1].decode()


# --- one test per error code ----------------------------------------------------------------------

@pytest.mark.parametrize("program", [None, "loop_branch.comp", 42])
def test_invalid_program(program: object):
    with pytest.raises(InvalidProgram) as err:
        list_snapshot_stages(program, VULKAN)  # type: ignore[arg-type]
    assert err.value.code == "CL_INVALID_PROGRAM" and err.value.value == -44
    with pytest.raises(InvalidProgram):
        request_snapshot(program, VULKAN, "spirv", callback=Recorder())  # type: ignore[arg-type]


def test_invalid_device():
    p = glsl_program()
    for device in (None, "vulkan", Device("pthread", "opencl")):
        with pytest.raises(InvalidDevice) as err:
            list_snapshot_stages(p, device)  # type: ignore[arg-type]
        assert err.value.code == "CL_INVALID_DEVICE" and err.value.value == -33
        with pytest.raises(InvalidDevice):
            request_snapshot(p, device, "spirv", callback=Recorder())  # type: ignore[arg-type]


def test_invalid_arg_value():
    p = glsl_program()
    cases = [dict(stage="spirv", callback=None), dict(stage="no-such-stage", callback=Recorder()),
             dict(stage="spirv", callback=Recorder(), format=7), dict(stage="spirv", callback="not callable")]
    for kw in cases:
        with pytest.raises(InvalidArgValue) as err:
            request_snapshot(p, VULKAN, **kw)  # type: ignore[arg-type]
        assert err.value.code == "CL_INVALID_ARG_VALUE" and err.value.value == -50
    with pytest.raises(InvalidArgValue, match="num_stages must be a positive integer"):
        list_snapshot_stages(p, VULKAN, 0)
    assert p._selection is None  # nothing was selected by a failed request


def test_invalid_program_executable_after_the_build():
    p = glsl_program()
    p.build()
    with pytest.raises(InvalidProgramExecutable) as err:
        request_snapshot(p, VULKAN, "spirv", callback=Recorder())
    assert err.value.code == "CL_INVALID_PROGRAM_EXECUTABLE" and err.value.value == -45


def test_invalid_value_when_stages_cannot_be_queried():
    p = Program.from_binary(b"poclbin\0...", Device("pthread", "opencl"))
    for call in (lambda: list_snapshot_stages(p, p.devices[0]),
                 lambda: request_snapshot(Program(CompileRequest(SHADERS / "x.hlsl", "hlsl")), Device("", "vulkan"),
                                          "spirv", callback=Recorder())):
        with pytest.raises(InvalidValue) as err:
            call()
        assert err.value.code == "CL_INVALID_VALUE" and err.value.value == -30


def test_errors_are_kernellab_errors():
    assert issubclass(InvalidArgValue, (SnapshotError, ValueError))
    assert InvalidArgValue.exit_status == 2


def test_devices_from_a_backends_device_info():
    from kernellab.backends.base import DeviceInfo

    info = DeviceInfo("opencl", 0, "pthread-AMD EPYC", "cpu")
    assert Device.from_info(info) == Device("pthread-AMD EPYC", "opencl")
