"""AmberScript files mutated word by word (numbers made huge, negative or odd, words dropped,
repeated or swapped, control characters and path words put in): the reader gives an
:class:`InputError` naming the line, or a script, never another exception, within a time limit
and without growing memory (its limits count sizes before anything is made)."""
from __future__ import annotations

import random
import re
import resource
import shutil
from pathlib import Path

import pytest

from kernellab.errors import InputError
from kernellab.formats.amber.parse import parse_amber

SEEDS = sorted((Path(__file__).resolve().parents[1] / "amber").glob("*.amber"))
WORDS = ["4294967296", "18446744073709551616", "-1", "0", "0x7fffffff", "99999999999999", "1e308", "nan", "-0",
         "END", "\x1b[31m", "../x", "/dev/zero", "a\x00b", '"', "#", ",", "DATA", "FILE", "STRUCT", "REPEAT",
         "SIZE", "STRIDE", "OFFSET", "DESCRIPTOR_RANGE", "MIP_LEVELS", "SAMPLES", "BUFFER_ARRAY", "uint8", "float16"]


def mutate(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(lines))
        words = lines[i].split(" ")
        action = rng.randrange(6)
        j = rng.randrange(len(words))
        if action == 0 and any(re.fullmatch(r"-?\d+", w) for w in words):
            j = rng.choice([k for k, w in enumerate(words) if re.fullmatch(r"-?\d+", w)])
            words[j] = rng.choice(WORDS[:8])
        elif action == 1:
            words[j] = rng.choice(WORDS)
        elif action == 2:
            del words[j]
        elif action == 3:
            words.insert(j, rng.choice(WORDS))
        elif action == 4:
            lines.insert(i, lines[rng.randrange(len(lines))])
        else:
            del lines[i]
            continue
        lines[i] = " ".join(words)
    return "\n".join(lines)


def test_mutated_scripts_are_read_or_refused(tmp_path: Path) -> None:
    for f in SEEDS[0].parent.iterdir():
        shutil.copy(f, tmp_path / f.name)
    rng = random.Random(2026)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, hard))  # a MemoryError is a finding, not a dead machine
    try:
        for case in range(1500):
            seed = rng.choice(SEEDS)
            text = mutate(seed.read_text(), rng)
            try:
                parse_amber(text, tmp_path / seed.name)
            except InputError as exc:
                assert all(p.where.startswith("line ") or p.file != str(tmp_path / seed.name) for p in exc.problems), \
                    (case, seed.name, str(exc))
            except Exception as exc:  # noqa: BLE001 -- the finding: any other exception
                pytest.fail(f"case {case} of {seed.name}: {type(exc).__name__}: {exc}\n{text}")
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
