"""Parsing Oclgrind's diagnostics into findings, on a recorded log (no device)."""
from __future__ import annotations

from kernellab.verify import model
from kernellab.verify import oclgrind_log as fnd

LOG = """\
@@kernellab begin {"index": 0, "kernel": "k", "kernel_file": "/w/k.cl", "buffers": [0, 2], "filled": []}
1 warning generated.

Read-write data race at local memory address 0x1000000000004
\tKernel: k
\t
\tFirst entity:  Global(1,0,0) Local(1,0,0) Group(0,0,0)
\t  store i32 %1, i32 addrspace(3)* %arrayidx2, align 4, !dbg !26
\tAt line 4 (column 8) of input.cl:
\t  t[l] = a[get_global_id(0)];
\t
\tSecond entity: Global(0,0,0) Local(0,0,0) Group(0,0,0)
\t  %6 = load i32, i32 addrspace(3)* %arrayidx5, align 4, !dbg !27
\tAt line 6 (column 25) of input.cl:
\t  a[get_global_id(0)] = t[(l+1)%get_local_size(0)];
\t

Read-write data race at local memory address 0x1000000000008
\tKernel: k
\t
\tFirst entity:  Global(0,0,0) Local(0,0,0) Group(0,0,0)
\t  %6 = load i32, i32 addrspace(3)* %arrayidx5, align 4, !dbg !27
\tAt line 6 (column 25) of input.cl:
\t  a[get_global_id(0)] = t[(l+1)%get_local_size(0)];
\t
\tSecond entity: Global(2,0,0) Local(2,0,0) Group(0,0,0)
\t  store i32 %1, i32 addrspace(3)* %arrayidx2, align 4, !dbg !26
\tAt line 4 (column 8) of input.cl:
\t  t[l] = a[get_global_id(0)];
\t

Write-write data race at global memory address 0x2000000000000
\tKernel: k
\t
\tFirst entity:  Global(0,0,0) Local(0,0,0) Group(0,0,0)
\t  store i32 %5, i32 addrspace(1)* %arrayidx, align 4, !dbg !30
\tAt line 2 (column 40) of input.cl:
\t  if (get_local_id(0) == 0) out[0] = get_group_id(0);
\t
\tSecond entity: Global(8,0,0) Local(0,0,0) Group(1,0,0)
\t  store i32 %5, i32 addrspace(1)* %arrayidx, align 4, !dbg !30
\tAt line 2 (column 40) of input.cl:
\t  if (get_local_id(0) == 0) out[0] = get_group_id(0);
\t

Work-group divergence detected (barrier)
\tKernel:     k
\tWork-group: (1,0,0)
\tOnly 2 out of 8 work-items executed barrier
\t  call void @_Z7barrierj(i32 1), !dbg !31
\tAt line 4 (column 14) of input.cl:
\t  if (l < 2) barrier(CLK_LOCAL_MEM_FENCE);

Invalid read of size 4 at global memory address 0x2000000000040
\tKernel: k
\tEntity: Global(15,0,0) Local(7,0,0) Group(1,0,0)
\t  %3 = load i32, i32 addrspace(1)* %arrayidx, align 4, !dbg !25
\tAt line 3 (column 11) of input.cl:
\t  out[i] = in[i + 1];

Oclgrind - OpenCL runtime error detected
\tFunction: clGetDeviceInfo
\tError:    CL_INVALID_VALUE
\tFor argument 'param_name'

Oclgrind - OpenCL runtime error detected
\tFunction: clEnqueueNDRangeKernel
\tError:    CL_INVALID_WORK_GROUP_SIZE
\tlocal_work_size[0]=3 does not divide global_work_size[0]=16
@@kernellab end {"index": 0}
"""


def findings() -> list[model.Finding]:
    messages, events = fnd.parse_stream(LOG)
    assert [e["event"] for e in events] == ["begin", "end"]
    return fnd.group([f for f in (fnd.classify(m) for m in messages) if f is not None])


def test_kinds_and_grouping() -> None:
    got = findings()
    assert [(f.kind, f.count) for f in got] == [
        ("data-race", 1), ("data-race", 2), ("barrier-divergence", 1), ("out-of-bounds", 1), ("api-error", 1)]


def test_race_pair_in_either_order_is_one_defect() -> None:
    local = [f for f in findings() if f.kind == "data-race" and f.address_space == "local"]
    assert len(local) == 1 and local[0].count == 2
    assert local[0].race == {"type": "read-write", "scope": "intra-group"}
    # the example kept is the lowest work-item pair, whatever order Oclgrind printed them in
    assert local[0].examples[0]["work_items"][0]["global"] == [0, 0, 0]


def test_inter_group_write_write() -> None:
    glob = next(f for f in findings() if f.kind == "data-race" and f.address_space == "global")
    assert glob.race == {"type": "write-write", "scope": "inter-group"}
    assert glob.detail == "argument 2, byte offset 0"
    j = glob.to_json()
    assert j["location"] == {"file": "/w/k.cl", "line": 2, "column": 40}
    assert j["source_line"] == "if (get_local_id(0) == 0) out[0] = get_group_id(0);"
    assert [a["work_item"]["group"] for a in j["accesses"]] == [[0, 0, 0], [1, 0, 0]]


def test_barrier_divergence_location_and_detail() -> None:
    div = next(f for f in findings() if f.kind == "barrier-divergence")
    assert div.location == {"file": "/w/k.cl", "line": 4, "column": 14}
    assert div.detail == "Only 2 out of 8 work-items executed barrier"
    assert div.accesses[0].work_item == {"group": [1, 0, 0]}


def test_out_of_bounds_maps_buffer_to_argument() -> None:
    oob = next(f for f in findings() if f.kind == "out-of-bounds")
    assert oob.detail == "argument 2, byte offset 64"
    assert oob.accesses[0].work_item == {"global": [15, 0, 0], "local": [7, 0, 0], "group": [1, 0, 0]}


def test_api_error_keeps_launch_calls_only() -> None:
    api = [f for f in findings() if f.kind == "api-error"]
    assert len(api) == 1
    assert api[0].message.startswith("clEnqueueNDRangeKernel failed with CL_INVALID_WORK_GROUP_SIZE")
    assert api[0].instantiation == 0


def test_every_kind_documented() -> None:
    for kind in ("data-race", "barrier-divergence", "out-of-bounds", "uninitialized-read", "api-error"):
        assert kind in model.KINDS
