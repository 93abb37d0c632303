"""Reference for this example: the gradient and checkerboard of gradient.frag, in NumPy."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from kernellab.formats import png

WIDTH, HEIGHT = 16, 8


def expected() -> np.ndarray:
    """[H, W, 4] RGBA8: red 17 x, green 36 y, blue 255 on every other 4x4 square, alpha pushed."""
    here = Path(__file__).parent
    y, x = np.mgrid[0:HEIGHT, 0:WIDTH]
    alpha = int(np.load(here / "alpha.npy")[0])
    return np.stack([17 * x, 36 * y, 255 * ((x // 4 + y // 4) % 2), np.full_like(x, alpha)], axis=-1).astype(np.uint8)


def _texels(path: Path) -> np.ndarray:
    return np.frombuffer(png.load(path, WIDTH, HEIGHT), np.uint8).reshape(HEIGHT, WIDTH, 4)


def check(out: Path) -> None:
    want = expected()
    # expected.png is what a run writes, for comparing without Python (cmp); it must be the reference
    np.testing.assert_array_equal(_texels(Path(__file__).parent / "expected.png"), want)
    np.testing.assert_array_equal(_texels(out / "gradient.png"), want)
