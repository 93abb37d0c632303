"""Reference for this example: 10 diffusion steps per frame, frames captured by mark_boundary."""
from __future__ import annotations

from pathlib import Path

import numpy as np


def _step(t: np.ndarray, k: np.float32) -> np.ndarray:
    nxt = t.copy()
    nxt[1:-1] = t[1:-1] + k * (t[:-2] - np.float32(2) * t[1:-1] + t[2:])
    return nxt


def check(out: Path) -> None:
    t = np.load(Path(__file__).parent / "initial.npy")
    for frame in range(3):
        for _ in range(10):
            t = _step(t, np.float32(0.2))
        captured = np.load(out / "frames" / f"a.frame{frame}.npy").view(np.float32)
        np.testing.assert_allclose(captured, t, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(np.load(out / "final.npy").view(np.float32), t, rtol=1e-5, atol=1e-4)
