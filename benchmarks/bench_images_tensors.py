#!/usr/bin/env python3
"""Issue 5 benchmark: ``kernellab run`` against Arm's ``scenario-runner`` on an image and a tensor scenario.

    python benchmarks/bench_images_tensors.py [--repeats 5] [--only blur,tensor_add] [--json out.json]
                                              [--markdown] [--workdir DIR]

- ``blur``        3x3 box blur of a 2048x2048 RGBA8 image read through a sampled image (sampler, clamp to
                  edge), written to a storage image; input DDS, output DDS        target: wall <= 1.0x Arm
- ``tensor_add``  c = a + b over 2^22 int32 elements in three VK_ARM_tensors tensors (.npy in/out), a
                  GL_ARM_tensors shader                                            target: wall <= 1.0x Arm

Both run on lavapipe, each run a fresh process, the two runners interleaved, median of the runs
(wall time and the child's peak RSS, through the issue-2 benchmark's spawner); kernellab runs
from cached bytecode (PYTHONDONTWRITEBYTECODE is dropped from its environment). Shaders are
compiled to SPIR-V ahead (the tensor shader with Arm's glslc), so neither runner compiles GLSL.
The outputs of the first round are checked: both runners' files must be byte-identical and
match NumPy (the blur within one unit of rounding).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scenarios import Measured, Spawner, _kernellab_argv, machine_description, runner_environments, work_folder

from kernellab import tools
from kernellab.formats import dds
from kernellab.vkregistry import vkformat

BLUR_GLSL = """#version 450
layout(local_size_x = 16, local_size_y = 16) in;
layout(set = 0, binding = 0) uniform sampler2D src;
layout(set = 0, binding = 1, rgba8) uniform writeonly image2D dst;
void main() {
    ivec2 size = imageSize(dst);
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    if (any(greaterThanEqual(p, size))) return;
    vec4 sum = vec4(0.0);
    for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx)
            sum += textureLod(src, (vec2(p + ivec2(dx, dy)) + 0.5) / vec2(size), 0.0);
    imageStore(dst, p, sum / 9.0);
}
"""

TENSOR_ADD_GLSL = """#version 450
#extension GL_ARM_tensors : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = 256) in;
layout(set = 0, binding = 0) uniform tensorARM<int32_t, 1> a;
layout(set = 0, binding = 1) uniform tensorARM<int32_t, 1> b;
layout(set = 0, binding = 2) uniform tensorARM<int32_t, 1> c;
void main() {
    uint i = gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256u + gl_GlobalInvocationID.x;
    if (i >= tensorSizeARM(a, 0)) return;
    int32_t x, y;
    tensorReadARM(a, uint[](i), x);
    tensorReadARM(b, uint[](i), y);
    tensorWriteARM(c, uint[](i), x + y);
}
"""


@dataclass
class Case:
    name: str
    folder: Path
    check: Callable[[Path], None]
    wall_target: float = 1.0


def _write(folder: Path, resources: list[dict], commands: list[dict]) -> None:
    (folder / "scenario.json").write_text(json.dumps({"resources": resources, "commands": commands}, indent=1))


def _blur(root: Path) -> Case:
    folder = root / "blur"
    folder.mkdir(parents=True, exist_ok=True)
    size = 2048
    rng = np.random.default_rng(5)
    pixels = rng.integers(0, 256, (size, size, 4), dtype=np.uint8)
    fmt = vkformat.lookup("VK_FORMAT_R8G8B8A8_UNORM")
    dds.save(folder / "input.dds", fmt, size, size, [pixels.tobytes()])
    (folder / "blur.comp").write_text(BLUR_GLSL)
    tools.require("glslangValidator", "the benchmark's shaders").run(
        ["-V", "--target-env", "vulkan1.1", "-S", "comp", "-o", str(folder / "blur.spv"), str(folder / "blur.comp")],
        what="compile blur.comp")
    dims = [1, size, size, 1]
    _write(folder, [
        {"shader": {"uid": "blur", "src": "blur.spv", "type": "SPIR-V"}},
        {"image": {"uid": "input", "dims": dims, "format": "VK_FORMAT_R8G8B8A8_UNORM", "shader_access": "readonly",
                   "src": "input.dds", "min_filter": "NEAREST", "mag_filter": "NEAREST",
                   "border_address_mode": "CLAMP_EDGE"}},
        {"image": {"uid": "output", "dims": dims, "format": "VK_FORMAT_R8G8B8A8_UNORM", "shader_access": "writeonly",
                   "dst": "blurred.dds"}},
    ], [{"dispatch_compute": {"shader_ref": "blur", "rangeND": [size // 16, size // 16], "bindings": [
        {"set": 0, "id": 0, "resource_ref": "input"}, {"set": 0, "id": 1, "resource_ref": "output"}]}}])
    src = pixels.astype(np.float64) / 255
    padded = np.pad(src, ((1, 1), (1, 1), (0, 0)), mode="edge")
    want = sum(padded[1 + dy:1 + dy + size, 1 + dx:1 + dx + size] for dy in (-1, 0, 1) for dx in (-1, 0, 1)) / 9

    def check(out: Path) -> None:
        got = dds.read(out / "blurred.dds").levels[0].astype(np.float64) / 255
        if not np.allclose(got, want, atol=1.01 / 255):
            raise SystemExit(f"blur: {out / 'blurred.dds'} differs from NumPy's blur")
    return Case("blur", folder, check)


def _tensor_add(root: Path) -> Case:
    from kernellab.backends.vulkan_arm import arm_glslc

    folder = root / "tensor_add"
    folder.mkdir(parents=True, exist_ok=True)
    n = 1 << 22
    rng = np.random.default_rng(6)
    a = rng.integers(-(1 << 30), 1 << 30, n, dtype=np.int32)
    b = rng.integers(-(1 << 30), 1 << 30, n, dtype=np.int32)
    np.save(folder / "a.npy", a)
    np.save(folder / "b.npy", b)
    (folder / "add.comp").write_text(TENSOR_ADD_GLSL)
    arm_glslc().run(["--input", folder / "add.comp", "--output", folder / "add.spv"], what="compile add.comp")
    groups = n // 256
    range_nd = [groups] if groups <= 65535 else [256, groups // 256]
    _write(folder, [
        {"shader": {"uid": "add", "src": "add.spv", "type": "SPIR-V"}},
        {"tensor": {"uid": "a", "dims": [n], "format": "VK_FORMAT_R32_SINT", "shader_access": "readonly",
                    "src": "a.npy"}},
        {"tensor": {"uid": "b", "dims": [n], "format": "VK_FORMAT_R32_SINT", "shader_access": "readonly",
                    "src": "b.npy"}},
        {"tensor": {"uid": "c", "dims": [n], "format": "VK_FORMAT_R32_SINT", "shader_access": "writeonly",
                    "dst": "c.npy"}},
    ], [{"dispatch_compute": {"shader_ref": "add", "rangeND": range_nd, "bindings": [
        {"set": 0, "id": 0, "resource_ref": "a"}, {"set": 0, "id": 1, "resource_ref": "b"},
        {"set": 0, "id": 2, "resource_ref": "c"}]}}])
    want = a + b

    def check(out: Path) -> None:
        got = np.load(out / "c.npy")
        if got.dtype != np.int32 or not np.array_equal(got, want):
            raise SystemExit(f"tensor_add: {out / 'c.npy'} differs from NumPy's a + b")
    return Case("tensor_add", folder, check)


BUILDERS: dict[str, Callable[[Path], Case]] = {"blur": _blur, "tensor_add": _tensor_add}
OUTPUTS = {"blur": "blurred.dds", "tensor_add": "c.npy"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", default=",".join(BUILDERS))
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    if set(names) - set(BUILDERS):
        parser.error(f"unknown cases: {sorted(set(names) - set(BUILDERS))}")
    icd, arm, arm_env, kl_env = runner_environments(keep_bytecode=True)
    tmp, root = work_folder(args.workdir, "kernellab-bench5-")
    print(f"machine: {machine_description()}")
    print(f"date:    {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"driver:  lavapipe ({icd}); Arm scenario-runner {arm.version}; {args.repeats} runs each, interleaved, median")
    spawner = Spawner()
    results: dict[str, dict] = {}
    try:
        for name in names:
            case = BUILDERS[name](root)
            scenario = case.folder / "scenario.json"
            measured = Measured()
            for i in range(args.repeats):
                for runner in ("arm", "kernellab"):
                    out = case.folder / f"out-{runner}"
                    log = case.folder / f"{runner}-{i}.log"
                    argv_ = arm.command(scenario, output=out) if runner == "arm" else _kernellab_argv(scenario, out)
                    measured.samples[runner].append(spawner.run(argv_, arm_env if runner == "arm" else kl_env, log))
                if i == 0:
                    for runner in ("arm", "kernellab"):
                        case.check(case.folder / f"out-{runner}")
                    same = (case.folder / "out-arm" / OUTPUTS[name]).read_bytes() == \
                        (case.folder / "out-kernellab" / OUTPUTS[name]).read_bytes()
                    if not same:
                        raise SystemExit(f"{name}: Arm's and kernellab's {OUTPUTS[name]} are not byte-identical")
            arm_wall, kl_wall = measured.median_wall("arm"), measured.median_wall("kernellab")
            ratio = kl_wall / arm_wall
            results[name] = {"arm": {"wall_s": arm_wall, "peak_rss_mib": measured.median_rss_mib("arm"),
                                     "walls": [s.wall for s in measured.samples["arm"]]},
                             "kernellab": {"wall_s": kl_wall, "peak_rss_mib": measured.median_rss_mib("kernellab"),
                                           "walls": [s.wall for s in measured.samples["kernellab"]]},
                             "wall_ratio": ratio, "wall_target": case.wall_target,
                             "met": ratio <= case.wall_target}
            print(f"\n{name:11s} {'wall s':>8s} {'min s':>8s} {'peak RSS MiB':>13s}")
            for runner, label in (("arm", "Arm"), ("kernellab", "kernellab")):
                r = results[name][runner]
                print(f"  {label:9s} {r['wall_s']:8.3f} {min(r['walls']):8.3f} {r['peak_rss_mib']:13.1f}")
            print(f"  ratio     {ratio:7.2f}x   target <= {case.wall_target:.1f}x: {'met' if ratio <= case.wall_target else 'MISSED'}"
                  f"  (outputs byte-identical, equal to NumPy)")
    finally:
        spawner.close()
        if tmp is not None:
            tmp.cleanup()
    if args.markdown:
        print("\n| case | Arm wall s | kernellab wall s | wall ratio | target | Arm peak RSS MiB | kernellab peak RSS MiB | verdict |")
        print("|---|---:|---:|---:|---:|---:|---:|---|")
        for name, r in results.items():
            print(f"| {name} | {r['arm']['wall_s']:.3f} | {r['kernellab']['wall_s']:.3f} | {r['wall_ratio']:.2f}x "
                  f"| <= {r['wall_target']:.1f}x | {r['arm']['peak_rss_mib']:.1f} | {r['kernellab']['peak_rss_mib']:.1f} "
                  f"| {'met' if r['met'] else '**missed**'} |")
    if args.json:
        args.json.write_text(json.dumps({"machine": machine_description(), "arm_version": arm.version,
                                         "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                         "repeats": args.repeats, "cases": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
