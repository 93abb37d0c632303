from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")


def pytest_addoption(parser) -> None:  # type: ignore[no-untyped-def]
    group = parser.getgroup("kernellab")
    group.addoption("--fuzz-long", action="store_true",
                    help="fuzz the readers with 20,000 inputs instead of CI's few thousand (before releases)")
    group.addoption("--fuzz-cases", type=int, default=None, help="number of fuzzed inputs (overrides the default)")
    group.addoption("--fuzz-seed", type=int, default=0, help="seed of the mutation fuzzer")
