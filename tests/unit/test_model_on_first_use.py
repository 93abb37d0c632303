"""A run of buffers builds only the classes it reads (issue 23, start-up): the model's images,
tensors, graphs, barriers, draws, optical flows, memory groups and subgroup sizings, the backend
interface's occasional records and errors, and the errors of tool runs are built on first use,
while their names keep working where they are asked for."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from kernellab import errors
from kernellab import model as m
from kernellab.backends import base

ROOT = Path(__file__).resolve().parents[2]

#: the model's classes a scenario of buffers never holds
FEATURE_CLASSES = ("Image", "Tensor", "AliasTarget", "Graph", "GraphConstant", "SpecializationConstantMap",
                   "ShaderSubstitution", "PushConstantMap", "DispatchGraph", "DispatchDataGraph", "BarrierBase",
                   "MemoryBarrier", "BufferBarrier", "ImageBarrier", "TensorBarrier", "SubresourceRange",
                   "DispatchBarrier", "DispatchFragment", "ColorAttachment", "OpticalFlowBindings",
                   "DispatchOpticalFlow", "MemoryGroup", "SubgroupSize")
OCCASIONAL = ("CommandTiming", "LocalArgument", "PipelineCacheMiss", "SubgroupSizing", "UnknownEntryError")
TOOL_RUNS = ("ToolFailure", "ToolTimeoutError", "TimeLimitError")

#: reads the scenario given and prints which of the names above the modules hold, and which of the
#: modules that declare them were imported
_PROBE = """
import json, sys
from kernellab.formats.scenario import load_scenario
import kernellab.runtime.executor, kernellab.runtime.interface
from kernellab import errors, model
from kernellab.backends import base
scenario, _ = load_scenario(sys.argv[1], check_files=False)
names = json.loads(sys.argv[2])
print(json.dumps({"model": [n for n in names["model"] if n in vars(model)],
                  "base": [n for n in names["base"] if n in vars(base)],
                  "errors": [n for n in names["errors"] if n in vars(errors)],
                  "modules": sorted(n for n in sys.modules if n.startswith(("kernellab.model.",
                                    "kernellab.backends.occasional", "kernellab.errors.")))}))
"""


def _probe(tmp_path: Path, doc: dict[str, object]) -> dict[str, list[str]]:
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(doc))
    names = {"model": FEATURE_CLASSES, "base": OCCASIONAL, "errors": TOOL_RUNS}
    proc = subprocess.run([sys.executable, "-c", _PROBE, str(path), json.dumps(names)], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")}, check=True)
    found: dict[str, list[str]] = json.loads(proc.stdout)
    return found


def _buffers(extra_resources: tuple[object, ...] = (), extra_commands: tuple[object, ...] = (),
             bindings: tuple[object, ...] = ()) -> dict[str, object]:
    """A scenario of a shader, push data and a buffer, dispatched and saved at a frame boundary."""
    return {"resources": [{"shader": {"uid": "k", "src": "k.spv", "type": "SPIR-V", "push_constants_size": 4}},
                          {"raw_data": {"uid": "n", "src": "n.npy"}},
                          {"buffer": {"uid": "a", "size": 256, "shader_access": "readwrite", "src": "a.npy",
                                      "dst": "a_out.npy"}}, *extra_resources],
            "commands": [{"dispatch_compute": {"shader_ref": "k", "push_data_ref": "n", "rangeND": [1],
                                               "bindings": [{"set": 0, "id": 0, "resource_ref": "a"},
                                                            *bindings]}},
                         {"mark_boundary": {"resources": ["a"]}}, *extra_commands]}


def test_reading_and_checking_a_scenario_of_buffers_builds_no_feature_class(tmp_path: Path) -> None:
    found = _probe(tmp_path, _buffers())
    assert found == {"model": [], "base": [], "errors": [], "modules": []}


def test_an_image_scenario_builds_the_image_class_only(tmp_path: Path) -> None:
    image = {"image": {"uid": "i", "format": "VK_FORMAT_R8G8B8A8_UNORM", "dims": [1, 4, 4, 1],
                       "shader_access": "writeonly"}}
    found = _probe(tmp_path, _buffers((image,), bindings=({"set": 0, "id": 1, "resource_ref": "i"},)))
    assert found["model"] == ["Image"] and found["modules"] == ["kernellab.model.image"]


def test_a_barrier_builds_the_barrier_classes_only(tmp_path: Path) -> None:
    barrier = {"buffer_barrier": {"uid": "bb", "src_access": "ACCESS_COMPUTE_SHADER_WRITE",
                                  "dst_access": "ACCESS_COMPUTE_SHADER_READ", "buffer_resource": "a", "size": 256}}
    found = _probe(tmp_path, _buffers((barrier,), ({"dispatch_barrier": {"buffer_barrier_refs": ["bb"]}},)))
    assert found["modules"] == ["kernellab.model.barriers"]
    assert {"BufferBarrier", "DispatchBarrier"} <= set(found["model"]) <= {
        "BarrierBase", "MemoryBarrier", "BufferBarrier", "ImageBarrier", "TensorBarrier", "SubresourceRange",
        "DispatchBarrier"}


def test_the_names_resolve_to_the_classes_built_on_first_use() -> None:
    from kernellab.backends import occasional
    from kernellab.errors import tool_runs
    from kernellab.model import barriers, image, optional

    assert m.Image is image.Image and m.declared("Image") is image.Image and m.declared("Buffer") is m.Buffer
    assert m.ImageBarrier is barriers.ImageBarrier and m.SubgroupSize is optional.SubgroupSize
    assert base.PipelineCacheMiss is occasional.PipelineCacheMiss and base.SubgroupSizing is occasional.SubgroupSizing
    assert errors.ToolFailure is tool_runs.ToolFailure and issubclass(errors.ToolTimeoutError, errors.ToolError)
    # the kinds keep their order (messages list them so) and each maps to its class
    assert list(m.RESOURCE_KINDS) == ["image", "tensor", "buffer", "raw_data", "graph", "shader", "memory_barrier",
                                      "buffer_barrier", "image_barrier", "tensor_barrier", "graph_constant"]
    assert all(cls.kind == kind for kind, cls in {**m.RESOURCE_KINDS, **m.COMMAND_KINDS}.items())
    for module in (m, base, errors):
        try:
            module.NoSuchName  # noqa: B018
        except AttributeError as exc:
            assert "NoSuchName" in str(exc)
        else:
            raise AssertionError(f"{module.__name__}.NoSuchName resolved")
