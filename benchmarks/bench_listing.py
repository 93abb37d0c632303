"""Benchmark: ``kernellab listing --defs`` on a 5,000-instruction SPIR-V module, next to spirv-dis.

Targets (issue 4): under 1 s wall, and no more than 2x spirv-dis's time on the same module
plus 0.5 s. Both are timed as the user runs them: a fresh process each, best and median of
several runs. Usage: ``python benchmarks/bench_listing.py [--instructions 5000] [--runs 7]``.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kernellab import tools
from kernellab.listing.build import ListingOptions, build_listings
from kernellab.listing.spirv import decode


def shader(statements: int) -> str:
    """A compute shader with loops, branches, a helper function and GLSL.std.450 calls; its
    size grows with ``statements``."""
    body = []
    for k in range(statements):
        v = f"v{k % 8}"
        w = f"v{(k * 3 + 1) % 8}"
        kind = k % 6
        if kind == 0:
            body.append(f"    {v} = fma({v}, {w}, data.x[(i + {k}u) % 1024u]);")
        elif kind == 1:
            body.append(f"    if ({v} > {w}) {{ {v} = sqrt(abs({v} - {w})); }} else {{ {w} = {w} * 0.5 + {k}.0; }}")
        elif kind == 2:
            body.append(f"    {v} = helper({v}, {w}) + float({k});")
        elif kind == 3:
            body.append(f"    for (int j = 0; j < 4; ++j) {{ {v} += tile[(i + uint(j) + {k}u) % 64u] * {w}; }}")
        elif kind == 4:
            body.append(f"    {v} = clamp({v}, -{k}.0, {k + 1}.0) + exp2({w} * 0.001);")
        else:
            body.append(f"    tile[(i + {k}u) % 64u] = {v} + {w};")
    decls = "\n".join(f"    float v{n} = data.x[(i + {n}u) % 1024u];" for n in range(8))
    total = " + ".join(f"v{n}" for n in range(8))
    return f"""#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer Data {{ float x[]; }} data;
shared float tile[64];
float helper(float a, float b) {{ return a * b - floor(a); }}
void main() {{
    uint i = gl_GlobalInvocationID.x;
{decls}
{chr(10).join(body)}
    data.x[i] = {total};
}}
"""


def make_module(instructions: int, directory: Path) -> tuple[Path, int]:
    """Compile shaders, resizing, until the module has ``instructions`` instructions (within 3%)."""
    glslang = tools.require("glslangValidator")
    statements = max(10, instructions // 16)
    src, out = directory / "bench.comp", directory / "bench.spv"
    for _ in range(8):
        src.write_text(shader(statements))
        glslang.run(["-V", "--target-env", "vulkan1.2", "-o", str(out), str(src)], what="compiling the benchmark shader")
        count = len(decode(out.read_bytes()).instructions)
        if instructions <= count <= instructions * 1.03:
            break
        statements = max(10, round(statements * instructions / count) + (1 if count < instructions else 0))
    return out, count


def timed(argv: list[str], runs: int, env: dict[str, str] | None = None) -> list[float]:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env)
        times.append(time.perf_counter() - t0)
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--instructions", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    import os

    with tempfile.TemporaryDirectory(prefix="kernellab-bench-") as tmp:
        module, count = make_module(args.instructions, Path(tmp))
        dis = tools.require("spirv-dis")
        env = {**os.environ, **dis.env}
        spirv_dis = timed([str(dis.path), "--no-color", str(module)], args.runs, env)
        listing = timed([sys.executable, "-m", "kernellab", "listing", "--defs", str(module)], args.runs)
        data = module.read_bytes()
        t0 = time.perf_counter()
        m = decode(data)
        t1 = time.perf_counter()
        listings = build_listings(m, ListingOptions(defs=True))
        t2 = time.perf_counter()
        json.dumps(listings)
        t3 = time.perf_counter()
    med_dis, med_lst = statistics.median(spirv_dis), statistics.median(listing)
    budget = min(1.0, 2 * med_dis + 0.5)
    figures = {
        "machine": f"{platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}",
        "module_instructions": count, "module_bytes": len(data),
        "spirv_dis_median_s": round(med_dis, 4), "spirv_dis_best_s": round(min(spirv_dis), 4),
        "listing_defs_median_s": round(med_lst, 4), "listing_defs_best_s": round(min(listing), 4),
        "ratio_listing_to_spirv_dis": round(med_lst / med_dis, 2),
        "in_process_decode_s": round(t1 - t0, 4), "in_process_build_s": round(t2 - t1, 4),
        "in_process_json_s": round(t3 - t2, 4),
        "budget_s": round(budget, 4), "within_budget": med_lst <= budget,
    }
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        for k, v in figures.items():
            print(f"{k:>28}: {v}")
    return 0 if figures["within_budget"] else 1


if __name__ == "__main__":
    sys.exit(main())
