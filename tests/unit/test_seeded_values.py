"""Unconstrained memory of a launch is filled in the array's own type, a chunk at a time (issue 10:
a 4 GiB array once took 8 GiB of float64 on the way)."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from kernellab.runtime.instantiation import seeded_values


@pytest.mark.parametrize("dtype", ["f4", "i4", "u2", "f8", None])
@pytest.mark.parametrize("count", [0, 1, (1 << 20) + 3])
def test_the_values_do_not_depend_on_the_chunking(dtype: str | None, count: int) -> None:
    got = seeded_values(dtype, count, np.random.default_rng(7))
    rng = np.random.default_rng(7)
    if dtype is None:
        want = rng.integers(0, 256, size=count, dtype=np.uint8).tobytes()
    else:
        dt = np.dtype("<" + dtype)
        want = (rng.random(count) if dt.kind == "f" else rng.integers(0, 128, size=count)).astype(dt).tobytes()
    assert got == want


def test_filling_costs_about_the_array_itself() -> None:
    count = 8 << 20  # 32 MiB of float32; float64 on the way would be 64 MiB more
    tracemalloc.start()
    data = seeded_values("f4", count, np.random.default_rng(1))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(data) == 4 * count
    assert peak < 2.5 * len(data), peak
