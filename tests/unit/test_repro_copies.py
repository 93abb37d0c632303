"""The copies of a source kept for a failed compile's repro command: in the cache folder, the
newest few only (each failure kept one folder in /tmp before, with no end)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from kernellab.compile import preprocess
from kernellab.errors import ToolError


def _fail_once(name: str = "k.comp") -> Path:
    with pytest.raises(ToolError), preprocess.staged(b"void main() {}", name) as folder:
        raise ToolError(f"glslangValidator failed in {folder}")
    return folder


def test_a_failed_compile_keeps_its_copy_in_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("KERNELLAB_NO_CACHE", raising=False)
    folder = _fail_once()
    assert folder.parent == tmp_path / "cache" / "repro" and (folder / "k.comp").read_bytes() == b"void main() {}"
    assert not (folder.parent.stat().st_mode & 0o077)
    with preprocess.staged(b"x", "ok.comp") as good:  # a compile that worked keeps nothing
        pass
    assert not good.exists()


def test_only_the_newest_copies_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("KERNELLAB_NO_CACHE", raising=False)
    old = [_fail_once() for _ in range(preprocess.REPRO_KEPT + 4)]
    for i, folder in enumerate(old):  # made an hour ago, oldest first
        os.utime(folder, (1e9 + i, 1e9 + i))
    (tmp_path / "elsewhere").mkdir()
    planted = tmp_path / "cache" / "repro" / "kernellab-src-link"
    planted.symlink_to(tmp_path / "elsewhere")
    newest = _fail_once()
    left = sorted(p for p in (tmp_path / "cache" / "repro").iterdir() if not p.is_symlink())
    assert newest in left and len(left) == preprocess.REPRO_KEPT
    assert set(old[-(preprocess.REPRO_KEPT - 1):]) <= set(left)  # the newest of the old ones stay
    assert planted.is_symlink() and (tmp_path / "elsewhere").is_dir()  # never followed nor removed


def test_a_young_copy_is_never_pruned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("KERNELLAB_NO_CACHE", raising=False)
    made = [_fail_once() for _ in range(preprocess.REPRO_KEPT + 3)]
    assert all(folder.is_dir() for folder in made)  # another process may be printing any of them


def test_without_a_cache_the_copy_goes_to_the_temporary_folder(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("KERNELLAB_NO_CACHE", "1")
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)
    folder = _fail_once()
    assert folder.parent == tmp_path / "tmp" and not (tmp_path / "cache").exists()
