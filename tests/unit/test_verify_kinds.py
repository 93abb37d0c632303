"""Issue 12 without a device: which kinds count as defects, the async-copy rewrite keeps the
user's lines, and the fast classification equals the plain one."""
from __future__ import annotations

import pytest

from kernellab.verify import asynccopy, model
from kernellab.verify import oclgrind_log as fnd


def test_gpuverify_kinds_are_always_defects() -> None:
    assert model.checked_kinds([]) == frozenset({"data-race", "barrier-divergence", "out-of-bounds"})
    assert "uninitialized-read" in model.checked_kinds(["uninitialized"])
    assert model.checked_kinds(["all"]) == frozenset(model.KINDS)
    assert {"misaligned-access", "unwaited-event"} <= model.checked_kinds(["misaligned", " unwaited-event"])
    with pytest.raises(ValueError, match="unknown check 'race'"):
        model.checked_kinds(["race"])


def test_every_oclgrind_diagnostic_has_a_kind() -> None:
    headers = {
        "Read-write data race at local memory address 0x1": "data-race",
        "Work-group divergence detected (barrier)": "barrier-divergence",
        "Work-group divergence detected (async copy)": "barrier-divergence",
        "Invalid read of size 4 at global memory address 0x1": "out-of-bounds",
        "Index (9) exceeds static array size (8)": "array-index",
        "Uninitialized value written to private memory address 0x1": "uninitialized-read",
        "Controlflow depends on uninitialized value": "uninitialized-read",
        "Invalid memory load - source pointer is not aligned to the pointed type": "misaligned-access",
        "Unaligned address on vload4": "misaligned-access",
        "Invalid write to read-only buffer": "write-to-read-only",
        "Invalid read from write-only buffer": "read-from-write-only",
        "Invalid write to mapped buffer": "mapped-buffer-access",
        "Work-item finished without waiting for events": "unwaited-event",
        "Invalid wait event": "invalid-wait-event",
        "Oclgrind - OpenCL runtime error detected": "api-error",
        "OCLGRIND FATAL ERROR (WorkItem.cpp:12)": "other",
    }
    for header, kind in headers.items():
        assert fnd._kind(header)[0] == kind, header
        assert kind in model.KINDS


SOURCE = """\
__kernel void k(__global int *p) {
  __local int buf[8];
  event_t e = async_work_group_copy(buf, p, 8, 0);
  wait_group_events(1, &e);
}
"""


def test_instrument_keeps_lines_and_leaves_other_kernels_alone() -> None:
    assert asynccopy.instrument("__kernel void k(__global int *p) { p[0] = 1; }\n") is None
    out = asynccopy.instrument(SOURCE)
    assert out is not None
    user = out[out.index("#line 1\n") + len("#line 1\n"):out.index("\n#line 1000000")]
    lines = user.splitlines()
    assert lines[2] == SOURCE.splitlines()[2] and lines[3] == SOURCE.splitlines()[3]
    assert "__kl_table_t __kl_table;" in lines[0]  # the table is declared on the brace's own line
    assert asynccopy.call_lines(SOURCE) == [3]
    assert "#line 3\nvoid __kl_shadow_3(" in out and "case 3: __kl_shadow_3(" in out


def test_fast_classification_equals_plain() -> None:
    from tests.unit.test_verify_findings import LOG
    # one more report of the first local race, other work-items and address: copied, not re-parsed
    block = LOG[LOG.index("Read-write data race at local memory address 0x1000000000004"):
                LOG.index("Read-write data race at local memory address 0x1000000000008")]
    again = block.replace("0x1000000000004", "0x100000000000c").replace("Global(1,0,0) Local(1,0,0)",
                                                                        "Global(3,0,0) Local(3,0,0)")
    log = LOG.replace(block, block + again)
    messages, _ = fnd.parse_stream(log)
    assert len(messages) == len(fnd.parse_stream(LOG)[0]) + 1
    plain = fnd.group([f for f in (fnd.classify(m) for m in messages) if f is not None])
    fast = fnd.summarize(messages)
    assert [f.to_json() for f in plain] == [f.to_json() for f in fast]
    local = next(f for f in fast if f.kind == "data-race" and f.address_space == "local")
    assert local.count == 3 and len(local.examples) == 3
