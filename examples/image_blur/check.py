"""Reference for this example: a 3x3 box blur with edge clamping, in NumPy."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from kernellab.formats import dds


def check(out: Path) -> None:
    here = Path(__file__).parent
    src = dds.read(here / "input.dds").levels[0].astype(np.float64) / 255
    padded = np.pad(src, ((1, 1), (1, 1), (0, 0)), mode="edge")
    h, w = src.shape[:2]
    want = sum(padded[1 + dy:1 + dy + h, 1 + dx:1 + dx + w] for dy in (-1, 0, 1) for dx in (-1, 0, 1)) / 9
    got = dds.read(out / "blurred.dds").levels[0].astype(np.float64) / 255
    np.testing.assert_allclose(got, want, atol=1.01 / 255)
