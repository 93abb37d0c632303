"""The cache folder's growing parts (compiled artifacts, AmberScript folders) are kept under
KERNELLAB_CACHE_MAX: the least recently used go first, only kernellab's names, no symlink
followed, never a run's failure, and a run of hits does no trimming work."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from helpers.cache_entries import fill, key, used
from kernellab import cachebound, config
from kernellab.cachebound import BLOCK, LEDGER, added, added_folder, trim
from kernellab.compile.cache import ArtifactCache

DAY = 86400.0


def test_a_small_bound_trims_to_under_it_oldest_first(tmp_path: Path) -> None:
    cache = ArtifactCache(tmp_path)  # no bound while filling
    paths = fill(cache, 100)
    assert used(tmp_path) == 100 * BLOCK
    left = trim(tmp_path, 40 * BLOCK)
    assert left == used(tmp_path) <= 0.8 * 40 * BLOCK
    kept = [p.exists() for p in paths]
    assert kept == [False] * (100 - sum(kept)) + [True] * sum(kept)  # the newest stay
    assert sum(kept) == 32


def test_writes_trim_when_the_ledger_passes_the_bound(tmp_path: Path) -> None:
    cache = ArtifactCache(tmp_path, bound=30 * BLOCK)
    fill(cache, 200)
    assert used(tmp_path) <= 30 * BLOCK + BLOCK  # at most the write after the last trim over it
    assert (tmp_path / LEDGER).stat().st_size * BLOCK <= 30 * BLOCK


def test_an_older_cache_is_trimmed_at_its_first_counted_write(tmp_path: Path) -> None:
    fill(ArtifactCache(tmp_path), 50)  # written by a kernellab without a bound: no ledger
    ArtifactCache(tmp_path, bound=20 * BLOCK).put(key(999), "spv", b"x")
    assert used(tmp_path) <= 16 * BLOCK


def test_a_reader_of_a_removed_entry_gets_a_miss(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    reader, writer = ArtifactCache(tmp_path), ArtifactCache(tmp_path)
    fill(writer, 10)  # hours old: a hit does not refresh them
    assert reader.get(key(0), "spv") == bytes(3000)
    trim(tmp_path, 2 * BLOCK)  # another process's trim
    assert reader.get(key(0), "spv") is None
    assert not caplog.records


def test_a_hit_refreshes_an_entry_a_day_old_so_it_is_kept(tmp_path: Path) -> None:
    cache = ArtifactCache(tmp_path)
    paths = fill(cache, 10, start=time.time() - 10 * DAY)
    assert cache.get(key(0), "spv") is not None  # the oldest, used again
    assert paths[0].stat().st_mtime > time.time() - 60
    trim(tmp_path, 4 * BLOCK)
    assert paths[0].exists() and not paths[1].exists()
    before = paths[0].stat().st_mtime_ns
    cache.get(key(0), "spv")  # a recent entry is not written to again
    assert paths[0].stat().st_mtime_ns == before


def test_no_symlink_is_followed_and_nothing_not_ours_is_removed(tmp_path: Path) -> None:
    root, outside = tmp_path / "cache", tmp_path / "outside"
    fill(ArtifactCache(root), 5, start=time.time() - 10 * DAY)
    outside.mkdir()
    victims = []
    for name in (key(100), key(101)):
        (outside / f"{name}.spv").write_bytes(bytes(9000))
        victims.append(outside / f"{name}.spv")
    old = time.time() - 10 * DAY
    for v in victims:
        os.utime(v, (old, old))
    (root / "artifacts" / key(100)[:2]).symlink_to(outside)  # a key folder's name: its entry would match
    planted = root / "artifacts" / key(101)[:2] / f"{key(101)}.spv"
    planted.parent.mkdir(exist_ok=True)
    planted.symlink_to(victims[1])  # an entry's name, a symlink out of the cache
    (root / "amber").mkdir()
    (root / "amber" / ("a" * 20)).symlink_to(outside, target_is_directory=True)
    foreign = [root / "artifacts" / "notes.txt", root / "artifacts" / key(101)[:2] / "readme",
               root / "python" / "kept.bin", root / "tool-versions.json", root / "amber" / "mine" / "x.json"]
    for f in foreign:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(bytes(9000))
        os.utime(f, (old, old))
    trim(root, 1)  # a bound below anything: everything of ours may go
    assert all(v.exists() for v in victims) and sorted(outside.iterdir()) == sorted(victims)
    assert planted.is_symlink() and (root / "artifacts" / key(100)[:2]).is_symlink()
    assert (root / "amber" / ("a" * 20)).is_symlink()
    assert all(f.exists() for f in foreign)
    assert list((root / "artifacts").rglob("*.spv")) == [planted]


def amber_folder(root: Path, digest: str, age: float) -> Path:
    folder = root / "amber" / digest
    folder.mkdir(parents=True)
    for name in ("scenario.json", "shader0.comp"):
        (folder / name).write_bytes(bytes(5000))
        os.utime(folder / name, (time.time() - age,) * 2)
    os.utime(folder, (time.time() - age,) * 2)
    return folder


def test_old_amber_folders_go_first_and_one_in_use_stays(tmp_path: Path) -> None:
    old = [amber_folder(tmp_path, f"{n:020x}", (10 - n) * DAY) for n in range(5)]
    young = amber_folder(tmp_path, "f" * 20, 60.0)  # being materialized or run by another process
    trim(tmp_path, 6 * BLOCK)  # five blocks a folder
    assert young.exists() and not any(f.exists() for f in old)
    assert os.listdir(tmp_path / "amber") == ["f" * 20]  # no tomb left


def test_an_amber_folder_written_is_counted(tmp_path: Path) -> None:
    folder = amber_folder(tmp_path, "0" * 20, 0.0)
    added_folder(tmp_path, folder, 1 << 30)
    assert (tmp_path / LEDGER).stat().st_size == 5  # the folder and its two files of two blocks


@pytest.mark.parametrize(("text", "value"), [("", 1 << 30), ("500M", 500 << 20), ("2G", 2 << 30),
                                             ("1.5GiB", 3 << 29), ("4096k", 4 << 20), ("0", None),
                                             ("1073741824", 1 << 30)])
def test_the_setting(text: str, value: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELLAB_CACHE_MAX", text)
    settings = config.Config.from_environ()
    assert settings.cache_max == value and settings.warnings == ()


@pytest.mark.parametrize("text", ["lots", "-5G", "12", "1Q", "G"])
def test_a_bad_setting_warns_and_the_default_is_used(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELLAB_CACHE_MAX", text)
    settings = config.Config.from_environ()
    assert settings.cache_max == 1 << 30
    assert len(settings.warnings) == 1 and settings.warnings[0].startswith(f"KERNELLAB_CACHE_MAX={text!r} is not")


def test_a_run_of_hits_does_no_trimming_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = ArtifactCache(tmp_path, bound=4 * BLOCK)
    fill(cache, 3)  # under the bound, ledger written
    ledger = (tmp_path / LEDGER).stat()
    opened: list[str] = []
    real_open = os.open

    def no_listing(*args: object, **kwargs: object) -> None:
        raise AssertionError("the cache folder was listed")

    def counting_open(path: str, *args: object, **kwargs: object) -> int:
        opened.append(os.fspath(path))
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", no_listing)
    monkeypatch.setattr(os, "listdir", no_listing)
    monkeypatch.setattr(os, "open", counting_open)
    warm = ArtifactCache(tmp_path, bound=4 * BLOCK)
    for n in range(3):
        assert warm.get(key(n), "spv") == bytes(3000)
    assert len(opened) == 3 and not any(LEDGER in p for p in opened)
    assert (tmp_path / LEDGER).stat().st_mtime_ns == ledger.st_mtime_ns


def test_a_failure_to_trim_is_one_warning_not_an_error(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cachebound, "_warned", False)
    (tmp_path / LEDGER).mkdir()  # not a file, and holding one (an empty folder is replaced): cannot be counted in
    (tmp_path / LEDGER / "x").write_text("")
    added(tmp_path, 100, 1 << 20)
    added(tmp_path, 100, 1 << 20)
    assert [r.levelname for r in caplog.records] == ["WARNING"]
    assert LEDGER in caplog.records[0].getMessage()


def test_materializing_an_amber_script_counts_it_and_trims_the_old(tmp_path: Path) -> None:
    from kernellab.compile.amber import prepare

    root = tmp_path / "cache"
    old = amber_folder(root, "0" * 20, 10 * DAY)
    script = tmp_path / "s.amber"
    script.write_text((Path(__file__).resolve().parents[1] / "amber" / "struct.amber").read_text())
    with config.override(cache_dir=root, cache_max=8 * BLOCK):
        checkpoints = prepare(script)[1]
    assert checkpoints[-1].scenario.is_file() and checkpoints[-1].scenario.parent.parent == root / "amber"
    assert (root / LEDGER).exists() and not old.exists()


def test_while_another_process_trims_a_write_only_counts(tmp_path: Path) -> None:
    fcntl = pytest.importorskip("fcntl")
    cache = ArtifactCache(tmp_path)
    fill(cache, 20)
    (tmp_path / LEDGER).write_bytes(bytes(20))
    with open(tmp_path / LEDGER, "rb") as held:  # another process's trim holds the lock
        fcntl.flock(held, fcntl.LOCK_EX)
        ArtifactCache(tmp_path, bound=4 * BLOCK).put(key(50), "spv", b"x")
        assert used(tmp_path) == 21 * BLOCK and (tmp_path / LEDGER).stat().st_size == 21
    ArtifactCache(tmp_path, bound=4 * BLOCK).put(key(51), "spv", b"x")
    assert used(tmp_path) <= 4 * BLOCK


def test_a_ledger_planted_as_a_symlink_or_fifo_is_not_written_through(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cachebound, "_warned", False)
    victim = tmp_path / "victim"
    victim.write_bytes(b"")
    root = tmp_path / "cache"
    root.mkdir()
    (root / LEDGER).symlink_to(victim)
    added(root, 100, 1 << 20)
    assert victim.read_bytes() == b""
    (root / LEDGER).unlink()
    os.mkfifo(root / LEDGER)
    added(root, 100, 1 << 20)  # no reader: refused at once, not waited on
