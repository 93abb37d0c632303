"""Around one dispatch: hazards between dispatches, the run limit, debug-info flavours and
the JSON form of findings."""
from __future__ import annotations

import json

import numpy as np
import pytest

from kernellab.errors import InputError
from kernellab.spirvsim import Binding, check_dispatch, dispatch_hazards, glsl_to_spirv
from kernellab.spirvsim.sync import full

WRITER = """#version 450
layout(local_size_x = 16) in;
layout(std430, binding = 0) buffer B { uint b[]; };
void main() { b[gl_GlobalInvocationID.x] = gl_GlobalInvocationID.x; }
"""
READER = """#version 450
layout(local_size_x = 16) in;
layout(std430, binding = 0) readonly buffer B { uint b[]; };
layout(std430, binding = 1) buffer O { uint o[]; };
void main() { o[gl_GlobalInvocationID.x] = b[gl_GlobalInvocationID.x] * 2u; }
"""


def test_hazard_between_unordered_dispatches():
    buf = bytes(128)
    first = check_dispatch(glsl_to_spirv(WRITER), "main", (1, 1, 1), bindings={(0, 0): Binding("buf", buf)})
    second = check_dispatch(glsl_to_spirv(READER), "main", (1, 1, 1),
                            bindings={(0, 0): Binding("buf", first.buffers["buf"]), (0, 1): Binding("out", bytes(64))})
    assert first.findings == [] and second.findings == []
    assert np.frombuffer(second.buffers["out"], np.uint32).tolist() == [2 * i for i in range(16)]
    unordered = dispatch_hazards([(3, first), (5, second)], [])
    assert len(unordered) == 1
    f = unordered[0]
    assert f.kind == "data-race" and f.scope == "inter-dispatch" and f.resource == "buf"
    assert f.count == 64 and f.examples[0]["commands"] == [3, 5]
    assert "command 3 wrote" in f.message and "command 5 read" in f.message
    # each side names its command, the invocation and the instruction (with its GLSL line)
    wrote, read = f.accesses
    assert (wrote["command"], wrote["access"], wrote["instruction"]) == (3, "wrote", "OpStore")
    assert (read["command"], read["access"], read["instruction"]) == (5, "read", "OpLoad")
    assert wrote["invocation"] == read["invocation"] == {"global": [0, 0, 0], "local": [0, 0, 0], "workgroup": [0, 0, 0]}
    assert wrote["location"]["line"] == 4 and read["location"]["line"] == 5
    assert [e["byte_offset"] for e in f.examples] == [0, 4, 8]
    assert [a["invocation"]["global"] for a in f.examples[2]["accesses"]] == [[2, 0, 0], [2, 0, 0]]
    assert f.to_json()["work_items"][1] == [{"global": [1, 0, 0], "local": [1, 0, 0], "workgroup": [0, 0, 0]}] * 2
    json.dumps(f.to_json())
    assert dispatch_hazards([(3, first), (5, second)], [full(4, "a barrier")]) == []


def test_reads_in_both_dispatches_are_no_hazard():
    spv = glsl_to_spirv(READER)
    runs = [check_dispatch(spv, "main", (1, 1, 1), bindings={(0, 0): Binding("buf", bytes(64)),
                                                              (0, 1): Binding(f"out{i}", bytes(64))})
            for i in range(2)]
    assert dispatch_hazards([(0, runs[0]), (1, runs[1])], []) == []


def test_endless_loop_stops_at_the_limit():
    spv = glsl_to_spirv("""#version 450
layout(local_size_x = 4) in;
layout(std430, binding = 0) buffer B { uint b[]; };
void main() { while (b[0] == 0u) { b[1 + gl_LocalInvocationID.x] += 1u; } }
""")
    with pytest.raises(InputError, match="more than 5000 instructions"):
        check_dispatch(spv, "main", (1, 1, 1), bindings={(0, 0): Binding("b", bytes(32))}, max_steps=5000)


@pytest.mark.parametrize("debug", ["-g", "-gVS"])
def test_source_lines_from_either_debug_format(debug):
    spv = glsl_to_spirv("""#version 450
layout(local_size_x = 8) in;
layout(std430, binding = 0) buffer B { uint b[]; };
void main() {
  b[0] = gl_LocalInvocationID.x;
}
""", debug=debug)
    r = check_dispatch(spv, "main", (1, 1, 1), bindings={(0, 0): Binding("b", bytes(32))})
    (f,) = r.findings
    assert f.kind == "data-race" and f.index == 0
    assert {a["location"]["line"] for a in f.accesses} == {5}
    assert {a["source_line"] for a in f.accesses} == {"b[0] = gl_LocalInvocationID.x;"}
    doc = json.loads(json.dumps(f.to_json()))
    assert doc["resource"] == "b" and doc["severity"] == "error" and len(doc["work_items"][0]) == 2


def test_batches_of_workgroups_give_the_same_findings():
    spv = glsl_to_spirv("""#version 450
layout(local_size_x = 16) in;
layout(std430, binding = 0) buffer B { uint b[]; };
void main() { b[gl_LocalInvocationID.x] += gl_WorkGroupID.x; }
""")
    # (how many accesses conflict, and which partner each is reported with, depends on the
    # interleaving, which batching changes; the defects do not)
    seen = []
    for batch in (16, 64, 4096):
        r = check_dispatch(spv, "main", (8, 1, 1), bindings={(0, 0): Binding("b", bytes(64))},
                           batch_invocations=batch)
        seen.append({(f.kind, f.scope, f.resource) for f in r.findings})
        assert any(sorted(a["access"] for a in f.accesses) == ["read", "write"] for f in r.findings)
    assert seen[0] == seen[1] == seen[2]
    assert seen[0] == {("data-race", "inter-workgroup", "b")}


def test_dispatch_past_the_work_limit_is_refused_with_a_clear_message():
    spv = glsl_to_spirv(WRITER)
    with pytest.raises(InputError, match="more than 1000 invocation-instructions"):
        check_dispatch(spv, "main", (64, 1, 1), bindings={(0, 0): Binding("buf", bytes(4096))},
                       batch_invocations=64, max_work=1000)


def test_access_records_past_the_limit_are_refused_before_they_are_made(monkeypatch: pytest.MonkeyPatch) -> None:
    from kernellab.spirvsim import dispatch
    from kernellab.spirvsim.memory import accessor_bytes

    spv = glsl_to_spirv(READER)
    bindings = {(0, 0): Binding("b", bytes(1 << 20)), (0, 1): Binding("o", bytes(64))}
    needed = accessor_bytes(1 << 20, 4, np.int32) + accessor_bytes(64, 4, np.int32)
    monkeypatch.setattr(dispatch, "MAX_SHADOW_BYTES", needed - 1)
    with pytest.raises(InputError, match="MiB to record their accesses, past the checker's limit"):
        check_dispatch(spv, "main", (1, 1, 1), bindings=bindings)
    monkeypatch.setattr(dispatch, "MAX_SHADOW_BYTES", needed)
    check_dispatch(spv, "main", (1, 1, 1), bindings=bindings)
