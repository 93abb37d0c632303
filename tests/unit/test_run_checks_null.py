"""Checks before anything runs, on the null backend (no driver): each device limit refuses the
number that passes it with the JSON path and the limit's name, every problem of a scenario comes
at once and nothing is allocated; dispatches are checked against the interface a program declares;
dumps are committed with the outputs; repeats without profiling keep no timings; ``--log-level
info`` says what ran and where the outputs went."""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kernellab import cli
from kernellab.backends.base import KernelInterface, Limits, LocalArgument
from kernellab.backends.null import NullBackend
from kernellab.errors import FileSystemError, InputError
from kernellab.formats.scenario import load_scenario
from kernellab.listing.reflect import Descriptor, Interface
from kernellab.outputs import OutputSet
from kernellab.runtime.executor import Executor, RunOptions, RunReport

LIMITS = Limits(max_bound_descriptor_sets=4, max_per_set_descriptors=64, max_workgroup_count=(100, 10, 10),
                max_workgroup_size=(128, 128, 64), max_workgroup_invocations=256, max_image_dimension_2d=512,
                max_storage_buffer_range=1024, max_uniform_buffer_range=256, max_push_constants_size=16,
                max_allocation_size=4096, memory_heap_size=8192)


def write(tmp_path: Path, resources: list[dict[str, Any]], commands: list[dict[str, Any]],
          shader_type: str = "GLSL", shader: dict[str, Any] | None = None) -> Path:
    (tmp_path / "k.src").write_text("// the null backend compiles nothing\n")
    body = {"uid": "k", "src": "k.src", "type": shader_type, **(shader or {})}
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"resources": [{"shader": body}, *resources], "commands": commands}))
    return path


def buffer(uid: str, size: int = 64, **more: Any) -> dict[str, Any]:
    return {"buffer": {"uid": uid, "size": size, "shader_access": "readwrite", **more}}


def dispatch(bindings: list[tuple[int, int, str]], range_nd: list[int] | None = None, **more: Any) -> dict[str, Any]:
    return {"dispatch_compute": {"shader_ref": "k", "rangeND": range_nd or [1],
                                 "bindings": [{"set": s, "id": i, "resource_ref": r} for s, i, r in bindings],
                                 **more}}


def executor(path: Path, out: Path, **options: Any) -> Executor:
    scenario, _ = load_scenario(path, out)
    return Executor(scenario, RunOptions(backend="null", **options))


def problems(path: Path, out: Path) -> tuple[list[tuple[str, str]], Executor]:
    ex = executor(path, out)
    with pytest.raises(InputError) as info:
        ex.run()
    return [(p.where, p.message) for p in info.value.problems], ex


@pytest.fixture
def limits(monkeypatch: pytest.MonkeyPatch) -> Limits:
    monkeypatch.setattr(NullBackend, "device_limits", LIMITS)
    return LIMITS


def test_each_limit_is_named_with_its_json_path_all_at_once_and_nothing_is_allocated(
        tmp_path: Path, limits: Limits) -> None:
    resources = [buffer("big", 9000), buffer("small", 32),
                 {"image": {"uid": "tall", "dims": [1, 8, 32768, 1], "format": "VK_FORMAT_R8G8B8A8_UNORM",
                            "shader_access": "writeonly"}}]
    commands = [dispatch([(40, 0, "small"), (0, 4294967295, "small"), (0, 0, "big")], [4294967295, 1, 11])]
    found, ex = problems(write(tmp_path, resources, commands, shader={"push_constants_size": 32}), tmp_path / "o")
    where = dict(found)
    assert set(where) == {"/resources/0/shader/push_constants_size", "/resources/1/buffer/size",
                          "/resources/3/image/dims/2", "/resources/3/image/dims", "/resources",
                          "/commands/0/dispatch_compute/rangeND/0", "/commands/0/dispatch_compute/rangeND/2",
                          "/commands/0/dispatch_compute/bindings/0/set", "/commands/0/dispatch_compute/bindings/1/id"}
    assert "(maxBoundDescriptorSets is 4)" in where["/commands/0/dispatch_compute/bindings/0/set"]
    assert "binding id 4294967295" in where["/commands/0/dispatch_compute/bindings/1/id"]
    assert "(maxPerSetDescriptors is 64)" in where["/commands/0/dispatch_compute/bindings/1/id"]
    assert where["/commands/0/dispatch_compute/rangeND/0"] == \
        "4294967295 workgroups along x; the device allows at most 100 (maxComputeWorkGroupCount[0])"
    assert where["/resources/3/image/dims/2"] == \
        "image 'tall' is 32768 texels in height; the device allows at most 512 (maxImageDimension2D)"
    assert "(maxPushConstantsSize)" in where["/resources/0/shader/push_constants_size"]
    assert "the device allows at most 8192 (the size of the memory heap" in where["/resources"]
    big = [m for w, m in found if w == "/resources/1/buffer/size"]
    assert any("(maxStorageBufferRange)" in m for m in big) and any("(maxMemoryAllocationSize)" in m for m in big)
    assert isinstance(ex.backend, NullBackend)
    assert "alloc" not in ex.backend.kinds() and "dispatch" not in ex.backend.kinds()


