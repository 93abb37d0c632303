"""Hostile or broken files (issue 10): each probe that once crashed, hung, blew up memory or printed a
traceback now ends with exit 2 and a message naming the file and the place in it."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from helpers.scenarios import vector_add, write
from kernellab.cli import main


def validate(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str]:
    status = main(["validate", *map(str, args)])
    return status, capsys.readouterr().err


def _binding(doc: dict[str, Any], key: str, value: Any) -> None:
    doc["commands"][0]["dispatch_compute"]["bindings"][0][key] = value


@pytest.mark.parametrize("key, value, bound", [
    ("set", 2**53, "<= 4294967295"), ("set", 2**32, "<= 4294967295"), ("id", 2**32 - 1 + 1, "<= 4294967295"),
])
def test_numbers_past_their_struct_field_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     key: str, value: int, bound: str) -> None:
    path, doc = vector_add(tmp_path)
    _binding(doc, key, value)
    write(path, doc)
    status, err = validate(capsys, path)
    assert status == 2
    assert f"{path}: /commands/0/dispatch_compute/bindings/0/{key}: expected an integer >= 0 and {bound}, " \
           f"got {value}" in err


def test_range_nd_and_sizes_past_their_fields(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, doc = vector_add(tmp_path)
    doc["commands"][0]["dispatch_compute"]["rangeND"] = [2**32]
    doc["resources"][2]["buffer"]["size"] = 2**64
    doc["resources"][0]["shader"]["specialization_constants"] = [{"id": 0, "value": 2**32}]
    write(path, doc)
    status, err = validate(capsys, path)
    assert status == 2
    assert "/commands/0/dispatch_compute/rangeND/0: expected an integer >= 1 and <= 4294967295" in err
    assert "/resources/2/buffer/size: expected an integer >= 1 and <= 18446744073709551615" in err
    assert "/resources/0/shader/specialization_constants/0/value: expected a 32-bit integer" in err


def test_json_nested_1000_deep(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"resources": ' + "[" * 1000 + "]" * 1000 + ', "commands": []}')
    status, err = validate(capsys, path)
    assert status == 2 and err.strip() == f"{path}: nested more than 64 levels deep"


def test_an_integer_of_5000_digits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, doc = vector_add(tmp_path)
    text = json.dumps(doc, indent=2).replace('"set": 1', '"set": ' + "9" * 5000)
    path.write_text(text)
    status, err = validate(capsys, path)
    line = text[:text.index("9" * 5000)].count("\n") + 1
    assert status == 2 and err.strip() == f"{path}: line {line}: an integer of 5000 digits; at most 40 are accepted"


def test_a_device_node_as_the_workload(capsys: pytest.CaptureFixture[str]) -> None:
    status, err = validate(capsys, "/dev/zero")
    assert status == 2 and err.strip() == "/dev/zero: not a regular file, expected a JSON file"


def test_a_json_file_larger_than_the_cap(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from kernellab.formats import jsonfile
    monkeypatch.setattr(jsonfile, "MAX_JSON_BYTES", 1000)
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"resources": [], "commands": [], "pad": "x" * 2000}))
    status, err = validate(capsys, path)
    assert status == 2 and err.strip() == f"{path}: {path.stat().st_size} bytes: a JSON file may have at most 1000"


def test_an_npy_header_that_breaks_numpys_parser(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, doc = vector_add(tmp_path)
    data = bytearray((tmp_path / "a.npy").read_bytes())
    data[10:20] = b"{'descr': "[:10]
    data[20:] = data[20:].replace(b"}", b"(")
    (tmp_path / "a.npy").write_bytes(bytes(data))
    status, err = validate(capsys, path)
    assert status == 2 and "Traceback" not in err
    assert "a.npy" in err and "not a NumPy .npy file" in err


def test_an_npy_file_shorter_than_its_header_says(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, doc = vector_add(tmp_path)
    (tmp_path / "a.npy").write_bytes((tmp_path / "a.npy").read_bytes()[:-40])
    status, err = validate(capsys, path)
    assert status == 2 and "the header announces 400 bytes of data, the file holds 360" in err


def _dst(tmp_path: Path, value: str) -> Path:
    path, doc = vector_add(tmp_path)
    doc["resources"][4]["buffer"]["dst"] = value
    return write(path, doc)


@pytest.mark.parametrize("dst, message", [
    ("../../x.npy", "dst '../../x.npy' resolves to"),
    ("..", "dst '..' resolves to"),
    ("/tmp/x.npy", "absolute dst '/tmp/x.npy': outputs are written inside the output folder; run with "
                   "--allow-absolute-dst"),
    ("sub", "dst 'sub' is a folder"),
    ("link/x.npy", "dst 'link/x.npy' resolves to"),
])
def test_dst_stays_inside_the_output_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str], dst: str,
                                            message: str) -> None:
    (tmp_path / "out" / "sub").mkdir(parents=True)
    (tmp_path / "out" / "link").symlink_to(tmp_path)
    path = _dst(tmp_path, dst)
    status, err = validate(capsys, path, "--output", tmp_path / "out")
    assert status == 2 and f"{path}: /resources/4/buffer/dst: {message}" in err, err
    assert main(["run", str(path), "--output", str(tmp_path / "out")]) == 2
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["link", "sub"]


def test_an_absolute_dst_with_the_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _dst(tmp_path, str(tmp_path / "elsewhere.npy"))
    status, _ = validate(capsys, path, "--allow-absolute-dst")
    assert status == 0


def test_two_resources_with_one_dst(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, doc = vector_add(tmp_path)
    doc["resources"][3]["buffer"]["dst"] = "c.npy"
    write(path, doc)
    status, err = validate(capsys, path)
    assert status == 2 and "/resources/4/buffer/dst: dst 'c.npy' is also the dst at /resources/3/buffer/dst" in err


def test_include_dirs_stay_inside_the_workload(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, doc = vector_add(tmp_path)
    doc["resources"][0]["shader"]["include_dirs"] = ["/usr/include"]
    write(path, doc)
    status, err = validate(capsys, path)
    assert status == 2 and "/resources/0/shader/include_dirs/0: include directory /usr/include is outside the " \
                           "scenario's folder" in err
    assert validate(capsys, path, "--allow-outside", "/usr")[0] == 0


@pytest.mark.parametrize("value", ["x" * 5000, "a\u0000b.npy", "x\ud800.npy"])
def test_unusable_file_names_are_input_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str) -> None:
    path, doc = vector_add(tmp_path)
    doc["resources"][2]["buffer"]["src"] = value
    path.write_bytes(json.dumps(doc).encode("utf-8", "surrogatepass"))
    status, err = validate(capsys, path)
    assert status == 2 and "/resources/2/buffer/src: " in err and "is not a usable file name" in err


def test_a_million_resources_are_refused_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "many.json"
    path.write_text(json.dumps({"resources": [{"buffer": {"uid": f"b{i}", "size": 4, "shader_access": "readonly"}}
                                              for i in range(100_001)], "commands": []}))
    status, err = validate(capsys, path)
    assert status == 2 and err.strip() == f"{path}: /resources: 100001 resources; a scenario may have at most 100000"


def test_an_npy_header_with_a_zero_sized_float(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = vector_add(tmp_path)
    data = (tmp_path / "a.npy").read_bytes().replace(b"'<f4'", b"'<f0'")
    (tmp_path / "a.npy").write_bytes(data)
    status, err = validate(capsys, path)
    assert status == 2 and "a.npy" in err and "unknown descr '<f0'" in err
