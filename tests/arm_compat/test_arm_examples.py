"""examples/arm/*: each scenario runs unchanged on both runners, matches its check.py, and the
two runners' files are byte-identical."""
from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from arm_compat.arm_compat_helpers import Case
from kernellab.testing.arm_runner import ArmRunner

EXAMPLES = sorted(p.parent for p in (Path(__file__).parents[2] / "examples" / "arm").glob("*/scenario.json"))


def test_examples_are_found() -> None:
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_matches_arm(example: Path, tmp_path: Path, arm_runner: ArmRunner, icd: Path) -> None:
    root = tmp_path / example.name
    shutil.copytree(example, root)  # the runners write into arm/ and kernellab/ beside the scenario
    result = Case(root, arm_runner, icd).run_both(kernellab_args=["--capture-frames", str(tmp_path / "frames")])
    assert result.files, "the example writes no output"
    spec = importlib.util.spec_from_file_location(f"check_arm_{example.name}", example / "check.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.check(result.arm)
    module.check(result.kernellab)
