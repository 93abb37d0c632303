"""Baselines of expected failures, as deqp-runner keeps them: one ``id,Status`` line each.

``# comments`` and blank lines are ignored. A workload listed there may fail (any status but
Pass) without failing the suite; if it passes, that is an unexpected pass and does fail it, so
the baseline is kept up to date (``--write-baseline`` writes the current failures).
"""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from kernellab.errors import InputError, Problem

STATUSES = ("Fail", "Crash", "Timeout", "Error")


def load_baseline(path: str | Path) -> dict[str, str]:
    return {item_id: status for item_id, (status, _) in read_baseline(path).items()}


def read_baseline(path: str | Path) -> dict[str, tuple[str, int]]:
    """Each listed id with its status and the number of the line that lists it."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read the baseline: {exc.strerror}", file=path) from None
    expected: dict[str, tuple[str, int]] = {}
    problems = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        item_id, sep, status = line.rpartition(",")
        if not sep or not item_id or status.strip() not in STATUSES:
            problems.append(Problem(str(path), f"line {number}",
                                    f"expected ID,STATUS with STATUS one of {'|'.join(STATUSES)}, got {line!r}"))
            continue
        expected[item_id.strip()] = (status.strip(), number)
    if problems:
        raise InputError(problems)
    return expected


def unmatched_lines(path: str | Path, entries: dict[str, tuple[str, int]], ids: Iterable[str]) -> list[str]:
    """A warning for each baseline line that names no workload of the suite (a renamed or
    removed workload, an id written from another folder): such a line would otherwise be
    ignored without a word."""
    known = set(ids)
    return [f"{path}: line {line}: warning: {item_id!r} matches no workload under the paths given "
            f"(ids are paths relative to the current folder)"
            for item_id, (_, line) in sorted(entries.items(), key=lambda e: e[1][1]) if item_id not in known]


def baseline_text(failures: Iterable[tuple[str, str]]) -> str:
    lines = ["# kernellab test baseline: expected failures, one ID,STATUS per line"]
    lines += [f"{item_id},{status}" for item_id, status in sorted(failures)]
    return "\n".join(lines) + "\n"
