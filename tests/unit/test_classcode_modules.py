"""kernellab's modules served from one file of their kept code (issue 23, start-up): served only
where the normal import would run the same code (the source's stamp as its timestamp .pyc has it,
the same folder, no new file beside it), kept only from the standard source loader's imports, never
from a file another user could have written, and never written under ``dont_write_bytecode``."""
from __future__ import annotations

import importlib
import importlib.resources
import importlib.util
import json
import marshal
import os
import py_compile
import re
import subprocess
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kernellab import classcode
from kernellab.classcode import ModuleCode

PACKAGE = "klprobe"  # a throwaway package: kernellab's own modules are imported already


@pytest.fixture
def probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``klprobe`` (a package with a module and a subpackage with a data file) on the path, its
    modules forgotten after the test, bytecode written as an installed kernellab's is."""
    root = tmp_path / "src"
    (root / PACKAGE / "sub").mkdir(parents=True)
    (root / PACKAGE / "__init__.py").write_text("")
    (root / PACKAGE / "mod.py").write_text("VALUE = 1\n\ndef where():\n    return where.__code__.co_filename\n")
    (root / PACKAGE / "sub" / "__init__.py").write_text("NAME = 'sub'\n")
    (root / PACKAGE / "sub" / "table.json").write_text("{}")
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.syspath_prepend(str(root))
    importlib.invalidate_caches()
    yield root
    for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
        del sys.modules[name]


def _import_through(finder: ModuleCode, *names: str) -> list[types.ModuleType]:
    """``names`` imported afresh (the package itself by the normal finders, as in a run) with
    ``finder`` first on the meta path."""
    for name in [n for n in sys.modules if n.startswith(PACKAGE + ".")]:
        del sys.modules[name]
    importlib.import_module(PACKAGE)
    sys.meta_path.insert(0, finder)  # type: ignore[arg-type]
    try:
        return [importlib.import_module(name) for name in names]
    finally:
        sys.meta_path.remove(finder)  # type: ignore[arg-type]


