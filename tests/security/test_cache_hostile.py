"""The cache folder as a lived-in place: what stands in it under kernellab's names may be
anything (a link, a FIFO, a file of another user's, a hard link to a file elsewhere). kernellab
never writes through it, never waits on it, and its size bound still holds."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers.cache_entries import fill
from kernellab import cachebound
from kernellab.cachebound import BLOCK, LEDGER, added
from kernellab.compile.cache import ArtifactCache


def _artifacts(root: Path) -> int:
    return sum(1 for _ in (root / "artifacts").rglob("*.spv"))


@pytest.mark.parametrize("plant", ["hard link", "symlink", "fifo", "read-only", "empty folder"])
def test_a_planted_ledger_is_replaced_and_the_bound_holds(plant: str, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cachebound, "_warned", False)
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    root = tmp_path / "cache"
    root.mkdir()
    fill(ArtifactCache(root), 20)
    ledger = root / LEDGER
    ledger.unlink(missing_ok=True)
    if plant == "hard link":  # truncating the ledger would cut the file it shares
        os.link(victim, ledger)
    elif plant == "symlink":
        ledger.symlink_to(victim)
    elif plant == "fifo":
        os.mkfifo(ledger)
    elif plant == "empty folder":
        ledger.mkdir()
    else:  # past the bound already (root may write it anyway; anyone else cannot)
        ledger.write_bytes(bytes(20))
        ledger.chmod(0o444)
    added(root, 100, 4 * BLOCK)
    assert victim.read_bytes() == b"precious"
    assert _artifacts(root) <= 4, "a planted ledger turned the cache's bound off"
    st = os.lstat(ledger)
    assert st.st_nlink == 1 and ledger.is_file() and not ledger.is_symlink()
    assert not cachebound._warned


def test_a_kept_module_file_holding_another_modules_code_is_not_served(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A module code file whose entries hold each other's code (damaged, or written by something
    else) would run one module in another's place at every start, a traceback each time: an
    entry's code must be its own file's; a bad entry is imported normally and kept anew."""
    import importlib
    import marshal
    import sys

    from kernellab.classcode import ModuleCode

    root = tmp_path / "src"
    (root / "klswap").mkdir(parents=True)
    (root / "klswap" / "__init__.py").write_text("")
    (root / "klswap" / "one.py").write_text("NAME = 'one'\n")
    (root / "klswap" / "two.py").write_text("NAME = 'two'\n")
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.syspath_prepend(str(root))
    importlib.invalidate_caches()

    def imported(finder: ModuleCode) -> list[str]:
        for name in [n for n in sys.modules if n.startswith("klswap")]:
            del sys.modules[name]
        importlib.import_module("klswap")
        sys.meta_path.insert(0, finder)  # type: ignore[arg-type]
        try:
            return [importlib.import_module(f"klswap.{n}").NAME for n in ("one", "two")]
        finally:
            sys.meta_path.remove(finder)  # type: ignore[arg-type]

    file = tmp_path / "cache" / "modules.marshal"
    try:
        first = ModuleCode(file, "klswap")
        assert imported(first) == ["one", "two"]
        first.save()
        data = file.read_bytes()
        n = int.from_bytes(data[:8], "little")
        items = marshal.loads(data[8:8 + n])  # (format, prefix, index, ...): the index's entries swap places
        index = items[2]
        one, two = index["klswap.one"], index["klswap.two"]
        index["klswap.one"], index["klswap.two"] = (one[0], *two[1:]), (two[0], *one[1:])
        head = marshal.dumps((*items[:2], index, *items[3:]))
        file.write_bytes(len(head).to_bytes(8, "little") + head + data[8 + n:])
        swapped = ModuleCode(file, "klswap")
        assert imported(swapped) == ["one", "two"]
        swapped.save()
        healed = ModuleCode(file, "klswap")
        assert imported(healed) == ["one", "two"] and healed.declined == {}
    finally:
        for name in [n for n in sys.modules if n.startswith("klswap")]:
            del sys.modules[name]


@pytest.mark.parametrize("text", ["0.5", "0.0000001K"])
def test_a_fraction_of_a_byte_does_not_turn_the_bound_off(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a zero means no bound: a size below a byte is a size too small, warned of."""
    from kernellab import config

    monkeypatch.setenv("KERNELLAB_CACHE_MAX", text)
    settings = config.Config.from_environ()
    assert settings.cache_max == config.DEFAULT_CACHE_MAX and len(settings.warnings) == 1


def test_an_amber_folder_record_is_never_written_through_a_planted_link(tmp_path: Path) -> None:
    """The script's places are staged as the folder's other files are (a name of this process's
    own, no symlink followed): a link planted at the old fixed ``.tmp`` name reaches nothing."""
    from kernellab.formats.amber.places import PLACES_FILE, script_line, write_places

    victim = tmp_path / "victim"
    victim.write_text("precious")
    folder = tmp_path / "amber" / "0123456789abcdef0123"
    folder.mkdir(parents=True)
    (folder / (PLACES_FILE + ".tmp")).symlink_to(victim)
    write_places(folder, "s.amber", {"/commands/0": 7})
    assert victim.read_text() == "precious"
    assert not (folder / PLACES_FILE).is_symlink() and script_line(folder, "/commands/0/x") == ("s.amber", 7)
