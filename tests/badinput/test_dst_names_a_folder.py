"""Fuzzing ``kernellab run`` (tests/fuzz, seed 0, vgf_buffers #26): dst "o.npy/.." passed the
checks (the output folder did not exist yet, so nothing there was a folder) and the run ended
with exit 1 when it came to write the output folder itself. Now an input error at the dst."""
from __future__ import annotations

from pathlib import Path

import pytest

from helpers.scenarios import kernellab, vector_add, write


@pytest.mark.parametrize("dst", ["c.npy/..", "sub/", "c.npy/../"])
@pytest.mark.parametrize("command", ["validate", "run"])
def test_dst_that_names_a_folder(tmp_path: Path, command: str, dst: str) -> None:
    path, doc = vector_add(tmp_path)
    doc["resources"][4]["buffer"]["dst"] = dst
    proc = kernellab(command, write(path, doc), "--output", tmp_path / "out")
    assert proc.returncode == 2, proc.stderr
    assert f"{path}: /resources/4/buffer/dst: dst {dst!r} names a folder, not a file" in proc.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