def _listing_changed(folder: Path) -> None:
    """The folder's mtime moved on as a later change moves it: one made within the file system's
    clock tick of the last would leave it as it was (the path finder's own listing too)."""
    st = folder.stat()
    os.utime(folder, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def _kept_once(probe: Path, file: Path) -> None:
    first = ModuleCode(file, PACKAGE)
    modules = _import_through(first, f"{PACKAGE}.mod", f"{PACKAGE}.sub")
    assert all(type(m.__loader__).__name__ == "SourceFileLoader" for m in modules)
    first.save()
    assert set(ModuleCode(file, PACKAGE).entries) == {f"{PACKAGE}.mod", f"{PACKAGE}.sub"}


def test_a_kept_module_is_served_with_the_attributes_of_a_normal_import(probe: Path, tmp_path: Path) -> None:
    file = tmp_path / "cache" / "modules.marshal"
    _kept_once(probe, file)
    assert not file.stat().st_mode & 0o077
    again = ModuleCode(file, PACKAGE)
    mod, sub = _import_through(again, f"{PACKAGE}.mod", f"{PACKAGE}.sub")
    source = probe / PACKAGE / "mod.py"
    assert type(mod.__loader__) is classcode._KeptLoader and mod.__spec__.loader is mod.__loader__
    assert mod.VALUE == 1 and mod.__file__ == mod.__spec__.origin == str(source)
    assert mod.__cached__ == importlib.util.cache_from_source(str(source))
    assert mod.where() == str(source)  # the code's file, as the source loader fixes it
    assert mod.__loader__.get_source(mod.__name__) == source.read_text()
    assert type(sub.__loader__) is classcode._KeptLoader and sub.__path__ == [str(probe / PACKAGE / "sub")]
    assert (importlib.resources.files(sub) / "table.json").read_text() == "{}"
    assert again.declined == {}
    importlib.reload(mod)  # a reload finds it again: served again
    assert mod.VALUE == 1


@pytest.mark.parametrize("compiled_as", ["relative", "moved"])
def test_code_compiled_under_another_path_is_served_and_not_kept_again(probe: Path, tmp_path: Path,
                                                                     compiled_as: str) -> None:
    """`python -m compileall src` in a checkout writes .pyc files naming src/... relative, and a
    tree moved after it was compiled keeps the old path: the standard loader rewrites it at each
    import. Found on a GPU machine: the module code file was declined and rewritten at every run."""
    for name in ("__init__.py", "mod.py", "sub/__init__.py"):
        source = probe / PACKAGE / name
        shown = f"src/{PACKAGE}/{name}" if compiled_as == "relative" else f"/elsewhere/src/{PACKAGE}/{name}"
        py_compile.compile(str(source), dfile=shown, doraise=True)
    file = tmp_path / "cache" / "modules.marshal"
    _kept_once(probe, file)
    written = file.stat().st_mtime_ns
    again = ModuleCode(file, PACKAGE)
    mod, _ = _import_through(again, f"{PACKAGE}.mod", f"{PACKAGE}.sub")
    assert type(mod.__loader__) is classcode._KeptLoader and again.declined == {}
    assert mod.where() == str(probe / PACKAGE / "mod.py")  # the file where it is now, as the source loader says
    again.save()
    assert file.stat().st_mtime_ns == written  # nothing new to keep: not rewritten


def test_the_modules_a_run_imported_are_read_by_one_unmarshal_and_regrouped_once(probe: Path, tmp_path: Path) -> None:
    """The code of the modules the writing run imported is one marshalled group, read when the
    file is; a later run that imports fewer regroups the file once (the others as their own
    bytes, read only when imported), and a run after that does not write it again."""
    file = tmp_path / "modules.marshal"
    _kept_once(probe, file)
    both = ModuleCode(file, PACKAGE)
    assert {start for _, start, _ in both.entries.values()} == {-1} and len(both.shared) == 2
    assert not both.regrouped
    (mod,) = _import_through(both, f"{PACKAGE}.mod")  # sub is not imported this time
    assert type(mod.__loader__) is classcode._KeptLoader and mod.VALUE == 1
    both.save()
    regrouped = ModuleCode(file, PACKAGE)
    assert regrouped.regrouped and len(regrouped.shared) == 1
    assert regrouped.entries[f"{PACKAGE}.mod"][1] == -1 and regrouped.entries[f"{PACKAGE}.sub"][1] >= 0
    written = file.read_bytes()
    (sub,) = _import_through(regrouped, f"{PACKAGE}.sub")  # served from its own bytes
    assert type(sub.__loader__) is classcode._KeptLoader and sub.NAME == "sub"
    regrouped.save()
    assert file.read_bytes() == written  # regrouped once: runs that alternate do not rewrite it


def _rewrite_index(file: Path, change: Callable[[tuple[Any, ...]], tuple[Any, ...]]) -> tuple[Any, ...]:
    """The file's index (format, prefix, entries, shared group's length, regrouped) replaced by
    ``change(index)``, its codes left as they are; the index as it was."""
    data = file.read_bytes()
    head = 8 + int.from_bytes(data[:8], "little")
    index: tuple[Any, ...] = marshal.loads(data[8:head])
    new = marshal.dumps(change(index))
    file.write_bytes(len(new).to_bytes(8, "little") + new + data[head:])
    return index


def test_a_file_of_the_layout_before_the_shared_group_is_not_read(probe: Path, tmp_path: Path) -> None:
    file = tmp_path / "modules.marshal"
    _kept_once(probe, file)
    fmt, _, _, shared, _ = _rewrite_index(file, lambda index: ("kernellab-modulecode-1", *index[1:3]))
    assert ModuleCode(file, PACKAGE).entries == {} and fmt == classcode.MODULE_FORMAT and shared > 0


def test_an_entry_outside_the_shared_group_is_neither_served_nor_kept(probe: Path, tmp_path: Path) -> None:
    file = tmp_path / "modules.marshal"
    _kept_once(probe, file)

    def misplaced(index: tuple[Any, ...]) -> tuple[Any, ...]:
        entries = {name: (entry, -1, 99 if name.endswith(".mod") else place)
                   for name, (entry, _, place) in index[2].items()}
        return (*index[:2], entries, *index[3:])

    _rewrite_index(file, misplaced)
    finder = ModuleCode(file, PACKAGE)
    (sub,) = _import_through(finder, f"{PACKAGE}.sub")  # mod not imported: its entry is dropped at the save
    finder.save()
    assert type(sub.__loader__) is classcode._KeptLoader
    assert set(ModuleCode(file, PACKAGE).entries) == {f"{PACKAGE}.sub"}
    (mod,) = _import_through(ModuleCode(file, PACKAGE), f"{PACKAGE}.mod")
    assert mod.VALUE == 1 and type(mod.__loader__).__name__ == "SourceFileLoader"


def test_invalidated_caches_look_at_the_folders_again(probe: Path, tmp_path: Path) -> None:
    file = tmp_path / "modules.marshal"
    _kept_once(probe, file)
    finder = ModuleCode(file, PACKAGE)
    (mod,) = _import_through(finder, f"{PACKAGE}.mod")
    assert type(mod.__loader__) is classcode._KeptLoader
    (probe / PACKAGE / "mod").mkdir()  # a package now wins over mod.py
    (probe / PACKAGE / "mod" / "__init__.py").write_text("VALUE = 9\n")
    _listing_changed(probe / PACKAGE)
    importlib.invalidate_caches()
    sys.meta_path.insert(0, finder)  # type: ignore[arg-type]
    try:
        importlib.invalidate_caches()
    finally:
        sys.meta_path.remove(finder)  # type: ignore[arg-type]
    (mod,) = _import_through(finder, f"{PACKAGE}.mod")
    assert mod.VALUE == 9


def test_an_edited_source_is_imported_normally_and_kept_again(probe: Path, tmp_path: Path) -> None:
    file = tmp_path / "modules.marshal"
    _kept_once(probe, file)
    source = probe / PACKAGE / "mod.py"
    source.write_text(source.read_text().replace("VALUE = 1", "VALUE = 22"))
    stale = ModuleCode(file, PACKAGE)
    (mod,) = _import_through(stale, f"{PACKAGE}.mod")
    assert mod.VALUE == 22 and type(mod.__loader__).__name__ == "SourceFileLoader"
    stale.save()  # the file is refreshed: the new code is served next time
    (mod,) = _import_through(ModuleCode(file, PACKAGE), f"{PACKAGE}.mod")
    assert mod.VALUE == 22 and type(mod.__loader__) is classcode._KeptLoader


def test_a_source_with_the_same_size_and_another_mtime_is_not_served(probe: Path, tmp_path: Path) -> None:
    file = tmp_path / "modules.marshal"
    _kept_once(probe, file)
    source = probe / PACKAGE / "mod.py"
    source.write_text(source.read_text().replace("VALUE = 1", "VALUE = 3"))
    st = source.stat()
    os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    (mod,) = _import_through(ModuleCode(file, PACKAGE), f"{PACKAGE}.mod")
    assert mod.VALUE == 3 and type(mod.__loader__).__name__ == "SourceFileLoader"


def test_a_source_edited_between_its_import_and_the_save_is_not_kept(probe: Path, tmp_path: Path) -> None:
    """The code kept is the .pyc's, with the .pyc's stamp: an edit after the import leaves the
    old code with the old stamp, which the new source does not match."""
    file = tmp_path / "modules.marshal"
    finder = ModuleCode(file, PACKAGE)
    (mod,) = _import_through(finder, f"{PACKAGE}.mod")
    source = probe / PACKAGE / "mod.py"
    source.write_text(source.read_text().replace("VALUE = 1", "VALUE = 44"))
    finder.save()
    (mod,) = _import_through(ModuleCode(file, PACKAGE), f"{PACKAGE}.mod")
    assert mod.VALUE == 44 and type(mod.__loader__).__name__ == "SourceFileLoader"


def test_a_new_file_beside_a_kept_module_stops_its_serving(probe: Path, tmp_path: Path) -> None:
    """A package or an extension of the same name would win over the module: any change to the
    folder's listing declines what was kept from it."""
    file = tmp_path / "modules.marshal"
    _kept_once(probe, file)
    (probe / PACKAGE / "mod").mkdir()
    (probe / PACKAGE / "mod" / "__init__.py").write_text("VALUE = 5\n")
    _listing_changed(probe / PACKAGE)
    importlib.invalidate_caches()
    (mod,) = _import_through(ModuleCode(file, PACKAGE), f"{PACKAGE}.mod")
    assert mod.VALUE == 5 and mod.__file__.endswith("__init__.py")


def test_a_package_found_elsewhere_is_not_served_from_another_copy(probe: Path, tmp_path: Path) -> None:
    file = tmp_path / "modules.marshal"
    _kept_once(probe, file)
    other = tmp_path / "other"
    (other / PACKAGE).mkdir(parents=True)
    (other / PACKAGE / "__init__.py").write_text("")
    (other / PACKAGE / "mod.py").write_text("VALUE = 6\n")
    del sys.modules[PACKAGE]
    sys.path.insert(0, str(other))
    try:
        importlib.invalidate_caches()
        (mod,) = _import_through(ModuleCode(file, PACKAGE), f"{PACKAGE}.mod")
    finally:
        sys.path.remove(str(other))
    assert mod.VALUE == 6 and mod.__file__ == str(other / PACKAGE / "mod.py")


def test_a_file_others_may_write_is_ignored(probe: Path, tmp_path: Path) -> None:
    file = tmp_path / "modules.marshal"
    _kept_once(probe, file)
    file.chmod(0o664)  # writable by the group: code is never run from it
    assert ModuleCode(file, PACKAGE).entries == {}
    file.chmod(0o600)
    assert ModuleCode(file, PACKAGE).entries
    head = marshal.dumps(("another layout", None, {}))
    file.write_bytes(len(head).to_bytes(8, "little") + head)
    assert ModuleCode(file, PACKAGE).entries == {}


def test_nothing_is_written_under_dont_write_bytecode(probe: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    file = tmp_path / "modules.marshal"
    finder = ModuleCode(file, PACKAGE)
    _import_through(finder, f"{PACKAGE}.mod")
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    finder.save()
    assert not file.exists()
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    finder.save()
    assert file.exists()


def test_only_the_source_loaders_imports_from_timestamp_pycs_are_kept(probe: Path, tmp_path: Path) -> None:
    """A module put in place of the import, a namespace package, a hash-based .pyc: never kept."""
    (probe / PACKAGE / "space").mkdir()  # no __init__: a namespace package
    (probe / PACKAGE / "hashed.py").write_text("VALUE = 7\n")
    source = str(probe / PACKAGE / "hashed.py")
    py_compile.compile(source, importlib.util.cache_from_source(source),
                       invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    importlib.invalidate_caches()
    file = tmp_path / "modules.marshal"
    finder = ModuleCode(file, PACKAGE)
    _import_through(finder, f"{PACKAGE}.mod", f"{PACKAGE}.space", f"{PACKAGE}.hashed")
    sys.modules[f"{PACKAGE}.mod"] = types.ModuleType(f"{PACKAGE}.mod")  # a test's stand-in
    finder.save()
    assert not file.exists()  # nothing keepable: no file


def test_the_file_is_bounded(probe: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    file = tmp_path / "modules.marshal"
    _kept_once(probe, file)
    monkeypatch.setattr(classcode, "MAX_MODULE_BYTES", 1)
    (probe / PACKAGE / "other.py").write_text("VALUE = 8\n")
    importlib.invalidate_caches()
    finder = ModuleCode(file, PACKAGE)
    _import_through(finder, f"{PACKAGE}.other")  # the folder changed: mod is stale, other is new
    finder.save()
    assert set(ModuleCode(file, PACKAGE).entries) == {f"{PACKAGE}.other"}


def _program(cache: Path, src: Path, *args: str, env: dict[str, str] | None = None,
             python: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """kernellab's program from the copy at ``src``; at exit it writes the loader of each
    kernellab module (and checks the data files it reads by their package) to stderr."""
    code = ("import atexit, sys\n"
            "def report():\n"
            "    import json\n"
            "    from importlib import resources\n"
            "    assert (resources.files('kernellab') / 'data' / 'vkformats.json').is_file()\n"
            "    mods = {n: m for n, m in sys.modules.items() if n.startswith('kernellab.')}\n"
            "    for n, m in mods.items():  # the attributes a normal import gives, on every loader\n"
            "        if m.__spec__.origin is None:  # a namespace package: no file\n"
            "            continue\n"
            "        assert m.__file__ == m.__spec__.origin and m.__cached__ == m.__spec__.cached, n\n"
            "        if hasattr(m, '__path__'):\n"
            "            assert m.__path__ == [m.__file__.rpartition('/')[0]], n\n"
            "            assert (resources.files(n) / '__init__.py').is_file(), n\n"
            "    loaders = {n: type(m.__loader__).__name__ for n, m in mods.items()}\n"
            "    loaders['(finder)'] = str(any(type(f).__name__ == 'ModuleCode' for f in sys.meta_path))\n"
            "    print(json.dumps(loaders), file=sys.stderr)\n"
            "atexit.register(report)\n"
            "from kernellab.cli import program\nprogram()")
    # the copy first; the rest of the path stays (a machine whose packages are installed with --target)
    path = os.pathsep.join(filter(None, [str(src), os.environ.get("PYTHONPATH", "")]))
    base = {**os.environ, "KERNELLAB_CACHE_DIR": str(cache), "PYTHONPATH": path, **(env or {})}
    for name in ("KERNELLAB_NO_CACHE", "PYTHONDONTWRITEBYTECODE"):
        if name not in (env or {}):
            base.pop(name, None)
    return subprocess.run([sys.executable, *python, "-c", code, *args], capture_output=True, text=True, env=base)


def _loaders(proc: subprocess.CompletedProcess[str]) -> dict[str, str]:
    return json.loads(proc.stderr.strip().splitlines()[-1])


def test_the_program_serves_kernellab_from_the_kept_file_on_its_second_run(tmp_path: Path) -> None:
    """The program as a user starts it: the second ``validate`` imports the command's modules from
    the file; an edited module is imported from its source and kept again; the run's result, and
    ``-X importtime``'s, are the same."""
    import shutil

    src = tmp_path / "src"
    shutil.copytree(Path(classcode.__file__).parent, src / "kernellab",
                    ignore=shutil.ignore_patterns("__pycache__"))
    scenario = Path(__file__).resolve().parents[2] / "examples" / "vector_add" / "scenario.json"
    cache = tmp_path / "cache"
    first = _program(cache, src, "validate", str(scenario))
    assert first.returncode == 0, first.stderr[-2000:]
    assert "SourceFileLoader" in _loaders(first).values()
    assert list((cache / "python").glob("modulecode-validate-*.marshal"))

    second = _program(cache, src, "validate", str(scenario))
    assert second.returncode == 0 and second.stdout == first.stdout, second.stderr[-2000:]
    loaders = _loaders(second)
    assert loaders["kernellab.commands.validate"] == "_KeptLoader"
    assert loaders["kernellab.cli"] == "SourceFileLoader"  # imported before the finder is in place
    assert loaders["(finder)"] == "True"
    dont_write = _program(cache, src, "validate", str(scenario), env={"PYTHONDONTWRITEBYTECODE": "1"})
    assert _loaders(dont_write)["kernellab.commands.validate"] == "_KeptLoader"  # read, never written

    edited = src / "kernellab" / "commands" / "validate.py"
    edited.write_text(edited.read_text() + "\nprint('edited', file=__import__('sys').stderr)\n")
    third = _program(cache, src, "validate", str(scenario))
    assert third.returncode == 0 and "edited" in third.stderr, third.stderr[-2000:]
    assert _loaders(third)["kernellab.commands.validate"] == "SourceFileLoader"
    fourth = _program(cache, src, "validate", str(scenario), python=("-X", "importtime"))
    assert fourth.returncode == 0 and "edited" in fourth.stderr, fourth.stderr[-2000:]
    # importtime times the import statement (importlib.import_module, which imports the command, is not timed)
    assert re.search(r"^import time:.*\|\s+kernellab\.commands\.options$", fourth.stderr, re.MULTILINE)
    assert _loaders(fourth)["kernellab.commands.options"] == "_KeptLoader"
    assert _loaders(fourth)["kernellab.commands.validate"] == "_KeptLoader"


def test_the_program_writes_no_module_file_when_it_may_not(tmp_path: Path) -> None:
    """``KERNELLAB_NO_CACHE``, ``PYTHONDONTWRITEBYTECODE`` and a cache folder that cannot be
    written: the command runs as before, with no file (and no error)."""
    src = Path(classcode.__file__).parents[1]
    bad = tmp_path / "missing.json"
    for env in ({"KERNELLAB_NO_CACHE": "1"}, {"PYTHONDONTWRITEBYTECODE": "1"}):
        cache = tmp_path / f"cache-{len(env)}-{next(iter(env))}"
        proc = _program(cache, src, "validate", str(bad), env=env)
        assert proc.returncode == 2 and "missing.json" in proc.stderr and "Traceback" not in proc.stderr
        assert not list(cache.glob("python/modulecode-*"))
        assert _loaders(proc)["(finder)"] == "False"  # no file to read, none to write: no finder at all
    blocked = tmp_path / "a-file"  # no folder can be made below it (read-only as root too)
    blocked.write_text("")
    proc = _program(blocked / "cache", src, "validate", str(bad))
    assert proc.returncode == 2 and "missing.json" in proc.stderr and "Traceback" not in proc.stderr


def test_every_folder_of_kernellab_modules_is_a_regular_package() -> None:
    """A namespace package has no file, so the kept module code cannot serve it (the path finder
    searches for it on every run) and a finder could take it from any folder on the path."""
    root = Path(classcode.__file__).parent
    folders = {p.parent for p in root.rglob("*.py")}
    assert folders and all((folder / "__init__.py").is_file() for folder in folders), \
        sorted(str(f.relative_to(root)) for f in folders if not (f / "__init__.py").is_file())
