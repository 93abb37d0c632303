"""Run one scenario with Arm's Scenario Runner and with ``kernellab run``; compare their files.

Each test writes a scenario folder (JSON, shaders, ``.npy`` inputs) with :class:`Case`, then
calls :meth:`Case.run_both`, which

1. runs Arm's ``scenario-runner`` (the reference) with ``--output arm/`` and checks its output
   files against the test's NumPy expectation,
2. runs ``kernellab run`` on the same, unchanged files with ``--output kernellab/`` and checks
   its files against the same expectation,
3. asserts that both runners wrote the same set of files with byte-identical content.

Checking each runner against NumPy before comparing them says which one is right when they
differ. Both runners are pinned to lavapipe so they execute on the same driver.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kernellab import tools
from kernellab.testing.arm_runner import ArmRunner

RUN_TIMEOUT = 300


def raw_bytes(npy: Path) -> bytes:
    """The payload of a runner's buffer output: a 1-D int8 .npy holding the buffer's bytes."""
    arr = np.load(npy, allow_pickle=False)
    assert arr.dtype == np.int8 and arr.ndim == 1, f"{npy.name}: expected a 1-D int8 array, got {arr.dtype} {arr.shape}"
    return arr.tobytes()


def as_typed(npy: Path, dtype: Any) -> np.ndarray:
    return np.frombuffer(raw_bytes(npy), dtype=dtype)


def describe_difference(name: str, ref: bytes, got: bytes) -> str:
    """Where two files first differ, with both versions of the .npy header."""
    def header(data: bytes) -> bytes:
        if data[:6] != b"\x93NUMPY":
            return data[:16]
        size = int.from_bytes(data[8:10], "little") if data[6] == 1 else int.from_bytes(data[8:12], "little")
        return data[: (10 if data[6] == 1 else 12) + size]
    first = next((i for i, (a, b) in enumerate(zip(ref, got)) if a != b), min(len(ref), len(got)))
    return (f"{name}: Arm wrote {len(ref)} bytes, kernellab {len(got)}; first difference at byte {first}\n"
            f"  Arm header:       {header(ref)!r}\n  kernellab header: {header(got)!r}\n"
            f"  Arm bytes[{first}:{first + 16}]:       {ref[first:first + 16].hex(' ')}\n"
            f"  kernellab bytes[{first}:{first + 16}]: {got[first:first + 16].hex(' ')}")


@dataclass
class Expect:
    """A buffer output's expected content, read as ``array.dtype``; ``atol`` for float math."""

    array: np.ndarray
    atol: float = 0.0

    def check(self, runner: str, path: Path) -> None:
        assert path.is_file(), f"{runner} did not write {path.name}"
        got = as_typed(path, self.array.dtype)
        want = np.ascontiguousarray(self.array).reshape(-1)
        assert got.shape == want.shape, f"{runner} {path.name}: {got.shape} elements, expected {want.shape}"
        if self.atol:
            np.testing.assert_allclose(got, want, atol=self.atol, err_msg=f"{runner} {path.name}")
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"{runner} {path.name}")


@dataclass
class RunResult:
    arm: Path
    kernellab: Path
    files: dict[str, bytes] = field(default_factory=dict)


