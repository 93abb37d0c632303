"""A whole output folder written beside its place and moved in when complete (``kernellab
import``): nothing of it is left half-written. Apart from :mod:`kernellab.outputs`, whose
files a run writes, so that a run loads none of this (start-up, issue 23)."""
from __future__ import annotations

import os
from pathlib import Path

from kernellab.errors import FileSystemError
from kernellab.outputs import _NAME_KEPT, _absolute

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from collections.abc import Iterator
    from contextlib import AbstractContextManager


def staged_folder(folder: Path) -> AbstractContextManager[Path]:
    """A new folder beside ``folder`` to write a whole output folder into; when the block ends
    without an error its content is moved into ``folder`` (renamed into place when ``folder`` is
    missing, else each file replaces its namesake and other files stay, as a direct write did).
    On an error the staged folder, and any parent made for it, is removed: ``folder`` is as before."""
    from contextlib import contextmanager  # import's only: a run never imports contextlib here

    return contextmanager(_staged_folder)(folder)


def _staged_folder(folder: Path) -> Iterator[Path]:
    import shutil
    import tempfile

    folder = _absolute(folder)
    made: list[Path] = []
    probe = folder.parent
    while not probe.exists() and probe.parent != probe:
        made.append(probe)
        probe = probe.parent
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(prefix=f".{folder.name[:_NAME_KEPT]}.", suffix=".import.tmp", dir=folder.parent))
    except OSError as exc:
        raise FileSystemError.from_os(exc, exc.filename or folder) from None
    try:
        yield stage
        _move_into(stage, folder)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
        if not folder.exists():
            for parent in made:
                try:
                    parent.rmdir()
                except OSError:
                    pass


def _move_into(stage: Path, folder: Path) -> None:
    """Put the staged tree ``stage`` at ``folder``: one rename when ``folder`` is missing."""
    try:
        if not os.path.lexists(folder):
            try:
                os.rename(stage, folder)
                return
            except OSError:  # a folder made meanwhile (or an empty one) is merged into below
                pass
        _check_mergeable(stage, folder)
        for base, _dirs, files in os.walk(stage):
            target = folder / Path(base).relative_to(stage)
            target.mkdir(exist_ok=True)
            for name in files:
                os.replace(Path(base) / name, target / name)
    except OSError as exc:
        raise FileSystemError.from_os(exc, exc.filename or folder) from None


def _check_mergeable(stage: Path, folder: Path) -> None:
    """Refuse, before anything moves, a staged file whose place in ``folder`` is a folder or a
    staged folder whose place is a file: the merge then cannot stop half-way on them."""
    if not folder.is_dir():
        raise FileSystemError(f"{folder}: cannot write outputs there: it is not a folder")
    for base, dirs, files in os.walk(stage):
        target = folder / Path(base).relative_to(stage)
        for name in dirs:
            if os.path.lexists(target / name) and not (target / name).is_dir():
                raise FileSystemError(f"{target / name}: cannot write outputs there: it is not a folder")
        for name in files:
            if (target / name).is_dir():
                raise FileSystemError(f"{target / name}: cannot replace it with a file: it is a folder")


def staged_path(path: str | os.PathLike[str], stage: Path, folder: Path) -> Path:
    """Where ``path``, written under ``stage``, lies once the stage is moved to ``folder``."""
    path = Path(path)
    for base in (stage, Path(os.path.realpath(stage))):
        try:
            return folder / path.relative_to(base)
        except ValueError:
            continue
    return path


__all__ = ["staged_folder", "staged_path"]
