"""``kernellab run --check``: compare the files a run wrote with the workload's expectations."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from kernellab.errors import InputError
from kernellab.suite.expectations import Expectations, find_expectations
from kernellab.suite.wording import plural


def output_files(expectations: Expectations, workload: Path, output_dir: Path | None, fmt: str) -> dict[str, Path]:
    """Where the run wrote each expected output: a scenario resource's ``dst``, else a file
    named by the key under the output folder."""
    files: dict[str, Path] = {}
    scenario = None
    if fmt == "scenario":
        from kernellab.formats.scenario import load_scenario

        scenario, _ = load_scenario(workload, output_dir, check_files=False)
    for name in expectations.output_names():
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


def expectations_to_check(workload: Path, sidecar: Path | None = None) -> Expectations:
    """The sidecar of ``run --check``, its references read: called before the run, so a bad
    sidecar is bad input (exit 2) with nothing run, as in ``kernellab test``."""
    from kernellab.suite.compare import check_references

    expectations = find_expectations(workload, sidecar)
    check_references(expectations)
    return expectations


def read_output(path: Path) -> Any:
    """A written output as an array: a ``.npy`` file as NumPy reads it, any other file (a
    kernel-instantiation run's ``arg<N>.bin``) as its raw bytes, which the reference's dtype
    and shape then give a meaning; None when the run did not write it."""
    import numpy as np

    try:
        with path.open("rb") as fh:
            magic = fh.read(6)
            fh.seek(0)
            if magic == b"\x93NUMPY":
                return np.load(fh, allow_pickle=False)
            return np.frombuffer(fh.read(), dtype=np.uint8)
    except OSError:
        return None
    except ValueError:  # a .npy header NumPy cannot read: compared as the bytes it is
        return np.frombuffer(path.read_bytes(), dtype=np.uint8)


def check_written_outputs(workload: Path, output_dir: Path | None, fmt: str, sidecar: Path | None = None,
                          stream: Any = None, expectations: Expectations | None = None) -> int:
    """Print a mismatch report; 0 when every output matches, 1 otherwise."""
    from kernellab.suite.compare import check_outputs

    stream = stream or sys.stderr
    if expectations is None:
        expectations = expectations_to_check(workload, sidecar)
    actual = {name: read_output(path)
              for name, path in output_files(expectations, workload, output_dir, fmt).items()}
    result = check_outputs(expectations, actual)
    if result.ok:
        verb = "matches" if len(result.outputs) == 1 else "match"
        print(f"check: {plural(len(result.outputs), 'output')} {verb} {expectations.sidecar.name}", file=stream)
        return 0
    print(f"check: {workload}: outputs differ from {expectations.sidecar.name}", file=stream)
    print(result.report(), file=stream)
    return 1
