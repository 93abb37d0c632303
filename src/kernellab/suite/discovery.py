"""Finding a suite's workloads (those with an expectations sidecar) and sharding it.

A workload's id is its path relative to the current folder (absolute when outside it), with
``/`` separators: ids name tests in reports and baselines, and decide the shard.
"""
from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

from kernellab.errors import InputError, UsageError
from kernellab.records import dataclass
from kernellab.suite.expectations import AMBER_SUFFIX, SIDECAR_SUFFIX, is_sidecar, load_expectations, sidecar_for


@dataclass(frozen=True)
class SuiteItem:
    id: str
    workload: Path
    sidecar: Path


def workload_id(path: Path) -> str:
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return absolute.as_posix()


FORMAT_NAMES = {"pyschedcl": "PySchedCL spec", "kernel-instantiation": "kernel-instantiation file"}


def workload_format(workload: Path) -> str:
    """The workload's format; a file that cannot be told is taken for a scenario, so its run
    reports what is wrong with it as that workload's error."""
    from kernellab.formats.detect import detect

    try:
        return detect(workload)
    except InputError:
        return "scenario"


def _item(sidecar: Path) -> SuiteItem:
    from kernellab.suite.compare import check_references

    expectations = load_expectations(sidecar)
    workload = expectations.workload
    if not workload.is_file():
        raise InputError(f"the workload {workload} of these expectations does not exist", file=sidecar)
    check_references(expectations)
    return SuiteItem(workload_id(workload), workload, sidecar)


def discover(paths: Iterable[str | Path], notes: list[str] | None = None) -> list[SuiteItem]:
    """Every workload with expectations under ``paths`` (folders are searched recursively; a
    workload file or a sidecar may be named directly), sorted by id, each once. Every sidecar is
    checked here, its references read too, so a bad one stops the suite before anything runs
    (exit 2). Suites run scenarios: a kernel-instantiation file or PySchedCL spec with a sidecar
    (checked by ``run --check``) is left out, with a line in ``notes``."""
    sidecars: set[Path] = set()
    ambers: set[Path] = set()
    for p in map(Path, paths):
        if p.is_dir():
            sidecars.update(q for q in p.rglob(f"*{SIDECAR_SUFFIX}") if q.is_file())
            ambers.update(q for q in p.rglob(f"*{AMBER_SUFFIX}") if q.is_file())
        elif p.suffix == AMBER_SUFFIX and p.is_file():
            # an AmberScript file carries its expectations (EXPECT): it is its own sidecar
            ambers.add(p)
        elif is_sidecar(p) and p.is_file():
            sidecars.add(p)
        elif p.is_file():
            sidecar = sidecar_for(p)
            if not sidecar.is_file():
                raise InputError(f"no expectations beside it ({sidecar.name}); write them with `kernellab bless {p}`",
                                 file=p)
            sidecars.add(sidecar)
        else:
            raise UsageError(f"{p}: no such file or folder")
    problems = []
    items: dict[str, SuiteItem] = {}
    for sidecar in sorted(sidecars):
        try:
            item = _item(sidecar)
        except InputError as exc:
            problems.extend(exc.problems)
            continue
        fmt = workload_format(item.workload)
        if fmt != "scenario":
            if notes is not None:
                notes.append(f"{item.id}: a {FORMAT_NAMES.get(fmt, fmt)}, left out (suites run scenarios; check it with "
                             f"`kernellab run {item.id} --check`)")
            continue
        items.setdefault(item.id, item)
    for amber in sorted(ambers):
        item_id = workload_id(amber)
        items.setdefault(item_id, SuiteItem(item_id, amber, amber))
    if problems:
        raise InputError(problems)
    return sorted(items.values(), key=lambda i: i.id)


def parse_shard(text: str) -> tuple[int, int]:
    """``I/N`` with 1 <= I <= N (for a Kubernetes indexed job: ``$((JOB_COMPLETION_INDEX + 1))/N``)."""
    index, sep, count = text.partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        i = n = 0
    if not sep or n < 1 or not 1 <= i <= n:
        raise UsageError(f"--shard {text!r}: expected I/N with 1 <= I <= N, such as 2/4")
    return i, n


def shard_of(item_id: str, count: int) -> int:
    """The shard (1-based) an id belongs to: a hash of the id, so adding a workload moves no other."""
    digest = hashlib.sha256(item_id.encode()).digest()
    return int.from_bytes(digest[:8], "little") % count + 1


def shard(items: list[SuiteItem], index: int, count: int) -> list[SuiteItem]:
    return [i for i in items if shard_of(i.id, count) == index]
