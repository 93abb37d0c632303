"""The dataclass method code kept between runs (issue 11, start-up): the classes built from kept
code behave as the standard library builds them, a bad file is ignored, and the file stays bounded."""
from __future__ import annotations

import dataclasses
import gc
import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernellab import classcode
from kernellab.classcode import CodeCache


def _build(cache: CodeCache) -> type:
    """A frozen, ordered dataclass built through ``cache`` (as installed, without installing)."""
    saved = dataclasses.__dict__.get("exec")
    dataclasses.exec = cache.exec  # type: ignore[attr-defined]
    try:
        @dataclasses.dataclass(frozen=True, order=True)
        class Point:
            x: int
            y: int = 2
            tags: tuple[str, ...] = dataclasses.field(default=(), compare=False)
        return Point
    finally:
        if saved is None:
            dataclasses.__dict__.pop("exec", None)
        else:
            dataclasses.exec = saved  # type: ignore[attr-defined]


def _check(point: type) -> None:
    p = point(1)
    assert (p.x, p.y, p.tags) == (1, 2, ())
    assert repr(p) == f"{point.__qualname__}(x=1, y=2, tags=())"
    assert p == point(1, 2, ("other",)) and point(1) < point(2)
    assert hash(p) == hash(point(1, 2))
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 3  # type: ignore[misc]
    assert dataclasses.replace(p, y=5).y == 5 and dataclasses.asdict(p) == {"x": 1, "y": 2, "tags": ()}
    # the __init__ annotations are the fields' types, as in the standard build: with __future__
    # flags leaking into the compile they would be the generated code's own names ("_type_x")
    assert point.__init__.__annotations__["x"] == dataclasses.fields(point)[0].type


def test_kept_code_builds_the_same_class_as_the_standard_library(tmp_path: Path) -> None:
    file = tmp_path / "codes.marshal"
    first = CodeCache(file)
    _check(_build(first))
    assert first.added > 0
    first.save()
    assert file.is_file() and not file.stat().st_mode & 0o077

    again = CodeCache(file)
    # what the first used is read back as code objects, with the file
    assert set(again.codes) == first.used and set(again.blobs) | set(again.codes) == set(first.blobs)
    built = _build(again)
    assert again.added == 0  # every method came from the file: nothing compiled
    _check(built)


def _cold(file: Path) -> dict[str, bytes]:
    return marshal.loads(file.with_name(file.name.removesuffix(".marshal") + "-cold.marshal").read_bytes())


def test_the_entries_a_run_used_are_kept_as_code_objects(tmp_path: Path) -> None:
    """One unmarshal of the first file reads what the run that wrote it used; the files are written
    only when a run compiled something (a write costs more than regrouping saves), and then the
    second holds what that run did not use, as bytes, read only when a class asks for one of them."""
    file = tmp_path / "codes.marshal"
    first = CodeCache(file)
    _build(first)
    first.save()
    kept = marshal.loads(file.read_bytes())
    assert kept and all(isinstance(value, type(_check.__code__)) for value in kept.values())
    assert not file.with_name("codes-cold.marshal").exists()  # nothing left out: no second file
    # a file of the older layout (every entry marshalled bytes in the one file) is written again
    # once, in the two files, even by a run that compiles nothing
    old = marshal.dumps({key: marshal.dumps(code) for key, code in kept.items()})
    file.write_bytes(old)
    file.chmod(0o600)
    from_bytes = CodeCache(file)
    assert not from_bytes.codes
    _check(_build(from_bytes))
    assert from_bytes.added == 0
    from_bytes.save()
    assert set(marshal.loads(file.read_bytes())) == set(kept) | {classcode.REGROUPED}
    # a run that uses part of the entries and compiles one: the others go to the second file
    part = CodeCache(file)
    unused = next(iter(part.codes))
    for key in part.codes.keys() - {unused}:
        part.code(key)
    part.code("def f(): pass")
    part.save()
    again = CodeCache(file)
    assert set(again.codes) == set(kept) - {unused} | {"def f(): pass"} and set(again.blobs) == set()
    assert set(_cold(file)) == {unused} and not again.cold_loaded
    assert marshal.loads(_cold(file)[unused]).co_code == kept[unused].co_code
    _check(_build(again))
    assert again.added == 0 and again.cold_loaded  # the class asked for the entry the first file left out
    # a run that compiles nothing and leaves code objects unused regroups the files, once
    regroup = CodeCache(file)
    left = next(iter(regroup.codes))
    for key in regroup.codes.keys() - {left}:
        regroup.code(key)
    regroup.save()
    regrouped = CodeCache(file)
    assert left in _cold(file) and left not in regrouped.codes and classcode.REGROUPED in regrouped.blobs
    for key in regrouped.codes.keys() - {next(iter(regrouped.codes))}:
        regrouped.code(key)
    stamp = file.read_bytes()
    regrouped.save()
    assert file.read_bytes() == stamp  # regrouped already: not rewritten until a run compiles
    _check(_build(regrouped))
    regrouped.code("def h(): pass")
    regrouped.save()
    assert classcode.REGROUPED not in CodeCache(file).blobs  # a run that compiled: may regroup once more


