"""verify builds a kernel-instantiation's kernel from one inlined source: the include expander
(which reads and checks every include) runs once per launch, not once in verify and again in
the instantiation's build."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kernellab.compile import pipeline
from kernellab.formats import gpuverify
from kernellab.runtime import instantiation
from kernellab.verify import harness


def test_the_kernel_is_inlined_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "h.h").write_text("#define N 4\n")
    (tmp_path / "k.cl").write_text('#include "h.h"\n__kernel void k(__global int *o) { o[0] = N; }\n')
    path = tmp_path / "k.json"
    path.write_text(json.dumps([{"language": "OpenCL", "kernel_file": "k.cl", "global_size": [1], "entry_point": "k",
                                 "compiler_flags": "-I.", "kernel_arguments": [{"type": "array", "size": 4}]}]))
    insts, problems = gpuverify.load(path)
    assert not problems
    calls: list[Path] = []
    real = pipeline.driver_source

    def counted(*args: Any, **kw: Any) -> bytes:
        calls.append(args[0])
        return real(*args, **kw)

    monkeypatch.setattr(pipeline, "driver_source", counted)
    monkeypatch.setattr(instantiation, "driver_source", counted)
    built: list[Any] = []
    backend = SimpleNamespace(is_oclgrind=True, create_program=lambda spec: built.append(spec) or spec)
    program, lines, note = harness._build(backend, insts[0])
    assert len(calls) == 1 and note is None and lines == []
    assert b"o[0] = N" in built[0].code and b"#define N 4" in built[0].code
