"""NumPy reference for examples/arm/spec_constants: a zero-filled buffer gets the ramp subtracted twice."""
from pathlib import Path

import numpy as np


def check(out_dir: Path) -> None:
    ramp = (np.arange(64) - 8) * 0.25
    got = np.frombuffer(np.load(out_dir / "values.npy").tobytes(), np.float32)
    np.testing.assert_array_equal(got, (-2 * ramp).astype(np.float32))
