"""--profiling-dump-path and --perf-counters-dump-path: the files both runners write for one
scenario parse to the same keys, nested the same way, with the same layout (indent 4, sorted
keys, no final newline); kernellab's additions are only extra top-level keys (docs/arm-compat.md)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from arm_compat.arm_compat_helpers import Case
from arm_compat.test_arm_compute import _sum_case

KERNELLAB_PROFILING_KEYS = {"device", "repeats", "total_ns"}
KERNELLAB_PERF_KEYS = {"device", "phases_ms", "total_ms", "wall_ms", "uncounted_ms"}


def _dumps(case: Case, rng: np.random.Generator, tmp_path: Path, *args: str) -> dict[str, tuple[Path, Path]]:
    expected = _sum_case(case, rng, "float", "SPIR-V")
    dumps = {runner: (tmp_path / f"{runner}_profile.json", tmp_path / f"{runner}_perf.json")
             for runner in ("arm", "kernellab")}
    case.run_both(None if "--dry-run" in args else {"total.npy": expected}, args=list(args),
                  no_outputs="--dry-run" in args,
                  arm_args=["--profiling-dump-path", str(dumps["arm"][0]),
                            "--perf-counters-dump-path", str(dumps["arm"][1])],
                  kernellab_args=["--profiling-dump-path", str(dumps["kernellab"][0]),
                                  "--perf-counters-dump-path", str(dumps["kernellab"][1])])
    return dumps


def _shape(value: Any) -> Any:
    """The keys of a document, recursively; a list by the shape of its items."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(v) for v in value[:1]]
    return type(value).__name__


def _both(dumps: dict[str, tuple[Path, Path]], which: int, added: set[str]) -> tuple[dict, dict]:
    """Arm's and kernellab's file, each laid out as nlohmann's dump(4) lays it out; kernellab's
    keys are Arm's, nested alike, plus ``added``."""
    docs = []
    for runner in ("arm", "kernellab"):
        text = dumps[runner][which].read_text()
        assert not text.endswith("\n")
        assert text == json.dumps(json.loads(text), indent=4, sort_keys=True, ensure_ascii=False)
        docs.append(json.loads(text))
    arm, kl = docs
    assert set(kl) - set(arm) == added
    assert _shape({k: kl[k] for k in arm}) == _shape(arm)
    return arm, kl


def test_profiling_dump_has_arms_keys(case: Case, rng: np.random.Generator, tmp_path: Path) -> None:
    arm, kl = _both(_dumps(case, rng, tmp_path, "--repeat", "2"), 0, KERNELLAB_PROFILING_KEYS)
    for doc in (arm, kl):
        assert [t["Iteration"] for t in doc["Timestamps"]] == [1, 2]
        assert {t["Command name"] for t in doc["Timestamps"]} == {"sum"}
        assert {t["Command type"] for t in doc["Timestamps"]} == {"ComputeDispatch"}
        for t in doc["Timestamps"]:
            assert t["Cycle count for command"] == t["Cycle count after command"] - t["Cycle count before command"]
            assert t["Time for command [ms]"] == pytest.approx(t["Cycle count for command"] * t["Timestamp Period"]
                                                               / 1e6)
        assert doc["Total execution time [ms]"] >= sum(t["Time for command [ms]"] for t in doc["Timestamps"]) * 0.99


def test_perf_counter_dump_has_arms_keys(case: Case, rng: np.random.Generator, tmp_path: Path) -> None:
    arm, kl = _both(_dumps(case, rng, tmp_path, "--repeat", "2"), 1, KERNELLAB_PERF_KEYS)
    for doc in (arm, kl):
        assert doc["unit"] == "microseconds"
        categories = {k: v for k, v in doc.items() if isinstance(v, dict) and "counters" in v}
        assert doc["Total Scenario Time"] == sum(c["total time"] for c in categories.values())
        assert doc["Time to Inference"] <= doc["Total Scenario Time"]
        for c in categories.values():
            assert c["total time"] == sum(x["value"] for x in c["counters"])
        assert [x["name"] for x in doc["Scenario Setup"]["counters"]] == \
            ["Load Resource: lhs", "Load Resource: rhs", "Load Resource: total"]


def test_dry_run_dumps(case: Case, rng: np.random.Generator, tmp_path: Path) -> None:
    dumps = _dumps(case, rng, tmp_path, "--dry-run")
    arm, kl = (json.loads(dumps[r][0].read_text()) for r in ("arm", "kernellab"))
    assert arm == {} and set(kl) == KERNELLAB_PROFILING_KEYS
    arm, kl = (json.loads(dumps[r][1].read_text()) for r in ("arm", "kernellab"))
    assert set(kl) - set(arm) == KERNELLAB_PERF_KEYS and "Run Scenario" not in kl
