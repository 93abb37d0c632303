"""verify's launches are made as `kernellab run` makes them (issue 19 point 1): the launch as a
scenario in memory, run by the one executor, and directly only where the model cannot hold it."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernellab.runtime import executor
from kernellab.verify import verify


def _file(tmp_path: Path, source: str, args: list[dict[str, object]]) -> Path:
    (tmp_path / "k.cl").write_text(source)
    path = tmp_path / "k.json"
    path.write_text(json.dumps([{"language": "OpenCL", "kernel_file": "k.cl", "global_size": [16],
                                 "local_size": [8], "entry_point": "k", "kernel_arguments": args}]))
    return path


def test_a_buffer_launch_runs_through_the_executor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []
    real = executor.Executor.run

    def counted(self: executor.Executor) -> executor.RunReport:
        ran.append(self.scenario.commands[0].shader_ref)  # type: ignore[attr-defined]
        return real(self)

    monkeypatch.setattr(executor.Executor, "run", counted)
    path = _file(tmp_path, "__kernel void k(__global int *out, __global const int *in) {\n"
                           "  int i = get_global_id(0);\n  out[i] = in[i + 1];\n}\n",
                 [{"type": "array", "size": 64}, {"type": "array", "size": 64}])
    result = verify(path)
    assert ran == ["kernel0"]
    # the buffers Oclgrind numbers are the launch's arrays, in order: the finding names the argument
    found = next(f for f in result.findings if f.kind == "out-of-bounds")
    assert found.resource is not None and "in" in found.resource, found.to_json()


def test_an_image_launch_is_enqueued_directly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[object] = []
    monkeypatch.setattr(executor.Executor, "run", lambda self: ran.append(self))
    path = _file(tmp_path, "__kernel void k(__read_only image1d_t img, sampler_t s, __global float4 *out) {\n"
                           "  int i = get_global_id(0);\n  out[i] = read_imagef(img, s, i);\n}\n",
                 [{"type": "image"}, {"type": "sampler"}, {"type": "array", "size": 256}])
    result = verify(path)
    assert ran == [] and result.launches and result.launches[0].ran
