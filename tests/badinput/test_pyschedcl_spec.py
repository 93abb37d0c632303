"""Bad PySchedCL specs, task files and graphs: every problem named with its file and place."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernellab.errors import InputError, UsageError
from kernellab.formats.pyschedcl.graph import load_graph, load_task_file
from kernellab.formats.pyschedcl.kernel import parse_assignment
from kernellab.formats.pyschedcl.spec import load_spec
from test_pyschedcl_helpers import GOOD, problems, spec_file


def load_bad(tmp: Path, **changes) -> dict[str, str]:
    path = spec_file(tmp, **changes)
    with pytest.raises(InputError) as info:
        load_spec(path)
    assert all(p.file == str(path) for p in info.value.problems)
    return problems(info.value)


def resolve_bad(tmp: Path, variables=None, **changes) -> dict[str, str]:
    path = spec_file(tmp, **changes)
    spec = load_spec(path)
    with pytest.raises(InputError) as info:
        spec.resolve({"dataset": 64} if variables is None else variables)
    assert all(p.file == str(path) for p in info.value.problems)
    return problems(info.value)


def test_not_json_and_not_object(tmp_path):
    p = tmp_path / "s.json"
    p.write_text('{"name": "x",\n  oops}')
    with pytest.raises(InputError) as info:
        load_spec(p)
    assert info.value.problems[0].where == "line 2, column 3"
    p.write_text("[1, 2]")
    with pytest.raises(InputError) as info:
        load_spec(p)
    assert "must be a JSON object" in str(info.value)


def test_hostile_expressions_name_pointer_and_column(tmp_path):
    found = load_bad(tmp_path, globalWorkSize="[__import__('os').system('touch pwned')]",
                     outputBuffers=[{"break": 1, "pos": 2, "size": "dataset.__class__", "type": "float"}],
                     varArguments=[{"pos": 3, "type": "int", "value": "10**10**10"}])
    assert "at column 2" in found["/globalWorkSize"] and "call of '__import__' is not allowed" in found["/globalWorkSize"]
    assert "attribute access" in found["/outputBuffers/0/size"]
    assert "refused before computing it" in found["/varArguments/0/value"]
    assert not (tmp_path / "pwned").exists()


def test_every_top_level_field(tmp_path):
    found = load_bad(tmp_path, name="not a name", src="missing.cl", workDimension=4, partition=11,
                     globalWorkSize=None, id=[1])
    assert "C identifier" in found["/name"]
    assert "missing.cl" in found["/src"] and "not found" in found["/src"]
    assert "1..3" in found["/workDimension"]
    assert "0..10" in found["/partition"]
    assert "'globalWorkSize'" in found["/"]
    assert "expected a string" in found["/id"]


def test_missing_required_fields(tmp_path):
    found = load_bad(tmp_path, name=None, src=None, workDimension=None)
    assert found["/"].startswith("missing required field")
    path = spec_file(tmp_path, name=None, src=None, workDimension=None)
    with pytest.raises(InputError) as info:
        load_spec(path)
    messages = " ".join(p.message for p in info.value.problems)
    for f in ("'name'", "'src'", "'workDimension'"):
        assert f in messages


def test_buffer_fields(tmp_path):
    found = load_bad(tmp_path, inputBuffers=[
        {"break": 2, "pos": 0, "size": "dataset", "type": "float"},
        {"break": 1, "pos": 0, "size": "dataset", "type": "float"},
        {"break": 1, "pos": 1, "type": "vec3"},
        {"break": 1, "pos": -1, "size": True, "type": "size_t"},
        "nonsense",
    ], outputBuffers={"pos": 2})
    assert "must be 0" in found["/inputBuffers/0/break"]
    assert "already used by /inputBuffers/0" in found["/inputBuffers/1/pos"]
    assert "unknown type 'vec3'" in found["/inputBuffers/2/type"]
    assert "'size'" in found["/inputBuffers/2"]
    assert ">= 0" in found["/inputBuffers/3/pos"]
    assert "depends on the device" in found["/inputBuffers/3/type"]
    assert "expected a number" in found["/inputBuffers/3/size"]
    assert "expected an object" in found["/inputBuffers/4"]
    assert "expected a list" in found["/outputBuffers"]


def test_argument_positions_must_cover_the_kernel(tmp_path):
    found = load_bad(tmp_path, varArguments=[{"pos": 5, "type": "int", "value": "1"}])
    assert "positions 3, 4 are not described" in found["/"]


def test_var_and_local_arguments(tmp_path):
    found = load_bad(tmp_path, varArguments=[{"pos": 3, "type": "float3", "value": "1"}],
                     localArguments=[{"pos": 4, "type": "float"}, {"type": "float", "size": 4}])
    assert "use the 4-element type" in found["/varArguments/0/type"]
    assert "'size'" in found["/localArguments/0"]
    assert "'pos'" in found["/localArguments/1"]


def test_macros(tmp_path):
    found = load_bad(tmp_path, macros_values={"bad-name": "1", "TS": "tile.size"})
    assert "C identifier" in found["/macros_values/bad-name"]
    assert "attribute access" in found["/macros_values/TS"]


def test_resolve_problems_all_at_once(tmp_path):
    found = resolve_bad(tmp_path, variables={})
    assert set(found) == {"/globalWorkSize", "/inputBuffers/0/size", "/inputBuffers/1/size", "/outputBuffers/0/size"}
    assert all("--set dataset=N" in m for m in found.values())


def test_resolve_shapes(tmp_path):
    found = resolve_bad(tmp_path, globalWorkSize="[dataset, 2]")
    assert "has 2 entries" in found["/globalWorkSize"] and "workDimension is 1" in found["/globalWorkSize"]
    found = resolve_bad(tmp_path, localWorkSize="[24]")
    assert "globalWorkSize[0] = 64 is not a multiple of localWorkSize[0] = 24" in found["/localWorkSize"]
    found = resolve_bad(tmp_path, globalWorkSize="[dataset / 3]")
    assert "whole number" in found["/globalWorkSize"]
    found = resolve_bad(tmp_path, globalWorkSize="[0]")
    assert ">= 1" in found["/globalWorkSize"]
    found = resolve_bad(tmp_path, globalWorkSize=[10 ** 30], inputBuffers=[
        {"break": 0, "pos": 0, "size": 10 ** 30, "type": "float"}, {"break": 0, "pos": 1, "size": 1, "type": "float"}])
    assert "below 2**63" in found["/globalWorkSize"]
    assert "beyond any device" in found["/inputBuffers/0/size"]


def test_resolve_buffer_sizes(tmp_path):
    found = resolve_bad(tmp_path, inputBuffers=[{"break": 1, "pos": 0, "size": "dataset", "type": "float"},
                                                {"break": 0, "pos": 1, "size": "dataset - 64", "type": "float"}])
    assert "at least 1 element" in found["/inputBuffers/1/size"]


def test_split_needs_whole_rows(tmp_path):
    # an NDRange padded past the data is fine unsplit, but cannot be split by rows
    path = spec_file(tmp_path, outputBuffers=[{"break": 1, "pos": 2, "size": "dataset + 1", "type": "float"}])
    kernel = load_spec(path).resolve({"dataset": 64})
    with pytest.raises(InputError) as info:
        kernel.check_splittable()
    found = problems(info.value)
    assert "65 elements (dataset + 1) must be a multiple of globalWorkSize[0] = 64" in found["/outputBuffers/0/size"]
    assert "partition 0 or 10" in found["/outputBuffers/0/size"]


def test_resolve_argument_values(tmp_path):
    found = resolve_bad(tmp_path, varArguments=[{"pos": 3, "type": "char", "value": "dataset * 4"}])
    assert "256 does not fit in char (-128..127)" in found["/varArguments/0/value"]
    found = resolve_bad(tmp_path, varArguments=[{"pos": 3, "type": "int", "value": "dataset / 3"}])
    assert "whole number" in found["/varArguments/0/value"]
    found = resolve_bad(tmp_path, varArguments=[{"pos": 3, "type": "int2", "value": "[1, 2, 3]"}])
    assert "needs 2 values" in found["/varArguments/0/value"]


def test_reserved_variables_and_set_syntax(tmp_path):
    spec = load_spec(spec_file(tmp_path))
    with pytest.raises(UsageError, match="set by kernellab itself"):
        spec.resolve({"dataset": 8, "size_percent": 3})
    with pytest.raises(UsageError, match="0..10"):
        spec.resolve({"dataset": 8}, partition=12)
    for bad, words in (("dataset", "NAME=VALUE"), ("1x=3", "not a variable name"), ("partition=3", "--partition"),
                       ("n=__import__('os')", "not allowed"), ("n=[1]", "must be a number")):
        with pytest.raises(UsageError, match=words):
            parse_assignment(bad)


def test_task_file_problems(tmp_path):
    spec_file(tmp_path)
    t = tmp_path / "set.task"
    t.write_text("spec.json 10 4096\n"
                 "spec.json eleven 4096\n"
                 "spec.json 3 lots\n"
                 "nothere.json 3 5\n"
                 "spec.json 3 5 k=zz\n"
                 "spec.json\n")
    with pytest.raises(InputError) as info:
        load_task_file(t)
    found = problems(info.value)
    assert "integer 0..10" in found["line 2, column 11"]
    assert "must be a number" in found["line 3, column 13"]
    assert "'nothere.json' not found" in found["line 4"]
    assert "unknown variable" in found["line 5, column 15"] or "not allowed" in found["line 5, column 15"]
    assert "expected 'SPEC.json PARTITION DATASET" in found["line 6"]
    assert all(p.file == str(t) for p in info.value.problems)


def test_graph_problems(tmp_path):
    spec_file(tmp_path)
    g = tmp_path / "dag.graph"
    g.write_text('0 spec.json {"dataset": 64, "partition": 10}\n'
                 '1 spec.json {"dataset": 64, "partition": 12}\n'
                 '2 spec.json {"dataset": 64\n'
                 '0 spec.json {}\n'
                 '---\n'
                 '0 2 -> 9 0\n'
                 '0 0 -> 0 1\n'
                 '0 2 -> 0 1 junk\n'
                 '---\n')
    with pytest.raises(InputError) as info:
        load_graph(g)
    found = problems(info.value)
    assert "0..10" in found["line 2"]
    assert "not a JSON object" in found["line 3, column 27"]
    assert "already defined on line 1" in found["line 4"]
    assert "task '9' is not defined" in found["line 6"]
    assert "argument 0 of task 0 (VectorAdd) is not an output" in found["line 7"]
    assert "from a task to itself" in found["line 7"]
    assert "expected an edge" in found["line 8"]


def test_graph_cycle_and_type_mismatch(tmp_path):
    spec_file(tmp_path)
    data = {**GOOD, "name": "VectorAdd", "ioBuffers": [{"break": 1, "pos": 4, "size": "dataset", "type": "int"}]}
    (tmp_path / "io.json").write_text(json.dumps(data))
    g = tmp_path / "dag.graph"
    g.write_text('0 spec.json {"dataset": 64}\n1 spec.json {"dataset": 64}\n2 io.json {"dataset": 64}\n---\n'
                 '0 2 -> 1 0\n1 2 -> 0 0\n0 2 -> 2 4\n---\n')
    with pytest.raises(InputError) as info:
        load_graph(g)
    found = problems(info.value)
    assert "type mismatch" in found["line 7"]
    g.write_text('0 spec.json {"dataset": 64}\n1 spec.json {"dataset": 64}\n---\n0 2 -> 1 0\n1 2 -> 0 0\n')
    with pytest.raises(InputError) as info:
        load_graph(g)
    assert "cycle" in str(info.value)


def test_expanded_json_dag_problems(tmp_path):
    from kernellab.formats.pyschedcl.graph import load_dag_json

    spec_file(tmp_path)
    good = json.loads((tmp_path / "spec.json").read_text())
    bad_from = json.loads(json.dumps(good))
    bad_from["inputBuffers"][0]["from"] = {"kernel": "7", "pos": 2}
    bad_from["inputBuffers"][1]["from"] = "task 0"
    bad_from["id"] = 1
    bad_from["depends"] = 0
    p = tmp_path / "dag.json"
    p.write_text(json.dumps([dict(good, id=0), bad_from, dict(good, id=0), 5, dict(good, id=3, workDimension=9)]))
    with pytest.raises(InputError) as info:
        load_dag_json(p)
    found = problems(info.value)
    assert "task '7' is not defined" in found["/1/inputBuffers/0/from"]
    assert '{"kernel": ID, "pos": P}' in found["/1/inputBuffers/1/from"]
    assert "expected a list of task ids" in found["/1/depends"]
    assert "used twice" in found["/2/id"]
    assert "expected a kernel spec object" in found["/3"]
    assert "1..3" in found["/4/workDimension"]
