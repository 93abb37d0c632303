"""`run` on a scenario whose "bindings" is misspelled: the error names the key and the field."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernellab import cli

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "vector_add"


def test_run_names_the_misspelled_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "va")
    path = tmp_path / "va" / "scenario.json"
    path.write_text(path.read_text().replace('"bindings"', '"bindngs"'))
    assert cli.main(["run", str(path), "--backend", "vulkan", "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert ('/commands/0/dispatch_compute/bindings: shader \'add\' uses set 0 binding 0 \'A\' (storage buffer), '
            'and nothing is bound there ("bindngs" is not a field: did you mean "bindings"?)') in err, err
