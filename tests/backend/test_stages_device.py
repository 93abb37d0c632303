"""Device-specific OpenCL stages: PoCL's and Oclgrind's program binaries and their LLVM IR."""
from __future__ import annotations

from pathlib import Path

import pytest

from helpers.devices import POCL, opencl_device
from kernellab import tools
from kernellab.cli import main
from kernellab.compile.pipeline import CompileRequest
from kernellab.compile.snapshot import Device, Program, SnapshotFormat, list_snapshot_stages, request_snapshot

KERNEL = Path(__file__).resolve().parents[1] / "unit" / "shaders" / "reduce.cl"
HAS_LLVM_DIS = tools.find("llvm-dis") is not None


def snapshot(device: Device, stage: str, fmt: SnapshotFormat) -> bytes:
    p = Program(CompileRequest(KERNEL, "opencl-c", build_options="-DWG=32"), [device])
    got: list[bytes] = []
    request_snapshot(p, device, stage, fmt, lambda size, data, info, sink: sink.append(data), got)
    built = p.build(device)
    assert built.stage == "device-binary"
    return got[0]


def test_pocl_device_binary():
    data = snapshot(Device(opencl_device(POCL), "opencl"), "device-binary", SnapshotFormat.BINARY)
    assert data.startswith(b"poclbin\0")


@pytest.mark.skipif(not HAS_LLVM_DIS, reason="needs llvm-dis (apt-get install llvm-14)")
@pytest.mark.parametrize("name", [POCL, "Oclgrind"], ids=["pocl", "oclgrind"])
def test_device_llvm_ir_text(name: str):
    device = Device(opencl_device(name), "opencl")
    p = Program(CompileRequest(KERNEL, "opencl-c"), [device])
    assert list_snapshot_stages(p, device)[-2:] == ["device-binary", "device-llvm-ir"]
    text = snapshot(device, "device-llvm-ir", SnapshotFormat.TEXT).decode()
    assert "define" in text and "reduce" in text


@pytest.mark.skipif(not HAS_LLVM_DIS, reason="needs llvm-dis (apt-get install llvm-14)")
def test_cli_device_stage(tmp_path: Path, capsys):
    out = tmp_path / "k.ll"
    assert main(["snapshot", str(KERNEL), "--stage", "device-llvm-ir", "--format", "text", "-o", str(out),
                 "--device", opencl_device(POCL)]) == 0
    assert "define" in out.read_text()
    assert main(["snapshot", str(KERNEL), "--stage", "device-binary", "--device", "no-such-device"]) == 1
    assert "no OpenCL device matches 'no-such-device'" in capsys.readouterr().err


def test_dump_skips_device_stages_of_another_backends_device(tmp_path: Path):
    """A Vulkan run names its Vulkan device: the OpenCL device stages are not that run's to dump."""
    from kernellab.compile.pipeline import Compiler, dump_stages

    compiler = Compiler(CompileRequest(KERNEL, "opencl-c", device="llvmpipe (LLVM 15.0.6, 256 bits)"))
    dump_stages(compiler, tmp_path, "k")
    names = {p.name for p in tmp_path.iterdir()}
    assert "k.spirv-vulkan.spv" in names and "k.opencl-c.cl" in names
    assert not any("device" in n for n in names)


def test_dump_includes_device_stages_for_an_opencl_device(tmp_path: Path):
    from kernellab.compile.pipeline import Compiler, dump_stages

    dump_stages(Compiler(CompileRequest(KERNEL, "opencl-c", device=opencl_device(POCL))), tmp_path, "k")
    names = {p.name for p in tmp_path.iterdir()}
    assert {"k.device-binary.bin", "k.device-binary.hex.txt"} <= names
    if HAS_LLVM_DIS:
        assert {"k.device-llvm-ir.bc", "k.device-llvm-ir.ll"} <= names
