"""Reference for this example: c = a + b."""
from __future__ import annotations

from pathlib import Path

import numpy as np


def check(out: Path) -> None:
    here = Path(__file__).parent
    c = np.load(out / "c.npy")
    assert c.dtype == np.int8 and c.ndim == 1  # Arm's format: the buffer's raw bytes
    np.testing.assert_array_equal(c.view(np.float32), np.load(here / "a.npy") + np.load(here / "b.npy"))
