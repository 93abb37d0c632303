"""conformance/verify_coverage.py: each verify answer lands in its class, refusals by construct."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from conformance import verify_coverage as vc  # noqa: E402


@pytest.mark.parametrize("message, construct", [
    ("/x/shader0.comp: word 533: OpTypeMatrix is not supported by the SPIR-V checker", "type OpTypeMatrix"),
    ("/x/s.spv: word 5: OpCapability Int64Atomics is not supported by the SPIR-V checker",
     "capability Int64Atomics"),
    ("/x/a.comp: line 3: OpAtomicFMinEXT is not supported by the SPIR-V checker", "instruction OpAtomicFMinEXT"),
    ("/x/a.comp: line 3: GLSL.std.450 Frexp is not supported by the SPIR-V checker",
     "extended instruction GLSL.std.450 Frexp"),
])
def test_construct_named_in_the_refusal(message, construct):
    assert vc.construct_of(message) == construct


def test_classes():
    verified = json.dumps({"verdict": "verified", "findings": []})
    warned = json.dumps({"verdict": "verified", "findings": [{"kind": "uninitialized-read"}]})
    racy = json.dumps({"verdict": "defects", "findings": [{"kind": "data-race"}]})
    assert vc.classify(0, verified, "", 1.0, 2).kind == "verified"
    assert vc.classify(0, warned, "", 1.0, 1).kind == "warnings"
    assert vc.classify(1, racy, "", 1.0, 1).kind == "defects"
    assert vc.classify(None, "", "", 90.0, 1).kind == "timeout"
    assert vc.classify(2, "", "kernellab: error: f.amber: line 3: OpFoo is not supported by the SPIR-V checker",
                       1.0, 1).kind == "refused-checker"
    assert vc.classify(2, "", "kernellab: error: f.amber: line 3, column 1: IMAGE is not supported by kernellab's "
                       "AmberScript reader yet", 1.0, 1).kind == "refused-reader"
    assert vc.classify(1, "", "Traceback (most recent call last):\n  ...\nKeyError: 3", 1.0, 1).kind \
        == "internal-error"


def test_pipelines_counted(tmp_path):
    amber = tmp_path / "t.amber"
    amber.write_text("PIPELINE compute a\nEND\nPIPELINE compute b\nEND\n")
    scenario = tmp_path / "s.json"
    scenario.write_text(json.dumps({"commands": [{"dispatch_compute": {"shader_ref": "x"}},
                                                 {"dispatch_compute": {"shader_ref": "x"}},
                                                 {"dispatch_compute": {"shader_ref": "y"}}]}))
    assert vc.pipelines_in(amber) == 2
    assert vc.pipelines_in(scenario) == 2


def test_a_tool_failure_is_named_by_its_first_line():
    o = vc.classify(2, "", "/x/shader0.spv: SPIR-V is not valid for vulkan1.2: spirv-val failed (exit 1)\n"
                    "error: line 26: ...\nrepro: LD_LIBRARY_PATH=/x spirv-val /tmp/m.spv", 1.0, 1)
    assert o.kind == "refused-reader" and "not valid" in o.detail


def test_reference_tabulated():
    """verify's "reference" (an AmberScript file's EXPECTs on the checker's simulation) is kept
    per file and summed, the files where an EXPECT fails listed with the first failure."""
    good = json.dumps({"verdict": "verified", "findings": [],
                       "reference": {"device": "d", "expects": 32, "hold": 32, "failures": []}})
    bad = json.dumps({"verdict": "verified", "findings": [], "reference": {
        "device": "d", "expects": 10, "hold": 8, "failures": ["det.amber:117: EXPECT bufOut IDX 8 EQ 5140\n  [0]"]}})
    outcomes = {Path("a.amber"): ("cts", vc.classify(0, good, "", 1.0, 1)),
                Path("det.amber"): ("cts", vc.classify(0, bad, "", 1.0, 1)),
                Path("s.json"): ("arm", vc.classify(0, json.dumps({"verdict": "verified", "findings": []}), "", 1, 1))}
    text = vc.reference_summary(outcomes)
    assert "1 of 2 files hold every EXPECT (40 of 42 EXPECTs)" in text
    assert "| det.amber | 8/10 | det.amber:117: EXPECT bufOut IDX 8 EQ 5140 |" in text
    assert "a.amber |" not in text


@pytest.mark.parametrize("message, construct", [
    ("/x/s.json: /commands/0/dispatch_compute: image texture: format VK_FORMAT_B10G11R11_UFLOAT_PACK32 is not "
     "supported by the SPIR-V checker", "image format VK_FORMAT_B10G11R11_UFLOAT_PACK32"),
    ("image texture: a multisampled image (4 samples a texel) is not supported by the SPIR-V checker",
     "image multisampled image"),
    ("/x/shader1.comp: word 672: a sampled image without its sampler (texture2D and a separate sampler) is not "
     "supported: a scenario binds sampled images as combined image samplers", "image sampled image without its sampler"),
])
def test_image_refusals_named(message, construct):
    assert vc.construct_of(message) == construct
    assert vc.classify(2, "", message, 1.0, 1).kind == "refused-checker"


@pytest.mark.parametrize("message, construct", [
    ("/x/s.json: /commands/0/dispatch_compute/bindings/0: buffer buf0: an array of buffers (set 0 binding 0 bound "
     "element by element) is not supported by the SPIR-V checker", "binding an array of buffers"),
    ("/x/s.json: /commands/0/dispatch_compute: buffer buf0 is bound twice with different ranges; overlapping "
     "bindings of one buffer are not supported by the SPIR-V checker", "binding bound twice with different ranges"),
])
def test_binding_refusals_named(message, construct):
    assert vc.construct_of(message) == construct
    assert vc.classify(2, "", message, 1.0, 1).kind == "refused-checker"
