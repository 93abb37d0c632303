"""NumPy reference for examples/arm/barriers: two dependent scale steps, (x * 2 + 1) * 2 + 1."""
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent


def check(out_dir: Path) -> None:
    x = np.load(HERE / "input.npy")
    got = np.frombuffer(np.load(out_dir / "output.npy").tobytes(), np.float32)
    np.testing.assert_array_equal(got, (x * np.float32(2) + np.float32(1)) * np.float32(2) + np.float32(1))
