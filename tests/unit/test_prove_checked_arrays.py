"""GPUVerify's ``--vcgen-opt=/checkArrays:NAMES`` in the conformance script: the arrays it does
not name are left out of the race checks and the ``__read``/``__write`` logs
(:attr:`engine.Launch.unchecked_buffers`); the named ones are checked as always."""
from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("z3", reason="needs z3-solver (pip install kernellab[prove])")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from conformance.gpuverify_prove import checked_arrays, parameter_names, restrict_checks  # noqa: E402
from tests.unit.test_prove_engine import kinds, needs_clspv  # noqa: E402

from kernellab.verify.prove import engine, opencl  # noqa: E402


def test_header_option_and_parameter_names() -> None:
    assert checked_arrays(["--local_size=4", "--vcgen-opt=/checkArrays:A,B"]) == {"A", "B"}
    assert checked_arrays(["--local_size=4"]) is None
    src = "kernel void foo(global int * A, __local float *restrict B, int n) {\n}"
    assert parameter_names(src, "foo") == ["A", "B", "n"]
    kernel = SimpleNamespace(arguments={0: SimpleNamespace(kind="ArgumentStorageBuffer", set=0, binding=0),
                                        1: SimpleNamespace(kind="ArgumentWorkgroup", set=0, binding=0),
                                        2: SimpleNamespace(kind="ArgumentPodPushConstant", set=0, binding=0)})
    launch = engine.Launch((4, 1, 1), (1, 1, 1))
    restrict_checks(launch, kernel, ["A", "B", "n"], {"A"})
    assert launch.unchecked_buffers == set() and launch.unchecked_local
    restrict_checks(launch, kernel, ["A", "B", "n"], {"B"})  # a __local argument named: locals checked
    assert launch.unchecked_buffers == {(0, 0)} and not launch.unchecked_local
    restrict_checks(launch, kernel, ["A", "B", "n"], {"C"})  # perhaps an array declared in the kernel
    assert not launch.unchecked_local


SOURCE = """
__kernel void k(__global int *A, __global int *B) {
  A[get_global_id(0) + 1] = B[get_global_id(0)];
  B[get_global_id(0)] += A[get_global_id(0)];
  __assert(__no_write(A));
}
"""


@needs_clspv
def test_unchecked_buffer_is_neither_raced_nor_logged(tmp_path: Path) -> None:
    path = tmp_path / "k.cl"
    path.write_text(SOURCE)
    args = [opencl.ArgumentSpec("buffer", "A", size=4096), opencl.ArgumentSpec("buffer", "B", size=4096)]
    compiled = opencl.compile_kernel(path, "k", "", (64, 1, 1), args)

    def prove(names: set[str] | None) -> engine.Outcome:
        launch = opencl.launch(compiled, (256,), (64, 1, 1), args)
        restrict_checks(launch, compiled.kernel, ["A", "B"], names)
        return engine.prove(compiled.module, launch, timeout=60)

    assert kinds(prove(None)) == {"data-race", "assertion"}  # A races, and A is written
    assert kinds(prove({"A"})) == {"data-race", "assertion"}
    assert prove({"B"}).verdict == "proven"
