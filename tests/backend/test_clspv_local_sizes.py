"""``__local`` pointer arguments of OpenCL C run on Vulkan: clspv may declare the array in other
elements than the parameter's type (``__local long *`` here becomes a ``uint`` array), and the
scenario's count (declared elements) must still give it the bytes the kernel uses, in ``run``
(lavapipe) and in ``verify --vulkan``."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from kernellab import tools
from kernellab.cli import main
from kernellab.formats.scenario import load_scenario
from kernellab.runtime.executor import RunOptions, execute

pytestmark = pytest.mark.skipif(tools.find("clspv") is None and importlib.util.find_spec("pyclspv") is None,
                                reason="needs clspv")

# every local array is filled to its last byte, then read back mirrored: an array clspv sized
# short loses the upper half (wrong values on the device, out-of-bounds in the checker). A is
# also read as ints, so clspv declares it as a uint array.
KERNEL = """\
__kernel void k(__global long *out, __global int *outc, __global float *outf,
                __local long *A, __local char *C, __local float4 *F) {
  int i = get_local_id(0), n = get_local_size(0), j = n - 1 - i, g = get_global_id(0);
  __local float *f = (__local float *)F;
  A[i] = ((long)(i + 1) << 32) + i;
  ((__local int *)C)[i] = 2 * i;
  f[4 * i] = i; f[4 * i + 1] = i + 0.5f; f[4 * i + 2] = 2 * i; f[4 * i + 3] = -i;
  barrier(CLK_LOCAL_MEM_FENCE);
  out[g] = A[j] + ((__local int *)A)[2 * j];
  outc[g] = C[4 * j];
  outf[g] = F[j].y * 10 + f[4 * j + 3];
}
"""
LOCAL, GROUPS = 16, 2


def write_scenario(folder: Path, char_count: int = 4 * LOCAL) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "k.cl").write_text(KERNEL)
    n = LOCAL * GROUPS
    path = folder / "s.json"
    path.write_text(json.dumps({
        "resources": [
            {"shader": {"uid": "k", "src": "k.cl", "type": "OpenCL-C", "entry": "k",
                        # counts in declared elements: LOCAL longs, 4 * LOCAL chars, LOCAL float4s
                        "specialization_constants": [{"id": 0, "value": LOCAL}, {"id": 3, "value": LOCAL},
                                                     {"id": 4, "value": char_count}, {"id": 5, "value": LOCAL}]}},
            {"buffer": {"uid": "out", "size": 8 * n, "shader_access": "writeonly", "dst": "out.npy"}},
            {"buffer": {"uid": "outc", "size": 4 * n, "shader_access": "writeonly", "dst": "outc.npy"}},
            {"buffer": {"uid": "outf", "size": 4 * n, "shader_access": "writeonly", "dst": "outf.npy"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [GROUPS],
                                           "bindings": [{"set": 0, "id": b, "resource_ref": uid}
                                                        for b, uid in enumerate(("out", "outc", "outf"))]}}]}))
    return path


def expected() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    j = np.tile(np.arange(LOCAL)[::-1], GROUPS).astype(np.int64)
    return ((j + 1) << 32) + 2 * j, (2 * j).astype(np.int32), (9 * j + 5).astype(np.float32)


def test_local_long_char_float4_sized_right_on_vulkan(tmp_path: Path) -> None:
    scenario, _ = load_scenario(write_scenario(tmp_path), tmp_path / "out")
    execute(scenario, RunOptions(backend="vulkan"))
    out, outc, outf = expected()
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "out.npy").view(np.int64), out)
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "outc.npy").view(np.int32), outc)
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "outf.npy").view(np.float32), outf)


def test_same_scenario_on_opencl_gives_the_same_bytes(tmp_path: Path) -> None:
    pytest.importorskip("pyopencl")
    scenario, _ = load_scenario(write_scenario(tmp_path), tmp_path / "out")
    execute(scenario, RunOptions(backend="opencl"))
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "out.npy").view(np.int64), expected()[0])


def test_verify_on_vulkan_finds_no_out_of_bounds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["verify", str(write_scenario(tmp_path)), "--json", "--vulkan"])
    doc = json.loads(capsys.readouterr().out)
    assert (status, doc["verdict"], doc["findings"]) == (0, "verified", [])
    assert doc["checker"] == "spirv"
