"""Writing output files so that nothing is ever half-written.

Every output goes to a temp file in the destination folder and is renamed into place; a run that
fails part-way removes the temp files it made, and a :class:`OutputSet` commits all of a run's
files together at the end so a failed run leaves no ``dst`` file behind.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import IO, Iterator

import numpy as np


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "wb") -> Iterator[IO]:
    """Open a temp file next to ``path``; on success it replaces ``path``, on error it vanishes."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode) as fh:
            yield fh
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_bytes(path: str | os.PathLike[str], data: bytes | memoryview) -> None:
    with atomic_open(path) as fh:
        fh.write(data)


def write_text(path: str | os.PathLike[str], text: str) -> None:
    with atomic_open(path, "w") as fh:
        fh.write(text)


def write_npy(fh: IO[bytes], array: np.ndarray) -> None:
    """Write ``array`` as .npy without an extra copy of its data (it may be a mapped view)."""
    np.lib.format.write_array(fh, np.ascontiguousarray(array), allow_pickle=False)


def save_npy(path: str | os.PathLike[str], array: np.ndarray) -> None:
    with atomic_open(path) as fh:
        write_npy(fh, array)


class OutputSet:
    """Stage a run's output files as temp files and rename them all at :meth:`commit`.

    ``with OutputSet() as outs: outs.npy(path, arr) ... outs.commit()``; leaving the block
    without commit (an exception) removes every staged file.
    """

    def __init__(self) -> None:
        self._staged: list[tuple[str, Path]] = []

    def open(self, path: str | os.PathLike[str]) -> IO[bytes]:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        self._staged.append((tmp, path))
        return os.fdopen(fd, "wb")

    def npy(self, path: str | os.PathLike[str], array: np.ndarray) -> None:
        with self.open(path) as fh:
            write_npy(fh, array)

    def bytes(self, path: str | os.PathLike[str], data: bytes | memoryview) -> None:
        with self.open(path) as fh:
            fh.write(data)

    @property
    def paths(self) -> list[Path]:
        return [p for _, p in self._staged]

    def commit(self) -> list[Path]:
        done = []
        for tmp, path in self._staged:
            os.replace(tmp, path)
            done.append(path)
        self._staged.clear()
        return done

    def discard(self) -> None:
        for tmp, _ in self._staged:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        self._staged.clear()

    def __enter__(self) -> "OutputSet":
        return self

    def __exit__(self, *exc: object) -> None:
        self.discard()
