"""Guard bands on the null backend: a buffer a dispatch may write is an exact-size view of a longer
allocation whose tail is filled with a known byte; a run whose dispatch changed it ends with a
warning (not an error), and nothing else ever warns."""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kernellab.backends.base import Buffer
from kernellab.backends.null import NullBackend, NullBuffer
from kernellab.formats.scenario import load_scenario
from kernellab.runtime.executor import Executor, RunOptions
from kernellab.runtime.guard_bands import GUARD_BYTE, GUARD_SIZE

SIZE = 64


def _sub_buffer(self: NullBackend, buf: Buffer, offset: int, size: int) -> NullBuffer:
    assert isinstance(buf, NullBuffer)
    return NullBuffer(size, buf.uid, self._new_handle("view"), buf.array[offset:offset + size])


def _write_past(buffers: dict[tuple[int, int], np.ndarray], push: bytes, groups: tuple[int, int, int]) -> None:
    """Every element in range, then ``push[0]`` bytes past the end (through the view's allocation)."""
    view = buffers[(0, 0)]
    view[:] = 7
    whole = view.base if view.base is not None else view
    whole[view.size:view.size + push[0]] = 1


@pytest.fixture(autouse=True)
def unchecked_device(monkeypatch: pytest.MonkeyPatch) -> None:
    """The null backend as a device whose kernels index plain pointers (PoCL)."""
    monkeypatch.setattr(NullBackend, "writes_past_end_reach_memory", property(lambda self: True))
    monkeypatch.setattr(NullBackend, "sub_buffer", _sub_buffer)
    monkeypatch.setitem(NullBackend.effects, "k", _write_past)


def scenario(tmp_path: Path, past: int, binding: dict[str, Any] | None = None) -> Path:
    (tmp_path / "k.comp").write_text("#version 450\nvoid main() {}\n")
    np.save(tmp_path / "push.npy", np.array([past, 0, 0, 0], np.uint8))
    doc = {"resources": [{"shader": {"uid": "k", "src": "k.comp", "type": "GLSL", "push_constants_size": 4}},
                         {"buffer": {"uid": "c", "size": SIZE, "shader_access": "readwrite", "dst": "c.npy"}},
                         {"raw_data": {"uid": "push", "src": "push.npy"}}],
           "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [1, 1, 1], "push_data_ref": "push",
                                              "bindings": [{"set": 0, "id": 0, "resource_ref": "c",
                                                            **(binding or {})}]}}]}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc))
    return path


def run(path: Path, **options: Any) -> Executor:
    scenario, _ = load_scenario(path, path.parent)
    executor = Executor(scenario, RunOptions(backend="null", guard_bands=True, **options))
    executor.run()
    return executor


def test_a_write_past_the_end_is_a_warning_naming_the_buffer(tmp_path: Path) -> None:
    executor = run(scenario(tmp_path, past=12))
    assert executor.report.warnings == [
        f"a dispatch wrote past the end of buffer 'c' (12 of {GUARD_SIZE} guard bytes changed after it): "
        f"`kernellab verify {tmp_path / 's.json'}` names the access"]
    # the output is the buffer's bytes, not the band's
    assert np.load(tmp_path / "c.npy").tolist() == [7] * SIZE


def test_writes_in_range_warn_nothing(tmp_path: Path) -> None:
    executor = run(scenario(tmp_path, past=0))
    assert executor.report.warnings == []
    whole, band = executor.guards["c"]
    assert (whole.size, band) == (SIZE + GUARD_SIZE, GUARD_SIZE)
    assert bytes(whole.array[SIZE:]) == bytes([GUARD_BYTE]) * GUARD_SIZE  # type: ignore[attr-defined]


@pytest.mark.parametrize("options", [{"robust_buffer_access": True}, {"guard_bands": False}])
def test_no_band_under_robust_access_or_when_not_asked(tmp_path: Path, options: dict[str, Any]) -> None:
    path = scenario(tmp_path, past=0)
    scenario_, _ = load_scenario(path, tmp_path)
    executor = Executor(scenario_, RunOptions(backend="null", **{"guard_bands": True, **options}))
    executor.run()
    assert executor.guards == {} and executor.report.warnings == []


def test_a_buffer_a_binding_names_a_range_of_gets_no_band(tmp_path: Path) -> None:
    path = scenario(tmp_path, past=0)
    scenario_, _ = load_scenario(path, tmp_path)
    scenario_.commands[0].bindings[0].buffer_range = (0, 32)  # type: ignore[attr-defined]
    executor = Executor(scenario_, RunOptions(backend="null", guard_bands=True))
    executor.run()
    assert executor.guards == {} and executor.report.warnings == []


def test_a_session_logs_the_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from kernellab.session import Session

    path = scenario(tmp_path, past=3)
    with Session(backend="null") as s, caplog.at_level(logging.WARNING, logger="kernellab.session"):
        s.run(path)
        s.run(path)  # the pooled allocation is lent again: its band is filled again
    warned = [r.getMessage() for r in caplog.records if "wrote past the end of buffer 'c'" in r.getMessage()]
    assert len(warned) == 2 and all("(3 of" in w for w in warned)
