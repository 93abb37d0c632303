"""Imported once by the local pool's fork server: everything a worker needs is loaded and the
scenario validators are built before any worker forks, so no worker pays for it again.
Nothing here touches a device (a forked child must never inherit a Vulkan or OpenCL one)."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import kernellab.runtime.executor  # noqa: F401
import kernellab.session  # noqa: F401
from kernellab.formats.scenario import load_scenario
from kernellab.suite import compare, worker  # noqa: F401


def _build_validators() -> None:
    doc = {"resources": [{"shader": {"uid": "s", "src": "s.spv", "type": "SPIR-V", "push_constants_size": 4,
                                     "specialization_constants": [{"id": 0, "value": 1}]}},
                         {"raw_data": {"uid": "p", "src": "p.npy"}},
                         {"buffer": {"uid": "b", "size": 4, "shader_access": "readwrite", "dst": "b.npy"}},
                         {"memory_barrier": {"uid": "m", "src_access": "compute_shader_write",
                                             "dst_access": "compute_shader_read"}}],
           "commands": [{"dispatch_compute": {"shader_ref": "s", "push_data_ref": "p", "rangeND": [1],
                                              "bindings": [{"set": 0, "id": 0, "resource_ref": "b"}]}},
                        {"dispatch_barrier": {"memory_barrier_refs": ["m"], "image_barrier_refs": [],
                                              "tensor_barrier_refs": [], "buffer_barrier_refs": []}}]}
    with tempfile.TemporaryDirectory(prefix="kernellab-prefork-") as tmp:
        path = Path(tmp) / "warm.json"
        path.write_text(json.dumps(doc))
        try:
            load_scenario(path, check_files=False)
        except Exception:  # only a warm-up: a worker reports real problems itself
            pass


_build_validators()
