"""Reading PySchedCL specs: every field, resolution, splits, scalar conversion, task files, graphs."""
from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from kernellab.backends.opencl_abi import default_local_size
from kernellab.convert.pyschedcl_scenario import push_constant_bytes
from kernellab.formats.pyschedcl.elements import parse_type
from kernellab.formats.pyschedcl.graph import load_graph, load_task_file
from kernellab.formats.pyschedcl.kernel import parse_assignments
from kernellab.formats.pyschedcl.spec import load_spec, looks_like_spec

FULL = {
    "name": "gemm", "src": "gemm.cl", "workDimension": 2, "partition": 7, "id": "k1",
    "globalWorkSize": "[m1, n1]", "localWorkSize": 4,
    "inputBuffers": [{"break": 1, "pos": 0, "size": "m1*p1", "type": "float"},
                     {"break": 0, "pos": 1, "size": "p1*n1", "type": "float"}],
    "outputBuffers": [{"break": 1, "pos": 2, "size": "m1*n1", "type": "float"}],
    "ioBuffers": [{"break": 0, "pos": 3, "size": 16, "type": "uint2"}],
    "varArguments": [{"pos": 4, "type": "float", "value": "1"}, {"pos": 5, "type": "int", "value": "m1"},
                     {"pos": 6, "type": "short", "value": "partition_round(m1, size_percent)"},
                     {"pos": 8, "type": "int2", "value": "[p1, 2]"}],
    "localArguments": [{"pos": 7, "type": "float4", "size": "TS*TS"}],
    "macros_values": {"TS": "tile", "WPT": "2 * 2"},
    "symbolicVariables": {"tile": 4, "partition": 3},
    "depends": [], "task": 0,
}


def write(tmp: Path, data: dict) -> Path:
    (tmp / "gemm.cl").write_text("// kernel")
    p = tmp / "gemm.json"
    p.write_text(json.dumps(data))
    return p


def test_every_field(tmp_path):
    spec = load_spec(write(tmp_path, FULL))
    assert spec.name == "gemm" and spec.id == "k1" and spec.work_dimension == 2 and spec.partition == 7
    assert spec.src == tmp_path / "gemm.cl"
    assert [b.kind for b in spec.buffers] == ["input", "input", "output", "io"]
    assert [b.breakable for b in spec.buffers] == [True, False, True, False]
    assert spec.buffers[3].type.name == "uint2" and spec.buffers[3].type.itemsize == 8
    assert spec.arg_count == 9
    assert spec.variables_used() == {"m1", "n1", "p1", "tile", "TS"}
    assert spec.defaults == {"tile": 4}
    assert looks_like_spec(FULL)
    assert not looks_like_spec({"resources": []})

    k = spec.resolve({"m1": 40, "n1": 8, "p1": 6, "TS": 2})
    assert k.global_size == (40, 8) and k.local_size == (4, 4)
    assert k.partition == 7
    assert [b.count for b in k.buffers] == [240, 48, 320, 16]
    assert k.buffers[0].elements_per_item(40) == 6
    assert k.local_bytes == {7: 4 * 16}
    assert k.build_options == "-DTS=4 -DWPT=4"
    assert k.split_point() == 28  # 7/10 of 10 workgroups of 4 -> 7 groups
    values = k.arg_values(28, 12)
    assert values[4].dtype == np.float32 and float(values[4]) == 1.0
    assert int(values[6]) == 12 and values[6].dtype == np.int16
    assert values[8].tolist() == [6, 2] and values[8].dtype == np.int32
    assert spec.resolve({"m1": 40, "n1": 8, "p1": 6, "TS": 2}, partition=0).split_point() == 0


def test_defaults_and_optional_fields(tmp_path):
    data = {k: v for k, v in FULL.items() if k in ("name", "src", "workDimension", "globalWorkSize", "outputBuffers")}
    data["globalWorkSize"] = [8, "n1"]
    data["outputBuffers"] = [{"pos": 0, "size": "8*n1", "type": "unsigned int"}]
    spec = load_spec(write(tmp_path, data))
    assert spec.partition is None and spec.local_work_size is None and spec.id is None
    assert spec.buffers[0].breakable is False and spec.buffers[0].type.scalar == "unsigned int"
    k = spec.resolve({"n1": 3})
    assert k.partition == 10 and k.global_size == (8, 3) and k.granularity == 1
    assert k.split_point(5) == 4


def test_split_rounding_to_local_size(tmp_path):
    data = dict(FULL, globalWorkSize="[1000, 8]", localWorkSize="[8, 8]")
    k = load_spec(write(tmp_path, data)).resolve({"m1": 1000, "n1": 8, "p1": 1, "TS": 1})
    for p in range(11):
        s = k.split_point(p)
        assert s % 8 == 0 and abs(s - 100 * p) <= 4
    assert k.split_point(10) == 1000 and k.split_point(0) == 0


def test_types():
    assert parse_type("float").dtype == np.float32
    assert parse_type("uchar16").width == 16 and parse_type("uchar16").itemsize == 16
    assert parse_type("double").shape(3) == (3,) and parse_type("double2").shape(3) == (3, 2)
    for bad in ("float3", "size_t", "vec4", 4, "float32"):
        with pytest.raises(ValueError):
            parse_type(bad)


def test_assignments():
    assert parse_assignments(["dataset=4096", "k=2**10", "f=0.5", "h=8/2"]) == {"dataset": 4096, "k": 1024, "f": 0.5, "h": 4}


