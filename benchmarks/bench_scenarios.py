#!/usr/bin/env python3
"""Issue 2 benchmark: ``kernellab run`` against Arm's ``scenario-runner`` on four scenarios.

    python benchmarks/bench_scenarios.py [--repeats 5] [--only tiny,chain] [--json out.json]
                                         [--profile DIR] [--workdir DIR] [--shader-type SPIR-V|GLSL]

Generates the scenarios (shaders compiled to SPIR-V ahead, inputs as .npy), then runs each with
both runners, interleaved, several times, each run a fresh process pinned to lavapipe. Reports
the median wall time and the median peak RSS of the child process (``os.wait4``), the ratios
kernellab/Arm, and whether the issue's targets hold:

- ``tiny``  c = a + b over 64 floats                         (start-up cost)     wall <= 2.0x Arm as
                                                               SPIR-V, <= 1.0x as GLSL
- ``big``   c = a + b over 2^24 floats, three 64 MiB buffers  (data movement)     wall <= 1.0x Arm,
                                                               kernellab peak RSS <= 192 MiB + 150 MiB
- ``chain`` 1000 dependent dispatches incrementing 2^16 floats (per-dispatch cost) wall <= 1.0x Arm
- ``fma``   2^18 invocations x 2000 multiply-adds             (kernel-bound)      wall <= 1.0x Arm

Every run's output is checked: both runners' ``dst`` payloads must equal each other and NumPy's.
``--profile DIR`` additionally runs kernellab once per scenario under cProfile and prints where
the time goes. ``--instructions`` runs each runner once more per scenario under valgrind's
callgrind (caches warm from the timed runs) and reports the instructions each process executed
and their ratio: a count that does not move with the machine's load, for start-up comparisons on
a shared machine (issue 23); ``--by-object`` adds a table of which code executed them (the
interpreter, the Vulkan driver, lavapipe's compiled shaders, the C runtime, Arm's own binaries),
each function's own count given to the ELF object it lives in. kernellab runs as its console script where the interpreter's folder
has one (as a user starts it; ``python -m`` imports ``runpy`` first), else ``python -m kernellab``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import pstats
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kernellab import tools
from kernellab.testing.arm_runner import ArmRunner, lavapipe_icd, prepare_layer_dirs, require_arm_runner

MIB = 1 << 20

ADD_GLSL = """#version 450
layout(local_size_x = 256) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(set = 0, binding = 2) writeonly buffer C { float c[]; };
layout(push_constant) uniform Size { uint n; };
void main() {
    // rows of gl_NumWorkGroups.x workgroups: 2^24 elements need more than 65535 workgroups
    uint i = gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256u + gl_GlobalInvocationID.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""

INCREMENT_GLSL = """#version 450
layout(local_size_x = 256) in;
layout(set = 0, binding = 0) buffer X { float x[]; };
void main() { x[gl_GlobalInvocationID.x] += 1.0; }
"""

FMA_GLSL = """#version 450
layout(local_size_x = 256) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params { float mul; float add; uint steps; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    float v = x[i];
    for (uint k = 0u; k < steps; ++k) v = fma(v, mul, add);
    y[i] = v;
}
"""


@dataclass
class Scenario:
    name: str
    folder: Path
    outputs: dict[str, np.ndarray]  # dst file -> expected content (typed)
    atol: float = 0.0
    wall_target: float = 1.0
    data_bytes: int = 0


def _spirv_or_glsl(folder: Path, name: str, source: str, shader_type: str) -> dict:
    src = folder / f"{name}.comp"
    src.write_text(source)
    if shader_type == "GLSL":
        return {"uid": name, "src": src.name, "type": "GLSL"}
    spv = folder / f"{name}.spv"
    tools.require("glslangValidator", "the benchmark's shaders").run(
        ["-V", "--target-env", "vulkan1.1", "-S", "comp", "-o", str(spv), str(src)], what=f"compile {src.name}")
    return {"uid": name, "src": spv.name, "type": "SPIR-V"}


def _write(folder: Path, resources: list[dict], commands: list[dict]) -> None:
    (folder / "scenario.json").write_text(json.dumps({"resources": resources, "commands": commands}, indent=1))


def _add_scenario(root: Path, name: str, n: int, shader_type: str, target: float) -> Scenario:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(2)
    a = rng.standard_normal(n, dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    np.save(folder / "a.npy", a)
    np.save(folder / "b.npy", b)
    np.save(folder / "n.npy", np.array([n], np.uint32))
    groups = -(-n // 256)
    range_nd = [groups] if groups <= 65535 else [256, -(-groups // 256)]
    sh = _spirv_or_glsl(folder, "add", ADD_GLSL, shader_type)
    sh["push_constants_size"] = 4
    _write(folder, [
        {"shader": sh},
        {"raw_data": {"uid": "n", "src": "n.npy"}},
        {"buffer": {"uid": "a", "size": 4 * n, "shader_access": "readonly", "src": "a.npy"}},
        {"buffer": {"uid": "b", "size": 4 * n, "shader_access": "readonly", "src": "b.npy"}},
        {"buffer": {"uid": "c", "size": 4 * n, "shader_access": "writeonly", "dst": "c.npy"}},
    ], [{"dispatch_compute": {"shader_ref": "add", "push_data_ref": "n", "rangeND": range_nd, "bindings": [
        {"set": 0, "id": 0, "resource_ref": "a"}, {"set": 0, "id": 1, "resource_ref": "b"},
        {"set": 0, "id": 2, "resource_ref": "c"}]}}])
    return Scenario(name, folder, {"c.npy": a + b}, wall_target=target, data_bytes=12 * n)


def _chain_scenario(root: Path, shader_type: str) -> Scenario:
    folder = root / "chain"
    folder.mkdir(parents=True, exist_ok=True)
    n, steps = 1 << 16, 1000
    x = np.random.default_rng(3).standard_normal(n, dtype=np.float32)
    np.save(folder / "x.npy", x)
    sh = _spirv_or_glsl(folder, "increment", INCREMENT_GLSL, shader_type)
    step = {"dispatch_compute": {"shader_ref": "increment", "rangeND": [n // 256],
                                 "bindings": [{"set": 0, "id": 0, "resource_ref": "x"}]}}
    _write(folder, [{"shader": sh},
                    {"buffer": {"uid": "x", "size": 4 * n, "shader_access": "readwrite", "src": "x.npy",
                                "dst": "x_out.npy"}}],
           [step] * steps)
    expected = x.copy()
    for _ in range(steps):  # float32 rounding step by step, as on the device
        expected += np.float32(1)
    return Scenario("chain", folder, {"x_out.npy": expected}, data_bytes=4 * n)


def _fma_scenario(root: Path, shader_type: str) -> Scenario:
    folder = root / "fma"
    folder.mkdir(parents=True, exist_ok=True)
    n, steps = 1 << 18, 2000
    x = np.random.default_rng(4).uniform(-1, 1, n).astype(np.float32)
    np.save(folder / "x.npy", x)
    mul, add = np.float32(0.999), np.float32(0.001)
    params = np.frombuffer(np.array([mul, add], np.float32).tobytes() + np.array([steps], np.uint32).tobytes(),
                           np.int8)
    np.save(folder / "params.npy", params)
    sh = _spirv_or_glsl(folder, "fma", FMA_GLSL, shader_type)
    sh["push_constants_size"] = 12
    _write(folder, [{"shader": sh}, {"raw_data": {"uid": "params", "src": "params.npy"}},
                    {"buffer": {"uid": "x", "size": 4 * n, "shader_access": "readonly", "src": "x.npy"}},
                    {"buffer": {"uid": "y", "size": 4 * n, "shader_access": "writeonly", "dst": "y.npy"}}],
           [{"dispatch_compute": {"shader_ref": "fma", "push_data_ref": "params", "rangeND": [n // 256],
                                  "bindings": [{"set": 0, "id": 0, "resource_ref": "x"},
                                               {"set": 0, "id": 1, "resource_ref": "y"}]}}])
    # Closed form of v <- v*m + a repeated: v*m^k + a*(1-m^k)/(1-m); float rounding -> tolerance.
    mk = np.float64(mul) ** steps
    expected = (x.astype(np.float64) * mk + np.float64(add) * (1 - mk) / (1 - np.float64(mul))).astype(np.float32)
    return Scenario("fma", folder, {"y.npy": expected}, atol=1e-3, data_bytes=8 * n)


BUILDERS: dict[str, Callable[[Path, str], Scenario]] = {
    # issue 23: 2.0x where the shaders come as SPIR-V (Arm compiles nothing); issue 11: 1.0x from GLSL
    "tiny": lambda root, st: _add_scenario(root, "tiny", 64, st, target=2.0 if st == "SPIR-V" else 1.0),
    "big": lambda root, st: _add_scenario(root, "big", 1 << 24, st, target=1.0),
    "chain": _chain_scenario,
    "fma": _fma_scenario,
}


@dataclass
class Sample:
    wall: float
    rss_kib: int
    #: user + system CPU seconds of the child (steadier than wall time on a shared machine)
    cpu: float = 0.0


@dataclass
class Measured:
    samples: dict[str, list[Sample]] = field(default_factory=lambda: {"arm": [], "kernellab": []})

    def median_wall(self, runner: str) -> float:
        return statistics.median(s.wall for s in self.samples[runner])

    def median_cpu(self, runner: str) -> float:
        return statistics.median(s.cpu for s in self.samples[runner])

    def median_rss_mib(self, runner: str) -> float:
        return statistics.median(s.rss_kib for s in self.samples[runner]) / 1024


# Peak RSS comes from wait4's rusage. Linux carries the RSS a child had *before* exec into that
# figure, and a forked child starts with its parent's resident pages, so children are forked by a
# small helper process (a few MiB), never by this script, which holds the benchmark's arrays.
SPAWNER = r"""
import json, os, sys, time
for line in sys.stdin:
    job = json.loads(line)
    with open(job["log"], "wb") as log:
        start = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            try:
                os.execve(job["argv"][0], job["argv"], job["env"])
            finally:
                os._exit(127)
        _, status, usage = os.wait4(pid, 0)
        wall = time.perf_counter() - start
    print(json.dumps({"status": os.waitstatus_to_exitcode(status), "wall": wall, "maxrss_kib": usage.ru_maxrss,
                      "cpu": usage.ru_utime + usage.ru_stime}), flush=True)
"""


class Spawner:
    """A small long-lived process that runs each child and reports its wall time and peak RSS."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-S", "-c", SPAWNER], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env={"PATH": os.environ.get("PATH", "")})

    def run(self, argv: list[str], env: dict[str, str], log: Path) -> Sample:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"argv": argv, "env": env, "log": str(log)}) + "\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline())
        if reply["status"] != 0:
            raise SystemExit(f"{argv[0]} failed (exit {reply['status']}); log: {log}\n{log.read_text()[-3000:]}")
        return Sample(reply["wall"], reply["maxrss_kib"], reply["cpu"])

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


def _payload(path: Path) -> bytes:
    arr = np.load(path)
    if arr.dtype != np.int8 or arr.ndim != 1:
        raise SystemExit(f"{path}: expected a 1-D int8 .npy, got {arr.dtype} {arr.shape}")
    return arr.tobytes()


def _check_outputs(sc: Scenario, arm_dir: Path, kl_dir: Path) -> str:
    notes = []
    for name, expected in sc.outputs.items():
        arm, kl = _payload(arm_dir / name), _payload(kl_dir / name)
        for runner, data in (("Arm", arm), ("kernellab", kl)):
            got = np.frombuffer(data, expected.dtype)
            if sc.atol:
                ok = np.allclose(got, expected, atol=sc.atol)
            else:
                ok = np.array_equal(got, expected)
            if not ok:
                raise SystemExit(f"{sc.name}: {runner}'s {name} differs from NumPy's")
        if arm != kl:
            raise SystemExit(f"{sc.name}: {name} payloads differ between Arm and kernellab")
        if (arm_dir / name).read_bytes() != (kl_dir / name).read_bytes():
            notes.append(f"{name}: same data, different .npy header")
    return "; ".join(notes)


def _kernellab_argv(scenario: Path, output: Path, extra: list[str] = ()) -> list[str]:
    script = Path(sys.executable).with_name("kernellab")
    start = [str(script)] if script.is_file() else [sys.executable, "-m", "kernellab"]
    return [*start, "run", "--scenario", str(scenario), "--output", str(output), *extra]


def instructions(argv: list[str], env: dict[str, str], by_object: dict[str, int] | None = None) -> int:
    """The instructions the process ``argv`` (with its children) executes, from callgrind; with
    ``by_object``, each ELF object's own share (the code it ran, not what it called) added there."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit("--instructions needs valgrind (apt-get install valgrind)")
    with tempfile.TemporaryDirectory(prefix="bench-callgrind-") as tmp:
        out = Path(tmp) / "callgrind.out" if by_object is not None else Path(os.devnull)
        proc = subprocess.run([valgrind, "--tool=callgrind", f"--callgrind-out-file={out}", *argv], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=900)
        found = re.search(r"Collected\s*:\s*(\d+)", proc.stderr)
        if proc.returncode != 0 or found is None:
            raise SystemExit(f"{argv[0]} under callgrind failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
        if by_object is not None:
            for obj, count in self_cost_by_object(out).items():
                by_object[obj] = by_object.get(obj, 0) + count
    return int(found.group(1))


def self_cost_by_object(path: Path) -> dict[str, int]:
    """Instructions per ELF object from a callgrind output file: each function's own cost goes
    to the object it lives in (code made at run time, lavapipe's compiled shaders, is ``???``)."""
    names: dict[str, str] = {}

    def name(text: str) -> str:  # callgrind's name compression: "(7) /usr/lib/x.so" once, then "(7)"
        found = re.match(r"\((\d+)\)(?: (.*))?", text)
        if found is None:
            return text
        if found.group(2) is not None:
            names[found.group(1)] = found.group(2)
        return names.get(found.group(1), text)

    totals: dict[str, int] = {}
    current = function_object = "???"
    after_calls = False
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if after_calls:  # the line after calls= is the call's inclusive cost: the callee's
                after_calls = False
                continue
            if line.startswith(("ob=", "cob=")):
                named = name(line.split("=", 1)[1].strip())
                if line[0] == "o":
                    current = named
            elif line.startswith("fn="):
                function_object = current
            elif line.startswith("calls="):
                after_calls = True
            elif line[:1].isdigit() or line[:1] in "+-*":
                fields = line.split()
                if len(fields) >= 2:
                    totals[function_object] = totals.get(function_object, 0) + int(fields[1])
    return totals


#: how the objects are grouped in --by-object's table (first match of a part of the path)
OBJECT_GROUPS = (("the Python interpreter (libpython, its binary, the standard library's C modules)",
                  ("libpython", "/bin/python", "lib-dynload")),
                 ("Python packages' C modules (cffi, NumPy)", ("site-packages",)),
                 ("code with no file: lavapipe's compiled shaders (the dispatch)", ("???",)),
                 ("the Vulkan loader, lavapipe and LLVM", ("libvulkan", "libLLVM", "libgallium", "VkLayer_MESA")),
                 ("the C runtime (libc, the dynamic linker, libstdc++, libm)", ("libc.so", "ld-linux", "libstdc++",
                                                                               "libm.so", "libgcc")),
                 ("Arm's runner and its emulation layers", ("scenario-runner", "VkLayer_")))


def object_table(counts: dict[str, dict[str, int]]) -> str:
    """A markdown table of ``counts`` (runner -> object -> instructions) by OBJECT_GROUPS."""
    runners = list(counts)
    grouped: dict[str, dict[str, int]] = {}
    for runner, objects in counts.items():
        for obj, n in objects.items():
            group = next((g for g, parts in OBJECT_GROUPS if any(p in obj for p in parts)), "other libraries")
            grouped.setdefault(group, {}).setdefault(runner, 0)
            grouped[group][runner] += n
    lines = ["| part | " + " | ".join(f"{r} (M)" for r in runners) + " | difference (M) |",
             "|---|" + "---:|" * (len(runners) + 1)]
    for group, by_runner in sorted(grouped.items(), key=lambda kv: -max(kv[1].values())):
        values = [by_runner.get(r, 0) for r in runners]
        lines.append(f"| {group} | " + " | ".join(f"{v / 1e6:.1f}" for v in values)
                     + f" | {(values[-1] - values[0]) / 1e6:+.1f} |")
    totals = [sum(objects.values()) for objects in counts.values()]
    lines.append("| **total** | " + " | ".join(f"**{t / 1e6:.1f}**" for t in totals)
                 + f" | **{(totals[-1] - totals[0]) / 1e6:+.1f}** |")
    return "\n".join(lines)


def _profile(sc: Scenario, out_dir: Path, env: dict[str, str]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    stats_file = out_dir / f"{sc.name}.prof"
    argv = [sys.executable, "-m", "cProfile", "-o", str(stats_file), "-m", "kernellab", "run", "--scenario",
            str(sc.folder / "scenario.json"), "--output", str(out_dir / f"{sc.name}-out")]
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    print(f"\n--- cProfile of kernellab run on {sc.name} ({stats_file}): kernellab's own functions by cumulative time")
    stats = pstats.Stats(str(stats_file)).sort_stats("cumulative")
    stats.print_stats(r"kernellab[/\\](?!.*<module>)", 25)
    print(f"--- {sc.name}: module imports (start-up) by cumulative time")
    stats.print_stats(r"\(<module>\)", 15)


def machine_description() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}, Python {platform.python_version()}"


@dataclass(frozen=True)
class PlainArm:
    """Arm's ``scenario-runner`` executable alone, without its ML emulation layers (a compute-only
    run needs none): for a machine where only the binary was brought, e.g. a GPU machine."""

    executable: Path

    def command(self, scenario: Path, *, output: Path | None = None) -> list[str]:
        return [str(self.executable), "--scenario", str(scenario)] + (["--output", str(output)] if output else [])

    @property
    def version(self) -> str:
        proc = subprocess.run([str(self.executable), "--version"], capture_output=True, timeout=30)
        return proc.stdout.decode(errors="replace").strip() or "unknown"


def runner_environments(keep_bytecode: bool = False, icd: Path | None = None, arm_executable: Path | None = None,
                        arm_deploy: Path | None = None) -> tuple[Path, ArmRunner | PlainArm, dict, dict]:
    """The Vulkan driver's ICD (lavapipe unless ``icd`` names another), Arm's runner with its
    environment, and kernellab's environment, both pinned to that driver. ``keep_bytecode`` drops
    PYTHONDONTWRITEBYTECODE for kernellab: an installed kernellab runs from cached bytecode, and
    with it set every run compiles every module again. ``arm_executable`` runs that binary instead
    of the pip package's runner: with the emulation layers of ``arm_deploy`` (the layer package's
    ``deploy`` folder, copied to another machine), else without them."""
    icd = icd or lavapipe_icd()
    if icd is None:
        raise SystemExit("lavapipe not found: apt-get install mesa-vulkan-drivers libvulkan1")
    kl_env = {**os.environ, "VK_ICD_FILENAMES": str(icd), "VK_DRIVER_FILES": str(icd),
              "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR") or "/tmp"}
    if keep_bytecode:
        kl_env.pop("PYTHONDONTWRITEBYTECODE", None)
    if arm_executable is not None and arm_deploy is not None:
        arm: ArmRunner | PlainArm = ArmRunner(arm_executable, arm_deploy, prepare_layer_dirs(arm_deploy))
        return icd, arm, arm.environment(icd=icd), kl_env
    if arm_executable is not None:
        return icd, PlainArm(arm_executable), dict(kl_env), kl_env
    arm = require_arm_runner()
    return icd, arm, arm.environment(icd=icd), kl_env


def work_folder(workdir: Path | None, prefix: str) -> tuple[tempfile.TemporaryDirectory | None, Path]:
    """The folder scenarios are generated in: ``workdir``, or a temp folder (returned to clean up)."""
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix=prefix)
        return tmp, Path(tmp.name)
    workdir.mkdir(parents=True, exist_ok=True)
    return None, workdir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per runner and scenario (median taken)")
    parser.add_argument("--only", default=",".join(BUILDERS), help="comma-separated subset of " + ",".join(BUILDERS))
    parser.add_argument("--workdir", type=Path, help="where to generate scenarios (default: a temp folder)")
    parser.add_argument("--shader-type", choices=["SPIR-V", "GLSL"], default="SPIR-V")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--profile", type=Path, help="cProfile kernellab once per scenario, stats into this folder")
    parser.add_argument("--markdown", action="store_true", help="also print the figures as a BENCHMARKS.md table")
    parser.add_argument("--instructions", action="store_true",
                        help="also count each runner's instructions once per scenario under callgrind (needs valgrind)")
    parser.add_argument("--by-object", action="store_true",
                        help="as --instructions, with a table of where they go: the interpreter, the driver, the "
                             "shaders' code, the C runtime, Arm's own code")
    parser.add_argument("--icd", type=Path, help="the Vulkan driver's ICD manifest (default: lavapipe's)")
    parser.add_argument("--arm-executable", type=Path,
                        help="Arm's scenario-runner binary (default: the pip package's)")
    parser.add_argument("--arm-deploy", type=Path,
                        help="the emulation layer package's deploy folder for --arm-executable (default: no layers)")
    args = parser.parse_args(argv)

    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = set(names) - set(BUILDERS)
    if unknown:
        parser.error(f"unknown scenarios: {sorted(unknown)}")

    # kernellab as installed: its bytecode and its kept module code written and read (issue 23)
    icd, arm, arm_env, kl_env = runner_environments(keep_bytecode=True, icd=args.icd,
                                                    arm_executable=args.arm_executable, arm_deploy=args.arm_deploy)
    spawner = Spawner()
    tmp, root = work_folder(args.workdir, "kernellab-bench-")

    print(f"machine: {machine_description()}")
    print(f"date:    {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"driver:  {'lavapipe' if args.icd is None else 'ICD'} ({icd}); Arm scenario-runner {arm.version}; shaders as {args.shader_type}; "
          f"{args.repeats} runs each, interleaved, median")
    results: dict[str, dict] = {}
    try:
        for name in names:
            sc = BUILDERS[name](root, args.shader_type)
            scenario = sc.folder / "scenario.json"
            measured = Measured()
            for i in range(args.repeats):
                for runner in ("arm", "kernellab"):
                    out = sc.folder / f"out-{runner}"
                    log = sc.folder / f"{runner}-{i}.log"
                    if runner == "arm":
                        sample = spawner.run(arm.command(scenario, output=out), arm_env, log)
                    else:
                        sample = spawner.run(_kernellab_argv(scenario, out), kl_env, log)
                    measured.samples[runner].append(sample)
                if i == 0:
                    note = _check_outputs(sc, sc.folder / "out-arm", sc.folder / "out-kernellab")
            results[name] = _report(sc, measured, note)
            if args.instructions or args.by_object:
                objects: dict[str, dict[str, int]] | None = {"Arm": {}, "kernellab": {}} if args.by_object else None
                counts = {"arm": instructions(arm.command(scenario, output=sc.folder / "out-arm"), arm_env,
                                              objects["Arm"] if objects else None),
                          "kernellab": instructions(_kernellab_argv(scenario, sc.folder / "out-kernellab"), kl_env,
                                                    objects["kernellab"] if objects else None)}
                if objects:
                    print(f"\n{name}: instructions by the object that executed them\n\n{object_table(objects)}\n")
                results[name]["instructions"] = counts
                results[name]["instruction_ratio"] = ratio = counts["kernellab"] / counts["arm"]
                if ratio > sc.wall_target:
                    results[name]["misses"].append(f"instructions {ratio:.2f}x Arm > {sc.wall_target:.1f}x")
                print(f"{'':6s} instructions: Arm {counts['arm'] / 1e6:.1f} M, kernellab "
                      f"{counts['kernellab'] / 1e6:.1f} M = {results[name]['instruction_ratio']:.2f}x")
            if args.profile:
                _profile(sc, args.profile, kl_env)
    finally:
        spawner.close()
        if tmp is not None:
            tmp.cleanup()

    failed = [f"{n}: {why}" for n, r in results.items() for why in r["misses"]]
    print("\ntargets: " + ("all met" if not failed else "MISSED -- " + "; ".join(failed)))
    if args.markdown:
        print("\n" + markdown_table(results))
    if args.json:
        args.json.write_text(json.dumps({"machine": machine_description(),
                                         "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                         "arm_version": arm.version, "shader_type": args.shader_type,
                                         "repeats": args.repeats, "scenarios": results}, indent=2))
    return 0


def markdown_table(results: dict[str, dict]) -> str:
    rows = ["| scenario | Arm wall s | kernellab wall s | wall ratio | CPU ratio | instruction ratio | target "
            "| Arm peak RSS MiB | kernellab peak RSS MiB | RSS ratio | verdict |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for name, r in results.items():
        budget = f" (budget {r['rss_budget_mib']:.0f})" if r["rss_budget_mib"] else ""
        verdict = "met" if not r["misses"] else "**missed**: " + "; ".join(r["misses"])
        counted = f"{r['instruction_ratio']:.2f}x" if "instruction_ratio" in r else "-"
        rows.append(f"| {name} | {r['arm']['wall_s']:.3f} | {r['kernellab']['wall_s']:.3f} | {r['wall_ratio']:.2f}x "
                    f"| {r['cpu_ratio']:.2f}x | {counted} | <= {r['wall_target']:.1f}x | {r['arm']['peak_rss_mib']:.1f} "
                    f"| {r['kernellab']['peak_rss_mib']:.1f}{budget} | {r['rss_ratio']:.2f}x | {verdict} |")
    return "\n".join(rows)


def _report(sc: Scenario, m: Measured, note: str) -> dict:
    arm_wall, kl_wall = m.median_wall("arm"), m.median_wall("kernellab")
    arm_rss, kl_rss = m.median_rss_mib("arm"), m.median_rss_mib("kernellab")
    wall_ratio, rss_ratio = kl_wall / arm_wall, kl_rss / arm_rss
    misses = []
    if wall_ratio > sc.wall_target:
        misses.append(f"wall {wall_ratio:.2f}x Arm > {sc.wall_target:.1f}x")
    rss_budget = None
    if sc.name == "big":
        rss_budget = 1.5 * sc.data_bytes / MIB + 150
        if kl_rss > rss_budget:
            misses.append(f"peak RSS {kl_rss:.0f} MiB > {rss_budget:.0f} MiB")
    cpu_ratio = m.median_cpu("kernellab") / m.median_cpu("arm")
    print(f"\n{sc.name:6s} {'':10s} {'wall s':>8s} {'min s':>8s} {'peak RSS MiB':>13s} {'CPU s':>8s}")
    for runner, label in (("arm", "Arm"), ("kernellab", "kernellab")):
        walls = [s.wall for s in m.samples[runner]]
        print(f"{'':6s} {label:10s} {statistics.median(walls):8.3f} {min(walls):8.3f} {m.median_rss_mib(runner):13.1f}"
              f" {m.median_cpu(runner):8.3f}")
    budget = f", RSS budget {rss_budget:.0f} MiB" if rss_budget else ""
    print(f"{'':6s} {'ratio':10s} {wall_ratio:7.2f}x {'':8s} {rss_ratio:12.2f}x {cpu_ratio:7.2f}x   target wall <= "
          f"{sc.wall_target:.1f}x{budget}: {'met' if not misses else 'MISSED'}")
    if note:
        print(f"{'':6s} note: {note}")
    return {"arm": {"wall_s": arm_wall, "peak_rss_mib": arm_rss, "walls": [s.wall for s in m.samples["arm"]],
                    "cpu_s": m.median_cpu("arm")},
            "kernellab": {"wall_s": kl_wall, "peak_rss_mib": kl_rss,
                          "walls": [s.wall for s in m.samples["kernellab"]], "cpu_s": m.median_cpu("kernellab")},
            "wall_ratio": wall_ratio, "cpu_ratio": cpu_ratio, "rss_ratio": rss_ratio, "wall_target": sc.wall_target,
            "rss_budget_mib": rss_budget, "misses": misses, "note": note}


if __name__ == "__main__":
    sys.exit(main())
