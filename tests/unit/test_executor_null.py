"""The executor driven on the null backend: no driver, no compiler, every backend call recorded.

Each test reads what the executor asked of the backend (``NullBackend.events``) or what it wrote,
so the run model is checked on its own: commands recorded into frames, a frame submitted at each
``mark_boundary`` and at the end, barriers where the scenario asks for them, frames captured on the
last repeat only, outputs written only once every command ran.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kernellab import model as m
from kernellab.backends.base import SOURCE, Capabilities, UnsupportedError
from kernellab.backends.null import NullBackend
from kernellab.errors import InputError, KernellabError
from kernellab.formats.scenario import load_scenario
from kernellab.runtime.executor import Executor, RunOptions

SIZE = 16


def _step(buffers: dict[tuple[int, int], np.ndarray], push: bytes, groups: tuple[int, int, int]) -> None:
    """The effect of the "step" shader: binding 0's first uint32 counts the dispatches run."""
    counter = buffers[(0, 0)][:4].view(np.uint32)
    counter[0] += 1


@pytest.fixture(autouse=True)
def step_effect(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(NullBackend.effects, "step", _step)


def dispatch(implicit: bool = True, buffer: str = "counter") -> dict[str, Any]:
    return {"dispatch_compute": {"shader_ref": "step", "rangeND": [1, 1, 1], "implicit_barrier": implicit,
                                 "bindings": [{"set": 0, "id": 0, "resource_ref": buffer}]}}


def mark(resources: list[str], frame_id: int | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"resources": resources}
    if frame_id is not None:
        body["frame_id"] = frame_id
    return {"mark_boundary": body}


def scenario(tmp_path: Path, commands: list[dict[str, Any]], extra: list[dict[str, Any]] = (),
             shader_type: str = "GLSL") -> Path:
    (tmp_path / "step.comp").write_text("#version 450\nvoid main() {}\n")
    doc = {"resources": [{"shader": {"uid": "step", "src": "step.comp", "type": shader_type}},
                         {"buffer": {"uid": "counter", "size": SIZE, "shader_access": "readwrite",
                                     "dst": "counter.npy"}},
                         *extra],
           "commands": commands}
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(doc))
    return path


def run(path: Path, out: Path, **options: Any) -> tuple[Executor, NullBackend]:
    loaded, _ = load_scenario(path, out)
    executor = Executor(loaded, RunOptions(backend="null", **options))
    executor.run()
    assert isinstance(executor.backend, NullBackend)
    return executor, executor.backend


def counter(path: Path) -> int:
    return int(np.load(path).view(np.uint8)[:4].view(np.uint32)[0])


def test_each_boundary_submits_a_frame_and_the_end_submits_the_last(tmp_path: Path) -> None:
    _, backend = run(scenario(tmp_path, [dispatch(), mark([]), dispatch(implicit=False)]), tmp_path / "out")
    work = [k for k in backend.kinds() if k in ("dispatch", "barrier", "submit", "run")]
    assert work == ["dispatch", "barrier", "submit", "run", "dispatch", "submit", "run"]
    submits = [e for e in backend.events if e.kind == "submit"]
    assert [e.detail["commands"] for e in submits] == [2, 1]


def test_barriers_follow_the_scenario(tmp_path: Path) -> None:
    extra = [{"buffer": {"uid": "other", "size": SIZE, "shader_access": "readwrite"}},
             {"buffer_barrier": {"uid": "half", "buffer_resource": "counter", "offset": 4, "size": 8,
                                 "src_access": "compute_shader_write", "dst_access": "compute_shader_read"}},
             {"memory_barrier": {"uid": "all", "src_access": "memory_write", "dst_access": "memory_read"}}]
    commands = [dispatch(implicit=False),
                {"dispatch_barrier": {"image_barrier_refs": [], "memory_barrier_refs": [],
                                      "buffer_barrier_refs": ["half"]}},
                dispatch(implicit=False, buffer="other"),
                {"dispatch_barrier": {"image_barrier_refs": [], "memory_barrier_refs": ["all"],
                                      "buffer_barrier_refs": []}},
                dispatch(implicit=True)]
    _, backend = run(scenario(tmp_path, commands, extra), tmp_path / "out")
    barriers = [e for e in backend.events if e.kind == "barrier"]
    assert [(e.label, e.detail["memory"], e.detail["ranges"]) for e in barriers] == [
        ("1:dispatch_barrier", False, [("counter", 4, 8)]),
        ("3:dispatch_barrier", True, []),
        ("4:implicit_barrier", True, []),
    ]
    dispatched = [e.detail["bindings"] for e in backend.events if e.kind == "dispatch"]
    assert dispatched == [{(0, 0): "counter"}, {(0, 0): "other"}, {(0, 0): "counter"}]


