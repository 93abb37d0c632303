"""Finding a suite, sharding it, baselines, outcomes, and the reports (no device needed)."""
from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest

from kernellab.errors import InputError, UsageError
from kernellab.suite.baseline import baseline_text, load_baseline
from kernellab.suite.discovery import discover, parse_shard, shard
from kernellab.suite.reports import json_lines, junit_xml, summary, trace_events
from kernellab.suite.results import TestResult
from kernellab.suite.runner import SuiteOutcome, classify


def make_suite(root: Path, n: int) -> None:
    for i in range(n):
        folder = root / f"group{i % 3}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"w{i}.json").write_text("{}")
        (folder / f"w{i}.expect.json").write_text(json.dumps({"outputs": {"c": {"reference": f"w{i}.c.npy"}}}))
        np.save(folder / f"w{i}.c.npy", np.zeros(4, np.float32))  # a sidecar's references are read at discovery
    (root / "no_expectations.json").write_text("{}")


def test_discover_finds_each_workload_with_expectations_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_suite(tmp_path / "s", 7)
    monkeypatch.chdir(tmp_path)
    items = discover([Path("s"), Path("s/group0/w0.json"), Path("s/group1/w1.expect.json")])
    assert [i.id for i in items] == sorted(f"s/group{i % 3}/w{i}.json" for i in range(7))
    assert all(i.workload.is_file() and i.sidecar.is_file() for i in items)


def test_discover_bad_input(tmp_path: Path) -> None:
    make_suite(tmp_path, 2)
    with pytest.raises(InputError, match="no expectations beside it"):
        discover([tmp_path / "no_expectations.json"])
    with pytest.raises(UsageError, match="no such file or folder"):
        discover([tmp_path / "missing"])
    (tmp_path / "group0" / "w0.expect.json").write_text('{"outputs": {"c": {}}}')
    (tmp_path / "group1" / "w1.json").unlink()
    with pytest.raises(InputError) as err:
        discover([tmp_path])
    assert "/outputs/c: expected \"reference\"" in str(err.value)
    assert "w1.json of these expectations does not exist" in str(err.value)


def test_discover_reads_the_references(tmp_path: Path) -> None:
    make_suite(tmp_path, 3)
    (tmp_path / "group0" / "w0.c.npy").unlink()
    (tmp_path / "group1" / "w1.c.npy").write_text("not numpy")
    (tmp_path / "group2" / "w2.expect.json").write_text(
        json.dumps({"outputs": {"c": {"reference": "w2.c.npy", "dtype": "int32"}}}))
    with pytest.raises(InputError) as err:
        discover([tmp_path])
    problems = {(Path(p.file).name, p.where) for p in err.value.problems}
    assert problems == {("w0.expect.json", "/outputs/c/reference"), ("w1.expect.json", "/outputs/c/reference"),
                        ("w2.expect.json", "/outputs/c/dtype")}


def test_shards_partition_the_suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_suite(tmp_path, 40)
    monkeypatch.chdir(tmp_path)
    items = discover([Path(".")])
    for n in (1, 2, 3, 7):
        parts = [shard(items, i, n) for i in range(1, n + 1)]
        ids = [x.id for p in parts for x in p]
        assert sorted(ids) == [x.id for x in items] and len(ids) == len(set(ids))
        if n > 1:
            assert all(parts), "every shard gets some of 40 workloads"
    # deterministic, and a new workload does not move the others
    before = {x.id for x in shard(items, 2, 3)}
    make_suite(tmp_path / "more", 5)
    after = {x.id for x in shard(discover([Path(".")]), 2, 3)}
    assert before <= after


@pytest.mark.parametrize("text", ["0/2", "3/2", "1", "a/b", "1/0"])
def test_bad_shard(text: str) -> None:
    with pytest.raises(UsageError, match="expected I/N"):
        parse_shard(text)


def test_baseline_round_trip_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "baseline.csv"
    path.write_text(baseline_text([("b/x.json", "Crash"), ("a/y.json", "Fail")]) + "\n# note\n")
    assert load_baseline(path) == {"a/y.json": "Fail", "b/x.json": "Crash"}
    path.write_text("a.json,Fail\nb.json,Broken\nc.json\n")
    with pytest.raises(InputError) as err:
        load_baseline(path)
    assert f"{path}: line 2: expected ID,STATUS" in str(err.value) and "line 3" in str(err.value)


def r(status: str, id: str = "x.json", message: str = "") -> TestResult:
    return TestResult(id, status, 0.01, message=message)


def test_outcomes() -> None:
    assert classify(r("pass"), None, {}).outcome == "pass"
    assert classify(r("pass"), None, {"x.json": "Fail"}).outcome == "unexpected-pass"
    assert classify(r("crash"), None, {"x.json": "Fail"}).outcome == "expected-fail"
    flaky = classify(r("fail", message="c: 1 of 4 elements differ"), r("pass"), {})
    assert (flaky.outcome, flaky.attempts) == ("flaky", 2) and "failed once (Fail: c: 1 of 4" in flaky.message
    failed = classify(r("timeout"), r("timeout"), {})
    assert (failed.outcome, failed.attempts) == ("fail", 2)


