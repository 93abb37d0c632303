"""``kernellab run --check``: compare the files a run wrote with the workload's expectations."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from kernellab.errors import InputError
from kernellab.suite.expectations import Expectations, find_expectations


def output_files(expectations: Expectations, workload: Path, output_dir: Path | None, fmt: str) -> dict[str, Path]:
    """Where the run wrote each expected output: a scenario resource's ``dst``, else a file
    named by the key under the output folder."""
    files: dict[str, Path] = {}
    scenario = None
    if fmt == "scenario":
        from kernellab.formats.scenario import load_scenario

        scenario, _ = load_scenario(workload, output_dir, check_files=False)
    for name in expectations.outputs:
        r = scenario.by_uid.get(name) if scenario is not None else None
        if r is not None:
            dst = getattr(r, "dst_path", None)
            if dst is None:
                raise InputError.at(expectations.sidecar, f"/outputs/{name}",
                                    f"resource \"{name}\" of {workload.name} has no dst: nothing is written to compare")
            files[name] = dst
        else:
            files[name] = (output_dir or workload.parent) / name
    return files


def check_written_outputs(workload: Path, output_dir: Path | None, fmt: str, sidecar: Path | None = None,
                          stream: Any = None) -> int:
    """Print a mismatch report; 0 when every output matches, 1 otherwise."""
    import numpy as np

    from kernellab.suite.compare import check_outputs

    stream = stream or sys.stderr
    expectations = find_expectations(workload, sidecar)
    actual: dict[str, Any] = {}
    for name, path in output_files(expectations, workload, output_dir, fmt).items():
        try:
            actual[name] = np.load(path, allow_pickle=False)
        except (OSError, ValueError):
            actual[name] = None
    result = check_outputs(expectations, actual)
    if result.ok:
        print(f"check: {len(result.outputs)} outputs match {expectations.sidecar.name}", file=stream)
        return 0
    print(f"check: {workload}: outputs differ from {expectations.sidecar.name}", file=stream)
    print(result.report(), file=stream)
    return 1