def test_frames_are_captured_on_the_last_repeat_with_their_ids(tmp_path: Path) -> None:
    commands = [dispatch(), mark(["counter"]), dispatch(), dispatch(), mark(["counter"], frame_id=6), dispatch()]
    frames = tmp_path / "frames"
    executor, backend = run(scenario(tmp_path, commands), tmp_path / "out", repeat=2, capture_frames=frames)
    # buffers keep their bytes across repeats: the counter runs 1, 3, 4 then 5, 7, 8
    assert sorted(p.name for p in frames.iterdir()) == ["counter.frame0.npy", "counter.frame6.npy"]
    assert counter(frames / "counter.frame0.npy") == 5
    assert counter(frames / "counter.frame6.npy") == 7
    assert counter(tmp_path / "out" / "counter.npy") == 8
    assert backend.kinds().count("submit") == 2 * 3
    assert backend.kinds().count("read") == 2 + 1  # the two captures of the last repeat, then the output
    assert len(executor.report.timings) == 2


def test_outputs_are_read_after_the_last_frame(tmp_path: Path) -> None:
    _, backend = run(scenario(tmp_path, [dispatch(), dispatch()]), tmp_path / "out")
    kinds = backend.kinds()
    assert kinds.index("read") > len(kinds) - 1 - kinds[::-1].index("submit")
    assert counter(tmp_path / "out" / "counter.npy") == 2
    assert kinds[-1] == "close" and not backend.live


