"""The allow-lists of compiler options that files may give (issue 10)."""
from __future__ import annotations

from pathlib import Path

import pytest

from kernellab.compiler_options import allowed_roots, check, check_includes


@pytest.fixture()
def roots(tmp_path: Path) -> tuple[Path, ...]:
    (tmp_path / "inc").mkdir()
    return allowed_roots(tmp_path)


@pytest.mark.parametrize("language, text", [
    ("glsl", "-DN=4 -D M -UOLD -Iinc -I inc -O -g --target-env vulkan1.3"),
    ("opencl-c", "-DTILE=16 -cl-std=CL2.0 -cl-opt-disable -cl-mad-enable -Werror -O2 -I inc -D 'X=a b'"),
    ("OpenCL", "-cl-fast-relaxed-math"), ("glsl", ""),
])
def test_the_allowed_options_pass(tmp_path: Path, roots: tuple[Path, ...], language: str, text: str) -> None:
    assert check(language, text, tmp_path, roots) == []


@pytest.mark.parametrize("language, text, option, reason", [
    ("opencl-c", "-Xclang -load -Xclang ./evil.so", "-Xclang", "only macros"),
    ("opencl-c", "-o /tmp/x", "-o", "only macros"),
    ("opencl-c", "-include /etc/passwd", "-include", "only macros"),
    ("glsl", "--depfile /tmp/x", "--depfile", "only macros"),
    ("glsl", "/etc/passwd", "/etc/passwd", "file names and other arguments never come from a file"),
    ("opencl-c", "-I/etc", "-I/etc", "outside the workload's folder"),
    ("glsl", "-I ../..", "-I../..", "outside the workload's folder"),
    ("opencl-c", "-cl-made-up", "-cl-made-up", "not an OpenCL C option"),
    ("glsl", "-D1X=2", "-D1X=2", "C identifier"),
    ("SPIR-V", "-O", "-O", "takes no compiler options"),
    ("glsl", "--target-env vulkan9", "--target-env", "only macros"),
])
def test_everything_else_is_refused_with_the_option_named(tmp_path: Path, roots: tuple[Path, ...], language: str,
                                                          text: str, option: str, reason: str) -> None:
    refusals = check(language, text, tmp_path, roots)
    assert refusals and refusals[0].option == option and reason in refusals[0].reason
    assert str(refusals[0]).startswith(f"compiler option {option!r} is not allowed in a file: ")


def test_allow_outside_widens_the_roots(tmp_path: Path) -> None:
    assert check("opencl-c", "-I/usr/include", tmp_path, allowed_roots(tmp_path, [Path("/usr")])) == []


def test_includes_outside_the_folder_are_refused(tmp_path: Path, roots: tuple[Path, ...]) -> None:
    (tmp_path / "inc" / "common.h").write_text('#include "../../secret.h"\n')
    (tmp_path / "k.cl").write_text('#include "common.h"\n#include </etc/passwd>\n#include "inc/ok.h"\n')
    (tmp_path / "inc" / "ok.h").write_text("// fine\n")
    refusals = check_includes(tmp_path / "k.cl", [tmp_path / "inc"], roots)
    assert sorted(r.option for r in refusals) == ['#include "../../secret.h"', "#include </etc/passwd>"]
