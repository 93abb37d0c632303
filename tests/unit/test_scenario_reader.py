"""The scenario reader on valid files: typed model, spellings Arm writes, paths, round trip."""
from __future__ import annotations

from pathlib import Path

from helpers.scenarios import vector_add, write
from kernellab import model as m
from kernellab.formats.scenario import load_scenario, scenario_to_json


def test_typed_model_and_paths(tmp_path: Path) -> None:
    path, doc = vector_add(tmp_path)
    doc["resources"][4]["buffer"]["dst"] = "sub/c.npy"
    write(path, doc)
    scenario, warnings = load_scenario(path, output_dir=tmp_path / "out")
    assert warnings == []
    kinds = [type(r) for r in scenario.resources]
    assert kinds == [m.Shader, m.RawData, m.Buffer, m.Buffer, m.Buffer]
    a = scenario.by_uid["a"]
    assert isinstance(a, m.Buffer) and a.src_path == tmp_path / "a.npy" and a.size == 400
    c = scenario.by_uid["c"]
    assert isinstance(c, m.DataResource) and c.dst_path == (tmp_path / "out" / "sub" / "c.npy").resolve()
    (cmd,) = scenario.commands
    assert isinstance(cmd, m.DispatchCompute) and cmd.workgroups == (2, 1, 1) and cmd.implicit_barrier


def test_arm_spellings_and_newer_command_names(tmp_path: Path) -> None:
    path, doc = vector_add(tmp_path)
    doc["resources"].append({"memory_barrier": {"uid": "mb", "src_access": "compute_shader_write",
                                                "dst_access": "memory_read", "src_stage": ["compute"],
                                                "dst_stage": ["all"]}})
    doc["resources"].append({"image": {"uid": "im", "dims": [1, 8, 4, 1], "format": "VK_FORMAT_R8G8B8A8_UNORM",
                                       "shader_access": "readonly"}})
    doc["resources"].append({"image_barrier": {"uid": "ib", "image_resource": "im", "old_layout": "undefined",
                                               "new_layout": "general", "src_access": "memory_write",
                                               "dst_access": "compute_shader_read", "src_stage": ["all"],
                                               "dst_stage": ["compute"]}})
    doc["commands"] += [{"pipeline_barrier": {"memory_barrier_refs": ["mb"], "image_barrier_refs": ["ib"]}},
                        {"frame_boundary": {"resources": ["c"]}}]
    write(path, doc)
    scenario, warnings = load_scenario(path)
    assert warnings == []
    mb = scenario.by_uid["mb"]
    assert isinstance(mb, m.MemoryBarrier)
    assert (mb.src_access, mb.dst_access, mb.src_stage, mb.dst_stage) == (
        "ACCESS_COMPUTE_SHADER_WRITE", "ACCESS_MEMORY_READ", ["COMPUTE"], ["ALL"])
    ib = scenario.by_uid["ib"]
    assert isinstance(ib, m.ImageBarrier) and (ib.old_layout, ib.new_layout) == ("IMAGE_LAYOUT_UNDEFINED",
                                                                                 "IMAGE_LAYOUT_GENERAL")
    assert [type(c) for c in scenario.commands] == [m.DispatchCompute, m.DispatchBarrier, m.MarkBoundary]


def test_written_json_reads_back_the_same(tmp_path: Path) -> None:
    path, _ = vector_add(tmp_path)
    scenario, _ = load_scenario(path)
    again = write(tmp_path / "again.json", scenario_to_json(scenario))
    scenario2, _ = load_scenario(again)
    assert scenario_to_json(scenario2) == scenario_to_json(scenario)
    assert scenario_to_json(scenario)["commands"][0]["dispatch_compute"]["rangeND"] == [2]