def test_a_failed_run_leaves_no_output_and_no_captured_frame(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail_second(buffers: dict[tuple[int, int], np.ndarray], push: bytes, groups: tuple[int, int, int]) -> None:
        _step(buffers, push, groups)
        if buffers[(0, 0)][:4].view(np.uint32)[0] == 2:
            raise KernellabError("device lost in the second frame")

    monkeypatch.setitem(NullBackend.effects, "step", fail_second)
    frames, out = tmp_path / "frames", tmp_path / "out"
    path = scenario(tmp_path, [dispatch(), mark(["counter"]), dispatch(), mark(["counter"])])
    loaded, _ = load_scenario(path, out)
    executor = Executor(loaded, RunOptions(backend="null", capture_frames=frames))
    with pytest.raises(KernellabError, match="device lost"):
        executor.run()
    assert not (out / "counter.npy").exists()
    assert not frames.exists() or not any(frames.iterdir())
    assert isinstance(executor.backend, NullBackend) and executor.backend.kinds()[-1] == "close"


def test_timings_are_gathered_per_repeat_and_frame(tmp_path: Path) -> None:
    executor, _ = run(scenario(tmp_path, [dispatch(), mark([]), dispatch()]), tmp_path / "out",
                      repeat=3, timestamps=True)
    assert [[t.label for t in rep] for rep in executor.report.timings] == \
        [["0:dispatch_compute:step", "2:dispatch_compute:step"]] * 3
    assert all(t.duration_ns == 1 for rep in executor.report.timings for t in rep)


def test_buffer_data_goes_straight_into_mapped_memory(tmp_path: Path) -> None:
    np.save(tmp_path / "init.npy", np.arange(SIZE // 4, dtype=np.uint32))
    extra = [{"buffer": {"uid": "input", "size": SIZE, "shader_access": "readonly", "src": "init.npy",
                         "dst": "input.npy"}}]
    _, backend = run(scenario(tmp_path, [dispatch()], extra), tmp_path / "out")
    assert [(e.kind, e.label) for e in backend.events if e.label == "input"][:2] == [("alloc", "input"),
                                                                                    ("view", "input")]
    saved = np.load(tmp_path / "out" / "input.npy").view(np.uint8).view(np.uint32)
    assert saved.tolist() == list(range(SIZE // 4))


def test_programs_take_the_form_the_backend_declares(tmp_path: Path) -> None:
    _, backend = run(scenario(tmp_path, [dispatch(), dispatch()]), tmp_path / "out")
    programs = [e for e in backend.events if e.kind == "program"]
    assert len(programs) == 1 and programs[0].detail["language"] == "glsl"


def test_a_language_the_backend_does_not_take_is_refused_by_its_declaration(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(NullBackend, "capabilities", Capabilities(
        title="OpenCL", languages={"opencl-c": SOURCE}, elsewhere="run on Vulkan for GLSL and SPIR-V"))
    with pytest.raises(InputError) as info:
        run(scenario(tmp_path, [dispatch()]), tmp_path / "out")
    assert 'shader "step" is GLSL; the OpenCL backend runs OpenCL-C shaders only (run on Vulkan for GLSL and ' \
           'SPIR-V)' in str(info.value)


def test_tensors_need_a_backend_that_declares_them(tmp_path: Path) -> None:
    extra = [{"tensor": {"uid": "t", "dims": [1, 4], "format": "VK_FORMAT_R32_SFLOAT", "shader_access": "readwrite"}}]
    with pytest.raises(UnsupportedError, match="the null backend does not run tensors: use --backend vulkan"):
        run(scenario(tmp_path, [dispatch()], extra), tmp_path / "out")


def test_optical_flow_needs_a_backend_that_declares_it(tmp_path: Path) -> None:
    from helpers.optical_flow import flow_scenario
    from helpers.scenarios import write

    path = write(tmp_path / "flow.json", flow_scenario(tmp_path))
    with pytest.raises(UnsupportedError, match=r"the null backend does not run dispatch_optical_flow "
                                               r"\(VK_ARM_data_graph_optical_flow\): use --backend vulkan"):
        run(path, tmp_path / "out")


def _offset_dispatch(offset: list[int]) -> dict[str, Any]:
    body = dispatch()
    body["dispatch_compute"]["global_offset"] = offset
    return body


def test_a_global_offset_reaches_the_backend(tmp_path: Path) -> None:
    _, backend = run(scenario(tmp_path, [_offset_dispatch([4, 0, 2])]), tmp_path / "out")
    (event,) = [e for e in backend.events if e.kind == "dispatch"]
    assert event.detail["offset"] == (4, 0, 2) and event.detail["global_size"] is None


def test_a_global_offset_needs_a_backend_that_takes_work_items(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(NullBackend, "capabilities", Capabilities(title="Vulkan", languages={"glsl": SOURCE}))
    with pytest.raises(InputError) as info:
        run(scenario(tmp_path, [_offset_dispatch([4, 0, 0])]), tmp_path / "out")
    text = str(info.value)
    assert "/commands/0/dispatch_compute/global_offset" in text
    assert "the Vulkan backend dispatches whole work-groups from global id 0 and takes no global offset" in text


def test_a_global_offset_has_one_entry_per_dimension(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"global_offset: has 2 dimension\(s\) and the dispatch's range 3"):
        run(scenario(tmp_path, [_offset_dispatch([4, 0])]), tmp_path / "out")


def test_the_contract_refuses_work_items_a_backend_cannot_take(monkeypatch: pytest.MonkeyPatch) -> None:
    from kernellab.backends.base import BackendOptions, ProgramSpec

    monkeypatch.setattr(NullBackend, "capabilities", Capabilities(title="Vulkan", languages={"glsl": SOURCE}))
    backend = NullBackend(NullBackend.devices()[0], BackendOptions())
    program = backend.create_program(ProgramSpec(uid="k", code=b"", language="glsl", entry="main"))
    with pytest.raises(UnsupportedError, match="cannot take a global size in work-items"):
        backend.dispatch(program, [2], {}, global_size=[100])
    with pytest.raises(UnsupportedError, match="cannot take a global offset"):
        backend.dispatch(program, [2], {}, offset=[3])
    backend.dispatch(program, [2], {}, offset=[0])  # a zero offset is no offset


def test_an_in_memory_global_size_reaches_the_backend(tmp_path: Path) -> None:
    # a kernel-instantiation launch whose last work-group is partial: not a field of the file format
    loaded, _ = load_scenario(scenario(tmp_path, [dispatch()]), tmp_path / "out")
    command = loaded.commands[0]
    assert isinstance(command, m.DispatchCompute) and "global_size" not in m.DispatchCompute.model_fields
    command.global_size = (10,)
    executor = Executor(loaded, RunOptions(backend="null"))
    executor.run()
    assert isinstance(executor.backend, NullBackend)
    (event,) = [e for e in executor.backend.events if e.kind == "dispatch"]
    assert event.detail["global_size"] == (10,) and event.detail["offset"] == (0,)


def test_a_run_until_the_process_exits_leaves_its_backend_open(tmp_path: Path) -> None:
    """``kernellab run``'s one-shot process (executor.UntilExit) writes every output and then leaves
    the device to the exit; any other run closes its backend at the end."""
    from kernellab.runtime.executor import UntilExit

    path = scenario(tmp_path, [dispatch()])
    loaded, _ = load_scenario(path, tmp_path / "kept")
    kept = Executor(loaded, RunOptions(backend="null"), lease=UntilExit())
    kept.run()
    assert isinstance(kept.backend, NullBackend) and not kept.backend._closed
    assert "close" not in [e.kind for e in kept.backend.events] and counter(tmp_path / "kept" / "counter.npy") == 1
    _, closed = run(path, tmp_path / "closed")
    assert closed._closed and [e.kind for e in closed.events][-1] == "close"
    kept.backend.close()