def test_push_constants_and_default_local_size(tmp_path):
    k = load_spec(write(tmp_path, FULL)).resolve({"m1": 40, "n1": 8, "p1": 6, "TS": 2})
    data = push_constant_bytes(k)
    # float, int, short (+2 pad), int2 at 8-byte alignment
    assert len(data) == 24
    assert np.frombuffer(data[:4], np.float32)[0] == 1.0
    assert np.frombuffer(data[4:8], np.int32)[0] == 40
    assert np.frombuffer(data[8:10], np.int16)[0] == 40
    assert np.frombuffer(data[16:24], np.int32).tolist() == [6, 2]
    assert default_local_size([96, 5]) == (48, 1)
    assert default_local_size([97]) == (1,)


def test_task_file_and_graph(tmp_path):
    write(tmp_path, FULL)
    (tmp_path / "info").mkdir()
    (tmp_path / "info" / "other.json").write_text(json.dumps(dict(FULL, src="../gemm.cl")))
    t = tmp_path / "set.task"
    t.write_text("# comment\n\ngemm.json 3 512 m1=4 n1=4\nother.json 10 1024\n")
    g = load_task_file(t)
    assert list(g.tasks) == ["0", "1"]
    assert g.tasks["0"].partition == 3 and g.tasks["0"].variables == {"dataset": 512, "m1": 4, "n1": 4}
    assert g.tasks["1"].spec.file.endswith("info/other.json") and g.tasks["0"].where == "line 3"
    d = tmp_path / "dag.graph"
    d.write_text('7 gemm.json {"m1":4,"n1":4,"p1":2,"TS":1,"partition":0,"localWorkSize":2}\n'
                 '9 other.json {"m1":4,"n1":4,"p1":2,"TS":1}\n---\n7 2 -> 9 0\n7 3 -> 9 3\n---\n')
    dag = load_graph(d)
    assert list(dag.tasks) == ["7", "9"] and dag.tasks["7"].partition == 0 and dag.tasks["9"].partition is None
    assert dag.tasks["7"].spec.resolve(dag.tasks["7"].variables).local_size == (2, 2)  # the graph override
    assert dag.tasks["9"].spec.resolve(dag.tasks["9"].variables).local_size == (4, 4)  # the spec's own "4"
    assert [(e.src, e.src_pos, e.dst, e.dst_pos) for e in dag.edges] == [("7", 2, "9", 0), ("7", 3, "9", 3)]
    assert dag.predecessors("9") == ["7"] and dag.topological_order() == ["7", "9"]


def test_size_percent_is_exact(tmp_path):
    k = load_spec(write(tmp_path, FULL)).resolve({"m1": 40, "n1": 8, "p1": 6, "TS": 2})
    assert int(k.arg_values(0, 28)[6]) == 28 and int(k.arg_values(28, 12)[6]) == 12
    assert Fraction(100 * 12, 40) == 30


def test_validate_spec(tmp_path):
    from kernellab.errors import InputError
    from kernellab.formats.pyschedcl.spec import validate_spec

    path = write(tmp_path, FULL)
    assert "sizes not checked: set --set TS=N, --set m1=N" in validate_spec(path)
    assert "NDRange [40, 8], workgroup [4, 4]" in validate_spec(path, {"m1": 40, "n1": 8, "p1": 6, "TS": 2})
    with pytest.raises(InputError) as info:
        validate_spec(path, {"m1": 41, "n1": 8, "p1": 6, "TS": 2})
    assert info.value.problems[0].where == "/localWorkSize"


def test_source_in_sibling_kernel_src(tmp_path):
    """PySchedCL's layout: specs in info/, kernels in kernel_src/."""
    (tmp_path / "info").mkdir()
    (tmp_path / "kernel_src").mkdir()
    (tmp_path / "kernel_src" / "gemm.cl").write_text("// kernel")
    p = tmp_path / "info" / "gemm.json"
    p.write_text(json.dumps(FULL))
    assert load_spec(p).src == tmp_path / "kernel_src" / "gemm.cl"
    (tmp_path / "kernel_src" / "gemm.cl").unlink()
    from kernellab.errors import InputError
    with pytest.raises(InputError) as info:
        load_spec(p)
    assert info.value.problems[0].where == "/src" and "kernel_src" in info.value.problems[0].message


def test_json_schema_describes_the_fields():
    import re

    from kernellab.formats.pyschedcl.schema import json_schema

    schema = json_schema()
    assert json.loads(json.dumps(schema)) == schema
    assert set(FULL) - {"depends", "task"} <= set(schema["properties"])
    pattern = re.compile(schema["properties"]["inputBuffers"]["items"]["properties"]["type"]["pattern"])
    for ok in ("float", "uint", "float4", "unsigned int", "uchar16"):
        assert pattern.match(ok), ok
    for bad in ("float3", "size_t", "vec4"):
        assert not pattern.match(bad), bad


def test_a_backend_without_buffer_views_refuses_a_binding_range():
    from kernellab.backends.null import NullBackend
    from kernellab.errors import UsageError

    backend = NullBackend(NullBackend.devices()[0])
    buf = backend.alloc_buffer(64, "b")
    with pytest.raises(UsageError, match="cannot bind a range of buffer 'b'"):
        backend.sub_buffer(buf, 0, 32)
