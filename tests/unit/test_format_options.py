"""The runtime takes typed options: ``run`` and ``bless`` turn their command line into
:class:`FormatRunOptions` (issue 19), and no runtime module reads an argparse namespace."""
from __future__ import annotations

import argparse
import ast
from pathlib import Path

import pytest

from kernellab.commands.run_extras import format_options
from kernellab.errors import UsageError
from kernellab.runtime.runners import FormatRunOptions, parse_inputs

RUNTIME = Path(__file__).resolve().parents[2] / "src" / "kernellab" / "runtime"


def test_run_command_line_becomes_typed_options(tmp_path):
    args = argparse.Namespace(output=tmp_path, device="Portable", seed=7, index=2, set=["dataset=2**4"],
                              partition=3, devices="cpu,cpu", input=["1=b.npy"], split="offset",
                              profiling_dump_path=None)
    options = format_options(args)
    assert options == FormatRunOptions(output=tmp_path, device="Portable", seed=7, index=2,
                                       variables={"dataset": 16}, partition=3, devices="cpu,cpu",
                                       inputs={1: Path("b.npy")}, split="offset")


def test_flags_a_command_lacks_keep_their_defaults_and_changes_win(tmp_path):
    options = format_options(argparse.Namespace(output=None, device=None), output=tmp_path)
    assert options == FormatRunOptions(output=tmp_path)


def test_bad_input_item_is_a_usage_error():
    with pytest.raises(UsageError, match="POS=FILE.npy"):
        parse_inputs(["b.npy"])


def test_no_runtime_module_imports_argparse():
    importers = []
    for path in sorted(RUNTIME.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if "argparse" in names:
                importers.append(path.name)
    assert importers == []
