"""Expectations sidecars: parsing, errors with JSON pointers, and the JSON Schema."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernellab.errors import InputError
from kernellab.suite.expectations import (
    default_workload,
    json_schema,
    load_expectations,
    parse_expectations,
    sidecar_for,
)

EXAMPLES = Path(__file__).parents[2] / "examples" / "suite"


def test_sidecar_names() -> None:
    assert sidecar_for(Path("a/add.json")) == Path("a/add.expect.json")
    assert default_workload(Path("a/add.expect.json")) == Path("a/add.json")


def test_parse_with_defaults_and_tolerances(tmp_path: Path) -> None:
    s = tmp_path / "k.expect.json"
    e = parse_expectations({"defaults": {"rtol": 1e-3}, "outputs": {
        "c": {"reference": "ref/c.npy"},
        "d": {"reference": "d.npy", "ulps": 3, "nan": "ignore", "dtype": "float32"}}}, s)
    assert e.workload == tmp_path / "k.json"
    c, d = e.outputs["c"], e.outputs["d"]
    assert c.reference == tmp_path / "ref" / "c.npy"
    assert (c.tolerance.rtol, c.tolerance.atol) == (1e-3, 0.0)
    assert (d.tolerance.ulps, d.tolerance.nan, d.dtype, d.tolerance.rtol) == (3, "ignore", "float32", 1e-3)
    assert parse_expectations({"outputs": {"c": {"reference": "c.npy"}}}, s).outputs["c"].tolerance.exact


def test_every_problem_is_named_with_its_pointer(tmp_path: Path) -> None:
    s = tmp_path / "k.expect.json"
    with pytest.raises(InputError) as err:
        parse_expectations({"outputs": {"c": {"reference": "c.npy", "atol": -1, "nan": "maybe", "tol": 1},
                                        "d": {"ulps": 1.5}, "e": 3}, "extra": 1}, s)
    text = str(err.value)
    assert err.value.exit_status == 2
    for where in ("/outputs/c/atol: expected a number >= 0", "/outputs/c/nan: expected one of equal|ignore|never",
                  "/outputs/c/tol: unknown field", "/outputs/d: expected \"reference\"",
                  "/outputs/e: expected an object",
                  "/extra: unknown field"):
        assert f"{s}: {where}" in text, text


def test_missing_outputs_and_bad_json(tmp_path: Path) -> None:
    s = tmp_path / "k.expect.json"
    with pytest.raises(InputError, match="missing required field \"outputs\""):
        parse_expectations({}, s)
    s.write_text("{ nope")
    with pytest.raises(InputError, match="line 1, column 3: invalid JSON"):
        load_expectations(s)


def test_schema_accepts_the_examples_and_rejects_what_the_parser_rejects(tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    sidecars = sorted(EXAMPLES.rglob("*.expect.json"))
    assert len(sidecars) >= 3
    for s in sidecars:
        data = json.loads(s.read_text())
        jsonschema.validate(data, schema)
        parse_expectations(data, s)
    bad = {"outputs": {"c": {"reference": "c.npy", "ulps": -1}}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)
    with pytest.raises(InputError):
        parse_expectations(bad, tmp_path / "k.expect.json")
