"""``dispatch_optical_flow`` scenarios of our own: a smooth pattern and the same pattern moved by a
known number of pixels, so the flow vectors the driver finds can be checked against the shift."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def pattern(width: int, height: int, shift: tuple[int, int] = (0, 0), margin: int = 16,
            scale: float = 1.0) -> np.ndarray:
    """An 8-bit grey pattern of sines (smooth, so block matching finds it), as [1, H, W, 4] RGBA;
    ``shift`` moves the content by (dx, dy) pixels: what is at (x, y) without it is at (x+dx, y+dy).
    ``scale`` stretches the periods (2: its mip level 1 looks like the pattern at scale 1)."""
    y, x = np.mgrid[0:height + 2 * margin, 0:width + 2 * margin].astype(np.float64) / scale
    grey = 128 + 60 * np.sin(x * 2 * np.pi / 23) * np.cos(y * 2 * np.pi / 19) + 40 * np.sin((x + y) * 2 * np.pi / 31)
    big = np.clip(grey, 0, 255).astype(np.uint8)
    dx, dy = shift
    window = big[margin - dy:margin - dy + height, margin - dx:margin - dx + width]
    return np.repeat(window[None, :, :, None], 4, axis=3)


def image(uid: str, width: int, height: int, fmt: str, access: str, **fields: Any) -> dict[str, Any]:
    return {"image": {"uid": uid, "dims": [1, width, height, 1], "format": fmt, "shader_access": access, **fields}}


def flow_scenario(tmp: Path, shift: tuple[int, int] = (0, 0), size: int = 64, grid: int = 4,
                  flags: tuple[str, ...] = (), mean_flow_hint: int = 2) -> dict[str, Any]:
    """Search image = the pattern, template = the pattern moved by ``shift``; flow, cost and
    (zero) hint images of the grid's extent. Inputs are written to ``tmp``; valid as it stands.

    ``mean_flow_hint`` 2 is what Arm's scenarios give: with 0, Arm's emulation layer 0.11 finds
    the flow of a (-2, 3) shift as (3.2, -2.0) (measured), so the tests give a hint."""
    cells = -(-size // grid)
    np.save(tmp / "search.npy", pattern(size, size))
    np.save(tmp / "template.npy", pattern(size, size, shift))
    np.save(tmp / "hint.npy", np.zeros((1, cells, cells, 2), np.float16))
    bindings = {role: {"set": 0, "id": i, "resource_ref": uid} for i, (role, uid) in enumerate(
        [("search_image", "search"), ("template_image", "template"), ("output_image", "flow"),
         ("hint_motion_vectors", "hint"), ("output_cost", "cost")])}
    return {"resources": [
        image("search", size, size, "VK_FORMAT_R8G8B8A8_UNORM", "readonly", src="search.npy"),
        image("template", size, size, "VK_FORMAT_R8G8B8A8_UNORM", "readonly", src="template.npy"),
        image("hint", cells, cells, "VK_FORMAT_R16G16_SFLOAT", "readonly", src="hint.npy"),
        image("flow", cells, cells, "VK_FORMAT_R16G16_SFLOAT", "writeonly", dst="flow.npy"),
        image("cost", cells, cells, "VK_FORMAT_R16_UINT", "writeonly", dst="cost.npy")],
        "commands": [{"dispatch_optical_flow": {"width": size, "height": size, "grid_size": f"{grid}x{grid}",
                                                "performance_level": "medium", "execution_flags": list(flags),
                                                "mean_flow_l1_norm_hint": mean_flow_hint,
                                                "bindings": bindings}}]}
