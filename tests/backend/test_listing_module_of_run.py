"""Issue 20: `listing` and `snapshot` show the module `run` runs (the same SPIR-V version and
target environment: that of the Vulkan device run chooses), and say so when asked for another."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kernellab import config
from kernellab.cli import main
from kernellab.commands import run_target_env

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "vector_add"


def test_snapshot_and_listing_show_the_module_run_dumps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "va")
    scenario = tmp_path / "va" / "scenario.json"
    with config.override(cache_dir=tmp_path / "cache"):
        assert main(["run", str(scenario), "--output", str(tmp_path / "out"),
                     "--dump-stages", str(tmp_path / "stages")]) == 0
        ran = (tmp_path / "stages" / "add.spirv.spv").read_bytes()
        assert main(["snapshot", str(scenario), "--stage", "spirv", "--format", "binary",
                     "-o", str(tmp_path / "snap.spv")]) == 0
        assert (tmp_path / "snap.spv").read_bytes() == ran
        assert main(["listing", str(scenario), "--stage", "spirv", "-o", str(tmp_path / "l.json")]) == 0
        assert "note:" not in capsys.readouterr().err
        env = run_target_env()[0]
        platform = json.loads((tmp_path / "l.json").read_text().splitlines()[0])["platform"]
        assert platform.endswith(f"-{env}") and env == "vulkan1.3"  # lavapipe is a Vulkan 1.3 device
        assert main(["listing", str(scenario), "--target-env", "vulkan1.1", "-o", str(tmp_path / "old.json")]) == 0
    assert "note: compiled for vulkan1.1 (--target-env); `run` compiles for vulkan1.3" in capsys.readouterr().err
