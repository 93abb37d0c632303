"""A kernel source or included file read as a workload's data: only a regular file inside the
workload's folder (or an ``--allow-outside`` folder), opened without blocking or following a
symlink swapped in, and at most :data:`MAX_FILE_BYTES`. The include step (``preprocess``) reads
every included file through it; a run of a SPIR-V module reads its module through it alone."""
from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from kernellab.errors import shown

#: a kernel source or included file larger than this is refused (a kernel's header is kilobytes)
MAX_FILE_BYTES = 16 << 20


def is_inside(path: str, roots: Sequence[Path]) -> bool:
    """Whether the resolved ``path`` is one of ``roots`` or inside one."""
    p = Path(path)
    return any(p == root or root in p.parents for root in roots)


def read_checked(named: Path, roots: Sequence[Path]) -> tuple[Path, bytes]:
    """The resolved path and bytes of ``named``, read only when it resolves inside ``roots`` and is
    a regular file of at most :data:`MAX_FILE_BYTES`; otherwise ValueError saying why. ``roots``
    are compared resolved, as the file is (a relative or symlinked workload folder is the same folder)."""
    real = os.path.realpath(named)
    # ``real`` holds no symlink and no ``..``, so a root it lies under as written is that folder;
    # only a file not found there is compared with the roots resolved (each root's resolution is
    # a system call per part of its path, paid on every run otherwise)
    if not is_inside(real, roots):
        roots = [Path(os.path.realpath(root)) for root in roots]
    if not is_inside(real, roots):
        raise ValueError(f"{real} is outside the workload's folder {shown(roots[0])} (allow it with --allow-outside)")
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_NOFOLLOW", 0) \
        | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(real, flags)
    except OSError as exc:
        raise ValueError(f"cannot read {real}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{real} is not a regular file (a FIFO, device or folder is never read)")
        if info.st_size > MAX_FILE_BYTES:
            raise ValueError(f"{real} is larger than {MAX_FILE_BYTES >> 20} MiB")
        opened = _opened_path(fd)  # a folder swapped for a symlink after realpath: what was opened
        if opened is not None and not is_inside(opened, roots):
            raise ValueError(f"{opened} is outside the workload's folder {shown(roots[0])} (allow it with --allow-outside)")
        chunks = []
        left = MAX_FILE_BYTES + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        if left <= 0:
            raise ValueError(f"{real} is larger than {MAX_FILE_BYTES >> 20} MiB")
        return Path(real), b"".join(chunks)
    finally:
        os.close(fd)


def _opened_path(fd: int) -> str | None:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
