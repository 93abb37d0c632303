#!/usr/bin/env bash
# The main job on the bundled example: c = a + b on the best Vulkan device, outputs in out/example.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
.venv/bin/kernellab devices --backend vulkan
.venv/bin/kernellab run --scenario examples/vector_add/scenario.json --output out/example \
    --profiling-dump-path out/example/profiling.json
.venv/bin/python - <<'PY'
import numpy as np
a = np.load("examples/vector_add/a.npy"); b = np.load("examples/vector_add/b.npy")
c = np.load("out/example/c.npy").view(np.float32)
assert np.array_equal(c, a + b), "c != a + b"
print(f"out/example/c.npy: {c.size} floats, equal to a + b (first: {c[:4].tolist()})")
PY
