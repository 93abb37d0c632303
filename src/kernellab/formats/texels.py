"""Texel values as shaders see them: normalized and sRGB decoding/encoding, mip levels.

NumPy references for image tests and for checking image outputs: ``decode`` gives the float a
shader's ``imageLoad``/``texture`` returns for stored texels, ``encode`` what an ``imageStore``
of a float stores (Vulkan's conversion rules: clamp, round to nearest as lavapipe does, sRGB
transfer function on colour channels, alpha linear), and ``downsample`` a 2x2 box filter of the
kind linear blits produce when mip levels are generated.
"""
from __future__ import annotations

import numpy as np

from kernellab.vkregistry.vkformat import VkFormatInfo


def _srgb_to_linear(c: np.ndarray) -> np.ndarray:
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _linear_to_srgb(c: np.ndarray) -> np.ndarray:
    c = np.clip(c, 0.0, 1.0)
    return np.where(c <= 0.0031308, c * 12.92, 1.055 * np.power(c, 1 / 2.4) - 0.055)


def _colour_mask(fmt: VkFormatInfo) -> np.ndarray:
    """True for the channels the sRGB transfer function applies to (not alpha)."""
    return np.array([c != "A" for c in fmt.components], bool)


def decode(fmt: VkFormatInfo, stored: np.ndarray) -> np.ndarray:
    """Stored values (last axis = channels) as float64, as a shader reads them.

    UNORM → [0, 1]; SNORM → [-1, 1] (the most negative code clamps to -1); SRGB → linear [0, 1]
    for R, G, B; floats and integers unchanged.
    """
    x = stored.astype(np.float64)
    if fmt.numeric in ("UNORM", "SRGB"):
        x = x / float(2 ** fmt.bits - 1)
        if fmt.numeric == "SRGB":
            x = np.where(_colour_mask(fmt), _srgb_to_linear(x), x)
    elif fmt.numeric == "SNORM":
        x = np.maximum(x / float(2 ** (fmt.bits - 1) - 1), -1.0)
    return x


def encode(fmt: VkFormatInfo, values: np.ndarray) -> np.ndarray:
    """Floats (last axis = channels) as the format stores them, per Vulkan's conversion rules.

    A normalized format's code is the scaled value computed in the shader's precision (float32)
    and rounded to nearest, a tie to even: what lavapipe stores, code for code (the float64
    product rounded half up differed from it on values near a tie: 127 of 1536 in R8 UNORM).
    Vulkan ("Conversion from Floating-Point to Normalized Fixed-Point") lets a device store
    either of the two integers nearest the scaled value (rounding to nearest is recommended, an
    integer must be kept): 0.5 in R8 UNORM (127.5) is 128 on lavapipe and 127 on NVIDIA's driver
    580, so a device's UNORM/SNORM bytes may differ from these by one.
    """
    v = np.asarray(values, np.float64)
    if fmt.numeric in ("UNORM", "SRGB"):
        if fmt.numeric == "SRGB":
            v = np.where(_colour_mask(fmt), _linear_to_srgb(v), v)
        scale = np.float32(2 ** fmt.bits - 1)
        return np.rint(np.clip(v, 0.0, 1.0).astype(np.float32) * scale).astype(fmt.dtype)
    if fmt.numeric == "SNORM":
        scale = np.float32(2 ** (fmt.bits - 1) - 1)
        return np.rint(np.clip(v, -1.0, 1.0).astype(np.float32) * scale).astype(fmt.dtype)
    if fmt.is_float:
        return v.astype(fmt.dtype)
    info = np.iinfo(fmt.dtype)
    return np.clip(np.rint(v), info.min, info.max).astype(fmt.dtype)


def downsample(level: np.ndarray) -> np.ndarray:
    """The next mip level of ``[h, w, C]`` float values: 2x2 box filter, odd edges clamped.

    The next level is ``max(h // 2, 1) x max(w // 2, 1)``; with an odd extent the last row or
    column is averaged with itself, which is what a linear-filtered blit of the full extent to
    half size samples.
    """
    h, w = level.shape[:2]
    nh, nw = max(h // 2, 1), max(w // 2, 1)
    ys0 = np.minimum(np.arange(nh) * 2, h - 1)
    ys1 = np.minimum(ys0 + 1, h - 1)
    xs0 = np.minimum(np.arange(nw) * 2, w - 1)
    xs1 = np.minimum(xs0 + 1, w - 1)
    return (level[ys0][:, xs0] + level[ys0][:, xs1] + level[ys1][:, xs0] + level[ys1][:, xs1]) / 4.0


def mip_chain(level0: np.ndarray, levels: int) -> list[np.ndarray]:
    """``levels`` float levels starting from ``level0`` (see :func:`downsample`)."""
    out = [np.asarray(level0, np.float64)]
    for _ in range(levels - 1):
        out.append(downsample(out[-1]))
    return out
