"""Choosing a suite's workloads: ``-k`` patterns and deqp-runner's skip lists.

A skip list holds one regular expression per line (``#`` comments and blank lines ignored), as
deqp-runner's ``--skips`` files do; a workload whose id any of them matches (anywhere in the id,
``re.search``) is not run and is reported as ``Skip``. ``-k`` patterns are regular expressions
too: with any given, only the workloads whose id one of them matches are run, the others are
left out of every report (as pytest's ``-k`` deselects).
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from kernellab.errors import InputError, Problem, UsageError
from kernellab.suite.discovery import SuiteItem


def compile_patterns(patterns: Iterable[str], flag: str = "-k") -> list[re.Pattern[str]]:
    out = []
    for text in patterns:
        try:
            out.append(re.compile(text))
        except re.error as exc:
            raise UsageError(f"{flag} {text!r}: not a regular expression ({exc})") from None
    return out


def load_skips(path: str | Path) -> list[re.Pattern[str]]:
    """The regular expressions of a skip list; every bad line is reported with its number (exit 2)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise InputError(f"cannot read the skip list: {why}", file=path) from None
    patterns = []
    problems = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            patterns.append(re.compile(line))
        except re.error as exc:
            problems.append(Problem(str(path), f"line {number}", f"{line!r} is not a regular expression ({exc})"))
    if problems:
        raise InputError(problems)
    return patterns


def matches(item_id: str, patterns: list[re.Pattern[str]]) -> bool:
    return any(p.search(item_id) for p in patterns)


def select(items: list[SuiteItem], keep: list[re.Pattern[str]],
           skip: list[re.Pattern[str]]) -> tuple[list[SuiteItem], list[SuiteItem]]:
    """(to run, skipped): ``keep`` (when any) deselects what none of it matches; ``skip`` then
    sets aside what it matches."""
    chosen = [i for i in items if not keep or matches(i.id, keep)]
    return [i for i in chosen if not matches(i.id, skip)], [i for i in chosen if matches(i.id, skip)]
