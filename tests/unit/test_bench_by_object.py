"""bench_scenarios --by-object: callgrind's counts given to the ELF object that executed them."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import bench_scenarios  # noqa: E402

# a callgrind file as valgrind 3.19 writes it: compressed names, a call whose inclusive cost
# (the line after calls=) belongs to the callee and must not be counted for the caller
CALLGRIND = """# callgrind format
version: 1
events: Ir
ob=(1) /usr/lib/libpython3.11.so.1.0
fl=(1) ceval.c
fn=(1) _PyEval_EvalFrameDefault
10 500
cob=(2) /usr/lib/x86_64-linux-gnu/libvulkan_lvp.so
cfl=(2) lvp.c
cfn=(2) lvp_CreateDevice
calls=1 20
11 9000
12 25
ob=(2)
fl=(2)
fn=(2)
20 7000
+1 2000
ob=(3) ???
fl=(3) ???
fn=(3) 0x0000000004936718
0 40
ob=(1)
fl=(1)
fn=(1)
13 5
"""


def test_each_function_counts_for_its_own_object(tmp_path: Path) -> None:
    out = tmp_path / "callgrind.out"
    out.write_text(CALLGRIND)
    counts = bench_scenarios.self_cost_by_object(out)
    # the second block of fn=(1) is named again under ob=(1), by compressed ids only
    assert counts == {"/usr/lib/libpython3.11.so.1.0": 530, "/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so": 9000,
                      "???": 40}


def test_the_table_groups_objects_and_gives_the_difference() -> None:
    table = bench_scenarios.object_table({"Arm": {"/opt/arm/scenario-runner": 3_000_000, "???": 5_000_000},
                                          "kernellab": {"/usr/lib/libpython3.11.so.1.0": 2_000_000,
                                                        "???": 5_000_000}})
    assert "| code with no file: lavapipe's compiled shaders (the dispatch) | 5.0 | 5.0 | +0.0 |" in table
    assert "| Arm's runner and its emulation layers | 3.0 | 0.0 | -3.0 |" in table
    assert table.endswith("| **total** | **8.0** | **7.0** | **-1.0** |")
