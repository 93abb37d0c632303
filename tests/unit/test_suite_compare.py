"""Comparing outputs with references: exact, atol/rtol, ULPs, RMSE, NaN handling, and the report."""
from __future__ import annotations

import numpy as np
import pytest

from kernellab.errors import InputError
from kernellab.suite.compare import compare_arrays, ulp_distance
from kernellab.suite.expectations import Tolerance


def raw(a: np.ndarray) -> np.ndarray:
    """An output as a buffer comes back: its bytes as int8."""
    return a.view(np.int8)


def test_exact_passes_equal_and_reports_the_first_differences() -> None:
    e = np.arange(10, dtype=np.float32)
    assert compare_arrays("c", raw(e.copy()), e, Tolerance()).ok
    a = e.copy()
    a[[3, 7]] += 0.5
    r = compare_arrays("c", raw(a), e, Tolerance())
    assert not r.ok and r.failed == 2 and r.compared == 10
    assert [m.index for m in r.first] == [(3,), (7,)]
    text = r.report()
    assert "2 of 10 elements differ (exact)" in text
    assert "[3] expected 3.0, actual 3.5 (allowed: exact)" in text


def test_report_shows_a_few_and_counts_the_rest() -> None:
    e = np.zeros(100, np.int32)
    r = compare_arrays("c", raw(e + 1), e, Tolerance())
    assert r.failed == 100 and len(r.first) == 5
    assert "... and 95 more" in r.report()


def test_multi_dimensional_index() -> None:
    e = np.zeros((2, 3), np.float32)
    a = e.copy()
    a[1, 2] = 1
    r = compare_arrays("img", a, e, Tolerance())
    assert r.first[0].index == (1, 2)
    assert "[(1, 2)]" in r.report()


def test_absolute_and_relative_tolerance() -> None:
    e = np.array([1.0, 100.0, 0.0], np.float32)
    a = np.array([1.0005, 100.05, 0.0005], np.float32)
    assert compare_arrays("c", a, e, Tolerance(atol=1e-3, rtol=0.0)).failed == 1  # 100.05 is 0.05 off
    assert compare_arrays("c", a, e, Tolerance(atol=0.0, rtol=1e-3)).failed == 1  # 0.0005 vs 0 has no relative slack
    assert compare_arrays("c", a, e, Tolerance(atol=1e-3, rtol=1e-3)).ok
    r = compare_arrays("c", a, e, Tolerance(atol=1e-3, rtol=0.0))
    assert "allowed: |diff| <= 0.001" in r.report()


def test_ulps() -> None:
    e = np.array([1.0, -0.0, 1e-30], np.float32)
    a = np.nextafter(np.nextafter(e, np.float32(np.inf)), np.float32(np.inf)).astype(np.float32)  # two steps up
    assert list(ulp_distance(a, e)) == [2.0, 2.0, 2.0]
    assert compare_arrays("c", a, e, Tolerance(ulps=2)).ok
    assert compare_arrays("c", a, e, Tolerance(ulps=1)).failed == 3
    # +0 and -0 are the same value: zero ULPs apart
    assert ulp_distance(np.array([0.0], np.float32), np.array([-0.0], np.float32))[0] == 0


def test_ulps_on_integers_is_bad_input() -> None:
    e = np.zeros(3, np.int32)
    with pytest.raises(InputError) as err:
        compare_arrays("c", e, e, Tolerance(ulps=1), "/outputs/c", "s.expect.json")
    assert "s.expect.json: /outputs/c/ulps:" in str(err.value)


def test_rmse_bounds_the_whole_array() -> None:
    e = np.zeros(4, np.float32)
    a = np.array([0.1, -0.1, 0.1, -0.1], np.float32)
    assert compare_arrays("c", a, e, Tolerance(rmse=0.11)).ok
    r = compare_arrays("c", a, e, Tolerance(rmse=0.05))
    assert not r.ok and "RMSE 0.1 exceeds rmse=0.05" in r.report()


@pytest.mark.parametrize("mode, passes", [("equal", True), ("ignore", True), ("never", False)])
def test_nan_in_both(mode: str, passes: bool) -> None:
    e = np.array([np.nan, 1.0], np.float32)
    a = np.array([np.nan, 1.0], np.float32)
    assert compare_arrays("c", a, e, Tolerance(nan=mode)).ok is passes


def test_nan_where_a_number_is_expected_fails_and_ignore_skips_expected_nans() -> None:
    e = np.array([1.0, np.nan], np.float32)
    a = np.array([np.nan, 5.0], np.float32)
    assert compare_arrays("c", a, e, Tolerance()).failed == 2
    assert compare_arrays("c", a, e, Tolerance(nan="ignore")).failed == 1
    assert compare_arrays("c", a, e, Tolerance(atol=1.0, rtol=0.0)).failed == 2


def test_infinities_match_themselves_under_a_tolerance() -> None:
    e = np.array([np.inf, -np.inf], np.float32)
    assert compare_arrays("c", e.copy(), e, Tolerance(atol=1e-3, rtol=0.0)).ok
    assert not compare_arrays("c", e[::-1].copy(), e, Tolerance(atol=1e-3, rtol=0.0)).ok


def test_size_mismatch_is_a_failure_not_a_crash() -> None:
    r = compare_arrays("c", np.zeros(12, np.int8), np.zeros(4, np.float32), Tolerance())
    assert not r.ok and "the output has 12 bytes, the reference 16" in r.report()


def test_integer_tolerance() -> None:
    e = np.array([10, 20], np.int32)
    assert compare_arrays("c", np.array([11, 20], np.int32), e, Tolerance(atol=1, rtol=0)).ok
    assert not compare_arrays("c", np.array([12, 20], np.int32), e, Tolerance(atol=1, rtol=0)).ok


def test_float32_values_print_in_their_own_shortest_digits() -> None:
    e = np.array([250.501, 1.1], np.float32)
    a = np.array([250.6, 1.1], np.float32)
    r = compare_arrays("c", raw(a), e, Tolerance())
    text = r.report()
    assert "expected 250.501, actual 250.6" in text and "250.50100708007812" not in text
    first = r.to_json()["first"][0]
    assert first["expected"] == 250.501 and np.float32(first["expected"]) == e[0]
    ints = compare_arrays("c", raw(np.array([7], np.int32)), np.array([5], np.int32), Tolerance())
    assert "expected 5, actual 7" in ints.report() and ints.to_json()["first"][0]["actual"] == 7
