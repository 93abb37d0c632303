"""The session's backend lease: a workload needing device extensions only a run of its own
enables (optical flow) gets its own device, and gives what ``kernellab run`` writes."""
from __future__ import annotations

from pathlib import Path

import numpy as np

import kernellab
from kernellab.formats.scenario import load_scenario
from kernellab.runtime.executor import RunOptions, execute

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "optical_flow" / "scenario.json"


def test_optical_flow_runs_in_a_session_as_on_the_command_line(tmp_path: Path) -> None:
    with kernellab.Session() as s:
        got = s.run(EXAMPLE)
        again = s.run(EXAMPLE)  # the session's own device is still there for the next workload
    scenario, _ = load_scenario(EXAMPLE, tmp_path)
    report = execute(scenario, RunOptions())
    files = {p.stem: np.load(p) for p in report.outputs}
    assert sorted(got) == sorted(files) == ["cost", "flow"]
    for uid, want in files.items():
        np.testing.assert_array_equal(got[uid], want)
        np.testing.assert_array_equal(again[uid], want)