def outcome() -> SuiteOutcome:
    results = [classify(r("pass", "a/ok.json"), None, {}),
               classify(r("fail", "a/bad.json", "c: 1 of 4 elements differ\n  [2] expected 1.0, actual 2.0"),
                        r("fail", "a/bad.json", "c: 1 of 4 elements differ\n  [2] expected 1.0, actual 2.0"), {}),
               classify(r("crash", "b/crash.json", "the worker died (SIGABRT)"), r("crash", "b/crash.json"), {}),
               classify(r("fail", "b/known.json"), None, {"b/known.json": "Fail"}),
               classify(r("pass", "b/fixed.json"), None, {"b/fixed.json": "Crash"}),
               classify(r("timeout", "c/flaky.json"), r("pass", "c/flaky.json"), {})]
    for i, x in enumerate(results):
        x.worker, x.device = f"local-{i % 2}", "llvmpipe"
        x.phases = [("setup", 100.0 + i, 100.001 + i), ("run", 100.001 + i, 100.003 + i)]
        x.gpu = [[("0:dispatch_compute:add", 5e9, 5e9 + 1500.0)]]
    return SuiteOutcome(results, 1.5)


def test_counts_summary_and_json_lines() -> None:
    o = outcome()
    assert o.counts() == {"pass": 1, "fail": 2, "expected-fail": 1, "unexpected-pass": 1, "flaky": 1}
    assert not o.ok and [x.id for x in o.failed] == ["a/bad.json", "b/crash.json", "b/fixed.json"]
    text = io.StringIO()
    summary(o, text)
    out = text.getvalue()
    assert "FAIL a/bad.json" in out and "[2] expected 1.0, actual 2.0" in out and "FLAKY c/flaky.json" in out
    assert "FAILED (3 unexpected): 6 workloads" in out
    lines = io.StringIO()
    json_lines(o, lines)
    rows = [json.loads(x) for x in lines.getvalue().splitlines()]
    assert [x["outcome"] for x in rows] == ["pass", "fail", "fail", "expected-fail", "unexpected-pass", "flaky"]
    assert rows[0]["phases_ms"] == {"setup": pytest.approx(1.0, abs=1e-3), "run": pytest.approx(2.0, abs=1e-3)}


def test_junit_xml_follows_the_schema() -> None:
    xmlschema = pytest.importorskip("xmlschema")
    from helpers.junit_schema import junit_xsd

    xsd = junit_xsd()
    if xsd is None:
        pytest.skip("cannot fetch pytest's source distribution for junit-10.xsd (no package registry)")
    text = junit_xml(outcome())
    schema = xmlschema.XMLSchema(str(xsd))
    schema.validate(text)
    from xml.etree import ElementTree as ET
    root = ET.fromstring(text)
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("6", "2", "1")
    cases = {c.get("classname") + "." + c.get("name"): c for c in suite.iter("testcase")}
    assert cases["a.bad.json"].find("failure") is not None
    assert cases["b.crash.json"].find("error").get("type") == "Crash"
    assert cases["b.known.json"].find("skipped") is not None
    # issue 20: every attempt is kept, in Surefire's re-run convention. The flaky one timed out,
    # then passed: a flakyError (not flakyFailure) with the first attempt's type
    assert cases["c.flaky.json"].find("flakyError").get("type") == "Timeout"
    assert cases["c.flaky.json"].find("failure") is None and cases["c.flaky.json"].find("error") is None
    bad_case = cases["a.bad.json"]  # failed twice: the first run's failure, then a rerunFailure
    assert [c.tag for c in bad_case if c.tag != "system-out"] == ["failure", "rerunFailure"]
    assert bad_case.find("rerunFailure").get("message") == "c: 1 of 4 elements differ"
    assert [c.tag for c in cases["b.crash.json"] if c.tag != "system-out"] == ["error", "rerunError"]
    bad = text.replace('tests="6"', 'testz="6"', 1).replace("<testsuite ", "<testsuite bogus=\"1\" ", 1)
    with pytest.raises(xmlschema.XMLSchemaValidationError):
        schema.validate(bad)


def test_trace_events_have_the_trace_event_fields() -> None:
    events = trace_events(outcome())
    doc = json.loads(json.dumps({"traceEvents": events}))
    complete = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert complete and all({"name", "ph", "ts", "dur", "pid", "tid"} <= e.keys() for e in complete)
    gpu = [e for e in complete if e["cat"] == "gpu"]
    assert len(gpu) == 6 and all(e["dur"] == 1.5 and e["name"] == "dispatch_compute add" for e in gpu)
    run = next(e for e in complete if e["name"] == "run" and e["args"]["workload"] == "a/ok.json")
    ok_gpu = next(e for e in gpu if e["args"]["workload"] == "a/ok.json")
    assert ok_gpu["ts"] == run["ts"]  # GPU events start with the host's run phase
    assert {e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "thread_name"} == {"host", "GPU"}
    assert len({e["pid"] for e in complete}) == 2  # one process per worker



def test_every_attempt_of_a_rerun_is_a_trace_slice_and_a_json_record() -> None:
    o = outcome()
    flaky = next(x for x in o.results if x.id == "c/flaky.json")
    first = flaky.earlier[0]
    first.phases = [("setup", 90.0, 90.001), ("run", 90.001, 90.004)]
    first.worker = "local-0"
    slices = [e for e in trace_events(o) if e.get("cat") == "workload" and "flaky" in e["name"]]
    assert [(e["name"], e["args"]["status"], e["args"]["attempt"]) for e in slices] == [
        ("c/flaky.json (attempt 1 of 2)", "timeout", 1), ("c/flaky.json (attempt 2 of 2)", "pass", 2)]
    row = flaky.to_json()
    assert row["attempts"] == 2 and [a["status"] for a in row["earlier_attempts"]] == ["timeout"]
    assert "earlier" not in row and "earlier_attempts" not in o.results[0].to_json()
