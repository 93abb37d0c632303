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


def test_the_interpreters_own_site_packages_come_first() -> None:
    """cmeel_prefixes takes the site folders from ``site`` (no sysconfig build data at start-up):
    pip's install folders, sysconfig's purelib and platlib, still lead the list."""
    import sysconfig

    wanted = [Path(sysconfig.get_paths()[key]) / "cmeel.prefix" for key in ("purelib", "platlib")]
    got = tools.cmeel_prefixes()
    assert got[:len(dict.fromkeys(wanted))] == list(dict.fromkeys(wanted))
