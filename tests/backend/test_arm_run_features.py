"""Arm-compatible run features on lavapipe: --enable-gpu-debug-markers labels each dispatch with
VK_EXT_debug_utils; an image with more mip levels than the device gives is refused in Arm's words;
the perf-counter and profiling dumps follow Arm's schema (runtime/arm_dumps.py)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from helpers.scenarios import kernellab, raw, vector_add, write
from kernellab.backends import vulkan
from kernellab.backends.vulkan_device import VulkanDevice
from kernellab.cli import main


def test_debug_markers_label_each_dispatch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, doc = vector_add(tmp_path)
    doc["resources"].append({"buffer_barrier": {"uid": "bb", "src_access": "compute_shader_write",
                                                "dst_access": "compute_shader_read", "buffer_resource": "c",
                                                "offset": 0, "size": 400}})
    doc["commands"] = [doc["commands"][0], {"dispatch_barrier": {"buffer_barrier_refs": ["bb"],
                                                                  "memory_barrier_refs": [],
                                                                  "image_barrier_refs": []}}, doc["commands"][0]]
    write(path, doc)
    opened: list[str] = []
    closed: list[Any] = []
    real = VulkanDevice._debug_label_functions

    def recording(self: VulkanDevice) -> tuple[Any, Any] | None:
        functions = real(self)
        assert functions is not None, "lavapipe's loader lists VK_EXT_debug_utils"
        begin, end = functions

        def begin_label(cmd: Any, info: Any) -> None:
            opened.append(vulkan.nvk.load().ffi.string(info.pLabelName).decode())
            begin(cmd, info)

        def end_label(cmd: Any) -> None:
            closed.append(cmd)
            end(cmd)
        return begin_label, end_label

    monkeypatch.setattr(VulkanDevice, "_debug_label_functions", recording)
    assert main(["run", str(path), "--enable-gpu-debug-markers"]) == 0
    assert opened == ["0:dispatch_compute:add", "1:dispatch_barrier", "2:dispatch_compute:add"]
    assert len(closed) == 3
    opened.clear()
    assert main(["run", str(path)]) == 0
    assert opened == []


def test_too_many_mip_levels_are_refused_in_arms_words(tmp_path: Path) -> None:
    path = tmp_path / "mips.json"
    write(path, {"resources": [{"image": {"uid": "imageX", "dims": [1, 64, 32, 1], "format": "VK_FORMAT_R32_UINT",
                                          "shader_access": "readonly", "tiling": "OPTIMAL", "mips": 8}}],
                 "commands": []})
    proc = kernellab("run", path)
    assert proc.returncode == 2
    assert "/resources/0/image/mips: The mip level provided is not supported for imageX" in proc.stderr
    doc = json.loads(path.read_text())
    doc["resources"][0]["image"]["mips"] = 7  # 64 -> 1: seven levels
    write(path, doc)
    assert kernellab("run", path, "--dry-run").returncode == 0


def test_dumps_follow_arms_layout(tmp_path: Path) -> None:
    path, _ = vector_add(tmp_path)
    prof, perf = tmp_path / "prof.json", tmp_path / "perf.json"
    assert main(["run", str(path), "--repeat", "3", "--profiling-dump-path", str(prof),
                 "--perf-counters-dump-path", str(perf)]) == 0
    for f in (prof, perf):
        text = f.read_text()
        assert not text.endswith("\n") and text == json.dumps(json.loads(text), indent=4, sort_keys=True)
    p = json.loads(prof.read_text())
    assert [(t["Command type"], t["Command name"], t["Iteration"]) for t in p["Timestamps"]] == \
        [("ComputeDispatch", "add", i) for i in (1, 2, 3)]
    assert p["Total execution time [ms]"] == pytest.approx(sum(t["Time for command [ms]"] for t in p["Timestamps"]))
    assert "Memory Usage" not in p
    c = json.loads(perf.read_text())
    assert [x["name"] for x in c["Run Scenario"]["counters"]] == [f"Submit Commands. Iteration: {i}" for i in (1, 2, 3)]
    assert [x["name"] for x in c["Scenario Setup"]["counters"]] == \
        ["Load Resource: count", "Load Resource: a", "Load Resource: b", "Load Resource: c"]
    assert c["Time to Inference"] == c["Scenario Setup"]["total time"] + c["Pipeline Setup"]["total time"]
    assert c["Total Scenario Time"] == sum(v["total time"] for v in c.values() if isinstance(v, dict)
                                           and "counters" in v)
    np.testing.assert_array_equal(raw(tmp_path / "c.npy").view(np.float32), np.arange(100, dtype=np.float32) + 2)
