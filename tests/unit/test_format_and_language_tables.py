"""One format detector and one language table: every command tells a workload file's format the
same way, and every layer maps a shader type to its compile language through the same table."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernellab import compiler_options, model, shader_languages
from kernellab.commands import verify as verify_command
from kernellab.compile.languages import LANGUAGES
from kernellab.errors import InputError
from kernellab.formats.detect import detect, format_of


def write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("data, fmt", [
    ({"resources": [], "commands": []}, "scenario"),
    ([{"kernel_file": "k.cl"}], "kernel-instantiation"),
    ({"kernel_file": "k.cl", "global_size": [1]}, "kernel-instantiation"),
    ({"globalWorkSize": [64], "inputBuffers": []}, "pyschedcl"),
    ({"name": "nothing known"}, None),
])
def test_a_file_is_told_by_its_marks(data: object, fmt: str | None) -> None:
    assert format_of(data) == fmt


def test_verify_tells_formats_with_the_one_detector(tmp_path: Path) -> None:
    assert verify_command.detect(write(tmp_path / "a.json", [])) == "kernel-instantiation"
    assert verify_command.detect(write(tmp_path / "s.json", {"commands": []})) == "scenario"
    # verify reads no kernel specs: a spec is refused naming the way to a scenario, not read as one
    with pytest.raises(InputError, match="not PySchedCL kernel specs: `kernellab import"):
        verify_command.detect(write(tmp_path / "p.json", {"globalWorkSize": [1]}))
    # any other object goes to the scenario reader, which names what is missing
    assert verify_command.detect(write(tmp_path / "o.json", {"shader": 1})) == "scenario"
    (tmp_path / "bad.json").write_text("[1,")
    with pytest.raises(InputError, match="line 1"):  # the JSON reader's error, with its place
        verify_command.detect(tmp_path / "bad.json")


def test_a_file_marked_as_no_format_asked_for_is_refused_naming_those(tmp_path: Path) -> None:
    path = write(tmp_path / "p.json", {"globalWorkSize": [1]})
    assert detect(path) == "pyschedcl"
    with pytest.raises(InputError, match=r"expected a scenario \(\"resources\"/\"commands\"\) or a kernel "
                                         r"instantiation \(\"kernel_file\"\); use --format"):
        detect(path, among=("scenario", "kernel-instantiation"))


def test_every_shader_type_has_a_compile_language() -> None:
    assert set(shader_languages.LANGUAGE_OF_SHADER_TYPE) == set(model.SHADER_TYPES)
    assert set(shader_languages.LANGUAGE_OF_SHADER_TYPE.values()) <= set(LANGUAGES)
    for language, kind in shader_languages.SHADER_TYPE_OF_LANGUAGE.items():
        assert shader_languages.LANGUAGE_OF_SHADER_TYPE[kind] == language


def test_the_option_families_cover_the_languages_that_take_options() -> None:
    takes_options = {name for name in LANGUAGES if name not in ("spirv", "spirv-asm")}
    assert {name for name in LANGUAGES if shader_languages.family(name)} == takes_options
    assert shader_languages.family("OpenCL-C") == "opencl" and shader_languages.family("SPIR-V") is None
    # one table: the options door reads the families from shader_languages, not a copy of its own
    assert compiler_options.LANGUAGE_FAMILIES is shader_languages.LANGUAGE_FAMILIES
