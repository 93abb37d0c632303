"""A misspelled key (``bindngs``): a warning naming the field it probably misspells, and an error
naming both where the field's absence stops the run (missing required field, nothing bound)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernellab import cliextra
from kernellab.errors import InputError, Problem
from kernellab.formats.scenario import load_scenario

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "vector_add"


def misspelled(tmp_path: Path, old: str, new: str) -> Path:
    folder = tmp_path / "va"
    shutil.copytree(EXAMPLE, folder)
    path = folder / "scenario.json"
    path.write_text(path.read_text().replace(old, new, 1))
    return path


def test_validate_warns_with_the_field_a_key_misspells(tmp_path: Path) -> None:
    _, warnings = load_scenario(misspelled(tmp_path, '"bindings"', '"bindngs"'))
    assert [(w.where, w.message) for w in warnings] == [
        ("/commands/0/dispatch_compute/bindngs", 'unknown field "bindngs" (did you mean "bindings"?)')]


def test_a_key_close_to_no_field_gets_no_suggestion(tmp_path: Path) -> None:
    _, warnings = load_scenario(misspelled(tmp_path, '"rangeND"', '"comment": "x", "rangeND"'))
    assert [w.message for w in warnings] == ['unknown field "comment"']


def test_a_misspelled_required_field_is_an_error_naming_both(tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        load_scenario(misspelled(tmp_path, '"size": 4000', '"sise": 4000'))
    assert ('/resources/2/buffer: missing required field "size" ("sise" is not a field: did you mean "size"?)'
            in str(err.value))


def test_an_error_at_an_absent_field_names_the_key_that_misspells_it(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    path = misspelled(tmp_path, '"bindings"', '"bindngs"')
    error = InputError([Problem(str(path), "/commands/0/dispatch_compute/bindings", "nothing is bound there"),
                        Problem(str(path), "/commands/0/dispatch_compute/rangeND", "too large")])
    hinted = cliextra.with_misspelling_hints(error)
    assert [p.message for p in hinted.problems] == [  # type: ignore[attr-defined]
        'nothing is bound there ("bindngs" is not a field: did you mean "bindings"?)', "too large"]
    assert cliextra.with_misspelling_hints(hinted) is hinted  # said once
