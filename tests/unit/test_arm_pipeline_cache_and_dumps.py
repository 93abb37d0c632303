"""Arm's pipeline-cache file (compile/cache.py) and Arm's dump schemas (runtime/arm_dumps.py),
without a device: header checks with Arm's words, and the documents built from a run report."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernellab.backends.base import CommandTiming
from kernellab.compile.pipeline_cache import PIPELINE_CACHE_HEADER, PipelineCacheFile
from kernellab.errors import KernellabError
from kernellab.runtime.arm_dumps import dump_text, perf_counters_document, profiling_document
from kernellab.runtime.executor import RunReport


def _said(cache: PipelineCacheFile, clear: bool = False) -> tuple[bytes | None, list[str]]:
    lines: list[str] = []
    data = cache.load(0x10005, 7, clear, lambda level, message: lines.append(f"{level}: {message}"))
    return data, lines


def test_cache_file_is_named_after_the_scenario(tmp_path: Path) -> None:
    assert PipelineCacheFile.for_scenario(tmp_path, Path("/x/conv.v2.json")).path == tmp_path / "conv.v2.cache"


def test_missing_file_is_no_cache_and_no_message(tmp_path: Path) -> None:
    assert _said(PipelineCacheFile(tmp_path / "s.cache")) == (None, [])


@pytest.mark.parametrize("blob, words", [
    (b"", ["WARNING: Pipeline Cache skipped: size invalid"]),
    (bytes(1024), ["WARNING: Pipeline validation: Incorrect pipeline cache header size",
                   "WARNING: Pipeline Cache skipped: failed to validate."]),
    (PIPELINE_CACHE_HEADER.pack(32, 2, 0x10005, 7, bytes(16)),
     ["WARNING: Pipeline validation: Incorrect pipeline header version (2). Expected (1)",
      "WARNING: Pipeline Cache skipped: failed to validate."]),
    (PIPELINE_CACHE_HEADER.pack(32, 1, 0x10de, 7, bytes(16)),
     ["WARNING: Pipeline validation: Incorrect device used with cache. (VendorID, DeviceID) = (4318, 7). "
      "Expected (65541, 7)", "WARNING: Pipeline Cache skipped: failed to validate."]),
    (PIPELINE_CACHE_HEADER.pack(32, 1, 0x10005, 7, bytes(16)) + b"payload",
     ["INFO: Pipeline Cache loaded and validated."]),
])
def test_header_checks(tmp_path: Path, blob: bytes, words: list[str]) -> None:
    cache = PipelineCacheFile(tmp_path / "s.cache")
    cache.path.write_bytes(blob)
    data, lines = _said(cache)
    assert lines == words
    assert data == (blob if words[0].startswith("INFO") else None)


def test_clear_deletes_the_file_and_save_writes_it(tmp_path: Path) -> None:
    cache = PipelineCacheFile(tmp_path / "s.cache")
    cache.path.write_bytes(PIPELINE_CACHE_HEADER.pack(32, 1, 0x10005, 7, bytes(16)))
    assert _said(cache, clear=True) == (None, ["INFO: Pipeline Cache cleared"])
    assert not cache.path.exists()
    lines: list[str] = []
    cache.save(b"blob", lambda level, message: lines.append(message))
    assert cache.path.read_bytes() == b"blob" and lines == ["Pipeline Cache stored"]
    (tmp_path / "file").write_text("")
    with pytest.raises(KernellabError, match="Error storing pipeline cache into: "):
        PipelineCacheFile(tmp_path / "file" / "s.cache").save(b"", lambda *_: None)


def _report(repeats: int) -> RunReport:
    report = RunReport(device="dev", timestamp_period=2.0)
    for r in range(repeats):
        base = 1000.0 * r
        report.timings.append([CommandTiming("0:dispatch_compute:k", base + 20, base + 60),
                               CommandTiming("1:dispatch_barrier", base + 60, base + 62),
                               CommandTiming("2:dispatch_graph:g/seg", base + 80, base + 200)])
    report.session_memory = [("g/seg", 4096)]
    return report


def test_profiling_document() -> None:
    doc = profiling_document(_report(2), dry_run=False)
    assert [(t["Command type"], t["Command name"], t["Iteration"]) for t in doc["Timestamps"]] == [
        ("ComputeDispatch", "k", 1), ("DataGraphDispatch", "g/seg", 1),
        ("ComputeDispatch", "k", 2), ("DataGraphDispatch", "g/seg", 2)]
    first = doc["Timestamps"][0]
    assert (first["Cycle count before command"], first["Cycle count after command"],
            first["Cycle count for command"], first["Timestamp Period"]) == (10, 30, 20, 2.0)
    assert first["Time for command [ms]"] == pytest.approx(40 / 1e6)
    assert doc["Total execution time [ms]"] == pytest.approx(2 * 180 / 1e6)
    assert doc["Memory Usage"] == [{"Command type": "DataGraphDispatch", "Command name": "g/seg",
                                    "Session memory [bytes]": 4096, "Iteration": i} for i in (0, 1)]
    dry = profiling_document(_report(0), dry_run=True, kernellab_fields=False)
    assert dry == {"Memory Usage": [{"Command type": "DataGraphDispatch", "Command name": "g/seg",
                                     "Session memory [bytes]": 4096, "Iteration": 0}]}
    text = dump_text(dry)
    assert text.startswith('{\n    "Memory Usage": [\n        {\n            "Command name"') and text.endswith("}")


def test_perf_counters_document() -> None:
    report = RunReport()
    report.count("Load Resource: a", "Scenario Setup", 0.0)
    report.counters[-1] = type(report.counters[-1])("Load Resource: a", "Scenario Setup", 0.000250)
    report.counters.append(type(report.counters[-1])("Save Resources", "Save Results", 0.001, inference=False))
    doc = perf_counters_document(report, kernellab_fields=False)
    assert doc == {"Scenario Setup": {"total time": 250, "unit": "microseconds",
                                      "counters": [{"name": "Load Resource: a", "value": 250, "unit": "microseconds"}]},
                   "Save Results": {"total time": 1000, "unit": "microseconds",
                                    "counters": [{"name": "Save Resources", "value": 1000, "unit": "microseconds"}]},
                   "Time to Inference": 250, "Total Scenario Time": 1250, "unit": "microseconds"}
    assert list(json.loads(dump_text(doc))) == sorted(doc)
