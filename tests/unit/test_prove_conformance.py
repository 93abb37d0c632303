"""conformance/gpuverify_prove.py's reading of GPUVerify's test headers and its table's classes:
an expected failure proven is counted as unsound, out-of-bounds findings count only where the
test asks GPUVerify to check array bounds."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

# the conformance scripts import boogie_axioms, which imports z3 (the prove extra)
pytest.importorskip("z3", reason="needs z3-solver (pip install kernellab[prove])")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from conformance.gpuverify_prove import (  # noqa: E402
    classify,
    kernel_args,
    outcome,
    placeholder_sizes,
    row,
    size_space,
    sizes,
    work_dim,
)


def test_sizes_from_the_header() -> None:
    assert sizes({"--local_size": "64", "--num_groups": "[4,2]"}) == ((64, 1, 1), (4, 2, 1))
    assert sizes({"--local_size": "[8,8]", "--global_size": "[64,16]"}) == ((8, 8, 1), (8, 2, 1))


def test_unconstrained_sizes_become_symbolic() -> None:
    """GPUVerify's ``*`` sizes (its tests unconstrained_sizes/*): what --prove-sizes takes."""
    assert size_space({"--local_size": "64", "--num_groups": "4"}) is None  # every size given
    local_any = size_space({"--local_size": "*", "--global_size": "1024"})
    assert local_any.dims == 1 and local_any.local == (None, 1, 1) and local_any.global_ == (1024, 1, 1)
    assert local_any.groups == (None, None, None)
    groups_any = size_space({"--local_size": "1024", "--num_groups": "*"})
    assert groups_any.local == (1024, 1, 1) and groups_any.groups == (None, 1, 1)
    global_any = size_space({"--local_size": "[8,8]", "--global_size": "*"})
    assert global_any.dims == 2 and global_any.local == (8, 8, 1) and global_any.global_ == (None, None, 1)
    assert placeholder_sizes(local_any) == ((1, 1, 1), (1024, 1, 1))
    assert placeholder_sizes(groups_any) == ((1024, 1, 1), (1, 1, 1))
    assert work_dim({"--local_size": "*", "--global_size": "[4,4]"}) == 2
    every = size_space({"--local_size": "[8,8]", "--num_groups": "[2,2]"}, every=True)
    assert every.dims == 2 and every.local == (None, None, None)


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


def test_a_spec_conflict_is_not_counted_unsound() -> None:
    from types import SimpleNamespace
    proven = {"kernels": {"foo": {"verdict": "proven"}}}
    conflict = SimpleNamespace(id="reducedstrengthnonloopbug", expectation="NOT_ALL_VERIFIED", options=[])
    assert row(conflict, proven)["class"] == "xfail: proven (spec-conflict)"
    other = SimpleNamespace(id="misc/fail/miscfail8", expectation="NOT_ALL_VERIFIED", options=[])
    assert row(other, proven)["class"] == "xfail: proven (UNSOUND)"