def test_a_scenario_within_the_limits_runs(tmp_path: Path, limits: Limits) -> None:
    ex = executor(write(tmp_path, [buffer("a", 1024, dst="a.npy")], [dispatch([(3, 63, "a")], [100, 10, 10])]),
                  tmp_path / "o")
    ex.run()
    assert (tmp_path / "o" / "a.npy").is_file()


def test_an_opencl_workgroup_size_past_the_limits(tmp_path: Path, limits: Limits) -> None:
    spec = {"specialization_constants": [{"id": 0, "value": 200}, {"id": 1, "value": 2}]}
    found, _ = problems(write(tmp_path, [buffer("a")], [dispatch([(0, 0, "a")])], "OpenCL-C", spec), tmp_path / "o")
    assert found == [
        ("/resources/0/shader/specialization_constants",
         "shader 'k' runs workgroups of 200x2x1; the device allows at most 128 (maxComputeWorkGroupSize[0])"),
        ("/resources/0/shader/specialization_constants",
         "shader 'k' runs workgroups of 200x2x1 = 400 invocations; the device allows at most 256 "
         "(maxComputeWorkGroupInvocations)")]


def declare(monkeypatch: pytest.MonkeyPatch, *descriptors: Descriptor, push: int = 0,
            spec_ids: frozenset[int] = frozenset(), local: tuple[LocalArgument, ...] = ()) -> None:
    interface = Interface("main", {(d.set, d.binding): d for d in descriptors}, push, spec_ids)
    monkeypatch.setitem(NullBackend.interfaces, "k", KernelInterface(interface, local))


def test_dispatches_are_checked_against_the_declared_interface_before_anything_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    declare(monkeypatch, Descriptor(0, 0, "STORAGE_BUFFER", "data", min_size=128), push=8,
            spec_ids=frozenset({3}), local=(LocalArgument(2, "tile", 3),))
    path = write(tmp_path, [buffer("a", 64)], [dispatch([(0, 0, "a")]), dispatch([(1, 0, "a")])], "OpenCL-C",
                 {"specialization_constants": [{"id": 9, "value": 1}]})
    found, ex = problems(path, tmp_path / "o")
    assert [w for w, _ in found] == ["/resources/0/shader/specialization_constants",
                                     "/resources/1/buffer/size",
                                     "/resources/0/shader/push_constants_size",
                                     "/commands/0/dispatch_compute",
                                     "/commands/1/dispatch_compute/bindings",
                                     "/commands/1/dispatch_compute"]
    assert "__local argument 2 (tile) takes its element count from specialization constant 3" in found[0][1]
    assert isinstance(ex.backend, NullBackend) and "alloc" not in ex.backend.kinds()
    # Vulkan ignores an id the module lacks and Arm runs such a file: a warning, an error with --strict
    assert any("/resources/0/shader/specialization_constants/0/id: warning: shader 'k' has no specialization "
               "constant with id 9 (it has: 3)" in r.getMessage() for r in caplog.records)
    scenario, _ = load_scenario(path, tmp_path / "o")
    with pytest.raises(InputError) as info:
        Executor(scenario, RunOptions(backend="null", strict=True)).run()
    assert "/resources/0/shader/specialization_constants/0/id" in [p.where for p in info.value.problems]


