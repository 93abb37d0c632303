"""pip's cmeel packages installed with ``pip install --target DIR`` (DIR on PYTHONPATH, as on a
machine without a registry) are found like those in site-packages: programs and the SPIR-V grammar."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kernellab import tools
from kernellab.listing import grammar


def test_a_cmeel_prefix_on_sys_path_is_searched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prefix = tmp_path / "site" / "cmeel.prefix"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "include" / "spirv" / "unified1").mkdir(parents=True)
    assert prefix not in tools.cmeel_prefixes()
    monkeypatch.setattr(sys, "path", [*sys.path, str(tmp_path / "site")])
    assert prefix in tools.cmeel_prefixes()
    assert prefix / "bin" in tools._prefix_dirs()
    assert prefix / "include" / "spirv" / "unified1" in grammar.grammar_dirs()
