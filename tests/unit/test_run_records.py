"""The run's plain records (runtime/executor.py): RunOptions, RunReport and PerfCounter are plain
classes with slots (start-up, issue 23) that keep what their dataclasses gave callers."""
from __future__ import annotations

from pathlib import Path

import pytest

from kernellab.runtime.executor import PerfCounter, RunOptions, RunReport


def test_run_options_take_the_same_arguments_and_compare_by_value() -> None:
    opts = RunOptions("0", "null", False, 3, strict=True)
    assert (opts.device, opts.backend, opts.dry_run, opts.repeat, opts.strict) == ("0", "null", False, 3, True)
    assert opts.device_limits and opts.finish is None and opts.cache_dir is None
    assert opts == RunOptions(device="0", backend="null", repeat=3, strict=True)
    assert opts != RunOptions(device="0", backend="null", repeat=3)
    assert repr(RunOptions()).startswith("RunOptions(device=None, backend='vulkan', dry_run=False, repeat=1, ")
    with pytest.raises(TypeError):
        hash(opts)  # mutable, as the dataclass was
    with pytest.raises(AttributeError):
        opts.no_such_option = 1  # type: ignore[attr-defined]


def test_each_report_has_its_own_lists() -> None:
    a, b = RunReport(), RunReport(device="dev", timestamp_period=2.0)
    a.outputs.append(Path("x.npy"))
    a.count("Load Resource: a", "Scenario Setup", 0.0)
    a.phases_ms["setup"] = 1.0
    assert (b.outputs, b.counters, b.phases_ms, b.warnings, b.steps, len(b.timings)) == ([], [], {}, [], [], 0)
    assert (b.device, b.timestamp_period) == ("dev", 2.0)


def test_a_perf_counter_keeps_its_fields() -> None:
    c = PerfCounter("Save Resources", "Save Results", 0.001, inference=False)
    assert (c.name, c.category, c.seconds, c.inference, c.microseconds) == ("Save Resources", "Save Results",
                                                                           0.001, False, 1000)
    assert PerfCounter("n", "c", 1.0).inference
