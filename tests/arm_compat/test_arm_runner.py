"""kernellab.testing.arm_runner: the layer set-up Arm's runner needs, and why each part is there."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from arm_compat.arm_compat_helpers import Case, buffer, mark_boundary
from kernellab.errors import ToolError
from kernellab.testing.arm_runner import GRAPH_LAYER, LAYER_ORDER, TENSOR_LAYER, ArmRunner, prepare_layer_dirs


def test_one_manifest_directory_per_layer_graph_first(arm_runner: ArmRunner, tmp_path: Path) -> None:
    dirs = prepare_layer_dirs(arm_runner.deploy_dir, tmp_path)
    assert LAYER_ORDER == (GRAPH_LAYER, TENSOR_LAYER)
    names = []
    for folder in dirs:
        manifests = list(folder.glob("*.json"))
        assert len(manifests) == 1, manifests
        layer = json.loads(manifests[0].read_text())["layer"]
        assert os.path.isabs(layer["library_path"]) and Path(layer["library_path"]).is_file()
        names.append(layer["name"])
    assert names == [GRAPH_LAYER, TENSOR_LAYER]
    # Prepared again: same folders, nothing rewritten.
    before = [m.stat().st_mtime_ns for d in dirs for m in d.glob("*.json")]
    assert prepare_layer_dirs(arm_runner.deploy_dir, tmp_path) == dirs
    assert [m.stat().st_mtime_ns for d in dirs for m in d.glob("*.json")] == before


def test_environment_lists_graph_directory_first(arm_runner: ArmRunner, icd: Path) -> None:
    env = arm_runner.tool(icd=icd).env
    assert env["VK_LAYER_PATH"].split(os.pathsep)[:2] == [str(d) for d in arm_runner.layer_dirs]
    assert env["VK_INSTANCE_LAYERS"] == f"{GRAPH_LAYER}:{TENSOR_LAYER}"
    assert env["VK_ICD_FILENAMES"] == str(icd)


def _pass_through(case: Case) -> Path:
    case.save("data.npy", np.arange(4, dtype=np.int32))
    return case.scenario([buffer("data", 16, "readonly", src="data.npy", dst="out.npy")], [mark_boundary(["data"])])


def test_runner_works_with_the_prepared_layers(case: Case) -> None:
    scenario = _pass_through(case)
    case.arm_runner.run(scenario, output=case.root / "out", icd=case.icd)
    assert np.load(case.root / "out" / "out.npy").tobytes() == np.arange(4, dtype=np.int32).tobytes()


@pytest.mark.parametrize("layers", ["none", "tensor_above_graph"])
def test_runner_refuses_to_start_without_the_layers_in_order(case: Case, layers: str) -> None:
    scenario = _pass_through(case)
    env = {k: v for k, v in case.env().items() if not k.startswith("VK_") or k in ("VK_ICD_FILENAMES", "VK_DRIVER_FILES")}
    if layers == "tensor_above_graph":
        env["VK_LAYER_PATH"] = os.pathsep.join(str(d) for d in reversed(case.arm_runner.layer_dirs))
        env["VK_INSTANCE_LAYERS"] = f"{TENSOR_LAYER}:{GRAPH_LAYER}"
    proc = subprocess.run(case.arm_runner.command(scenario, output=case.root / "out"), env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    log = proc.stdout + proc.stderr
    assert "createDevice" in log or "requires extension" in log, log
    assert not (case.root / "out" / "out.npy").exists()


def test_failure_carries_a_repro_command(case: Case) -> None:
    scenario = case.scenario([buffer("data", 16, "readonly", src="missing.npy")], [mark_boundary(["data"])])
    with pytest.raises(ToolError) as info:
        case.arm_runner.run(scenario, icd=case.icd)
    message = str(info.value)
    assert "repro:" in message and "VK_INSTANCE_LAYERS=" in message and str(scenario) in message
