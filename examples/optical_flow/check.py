"""Reference for this example: template.png is search.png moved by SHIFT pixels, so every flow
vector away from the border is SHIFT (the estimator interpolates: within half a pixel)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from kernellab.formats import png

#: (dx, dy): what is at (x, y) in the search image is at (x + dx, y + dy) in the template
SHIFT = (3, -2)
SIZE, GRID = 64, 4
#: Python modules the example needs: Arm's ML emulation layer adds VK_ARM_data_graph_optical_flow
REQUIRES = ("emulation_layer",)


def _grey(name: str) -> np.ndarray:
    here = Path(__file__).parent
    return np.frombuffer(png.load(here / name, SIZE, SIZE), np.uint8).reshape(SIZE, SIZE, 4)[..., 0]


def check(out: Path) -> None:
    dx, dy = SHIFT
    search, template = _grey("search.png"), _grey("template.png")
    # the inputs are what the docstring says (the shift is the data's, not a number made up here)
    np.testing.assert_array_equal(template[max(dy, 0):SIZE + min(dy, 0), max(dx, 0):SIZE + min(dx, 0)],
                                  search[max(-dy, 0):SIZE + min(-dy, 0), max(-dx, 0):SIZE + min(-dx, 0)])
    cells = SIZE // GRID
    flow = np.load(out / "flow.npy")
    assert flow.shape == (1, cells, cells, 2) and flow.dtype == np.float16, (flow.shape, flow.dtype)
    inner = flow[0, 2:-2, 2:-2].reshape(-1, 2).astype(np.float32)
    np.testing.assert_allclose(np.median(inner, axis=0), SHIFT, atol=0.5)
    cost = np.load(out / "cost.npy")
    assert cost.shape == (1, cells, cells, 1) and cost.dtype == np.uint16, (cost.shape, cost.dtype)
