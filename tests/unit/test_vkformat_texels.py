"""Normalized/sRGB texel conversions and the mip reference."""
from __future__ import annotations

import numpy as np
import pytest

from kernellab.formats import texels
from kernellab.vkregistry import vkformat


def fmt(name):
    return vkformat.lookup(f"VK_FORMAT_{name}")


def test_unorm_and_snorm():
    assert texels.decode(fmt("R8_UNORM"), np.array([[0], [255], [51]], np.uint8)).ravel().tolist() == [0.0, 1.0, 0.2]
    snorm = texels.decode(fmt("R8_SNORM"), np.array([[-128], [-127], [127], [0]], np.int8)).ravel()
    assert snorm.tolist() == [-1.0, -1.0, 1.0, 0.0]
    assert texels.encode(fmt("R8_UNORM"), np.array([[-0.5], [0.5], [2.0]])).ravel().tolist() == [0, 128, 255]
    assert texels.encode(fmt("R16_SNORM"), np.array([[-1.0], [0.25]])).ravel().tolist() == [-32767, 8192]


def test_normalized_codes_are_lavapipes() -> None:
    """The float32 product rounded to nearest, a tie to even (lavapipe's codes, checked against it
    on 2816 values): 1/510 in float32 times 255 is 0.5000000296 in float64, a tie in float32."""
    near_tie = float(np.float32(0.5 / 255))
    assert texels.encode(fmt("R8_UNORM"), np.array([[near_tie], [1.5 / 255], [2.5 / 255]])).ravel().tolist() == [0, 2, 2]
    assert texels.encode(fmt("R8_SNORM"), np.array([[float(np.float32(-0.5 / 127))], [0.5]])).ravel().tolist() == [0, 64]


def test_srgb_applies_to_colour_not_alpha():
    f = fmt("R8G8B8A8_SRGB")
    stored = np.array([[[188, 188, 0, 188]]], np.uint8)
    lin = texels.decode(f, stored)[0, 0]
    assert lin[0] == pytest.approx(0.5029, abs=1e-3) and lin[2] == 0.0
    assert lin[3] == pytest.approx(188 / 255)
    assert texels.encode(f, lin[None, None]).tolist() == stored.tolist()
    # every code survives decode → encode
    codes = np.arange(256, dtype=np.uint8).reshape(64, 1, 4)
    assert np.array_equal(texels.encode(f, texels.decode(f, codes)), codes)


def test_float_and_integer_pass_through():
    assert texels.encode(fmt("R16_SFLOAT"), np.array([[1.5]])).dtype == np.float16
    assert texels.encode(fmt("R8_UINT"), np.array([[300.0], [-2.0], [7.4]])).ravel().tolist() == [255, 0, 7]
    assert texels.decode(fmt("R32_SINT"), np.array([[-5]], np.int32)).ravel().tolist() == [-5.0]


def test_downsample_even_and_odd():
    lv = np.arange(16, dtype=np.float64).reshape(4, 4, 1)
    assert texels.downsample(lv)[..., 0].tolist() == [[2.5, 4.5], [10.5, 12.5]]
    odd = np.arange(15, dtype=np.float64).reshape(3, 5, 1)
    nxt = texels.downsample(odd)
    assert nxt.shape == (1, 2, 1) and nxt[0, 0, 0] == (0 + 1 + 5 + 6) / 4
    chain = texels.mip_chain(np.ones((8, 2, 3)), 4)
    assert [c.shape for c in chain] == [(8, 2, 3), (4, 1, 3), (2, 1, 3), (1, 1, 3)]
