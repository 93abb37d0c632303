"""conformance/gpuverify_benchmarks.py's reading of GPUVerifyBenchmarks' layout and headers: which
files gvtester.py runs, the per-suite sample, the launches written for ``verify --prove`` (header
sizes, every argument unconstrained) and the verdict read back from its JSON."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

# the conformance scripts import boogie_axioms, which imports z3 (the prove extra)
pytest.importorskip("z3", reason="needs z3-solver (pip install kernellab[prove])")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from conformance.gpuverify_benchmarks import digest, find_benchmarks, instantiation, outcome, sample  # noqa: E402

_TWO_KERNELS = """//pass
//--local_size=[16,4] --global_size=[64,8]

__kernel void first(__global float *out, __local int *tile, uint n) { }
kernel void second(__global const int *in, float scale) { }
"""


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def bench(tmp_path: Path) -> Path:
    _write(tmp_path, "AMD_SDK/Two/kernel.cl", _TWO_KERNELS)
    _write(tmp_path, "AMD_SDK/Off/_kernel.cl", "not a header: gvtester does not run this file\n")
    _write(tmp_path, "polybench/lu/kernel0.cl", "//PASS\n//--local_size=[32] --num_groups=[2]\n"
                                                "__kernel void k0(__global int *A) { }\n")
    _write(tmp_path, "polybench/lu/kernel1.cl", "//pass\n//--local_size=[32] --num_groups=[3]\n"
                                                "__kernel void k1(__global int *A) { }\n")
    _write(tmp_path, "polybench/lu/kernel2.cl", "//pass\n//--num_groups=[3]\n__kernel void k2(int n) { }\n")
    _write(tmp_path, "shoc/Box/common.h", "#if PICK == 2\n__kernel void picked(__global TYPE *p) { }\n"
                                          "#else\n__kernel void other(int n) { }\n#endif\n")
    _write(tmp_path, "shoc/Box/k2/kernel.cl", "//pass\n//--local_size=[8] --num_groups=[2]\n"
                                              "#define PICK 2\n#define TYPE float\n#include \"../common.h\"\n")
    _write(tmp_path, "CUDA50/x/kernel.cu", "//pass\n//--blockDim=32 --gridDim=2\n")
    return tmp_path


def test_which_files_are_run(bench: Path) -> None:
    found = {b.id: (b.suite, b.status) for b in find_benchmarks(bench)}
    assert found == {
        "AMD_SDK/Off/_kernel.cl": ("AMD SDK 2.6", "disabled"),
        "AMD_SDK/Two/kernel.cl": ("AMD SDK 2.6", "run"),
        "CUDA50/x/kernel.cu": ("CUDA", "cuda"),
        "polybench/lu/kernel0.cl": ("PolyBench/PPCG", "run"),
        "polybench/lu/kernel1.cl": ("PolyBench/PPCG", "run"),
        "polybench/lu/kernel2.cl": ("PolyBench/PPCG", "run"),
        "shoc/Box/k2/kernel.cl": ("SHOC", "run"),
    }


def test_sample_takes_every_kth_of_each_suite(bench: Path) -> None:
    benchmarks = find_benchmarks(bench)
    assert [b.id for b in sample(benchmarks, 2)] == ["AMD_SDK/Two/kernel.cl", "polybench/lu/kernel0.cl",
                                                     "polybench/lu/kernel2.cl", "shoc/Box/k2/kernel.cl"]
    assert len(sample(benchmarks, 1)) == 5


def test_instantiation_has_header_sizes_and_unconstrained_arguments(bench: Path) -> None:
    b = next(b for b in find_benchmarks(bench) if b.id == "AMD_SDK/Two/kernel.cl")
    doc = instantiation(b)
    assert [d["entry_point"] for d in doc] == ["first", "second"]
    assert doc[0]["local_size"] == [16, 4, 1] and doc[0]["global_size"] == [64, 8, 1]
    assert doc[0]["kernel_file"] == "AMD_SDK/Two/kernel.cl"  # from the set's root: includes stay inside
    assert doc[0]["kernel_arguments"] == [{"type": "array", "address_space": "global"},
                                          {"type": "array", "address_space": "local"}, {"type": "scalar"}]
    assert all("value" not in a and "size" not in a for d in doc for a in d["kernel_arguments"])
    k0 = next(b for b in find_benchmarks(bench) if b.id == "polybench/lu/kernel0.cl")
    assert instantiation(k0)[0]["global_size"] == [64, 1, 1]


def test_the_kernel_a_shared_header_picks_by_macro(bench: Path) -> None:
    b = next(b for b in find_benchmarks(bench) if b.id == "shoc/Box/k2/kernel.cl")
    doc = instantiation(b)
    assert [d["entry_point"] for d in doc] == ["picked"]
    assert doc[0]["kernel_arguments"] == [{"type": "array", "address_space": "global"}]


def test_a_header_without_local_size_is_an_error(bench: Path) -> None:
    b = next(b for b in find_benchmarks(bench) if b.id == "polybench/lu/kernel2.cl")
    with pytest.raises(KeyError):
        instantiation(b)


def test_digest_and_outcome() -> None:
    out = {"launches": [{"entry_point": "a", "proof": "proven", "seconds": 0.1},
                        {"entry_point": "b", "proof": "defect", "seconds": 0.5}],
           "findings": [{"kind": "data-race", "kernel": "b", "severity": "defect",
                         "detail": "confirmed by a replayed launch"}]}
    r = digest(1, json.dumps(out), "")
    assert [la["verdict"] for la in r["launches"]] == ["proven", "defect"]
    assert r["findings"][0]["kind"] == "data-race"
    assert outcome(r) == "defect"
    assert outcome(digest(3, json.dumps({"launches": [{"proof": "unknown"}, {"proof": "possible"}]}), "")) == "possible"
    assert outcome(digest(0, json.dumps({"launches": [{"proof": "proven"}]}), "")) == "proven"
    bad = digest(2, "", "error: K.json: /0/global_size: not a list\n")
    assert outcome(bad) == "error" and "not a list" in bad["error"]
    crash = digest(2, "", "error: clspv failed\nrepro: python -m kernellab.compile.clspv_child k.cl -O0\n")
    assert crash["error"] == "exit 2: compile: clspv fails at -O0"
