"""``kernellab listing``: IGA listings as input (the spec's own example), renderers, bad input."""
from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path

import pytest

from kernellab import tools
from kernellab.cli import main
from kernellab.listing import render
from kernellab.listing.iga import load_listings

DATA = Path(__file__).parent / "listing_data"
EXAMPLE = DATA / "iga_example.json"
HAS_CLSPV = tools.find("clspv") is not None or importlib.util.find_spec("pyclspv") is not None
SHADERS = Path(__file__).parent / "shaders"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path):
    """Commands cache artifacts; tests keep theirs out of the user's cache."""
    from kernellab import config

    with config.override(cache_dir=tmp_path / "cache"):
        yield


def example() -> dict:
    return json.loads(EXAMPLE.read_text())


def write(tmp_path: Path, doc: object, name: str = "l.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return p


def test_spec_example_reads_and_summarizes():
    (lst,) = load_listings(EXAMPLE)
    assert render.summary(lst) == {"blocks": 4, "instructions": 5,
                                   "peakLiveTotals": {"r": 200, "acc": 0, "s": 0, "f": 5, "a": 0}}


def test_spec_example_as_text(capsys):
    assert main(["listing", "--input", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "// 4 blocks, 5 instructions, peak live: r 200, acc 0, s 0, f 5, a 0" in out
    assert "L1 L0016:  // preds L1; succs L1,L2" in out
    assert "(~f1.0) add (32|M0) r10.0<1>:f r20.0<1;1,0>:f r30.7<0;1,0>:f {A@1,$1.dst}" in out
    assert "mul (16|M0) (ne)f0.0 r30.0<1>:f r10.4<0;1,0>:f 3.141:f {F@1}" in out
    assert "(W&f0.0) jmpi (1|M0) L0016" in out
    assert "end of thread" in out


def test_spec_example_as_dot(capsys):
    assert main(["listing", "--input", str(EXAMPLE), "--format", "dot"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("digraph cfg {")
    for edge in ("f0_L1 -> f0_L1;", "f0_L1 -> f0_L2;", "f0_L2 -> f0_L3;"):
        assert edge in out
    assert out.count("->") == 3


def test_spec_example_as_html(tmp_path: Path):
    out = tmp_path / "l.html"
    assert main(["listing", "--input", str(EXAMPLE), "--format", "html", "-o", str(out)]) == 0
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert page.count("<polyline") == 5  # one live-total curve per register file
    assert "4 blocks &middot; 5 instructions" in page
    assert page.count("marker-end") == 3  # the three CFG edges


def test_every_problem_is_reported_with_its_json_pointer(tmp_path: Path, capsys):
    doc = example()
    doc["elems"][2]["preds"] = [9]  # no such label
    del doc["elems"][3]["op"]
    doc["elems"][4]["srcs"][1]["value"] = 3.141  # IGA writes immediates as strings
    doc["elems"][1]["liveTotals"]["r"] = -1
    doc["elems"][4]["srcs"][0]["defs"] = [42]
    path = write(tmp_path, doc)
    assert main(["listing", "--input", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: /elems/2/preds/0: no label has id 9" in err
    assert f"{path}: /elems/3: missing required field 'op'" in err
    assert f"{path}: /elems/4/srcs/1/value: 'value' must be a string (IGA writes immediates as strings), not a number" in err
    assert f"{path}: /elems/1/liveTotals/r: a live total must be a non-negative integer, not -1" in err
    assert f"{path}: /elems/4/srcs/0/defs/0: no instruction has id 42" in err
    assert "Traceback" not in err


def test_structural_errors(tmp_path: Path, capsys):
    bad = [{"version": 2, "elems": [{"kind": "X"}, {"kind": "I", "id": 0, "op": "nop", "srcs": [{"kind": "ZZ"}]}]}]
    path = write(tmp_path, bad)
    assert main(["listing", "--input", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: /0/version: 'version' must be a string, not an integer" in err
    assert f"{path}: /0: missing required field 'platform'" in err
    assert f"{path}: /0/elems/0/kind: 'kind' must be \"L\" (label) or \"I\" (instruction), not \"X\"" in err
    assert f"{path}: /0/elems/1/srcs/0/kind: operand 'kind' must be one of RD, RI, IM, LB, DA, AD, not \"ZZ\"" in err


def test_malformed_json_names_line_and_column(tmp_path: Path, capsys):
    path = write(tmp_path, '{"version": "2.0",\n  "elems": [,]}')
    assert main(["listing", "--input", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: line 2, column 13: not valid JSON" in err


def test_duplicate_ids(tmp_path: Path, capsys):
    doc = example()
    doc["elems"][3]["id"] = 1
    doc["elems"][3]["id"] = doc["elems"][1]["id"]
    path = write(tmp_path, doc)
    assert main(["listing", "--input", str(path)]) == 2
    assert "/elems/3/id: instruction id 0 is used by an earlier instruction" in capsys.readouterr().err


def test_listing_a_glsl_shader_as_json_round_trips(tmp_path: Path, capsys):
    out = tmp_path / "calls.json"
    src = SHADERS / "calls_shared.comp"
    assert main(["listing", str(src), "--defs", "--pcs", "-o", str(out), "--target-env", "vulkan1.2"]) == 0
    docs = load_listings(out)  # kernellab's own output passes its own validator
    assert sorted(d["function"] for d in docs) == ["clampw(f1;", "main", "weight(vf4;f1;"]
    assert all(d["platform"] == "spirv1.5-vulkan1.2" for d in docs)
    assert main(["listing", str(src), "--function", "main"]) == 0
    main_only = json.loads(capsys.readouterr().out)
    assert main_only["function"] == "main"
    assert main(["listing", "--input", str(out), "--format", "text", "--function", "main"]) == 0
    assert "OpControlBarrier" in capsys.readouterr().out


def test_listing_a_stage_that_is_not_spirv_is_refused(capsys):
    assert main(["listing", str(SHADERS / "loop_branch.comp"), "--stage", "preprocessed"]) == 2
    assert "not a SPIR-V stage" in capsys.readouterr().err


@pytest.mark.skipif(not HAS_CLSPV, reason="needs clspv: pip install pyclspv (wheels for CPython 3.11 on Linux x86-64)")
def test_listing_an_opencl_kernel_lists_clspv_output(capsys):
    assert main(["listing", str(SHADERS / "reduce.cl"), "--format", "text", "--target-env", "vulkan1.2"]) == 0
    out = capsys.readouterr().out
    assert "// reduce  platform spirv1.0-vulkan1.2" in out
    assert "OpControlBarrier" in out


def test_spirv_file_with_bad_magic(tmp_path: Path, capsys):
    path = tmp_path / "bad.spv"
    path.write_bytes(b"\x01\x02\x03\x04" * 5)
    assert main(["listing", str(path)]) == 2
    assert f"{path}: word 0: not a SPIR-V module" in capsys.readouterr().err


def test_source_and_input_are_exclusive(capsys):
    assert main(["listing"]) == 2
    assert "give either SRC or --input" in capsys.readouterr().err


def test_unknown_function(capsys):
    assert main(["listing", "--input", str(EXAMPLE), "--function", "nope"]) == 2
    assert "--function nope: no such function" in capsys.readouterr().err


def test_dot_of_a_spirv_listing_escapes_record_syntax():
    lst = copy.deepcopy(example())
    lst["platform"] = "spirv1.0-vulkan"
    lst["elems"][4]["srcs"] = [{"kind": "IM", "value": "{1, 2} | <x>", "type": "v2int"}]
    text = render.render_dot([lst])
    assert "\\{1, 2\\} \\| \\<x\\>" in text


def test_listing_a_scenario_kernel_at_the_optimized_stage(capsys):
    scenario = Path(__file__).resolve().parents[2] / "examples" / "vector_add" / "scenario.json"
    assert main(["listing", str(scenario), "--kernel", "add", "--stage", "spirv-opt", "--format", "dot"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("digraph cfg {") and 'label="main";' in out
    assert main(["listing", str(scenario), "--kernel", "add", "--stage", "glsl"]) == 2
    assert "--stage glsl: not a SPIR-V stage (SPIR-V stages here: spirv, spirv-opt)" in capsys.readouterr().err


def test_mangled_listings_are_rejected_or_render():
    """Fields of the spec's example replaced by values of the wrong type (seeded): the validator
    reports them, and whatever it accepts, every renderer handles."""
    import random

    from kernellab.listing.iga import validate_listing

    doc = example()

    def paths(o: object, p: tuple = ()):
        yield p
        items = o.items() if isinstance(o, dict) else enumerate(o) if isinstance(o, list) else ()
        for k, v in items:
            yield from paths(v, (*p, k))

    all_paths = [p for p in paths(doc) if p]
    values = [None, 1, -3, "x", [], {}, [1, "a"], {"a": 1}, True, 2.5]
    rng = random.Random(4)
    rejected = 0
    for _ in range(1500):
        d = copy.deepcopy(doc)
        p = rng.choice(all_paths)
        target = d
        for k in p[:-1]:
            target = target[k]
        target[p[-1]] = copy.deepcopy(rng.choice(values))
        if validate_listing(d, "f.json"):
            rejected += 1
            continue
        render.render_text(d)
        render.render_dot([d])
        render.render_html([d])
    assert 0 < rejected < 1500