def test_a_corrupt_or_foreign_file_is_ignored(tmp_path: Path) -> None:
    file = tmp_path / "codes.marshal"
    file.write_bytes(b"\x00not marshal")
    assert CodeCache(file).blobs == {}
    file.write_bytes(marshal.dumps({"def f(): pass": b"garbage"}))
    cache = CodeCache(file)
    _check(_build(cache))  # an entry that does not unmarshal is compiled again
    file.write_bytes(marshal.dumps({"text": b""}))
    file.chmod(0o666)  # writable by others: code is never run from it
    assert CodeCache(file).blobs == {}


def test_the_file_keeps_what_a_run_used_once_it_is_full(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(classcode, "MAX_ENTRIES", 3)
    file = tmp_path / "codes.marshal"
    file.write_bytes(marshal.dumps({f"old {i}": b"x" for i in range(3)}))
    file.chmod(0o600)
    cache = CodeCache(file)
    _build(cache)
    cache.save()
    kept = marshal.loads(file.read_bytes())
    assert not any(text.startswith("old") for text in kept) and set(kept) == cache.used


def test_each_install_keeps_files_of_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a release's virtual environment and a checkout sharing one cache folder: with one file,
    # each run of one declined the other's modules and rewrote it (measured: +30 M instructions
    # on every other `run` of a 64-float add)
    names = set()
    for folder in ("/venv/lib/python3.11/site-packages/kernellab", "/home/me/kernellab/src/kernellab"):
        monkeypatch.setattr(classcode, "PACKAGE_FOLDER", folder)
        names.add(classcode.cache_file(tmp_path, "run", "modulecode"))
        names.add(classcode.cache_file(tmp_path, "run"))
        assert classcode.cache_file(tmp_path, "run") == classcode.cache_file(tmp_path, "run")  # stable
    assert len(names) == 4
    assert classcode.install_tag("a") == "e40c292c" and classcode.install_tag("foobar") == "bf9cf968"  # FNV-1a vectors


def test_the_collector_is_paused_inside_the_block_only() -> None:
    assert gc.isenabled()
    with classcode.collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with classcode.collector_paused():
            pass
        assert not gc.isenabled()  # left as it was found
    finally:
        gc.enable()


def test_the_program_keeps_class_code_and_exits_with_the_status(tmp_path: Path) -> None:
    env = {**os.environ, "KERNELLAB_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("KERNELLAB_NO_CACHE", None)
    code = "from kernellab.cli import program; program()"
    # listing: its module's records are dataclasses (validate's and run's are plain classes, issue 23)
    bad = tmp_path / "missing.spv"
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", code, "listing", str(bad)], capture_output=True, text=True,
                              env=env)
        assert proc.returncode == 2, proc.stderr
        assert "missing.spv" in proc.stderr and "Traceback" not in proc.stderr
    files = list((tmp_path / "cache" / "python").glob("classcode-listing-*.marshal"))
    assert len(files) == 1 and marshal.loads(files[0].read_bytes())


def _bare_python(code: str) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter without ``site``'s .pth files, kernellab and its packages on
    the path as here: an environment's own .pth files may import inspect or copy before kernellab
    starts (the NVIDIA image's PyTorch venv does), which is not what these tests are about."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    return subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, env=env)


def test_inspect_loads_only_when_a_class_without_a_docstring_needs_it() -> None:
    """dataclasses imports inspect for the ``__doc__`` of a class that has none: under the
    program's start-up (classcode first) it is a stand-in until then, and then the real module."""
    code = """
import sys
from kernellab import classcode
import dataclasses
assert type(sys.modules["inspect"]).__name__ == "_OnFirstUse", type(sys.modules["inspect"])
@dataclasses.dataclass
class Documented:
    '''Has its own.'''
    x: int
assert type(sys.modules["inspect"]).__name__ == "_OnFirstUse" and "ast" not in sys.modules
@dataclasses.dataclass
class Bare:
    x: int
    y: str = "a"
assert Bare.__doc__ == "Bare(x: int, y: str = 'a')", Bare.__doc__
import inspect
assert inspect.signature(Bare).parameters["y"].default == "a"
assert type(sys.modules["inspect"]).__name__ == "module" and "ast" in sys.modules
print("ok")
"""
    proc = _bare_python(code)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


def test_copy_loads_only_when_asdict_needs_it() -> None:
    """dataclasses imports copy (with weakref, 3.6 M instructions) for asdict/astuple's deepcopy
    alone: a stand-in until then, and a deep copy after (issue 23)."""
    code = """
import sys
from kernellab import classcode
import dataclasses
assert type(sys.modules["copy"]).__name__ == "_OnFirstUse", type(sys.modules["copy"])
@dataclasses.dataclass
class Box:
    '''A list in a box.'''
    items: list
box = Box([[1], {2}])  # a set: asdict deep-copies it (3.12 copies lists and atomic values itself)
assert type(sys.modules["copy"]).__name__ == "_OnFirstUse"
plain = dataclasses.asdict(box)
assert plain == {"items": [[1], {2}]} and plain["items"][0] is not box.items[0]
assert plain["items"][1] is not box.items[1]
assert type(sys.modules["copy"]).__name__ == "module"
import copy
assert copy.deepcopy([box])[0] is not box
print("ok")
"""
    proc = _bare_python(code)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


def test_the_settings_classes_are_built_from_kept_code(tmp_path: Path) -> None:
    """The hook is in place before kernellab's classes are built, dataclasses loaded or not: a
    second start compiles no method text (classcode reads its folder from the environment, as the
    settings do; the settings are a plain class, and a module of dataclasses is imported after)."""
    code = """
import sys
compiled = []
sys.addaudithook(lambda event, args: event == "compile" and args[1] == "<string>" and compiled.append(args[0]))
from kernellab import classcode
classcode.install("probe")
from kernellab import config
assert classcode.cache_file(config.get().cache_dir, "probe") == classcode._installed.file
assert "dataclasses" not in sys.modules
from kernellab.backends import occasional
import dataclasses
assert dataclasses.exec == classcode._installed.exec
classcode._installed.save()
print(len(compiled))
"""
    env = {**os.environ, "KERNELLAB_CACHE_DIR": str(tmp_path)}
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    second = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert first.returncode == 0 and second.returncode == 0, first.stderr[-2000:] + second.stderr[-2000:]
    assert int(first.stdout) > 0 and int(second.stdout) == 0


def test_class_annotations_without_inspect_are_inspects() -> None:
    """Python 3.12's dataclasses asks inspect.get_annotations of every class: the stand-in answers
    for a class (its annotations as written) as inspect does, on any version."""
    import inspect

    class Typed:
        x: int
        y: list[str]

    class Child(Typed):
        pass

    for cls in (Typed, Child, type("Empty", (), {})):
        assert classcode._class_annotations(cls) == inspect.get_annotations(cls)
    assert classcode._class_annotations(Typed) is not Typed.__annotations__  # a copy, as inspect's
    evaluated = classcode._class_annotations(Typed, eval_str=True)  # the real function's
    assert evaluated == inspect.get_annotations(Typed, eval_str=True) and evaluated["x"] is int
