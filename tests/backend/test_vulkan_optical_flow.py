"""``dispatch_optical_flow`` run by ``kernellab run`` on lavapipe through Arm's ML emulation layer
(VK_ARM_data_graph_optical_flow).

The images are our own (helpers/optical_flow.py): a smooth pattern, and the same pattern moved
by a known number of pixels. The flow vectors of the cells away from the border must be that
shift, within half a pixel (the estimator interpolates; measured: within 0.3 px); the same image
twice gives zero flow.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from helpers.optical_flow import flow_scenario, pattern
from helpers.scenarios import write
from kernellab.cli import main

pytest.importorskip("emulation_layer", reason="pip ai-ml-emulation-layer-for-vulkan (kernellab[ml]) adds "
                                              "VK_ARM_data_graph_optical_flow to lavapipe")


def run(*args: Any) -> int:
    return main([str(a) for a in args])


def image_npy(path: Path, channels: int) -> np.ndarray:
    """An image output as Arm's runner writes .npy: [1, H, W, C]."""
    arr = np.load(path)
    assert arr.ndim == 4 and arr.shape[0] == 1 and arr.shape[3] == channels, arr.shape
    return arr[0]


def inner_median(flow: np.ndarray, border: int = 2) -> np.ndarray:
    return np.median(flow[border:-border, border:-border].reshape(-1, 2).astype(np.float32), axis=0)


@pytest.mark.parametrize("shift", [(3, 0), (-2, 3)])
def test_flow_of_a_moved_pattern_is_the_shift(tmp_path: Path, shift: tuple[int, int]) -> None:
    assert run("run", write(tmp_path / "s.json", flow_scenario(tmp_path, shift))) == 0
    flow = image_npy(tmp_path / "flow.npy", 2)
    assert flow.shape == (16, 16, 2) and flow.dtype == np.float16
    np.testing.assert_allclose(inner_median(flow), shift, atol=0.5)
    cost = image_npy(tmp_path / "cost.npy", 1)
    assert cost.shape == (16, 16, 1) and cost.dtype == np.uint16


def test_same_image_twice_has_no_flow(tmp_path: Path) -> None:
    assert run("run", write(tmp_path / "s.json", flow_scenario(tmp_path))) == 0
    assert not image_npy(tmp_path / "flow.npy", 2).any()


def test_a_mip_level_is_bound_with_lod(tmp_path: Path) -> None:
    """Search and template of 128x128 with 2 levels, bound at lod 1 (64x64): a shift of 4 pixels
    at level 0 is one of 2 at the level the flow sees."""
    doc = flow_scenario(tmp_path)
    np.save(tmp_path / "search.npy", pattern(128, 128, scale=2))
    np.save(tmp_path / "template.npy", pattern(128, 128, (4, 0), scale=2))
    for i in (0, 1):
        doc["resources"][i]["image"].update(dims=[1, 128, 128, 1], mips=2)
    bindings = doc["commands"][0]["dispatch_optical_flow"]["bindings"]
    bindings["search_image"]["lod"] = bindings["template_image"]["lod"] = 1
    assert run("run", write(tmp_path / "s.json", doc)) == 0
    np.testing.assert_allclose(inner_median(image_npy(tmp_path / "flow.npy", 2)), (2, 0), atol=0.5)


def test_grid_2x2_without_hint_and_cost(tmp_path: Path) -> None:
    """Hint and cost are optional. (Grid 8x8 is not checked for values: Arm's emulation layer 0.11
    finds 3.3 and 4.4 pixels for shifts of 2 and 3, measured on this pattern.)"""
    doc = flow_scenario(tmp_path, (-2, 3), grid=2)
    bindings = doc["commands"][0]["dispatch_optical_flow"]["bindings"]
    del bindings["hint_motion_vectors"], bindings["output_cost"]
    doc["resources"] = [r for r in doc["resources"] if r["image"]["uid"] not in ("hint", "cost")]
    assert run("run", write(tmp_path / "s.json", doc)) == 0
    flow = image_npy(tmp_path / "flow.npy", 2)
    assert flow.shape == (32, 32, 2)
    np.testing.assert_allclose(inner_median(flow), (-2, 3), atol=0.25)


