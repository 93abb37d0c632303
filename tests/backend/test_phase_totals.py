"""Issue 20: a suite result's phases account for its whole duration: compiling the shaders is a
phase ("compile"), reading the sidecar is part of "parse", so nothing falls between phases."""
from __future__ import annotations

import shutil
from pathlib import Path

from kernellab import config
from kernellab.session import Session
from kernellab.suite.discovery import discover
from kernellab.suite.worker import run_item

SUITE = Path(__file__).resolve().parents[2] / "examples" / "suite"


def test_phases_add_up_to_the_duration(tmp_path: Path) -> None:
    shutil.copytree(SUITE, tmp_path / "suite")
    items = discover([tmp_path / "suite"])
    assert items
    # an empty compile cache: the first run of each workload compiles its shaders
    with config.override(cache_dir=tmp_path / "cache"), Session() as session:
        for item in items:
            result = run_item(session, item)
            assert result.status == "pass", result.message
            phases = result.to_json()["phases_ms"]
            assert "compile" in phases
            total_ms = result.duration_s * 1e3
            assert abs(sum(phases.values()) - total_ms) <= max(2.0, 0.03 * total_ms), (total_ms, phases)