@dataclass
class Case:
    """A scenario folder under construction, and the two runners to run it with."""

    root: Path
    arm_runner: ArmRunner
    icd: Path

    # ---- building the folder -------------------------------------------------------------
    def save(self, name: str, array: np.ndarray) -> np.ndarray:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, array)
        return array

    def text(self, name: str, content: str) -> Path:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        return path

    def glsl_to_spirv(self, source: str, name: str, *, entry: str = "main", defines: Sequence[str] = ()) -> Path:
        """Compile GLSL ahead of time, for scenarios whose shader has ``"type": "SPIR-V"``."""
        src = self.text(Path(name).with_suffix(".comp").name, source)
        out = self.root / name
        args = ["-V", "--target-env", "vulkan1.1", "-S", "comp", *[f"-D{d}" for d in defines], "-o", str(out)]
        if entry != "main":
            args += ["-e", entry, "--source-entrypoint", "main"]
        tools.require("glslangValidator", "compiling test shaders").run([*args, str(src)], what=f"compile {src.name}")
        return out

    def scenario(self, resources: list[dict], commands: list[dict], name: str = "scenario.json") -> Path:
        return self.text(name, json.dumps({"resources": resources, "commands": commands}, indent=2))

    # ---- running -------------------------------------------------------------------------
    def env(self) -> dict[str, str]:
        # Same driver for both runners; the Arm runner adds its layer settings on top.
        return {**os.environ, "VK_ICD_FILENAMES": str(self.icd), "VK_DRIVER_FILES": str(self.icd),
                "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR") or "/tmp"}

    def run_arm(self, scenario: Path, output: Path | None, args: Sequence[str] = ()) -> subprocess.CompletedProcess:
        argv = self.arm_runner.command(scenario, output=output, args=args)
        return subprocess.run(argv, env=self.arm_runner.environment(icd=self.icd), capture_output=True, text=True,
                              timeout=RUN_TIMEOUT)

    def run_kernellab(self, scenario: Path, output: Path | None, args: Sequence[str] = ()) -> subprocess.CompletedProcess:
        argv = [sys.executable, "-m", "kernellab", "run", "--scenario", str(scenario)]
        if output is not None:
            argv += ["--output", str(output)]
        return subprocess.run([*argv, *args], env=self.env(), capture_output=True, text=True,
                              timeout=RUN_TIMEOUT)

    def run_both(self, expect: Mapping[str, Expect | np.ndarray] | None = None, *, scenario: str = "scenario.json",
                 args: Sequence[str] = (), arm_args: Sequence[str] = (), kernellab_args: Sequence[str] = (),
                 no_outputs: bool = False) -> RunResult:
        """Run both runners into ``arm/`` and ``kernellab/``; check NumPy, then byte-identity.

        ``expect`` maps a ``dst`` path (relative to ``--output``) to its expected content;
        every other file a runner writes is still compared byte for byte. ``args`` go to both
        runners, ``arm_args`` / ``kernellab_args`` to one (e.g. each its own cache folder).
        """
        expect = {k: (v if isinstance(v, Expect) else Expect(v)) for k, v in (expect or {}).items()}
        path = self.root / scenario
        arm_out, kl_out = self.root / "arm", self.root / "kernellab"

        arm = self.run_arm(path, arm_out, [*args, *arm_args])
        assert arm.returncode == 0, f"Arm's runner failed (exit {arm.returncode}):\n{arm.stdout}\n{arm.stderr}"
        arm_files = _files(arm_out)
        for name, want in expect.items():
            want.check("Arm", arm_out / name)
        if no_outputs:
            assert not arm_files, f"Arm wrote {sorted(arm_files)}"

        kl = self.run_kernellab(path, kl_out, [*args, *kernellab_args])
        assert kl.returncode == 0, f"kernellab run failed (exit {kl.returncode}):\n{kl.stdout}\n{kl.stderr}"
        kl_files = _files(kl_out)
        for name, want in expect.items():
            want.check("kernellab", kl_out / name)

        assert sorted(kl_files) == sorted(arm_files), (
            f"different output files: Arm {sorted(arm_files)}, kernellab {sorted(kl_files)}")
        for name, data in arm_files.items():
            assert kl_files[name] == data, describe_difference(name, data, kl_files[name])
        return RunResult(arm_out, kl_out, arm_files)


def _files(folder: Path) -> dict[str, bytes]:
    if not folder.is_dir():
        return {}
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# ---- scenario JSON building blocks (plain dicts, exactly what a user would write) -------------

def shader(uid: str, src: str, type_: str = "SPIR-V", **extra: Any) -> dict:
    return {"shader": {"uid": uid, "src": src, "type": type_, **extra}}


def buffer(uid: str, size: int, access: str = "readwrite", **extra: Any) -> dict:
    return {"buffer": {"uid": uid, "size": size, "shader_access": access, **extra}}


def raw_data(uid: str, src: str) -> dict:
    return {"raw_data": {"uid": uid, "src": src}}


def dispatch(shader_ref: str, range_nd: list[int], bindings: Sequence[tuple[int, int, str]], **extra: Any) -> dict:
    return {"dispatch_compute": {
        "shader_ref": shader_ref, "rangeND": range_nd,
        "bindings": [{"set": s, "id": i, "resource_ref": r} for s, i, r in bindings], **extra}}


def mark_boundary(resources: Sequence[str] = (), **extra: Any) -> dict:
    return {"mark_boundary": {"resources": list(resources), **extra}}
