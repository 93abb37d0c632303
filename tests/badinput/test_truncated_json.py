"""A JSON file whose error lies inside an array or object, read by a fresh process: the C scanner
raises json's error through json.decoder, which a run has not imported (jsontext reads JSON
without it, issue 23), and every such file ended in "internal error: SystemError"."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.mark.parametrize(("text", "place"), [('{"resources": [1', "line 1, column 17"),
                                             ('{"resources": [1,]}', "line 1, column 18"),
                                             ('{"resources": {"a" 1}}', "line 1, column 20"),
                                             ('[{"commands": [tru]}]', "line 1, column 16")])
@pytest.mark.parametrize("command", ["run", "validate"])
def test_an_error_inside_an_array_or_object_is_bad_input(text: str, place: str, command: str,
                                                         tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text(text)
    env = {**os.environ, "PYTHONPATH": str(SRC), "KERNELLAB_CACHE_DIR": str(tmp_path / "cache"),
           "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp")}
    proc = subprocess.run([sys.executable, "-m", "kernellab", command, "s.json"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "internal error" not in out and "Traceback" not in out, out
    assert f"s.json: {place}" in out, out
