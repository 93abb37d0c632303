"""Builders for scenario files used across the test tiers."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

ADD_GLSL = """#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(set = 1, binding = 0) writeonly buffer C { float c[]; };
layout(push_constant) uniform Push { uint count; } pc;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < pc.count) { c[i] = a[i] + b[i]; }
}
"""


def vector_add(tmp: Path, n: int = 100) -> tuple[Path, dict[str, Any]]:
    """A valid c = a + b scenario in ``tmp``; returns (path, document) for tests to mutate."""
    (tmp / "add.comp").write_text(ADD_GLSL)
    np.save(tmp / "a.npy", np.arange(n, dtype=np.float32))
    np.save(tmp / "b.npy", np.full(n, 2.0, np.float32))
    np.save(tmp / "count.npy", np.array([n], np.uint32))
    doc = {
        "resources": [
            {"shader": {"uid": "add", "src": "add.comp", "type": "GLSL", "push_constants_size": 4}},
            {"raw_data": {"uid": "count", "src": "count.npy"}},
            {"buffer": {"uid": "a", "size": 4 * n, "shader_access": "readonly", "src": "a.npy"}},
            {"buffer": {"uid": "b", "size": 4 * n, "shader_access": "readonly", "src": "b.npy"}},
            {"buffer": {"uid": "c", "size": 4 * n, "shader_access": "writeonly", "dst": "c.npy"}},
        ],
        "commands": [
            {"dispatch_compute": {"shader_ref": "add", "push_data_ref": "count", "rangeND": [(n + 63) // 64],
                                  "bindings": [{"set": 0, "id": 0, "resource_ref": "a"},
                                               {"set": 0, "id": 1, "resource_ref": "b"},
                                               {"set": 1, "id": 0, "resource_ref": "c"}]}},
        ],
    }
    path = tmp / "scenario.json"
    write(path, doc)
    return path, doc


def write(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc, indent=2))
    return path


def kernellab(*args: str | os.PathLike[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run the CLI in a child process, as a user would."""
    return subprocess.run([sys.executable, "-m", "kernellab", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp")})


def raw(path: Path) -> np.ndarray:
    """An output file as Arm's runner writes it: a 1-D int8 array of raw bytes."""
    arr = np.load(path)
    assert arr.dtype == np.int8 and arr.ndim == 1, (arr.dtype, arr.shape)
    return arr
