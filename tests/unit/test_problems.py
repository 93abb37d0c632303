"""The one problem collector every reader uses (kernellab.errors.Problems)."""
from __future__ import annotations

from pathlib import Path

import pytest

from kernellab.errors import InputError, Problem, Problems


def test_collects_every_problem_with_its_place():
    c = Problems(Path("d/s.json"))
    c.raise_if_any()  # nothing yet: no error
    c.add(["resources", 0, "a/b"], "bad one")
    c.add("line 3, column 4", "bad two")
    c.add([], "the whole file")
    c.warn(("x",), "odd")
    c.extend([Problem("other.json", "/y", "from elsewhere")])
    assert [str(p) for p in c.problems] == [
        "d/s.json: /resources/0/a~1b: bad one", "d/s.json: line 3, column 4: bad two",
        "d/s.json: /: the whole file", "other.json: /y: from elsewhere"]
    assert [str(p) for p in c.warnings] == ["d/s.json: /x: warning: odd"]
    with pytest.raises(InputError) as info:
        c.raise_if_any()
    assert len(info.value.problems) == 4
    with pytest.raises(InputError) as info:
        c.raise_if_any(with_warnings=True)
    assert info.value.problems[-1].warning


def test_warnings_alone_raise_nothing():
    c = Problems("f")
    c.warn("/", "only a warning")
    c.raise_if_any(with_warnings=True)
