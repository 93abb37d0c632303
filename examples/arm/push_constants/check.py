"""NumPy reference for examples/arm/push_constants: y_out = 1.5 * x + y."""
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent


def check(out_dir: Path) -> None:
    x, y = np.load(HERE / "x.npy"), np.load(HERE / "y.npy")
    got = np.frombuffer(np.load(out_dir / "y_out.npy").tobytes(), np.float32)
    np.testing.assert_allclose(got, np.float32(1.5) * x + y, rtol=1e-6)
