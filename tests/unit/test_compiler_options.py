"""The allow-lists of compiler options that files may give (issue 10)."""
from __future__ import annotations

from pathlib import Path

import pytest

from kernellab import compiler_options as co
from kernellab.compiler_options import allowed_roots, check, check_includes


@pytest.fixture()
def roots(tmp_path: Path) -> tuple[Path, ...]:
    (tmp_path / "inc").mkdir()
    return allowed_roots(tmp_path)


@pytest.mark.parametrize("language, text", [
    ("glsl", "-DN=4 -D M -UOLD -Iinc -I inc -O -g --target-env vulkan1.3"),
    ("opencl-c", "-DTILE=16 -cl-std=CL2.0 -cl-opt-disable -cl-mad-enable -Werror -O2 -I inc -D X=ab"),
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


# --- the door: parsed once into typed options, rendered, never re-split (issue 18) -------------

def test_the_door_parses_each_option_into_a_typed_record(tmp_path: Path, roots: tuple[Path, ...]) -> None:
    opts = co.parse("opencl-c", "-DN=4 -D M -UOLD -I inc -cl-std=CL2.0 -O2", tmp_path, roots)
    assert [(o.kind, o.name, o.value) for o in opts.items] == [
        (co.DEFINE, "N", "4"), (co.DEFINE, "M", None), (co.UNDEF, "OLD", None),
        (co.INCLUDE_DIR, "inc", str((tmp_path / "inc").resolve())), (co.STD, "-cl-std=CL2.0", None), (co.FLAG, "-O2", None)]
    assert opts.argv() == ["-DN=4", "-DM", "-UOLD", f"-I{(tmp_path / 'inc').resolve()}", "-cl-std=CL2.0", "-O2"]
    assert opts.driver_text().split() == opts.argv()  # the driver's own split gives back the same tokens
    with pytest.raises(AttributeError):
        opts.items[0].name = "X"  # type: ignore[misc]


@pytest.mark.parametrize("text, shown", [
    ("-DA='0 -I/x -DB=0'", "-DA=0 -I/x -DB=0"),          # whitespace inside a quoted value
    ("'-DA=1\n#include \"/etc/passwd\"'", '-DA=1\\n#include "/etc/passwd"'),  # newline: a directive on clspv's path
    ("-DA=#x", "-DA=#x"), ("-DA='\"x\"'", '-DA="x"'), ("-DA=a\\\\b", "-DA=a\\b"),
    ("'-DA=\x1b[31m'", "-DA=\x1b[31m"),
])
def test_a_macro_value_is_one_word(tmp_path: Path, roots: tuple[Path, ...], text: str, shown: str) -> None:
    with pytest.raises(co.OptionsRefused) as err:
        co.parse("opencl-c", text, tmp_path, roots)
    assert err.value.refusals[0].option == shown
    assert "a macro's value is one word" in err.value.refusals[0].reason


def test_a_refusal_names_the_place(tmp_path: Path, roots: tuple[Path, ...]) -> None:
    from kernellab.errors import InputError
    with pytest.raises(InputError) as err:
        co.read("opencl-c", "-DA=1 -dependency-file /tmp/x", tmp_path, roots, ("k.json", "/0/compiler_flags"))
    problem = err.value.problems[0]
    assert (problem.file, problem.where) == ("k.json", "/0/compiler_flags") and "'-dependency-file'" in problem.message


def test_the_users_own_options_pass_as_given_words(tmp_path: Path, roots: tuple[Path, ...]) -> None:
    opts = co.parse("opencl-c", "-Xclang -load -DA='x y'", tmp_path, roots, origin="user")
    assert opts.origin == "user" and opts.argv() == ["-Xclang", "-load", "-DA=x y"]


def test_kernellabs_own_options_join_a_files(tmp_path: Path, roots: tuple[Path, ...]) -> None:
    opts = co.parse("opencl-c", "-DN=1", tmp_path, roots) + co.own("-cl-kernel-arg-info")
    assert opts.origin == "file" and opts.argv() == ["-DN=1", "-cl-kernel-arg-info"]
    with pytest.raises(ValueError):
        co.own("-include /etc/passwd")


def test_a_folder_that_cannot_be_one_word_never_reaches_a_driver(tmp_path: Path) -> None:
    with pytest.raises(co.OptionsRefused):
        co.folders([tmp_path / "a b"]).driver_text()
    assert co.folders([tmp_path]).driver_text() == f"-I{tmp_path}"


def test_the_key_is_the_options_and_not_where_the_folder_lies(tmp_path: Path) -> None:
    for sub in ("one", "two"):
        (tmp_path / sub / "inc").mkdir(parents=True)
    keys = {co.parse("glsl", "-I inc -DA=1", tmp_path / s, allowed_roots(tmp_path / s)).key() for s in ("one", "two")}
    assert len(keys) == 1
    assert co.parse("glsl", "-DA=2", tmp_path, allowed_roots(tmp_path)).key() != \
        co.parse("glsl", "-DA=1", tmp_path, allowed_roots(tmp_path)).key()


def test_target_env_is_one_option_of_two_words(tmp_path: Path, roots: tuple[Path, ...]) -> None:
    for text in ("--target-env vulkan1.3", "--target-env=vulkan1.3"):
        assert co.parse("glsl", text, tmp_path, roots).argv() == ["--target-env", "vulkan1.3"]
