"""tools.Tool.transform: input bytes to output bytes through a program run in a temporary folder."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from kernellab import tools
from kernellab.errors import CompileError, ToolError

PYTHON = tools.Tool("python", Path(sys.executable))


def test_input_bytes_become_output_bytes():
    reverse = "import sys, pathlib; a, b = map(pathlib.Path, sys.argv[1:]); b.write_bytes(a.read_bytes()[::-1])"
    assert PYTHON.transform(["-c", reverse, tools.INPUT, tools.OUTPUT], input=b"abc\x00\x01",
                            what="reversing") == b"\x01\x00cba"


def test_files_have_the_callers_names_in_a_folder_that_is_removed():
    show = "import sys, json; open(sys.argv[3], 'w').write(json.dumps(sys.argv[1:]))"
    out = PYTHON.transform(["-c", show, tools.INPUT, "-o", tools.OUTPUT], input=b"", input_name="kernel.bc",
                           output_name="kernel.spv", what="naming")
    inp, flag, outp = map(str, json.loads(out))
    assert (Path(inp).name, flag, Path(outp).name) == ("kernel.bc", "-o", "kernel.spv")
    folder = Path(inp).parent
    assert folder == Path(outp).parent and folder.name.startswith("kernellab-python-")
    assert not folder.exists()


def test_without_an_output_file_the_result_is_standard_output():
    assert PYTHON.transform(["-c", "import sys; print(open(sys.argv[1]).read())", tools.INPUT],
                            input=b"hello", what="printing") == b"hello\n"


def test_a_failure_raises_the_callers_error_with_log_and_repro():
    with pytest.raises(CompileError) as info:
        PYTHON.transform(["-c", "import sys; sys.exit('bad input')", tools.INPUT, tools.OUTPUT], input=b"",
                         what="checking k.cl", error=CompileError)
    assert str(info.value).startswith("checking k.cl: python failed (exit 1)\nbad input\nrepro: ")
    assert info.value.failure is not None and info.value.failure.argv[-1].endswith("/output")


def test_an_output_the_program_did_not_write_is_an_error():
    with pytest.raises(ToolError, match="making k.spv: python wrote no k.spv"):
        PYTHON.transform(["-c", "pass", tools.OUTPUT], output_name="k.spv", what="making k.spv")


def test_a_tools_stamp_changes_when_its_binary_is_replaced(tmp_path: Path) -> None:
    binary = tmp_path / "spirv-val"
    binary.write_bytes(b"#!/bin/sh\n")
    tool = tools.Tool("spirv-val", binary)
    first = tool.stamp
    assert first.startswith(str(binary)) and first == tool.stamp
    replacement = tmp_path / "new"
    replacement.write_bytes(b"#!/bin/sh\nexit 0\n")
    replacement.replace(binary)  # an upgrade: another file (inode, size) under the same name
    assert tool.stamp not in ("", first)
    binary.unlink()
    assert tool.stamp == ""
