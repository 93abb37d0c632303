"""Every bundled example runs through the CLI and matches its NumPy reference (examples/*/check.py)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from helpers.scenarios import kernellab

EXAMPLES = sorted(p.parent for p in (Path(__file__).parents[2] / "examples").glob("*/scenario.json"))


def test_examples_are_found() -> None:
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example(example: Path, tmp_path: Path) -> None:
    proc = kernellab("run", "--scenario", example / "scenario.json", "--output", tmp_path,
                     "--capture-frames", tmp_path / "frames")
    assert proc.returncode == 0, proc.stderr
    spec = importlib.util.spec_from_file_location(f"check_{example.name}", example / "check.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.check(tmp_path)
