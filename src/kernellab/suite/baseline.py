"""Baselines of expected failures, as deqp-runner keeps them: one ``id,Status`` line each.

``# comments`` and blank lines are ignored. A workload listed there may fail (any status but
Pass) without failing the suite; if it passes, that is an unexpected pass and does fail it, so
the baseline is kept up to date (``--write-baseline`` writes the current failures).
"""
from __future__ import annotations

from pathlib import Path
from collections.abc import Iterable

from kernellab.errors import InputError, Problem

STATUSES = ("Fail", "Crash", "Timeout", "Error")


def load_baseline(path: str | Path) -> dict[str, str]:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read the baseline: {exc.strerror}", file=path) from None
    expected: dict[str, str] = {}
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
        expected[item_id.strip()] = status.strip()
    if problems:
        raise InputError(problems)
    return expected


def baseline_text(failures: Iterable[tuple[str, str]]) -> str:
    lines = ["# kernellab test baseline: expected failures, one ID,STATUS per line"]
    lines += [f"{item_id},{status}" for item_id, status in sorted(failures)]
    return "\n".join(lines) + "\n"
