"""verify's one findings model and its one report renderer (no device): the JSON both checkers
write, and the verdict worded from the result's checker."""
from __future__ import annotations

from pathlib import Path

import pytest

from kernellab.verify.model import Access, Finding, Launch, VerifyResult
from kernellab.verify.report import render

RACE = Finding("data-race", "data race on data (storage-buffer)", "k (main)", 0, address_space="storage-buffer",
               accesses=[Access({"global": [0, 0, 0], "local": [0, 0, 0], "group": [0, 0, 0]},
                                {"file": "/w/k.comp", "line": 8, "column": 3}, "data[0] = 1u;"),
                         Access({"global": [1, 0, 0], "local": [1, 0, 0], "group": [0, 0, 0]},
                                {"file": "/w/k.comp", "line": 8, "column": 3}, "data[0] = 1u;", what="command 0")],
               race={"type": "write-write", "scope": "intra-group"}, count=3, resource="data", index=0,
               variable="data")


def result(checker: str, findings: list[Finding], launches: int = 1) -> VerifyResult:
    return VerifyResult(Path("/w/s.json"), findings, [Launch(n, "k (main)") for n in range(launches)],
                        raw_messages=sum(f.count for f in findings), checked=frozenset({"data-race"}),
                        checker=checker)  # type: ignore[arg-type]


@pytest.mark.parametrize("checker, name, reports", [("oclgrind", "Oclgrind", "Oclgrind reports"),
                                                     ("spirv", "the SPIR-V checker", "reports of the SPIR-V checker")])
def test_the_verdict_names_the_checker_that_ran(checker: str, name: str, reports: str) -> None:
    clean = render(result(checker, [], launches=2))
    assert clean.endswith(f"/w/s.json: verified — {name} found no data race, barrier divergence or out-of-bounds "
                          "access in 2 launches")
    assert "launch 1 (k (main)): verified" in clean
    found = render(result(checker, [RACE]))
    assert found.splitlines()[-1] == f"/w/s.json: 1 defect (1 data-race) from 3 {reports}"
    assert ("Oclgrind" in found) == (checker == "oclgrind")
    stopped = result(checker, [])
    stopped.launches[0].ran, stopped.launches[0].unfinished, stopped.launches[0].error = False, True, "too long"
    assert render(stopped).endswith(f"stopped at the time limit; {name} found no defect in what ran")


def test_json_keeps_its_shape() -> None:
    oclgrind, spirv = result("oclgrind", [RACE]).to_json(), result("spirv", [RACE]).to_json()
    keys = ["verdict", "file", "checked", "launches", "findings", "reports", "truncated"]
    assert list(oclgrind) == keys and list(spirv) == keys + ["checker"] and spirv["checker"] == "spirv"
    assert oclgrind["launches"] == [{"instantiation": 0, "kernel": "k (main)", "verdict": "defects", "ran": True,
                                     "enqueued_at": None, "filled": [], "output": None}]
    f = oclgrind["findings"][0]
    assert list(f) == ["kind", "severity", "kernel", "instantiation", "work_items", "address_space", "address",
                       "resource", "index", "variable", "location", "source_line", "source", "message", "count",
                       "race", "accesses"]
    assert f["source"] == {"file": "/w/k.comp", "line": 8, "column": 3, "text": "data[0] = 1u;"}
    assert f["accesses"][1] == {"work_item": {"global": [1, 0, 0], "local": [1, 0, 0], "group": [0, 0, 0]},
                                "location": {"file": "/w/k.comp", "line": 8, "column": 3},
                                "source_line": "data[0] = 1u;", "what": "command 0"}
    stopped = result("oclgrind", [])
    stopped.launches[0].ran, stopped.launches[0].unfinished, stopped.launches[0].error = False, True, "too long"
    assert stopped.to_json()["launches"][0]["error"] == "too long" and stopped.to_json()["verdict"] == "not finished"