def test_a_uniform_block_takes_its_buffer_as_a_uniform_buffer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    declare(monkeypatch, Descriptor(0, 0, "UNIFORM_BUFFER", "params", min_size=16),
            Descriptor(0, 1, "STORAGE_BUFFER", "data"))
    ex = executor(write(tmp_path, [buffer("u", 16), buffer("d")], [dispatch([(0, 0, "u"), (0, 1, "d")])]),
                  tmp_path / "o")
    ex.run()
    assert isinstance(ex.backend, NullBackend)
    [program] = [e for e in ex.backend.events if e.kind == "program"]
    assert [s.descriptor for s in program.detail["slots"]] == ["uniform-buffer", "storage-buffer"]


def test_dumps_are_committed_with_the_outputs_or_not_at_all(tmp_path: Path) -> None:
    path = write(tmp_path, [buffer("a", dst="a.npy")], [dispatch([(0, 0, "a")])])
    out = tmp_path / "o"

    def stage(report: RunReport, outputs: OutputSet) -> None:
        outputs.text(out / "perf.json", "{}\n")
        (out / "profile.json").mkdir(parents=True)  # the dump's place is taken: it cannot be written
        outputs.text(out / "profile.json", "{}\n")

    with pytest.raises(FileSystemError, match="profile.json"):
        executor(path, out, finish=stage).run()
    assert sorted(p.name for p in out.iterdir()) == ["profile.json"]

    def fine(report: RunReport, outputs: OutputSet) -> None:
        outputs.text(out / "perf.json", json.dumps(sorted(report.phases_ms)))

    ex = executor(path, out, finish=fine)
    ex.run()
    assert sorted(p.name for p in ex.report.outputs) == ["a.npy", "perf.json"]
    assert json.loads((out / "perf.json").read_text()) == ["pipeline_creation", "run", "save", "setup"]


def test_repeats_without_profiling_keep_no_timings(tmp_path: Path) -> None:
    path = write(tmp_path, [buffer("a")], [dispatch([(0, 0, "a")])])
    ex = executor(path, tmp_path / "o", repeat=500)
    ex.run()
    assert len(ex.report.timings) == 500 and list(ex.report.timings)[-1] == []
    assert ex.report.timings._kept == {}
    assert not [c for c in ex.report.counters if c.name.startswith("Submit Commands")]
    counted = executor(path, tmp_path / "o", repeat=3, iteration_counters=True)
    counted.run()
    assert [c.name for c in counted.report.counters if c.name.startswith("Submit Commands")] == \
        [f"Submit Commands. Iteration: {i}" for i in (1, 2, 3)]
    profiled = executor(path, tmp_path / "o", repeat=3, timestamps=True)
    profiled.run()
    assert [len(t) for t in profiled.report.timings] == [1, 1, 1]
    assert profiled.report.timings[-1][0].label == "0:dispatch_compute:k"


def test_info_logging_says_what_ran_and_where_the_outputs_went(tmp_path: Path,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    path = write(tmp_path, [buffer("a", dst="a.npy")], [dispatch([(0, 0, "a")])])
    with caplog.at_level(logging.INFO, logger="kernellab.run"):
        executor(path, tmp_path / "o", repeat=2).run()
    lines = [r.getMessage() for r in caplog.records if r.name == "kernellab.run"]
    phases = [line.split(":")[0] for line in lines]
    assert phases == ["setup", "check", "setup", "pipeline creation", "run", "save", "outputs"]
    assert "on the null backend" in lines[0]
    assert "1 commands x 2 repeats" in lines[4]
    assert lines[-1] == f"outputs: a.npy in {tmp_path / 'o'}"


def test_an_unusable_output_folder_is_refused_before_the_run(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, [buffer("a", dst="a.npy")], [dispatch([(0, 0, "a")])])
    (tmp_path / "file").write_text("")
    assert cli.main(["run", str(path), "--output", str(tmp_path / "file" / "sub")]) == 1
    assert "is not a folder" in capsys.readouterr().err
    assert cli.main(["run", str(path), "--output", "/proc/self/outputs"]) == 1
    assert "cannot write outputs there" in capsys.readouterr().err


def test_buffer_bytes_still_reach_the_output(tmp_path: Path) -> None:
    np.save(tmp_path / "init.npy", np.arange(16, dtype=np.uint32))
    path = write(tmp_path, [buffer("a", src="init.npy", dst="a.npy")], [dispatch([(0, 0, "a")])])
    executor(path, tmp_path / "o").run()
    assert np.load(tmp_path / "o" / "a.npy").view(np.uint32).tolist() == list(range(16))