def test_pipeline_cache_miss_fails_as_arm(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """A cache stored by a compute scenario of the same name holds no optical-flow pipeline: with
    --fail-on-pipeline-cache-miss the optical flow is a miss, named in Arm's words."""
    from helpers.scenarios import vector_add

    cache = tmp_path / "cache"
    cache.mkdir()
    compute_dir = tmp_path / "compute"
    compute_dir.mkdir()
    path, _ = vector_add(compute_dir)
    (compute_dir / "flow.json").write_text(path.read_text())
    assert run("run", compute_dir / "flow.json", "--pipeline-caching", "--cache-path", cache, "--dry-run") == 0
    capfd.readouterr()
    code = run("run", write(tmp_path / "flow.json", flow_scenario(tmp_path)), "--pipeline-caching",
               "--fail-on-pipeline-cache-miss", "--cache-path", cache, "--dry-run")
    out = capfd.readouterr()
    assert code != 0
    assert "INFO: Pipeline Cache loaded and validated." in out.out
    assert "ERROR: Pipeline cache miss for pipeline: dispatch_optical_flow" in out.out + out.err


def test_opencl_backend_refuses_optical_flow(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    assert run("run", write(tmp_path / "s.json", flow_scenario(tmp_path)), "--backend", "opencl") == 1
    err = capfd.readouterr().err
    assert "the opencl backend does not run dispatch_optical_flow (VK_ARM_data_graph_optical_flow): use " \
           "--backend vulkan" in err
    assert "Traceback" not in err


def test_declarations_are_apart_and_share_the_graph_types() -> None:
    """The optical-flow types are generated on their own (an FFI including the graph one): the
    tensor and graph declarations every ML run parses do not grow, and structs of the two FFIs
    link to each other."""
    from kernellab.backends import vulkan_arm as va
    from kernellab.backends import vulkan_optical_flow_decls as ofd

    cdef, constants, stypes = va.generate_cdef((ofd.EXTENSION,), included=va.DECLARED_EXTENSIONS)
    assert "struct VkDataGraphPipelineOpticalFlowCreateInfoARM {" in cdef
    assert "struct VkDataGraphPipelineCreateInfoARM {" not in cdef  # the included FFI's
    assert "OpticalFlow" not in va.generate_cdef()[0]
    assert constants["VK_DATA_GRAPH_OPTICAL_FLOW_GRID_SIZE_4X4_BIT_ARM"] == 4
    assert stypes["VkDataGraphPipelineSingleNodeCreateInfoARM"] == \
        "VK_STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_SINGLE_NODE_CREATE_INFO_ARM"
    node = ofd.new("VkDataGraphPipelineSingleNodeCreateInfoARM", connectionCount=3)
    create = va.new("VkDataGraphPipelineCreateInfoARM", pNext=node)
    assert va.address(create.pNext) == va.address(node)
    assert ofd.const("VK_PIPELINE_BIND_POINT_DATA_GRAPH_ARM") == va.const("VK_PIPELINE_BIND_POINT_DATA_GRAPH_ARM")


def test_a_run_without_optical_flow_loads_none_of_it(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    from helpers.scenarios import vector_add

    path, _ = vector_add(tmp_path)
    code = ("import sys, json\nfrom kernellab.cli import main\nrc = main(sys.argv[1:])\n"
            "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\nsys.exit(rc)")
    proc = subprocess.run([sys.executable, "-c", code, "run", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    modules = json.loads(proc.stderr.strip().splitlines()[-1])
    assert "kernellab.backends.vulkan" in modules
    assert not {"kernellab.backends.vulkan_optical_flow_decls", "kernellab.runtime.optical_flow",
                "kernellab.formats.scenario_optical_flow", "cffi"} & set(modules)
