"""What ``kernellab run`` does besides the driver's work, kept cheap (issue 23): start-up's objects
frozen out of the collector's walks in a one-shot process only, no regular expression compiled for
an output folder without staged names."""
from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernellab import commands, outputs


@pytest.fixture
def one_shot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(commands.PROCESS, "one_shot", True)


def _in_oldest_generation(obj: object) -> bool:
    return any(o is obj for o in gc.get_objects(generation=2))


@pytest.fixture
def collector_off() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()  # no pass of its own moves the test's objects meanwhile
    yield
    if was:
        gc.enable()


def test_start_up_objects_are_left_alone_outside_the_program(collector_off: None) -> None:
    assert not commands.PROCESS.one_shot
    young = [object()]
    commands.start_up_done()
    assert not _in_oldest_generation(young)


def test_the_program_hands_start_up_objects_to_the_oldest_generation(one_shot: None, collector_off: None) -> None:
    young = [object()]
    commands.start_up_done()
    assert _in_oldest_generation(young)
    assert gc.get_freeze_count() == 0  # collectable still


def test_a_sweep_without_staged_names_compiles_no_pattern(tmp_path: Path) -> None:
    (tmp_path / "c.npy").write_bytes(b"x")
    (tmp_path / ".hidden").write_bytes(b"x")
    outputs._patterns.cache_clear()
    assert outputs.sweep_stale(tmp_path) == []
    assert outputs._patterns.cache_info().currsize == 0
    stale = tmp_path / ".c.npy.kl1-ab-1.tmp"  # no lock file beside it: its owner is gone
    stale.write_bytes(b"x")
    assert outputs.sweep_stale(tmp_path) == [stale]
    assert outputs._patterns.cache_info().currsize == 1


def test_staging_into_a_folder_of_its_own_compiles_no_pattern(tmp_path: Path) -> None:
    """The run's own lock is the one ``.kl`` name in its folder: the sweep before its first staged
    file skips it unread (it is held: no sweep removes it)."""
    outputs._patterns.cache_clear()
    with outputs.OutputSet(tmp_path) as outs:
        outs.bytes(tmp_path / "a.bin", b"x")
        outs.bytes(tmp_path / "sub" / "b.bin", b"y")
        outs.commit()
    assert (tmp_path / "a.bin").read_bytes() == b"x" and (tmp_path / "sub" / "b.bin").read_bytes() == b"y"
    assert outputs._patterns.cache_info().currsize == 0
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a.bin", "b.bin", "sub"]


@pytest.mark.parametrize("name", [".a.kl1-ab-1.tmp", ".kl1-ab.lock", ".a.kl1-ab-1.tmp\n", "a.kl1-ab-1.tmp",
                                  ".a.kl1-AB-1.tmp", ".kl-ab.lock", "c.npy", ".a.b.kl12-0f-3.tmp"])
def test_names_are_read_as_the_patterns_read_them(name: str) -> None:
    import re

    staged, lock = re.match(outputs._STAGED, name), re.match(outputs._LOCK, name)
    want = (staged.group(1), name) if staged else (lock.group(1), "") if lock else None
    assert outputs._token_of(name) == want


@pytest.mark.parametrize("depth, refused", [(64, False), (65, True)])
def test_nesting_is_bounded_however_few_brackets(depth: int, refused: bool) -> None:
    from kernellab.errors import InputError
    from kernellab.formats.jsonfile import decode_json

    text = "[" * depth + "]" * depth
    if refused:
        with pytest.raises(InputError, match="nested more than 64 levels deep"):
            decode_json(text, "f.json")
    else:
        assert decode_json(text, "f.json") is not None
    assert decode_json('{"a": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}', "f.json")


def test_run_reads_the_scenario_once_for_its_format_and_its_reader(tmp_path: Path) -> None:
    import json

    from kernellab.formats.detect import detect_document
    from kernellab.formats.scenario import load_scenario

    path = tmp_path / "s.json"
    doc = {"resources": [{"buffer": {"uid": "a", "size": 16, "shader_access": "readwrite"}}], "commands": []}
    path.write_text(json.dumps(doc))
    fmt, document = detect_document(path)
    assert (fmt, document) == ("scenario", doc)
    path.write_text(json.dumps({"resources": [], "commands": []}))  # what the reader reads is the document given
    scenario, _ = load_scenario(path, document=document)
    assert [r.uid for r in scenario.resources] == ["a"]


def test_a_clean_scenario_is_read_without_the_misspelling_hints(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    path = tmp_path / "s.json"
    path.write_text(json.dumps({"resources": [{"buffer": {"uid": "a", "size": 16, "shader_access": "readwrite"}}],
                                "commands": []}))
    code = ("import sys\nfrom kernellab.formats.scenario import load_scenario\n"
            f"load_scenario({str(path)!r})\nprint('kernellab.formats.near_keys' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
    path.write_text(json.dumps({"resources": [{"buffer": {"uid": "a", "sise": 16, "shader_access": "readwrite"}}],
                                "commands": []}))
    from kernellab.errors import InputError
    from kernellab.formats.scenario import load_scenario

    with pytest.raises(InputError, match='"sise" is not a field: did you mean "size"'):
        load_scenario(path)
