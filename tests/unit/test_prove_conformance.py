"""conformance/gpuverify_prove.py's reading of GPUVerify's test headers and its table's classes:
an expected failure proven is counted as unsound, out-of-bounds findings count only where the
test asks GPUVerify to check array bounds."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from conformance.gpuverify_prove import classify, kernel_args, outcome, sizes  # noqa: E402


def test_sizes_from_the_header() -> None:
    assert sizes({"--local_size": "64", "--num_groups": "[4,2]"}) == ((64, 1, 1), (4, 2, 1))
    assert sizes({"--local_size": "[8,8]", "--global_size": "[64,16]"}) == ((8, 8, 1), (8, 2, 1))


def test_kernel_args_fix_scalars_little_endian() -> None:
    assert kernel_args({"--kernel-args": "foo,0x00000003"}) == {"foo": [(3).to_bytes(4, "little")]}
    assert kernel_args({}) == {}


def test_outcome_and_classes() -> None:
    oob_only = {"kernels": {"k": {"verdict": "defect", "kinds": ["out-of-bounds"]}}}
    assert outcome(oob_only, ["--local_size=4"]) == "proven"  # GPUVerify does not check bounds here
    assert outcome(oob_only, ["--check-array-bounds"]) == "defect"
    mixed = {"kernels": {"a": {"verdict": "proven"}, "b": {"verdict": "unknown"}}}
    assert outcome(mixed, []) == "unknown"
    assert outcome({"error": "compile: x"}, []) == "error"
    assert classify("NOT_ALL_VERIFIED", "proven") == "xfail: proven (UNSOUND)"
    assert classify("pass", "defect") == "pass: defect (false alarm)"
    assert classify("CLANG_ERROR", "error").startswith("xfail:CLANG_ERROR")
