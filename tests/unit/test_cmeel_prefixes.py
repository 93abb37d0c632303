"""pip's cmeel packages installed with ``pip install --target DIR`` (DIR on PYTHONPATH, as on a
machine without a registry) are found like those in site-packages: programs and the SPIR-V grammar."""
from __future__ import annotations

import os
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


def test_a_program_is_found_in_the_search_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """KERNELLAB_TOOL_PATH, then the pip prefixes, then PATH: each folder only where the ones
    before it lack the program."""
    from kernellab import config

    folders = {where: tmp_path / where for where in ("mine", "site/cmeel.prefix/bin", "path")}
    for folder in folders.values():
        folder.mkdir(parents=True)
    monkeypatch.setattr(sys, "path", [*sys.path, str(tmp_path / "site")])
    monkeypatch.setenv("PATH", f"{tmp_path / 'missing'}{os.pathsep}{os.pathsep}{folders['path']}")

    def found(name: str) -> Path | None:
        tools._found.clear()
        with config.override(tool_path=(str(folders["mine"]),)):
            tool = tools.find(name)
        tools._found.clear()
        return tool.path if tool is not None else None

    for where in ("path", "site/cmeel.prefix/bin", "mine"):  # each found before the ones placed earlier
        program = folders[where] / "kl-test-tool"
        program.write_text("#!/bin/sh\n")
        program.chmod(0o755)
        assert found("kl-test-tool") == program
    (folders["mine"] / "kl-test-tool").chmod(0o644)  # not executable: the next folder's
    assert found("kl-test-tool") == folders["site/cmeel.prefix/bin"] / "kl-test-tool"
    assert found("kl-test-absent") is None
