"""conformance/clspv_vs_opencl.py: the table of GPUVerify's launches on the Vulkan path against
the OpenCL path counts, compares and re-uses OpenCL-path answers as CONFORMANCE.md says."""
from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from conformance import clspv_vs_opencl as table  # noqa: E402


def _row(test: str, opencl: str, vulkan: str, **vk: object) -> dict:
    both = opencl in ("defects", "verified") and vulkan in ("defects", "verified")
    return {"id": test, "expected": "pass", "opencl": {"verdict": opencl}, "vulkan": {"verdict": vulkan, **vk},
            "agree": (opencl == vulkan) if both else None}


def test_summary_counts_agreement_only_where_both_paths_gave_a_verdict() -> None:
    rows = [_row("a", "defects", "defects"), _row("b", "verified", "defects"), _row("c", "defects", "clspv-failed"),
            _row("d", "error", "verified"), _row("e", "verified", "verified")]
    s = table.summary(rows)
    assert (s["launches"], s["compared"], s["agree"], s["differ"]) == (5, 3, 2, ["b"])
    assert s["matrix"]["defects"]["clspv-failed"] == 1 and s["matrix"]["error"]["verified"] == 1
    rows[1]["accesses_left"] = {"Workgroup:write": 1}
    md = table.markdown(rows, s, "abc1234")
    assert "| verified | 1 | 1 | 0 | 0 | 0 | 0 | 0 | 0 |" in md  # OpenCL verified: Vulkan defects 1, verified 1
    assert "| b | pass | verified | defects |  | differs | accesses left in clspv SPIR-V: {'Workgroup:write': 1} |" in md


def test_opencl_answers_come_from_results_then_the_cache(tmp_path: Path) -> None:
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"tests": [{"id": "a", "verdict": "defects"}, {"id": "b", "verdict": None}]}))
    cache = tmp_path / table.OPENCL_CACHE
    cache.write_text(json.dumps({"id": "a", "verdict": "verified"}) + "\n" + json.dumps({"id": "c", "verdict": "error"}))
    known = table.opencl_results(results, cache)
    assert {k: v["verdict"] for k, v in known.items()} == {"a": "defects", "c": "error"}
    assert table.opencl_results(None, tmp_path / "missing.jsonl") == {}
