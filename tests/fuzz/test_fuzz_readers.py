"""Every reader and `validate`, over thousands of mutated inputs: no traceback, no hang, no
internal error, no file left behind (issue 10). `pytest tests/fuzz --fuzz-long` runs 20,000."""
from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from fuzz.mutate import Seed, fuzz, run_child

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CI_CASES = 2400
LONG_CASES = 20000


def _kernel_instantiation(folder: Path) -> None:
    (folder / "k.cl").write_text("__kernel void k(__global int *a, int n) { a[get_global_id(0)] = n; }\n")
    (folder / "a.bin").write_bytes(bytes(64))
    (folder / "k.json").write_text(json.dumps([{
        "language": "OpenCL", "kernel_file": "k.cl", "entry_point": "k", "global_size": [16], "local_size": [4],
        "global_offset": [0], "compiler_flags": "-DX=1",
        "kernel_arguments": [{"type": "array", "size": 64, "address_space": "global",
                              "flags": ["CL_MEM_READ_WRITE"], "data": "a.bin"},
                             {"type": "scalar", "value": "0x07000000"}]}]))


def _pyschedcl(folder: Path) -> None:
    (folder / "gemm.cl").write_text("__kernel void gemm(__global float *a) {}\n")
    (folder / "gemm.json").write_text(json.dumps({
        "name": "gemm", "src": "gemm.cl", "workDimension": 2, "partition": 7, "id": "k1",
        "globalWorkSize": "[m1, n1]", "localWorkSize": 4,
        "inputBuffers": [{"break": 1, "pos": 0, "size": "m1*p1", "type": "float"}],
        "outputBuffers": [{"break": 1, "pos": 2, "size": "m1*n1", "type": "float"}],
        "varArguments": [{"pos": 1, "type": "int", "value": "partition_round(m1, size_percent)"}],
        "localArguments": [{"pos": 3, "type": "float4", "size": "TS*TS"}],
        "macros_values": {"TS": "tile"}, "symbolicVariables": {"tile": 4, "m1": 64, "n1": 8, "p1": 4}}))


def seeds(root: Path) -> list[Seed]:
    """The seed folders under ``root``, made on the first call and reused after."""
    made = []
    if not root.exists():
        _make_seeds(root)
    for name in ("vector_add", "image_blur", "heat_frames"):
        targets = tuple(sorted(p.name for p in (root / name).iterdir() if p.suffix in (".json", ".npy", ".dds")))
        made.append(Seed(name, root / name, targets, ("validate", "{dir}/scenario.json", "--output", "{out}")))
    made.append(Seed("instantiation", root / "instantiation", ("k.json", "k.json", "a.bin"),
                     ("validate", "{dir}/k.json")))
    made.append(Seed("pyschedcl", root / "pyschedcl", ("gemm.json",),
                     ("validate", "{dir}/gemm.json", "--set", "m1=64")))
    made.append(Seed("iga", root / "iga", ("l.json",), ("listing", "--input", "{dir}/l.json", "--format", "json")))
    return made


def _make_seeds(root: Path) -> None:
    for name in ("vector_add", "image_blur", "heat_frames"):
        shutil.copytree(EXAMPLES / name, root / name)
    (root / "instantiation").mkdir()
    _kernel_instantiation(root / "instantiation")
    (root / "pyschedcl").mkdir()
    _pyschedcl(root / "pyschedcl")
    (root / "iga").mkdir()
    shutil.copy(Path(__file__).resolve().parents[1] / "unit" / "listing_data" / "iga_example.json",
                root / "iga" / "l.json")


def test_the_seeds_themselves_are_valid(tmp_path: Path) -> None:
    outcomes = fuzz(seeds(tmp_path / "seeds"), 0, tmp_path)
    assert outcomes == []
    from kernellab.cli import main
    for seed in seeds(tmp_path / "again"):
        argv = [a.format(dir=seed.folder, out=seed.folder / "out") for a in seed.argv]
        assert main(argv) == 0, seed.name


def test_mutated_inputs_never_crash_hang_or_leave_files(tmp_path: Path, pytestconfig: pytest.Config) -> None:
    cases = pytestconfig.getoption("--fuzz-cases") or (LONG_CASES if pytestconfig.getoption("--fuzz-long")
                                                       else CI_CASES)
    outcomes = run_child(tmp_path / "seeds", cases, tmp_path / "cases", pytestconfig.getoption("--fuzz-seed"))
    tally = Counter(str(o.status) if o.bad else o.status for o in outcomes)
    bad = [o for o in outcomes if o.bad]
    print(f"fuzz: {cases} inputs, seed {pytestconfig.getoption('--fuzz-seed')}: {dict(tally)}")
    assert not bad, f"{len(bad)} of {cases} inputs went wrong:\n" + "\n".join(
        f"{o.seed} #{o.case} ({o.target}): {o.status} {o.detail}" for o in bad[:25])
    # the fuzzer must reach the readers' error paths, not only repeat valid files
    assert tally[2] > cases // 4 and tally[0] > 0, tally


def test_the_fuzzer_is_deterministic(tmp_path: Path) -> None:
    first = fuzz(seeds(tmp_path / "s1"), 30, tmp_path / "c1", base_seed=7)
    second = fuzz(seeds(tmp_path / "s2"), 30, tmp_path / "c2", base_seed=7)
    assert [(o.target, o.status) for o in first] == [(o.target, o.status) for o in second]
    assert np.unique([o.target for o in first]).size > 3
