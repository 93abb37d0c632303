#!/usr/bin/env python3
"""Where the start-up time of ``kernellab run`` goes, against what a Python process cannot avoid.

    python benchmarks/bench_startup_floor.py [--runs 9]

Runs, interleaved, each a fresh process on lavapipe: Arm's ``scenario-runner`` on the ``tiny``
scenario of bench_scenarios.py; ``python -c pass``; a bare script that imports ``vulkan`` and
creates an instance and a device (the floor for any Python Vulkan runner); the imports
kernellab's run path pulls in (numpy, vulkan); and ``kernellab run`` on the same
scenario. Prints min and median wall time of each. The issue-2 target for ``tiny`` is 1.5x Arm's
wall time; compare it with the floor's ratio.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_scenarios  # noqa: E402  (sibling script: the scenario generator)

from kernellab.testing.arm_runner import lavapipe_icd, require_arm_runner  # noqa: E402

DEVICE_FLOOR = """
import vulkan as vk
app = vk.VkApplicationInfo(sType=vk.VK_STRUCTURE_TYPE_APPLICATION_INFO, apiVersion=vk.VK_MAKE_VERSION(1, 1, 0))
inst = vk.vkCreateInstance(vk.VkInstanceCreateInfo(sType=vk.VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                                                   pApplicationInfo=app), None)
physical = vk.vkEnumeratePhysicalDevices(inst)[0]
queue = vk.VkDeviceQueueCreateInfo(sType=vk.VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, queueFamilyIndex=0,
                                   queueCount=1, pQueuePriorities=[1.0])
device = vk.vkCreateDevice(physical, vk.VkDeviceCreateInfo(sType=vk.VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                                                           queueCreateInfoCount=1, pQueueCreateInfos=[queue]), None)
vk.vkDestroyDevice(device, None)
vk.vkDestroyInstance(inst, None)
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args(argv)
    icd = lavapipe_icd()
    if icd is None:
        raise SystemExit("lavapipe not found: apt-get install mesa-vulkan-drivers libvulkan1")
    arm = require_arm_runner()
    env = {**os.environ, "VK_ICD_FILENAMES": str(icd), "VK_DRIVER_FILES": str(icd),
           "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR") or "/tmp"}
    with tempfile.TemporaryDirectory(prefix="kernellab-floor-") as tmp:
        root = Path(tmp)
        scenario = bench_scenarios.BUILDERS["tiny"](root, "SPIR-V").folder / "scenario.json"
        floor = root / "device_floor.py"
        floor.write_text(DEVICE_FLOOR)
        commands = {
            "Arm scenario-runner (tiny)": (arm.command(scenario, output=root / "arm"), arm.environment(icd=icd)),
            "python -c pass": ([sys.executable, "-c", "pass"], env),
            "python: import vulkan, instance + device": ([sys.executable, str(floor)], env),
            "python -c 'import numpy'": ([sys.executable, "-c", "import numpy"], env),
            "python -c 'import numpy, vulkan'": ([sys.executable, "-c", "import numpy, vulkan"], env),
            "kernellab run (tiny)": (bench_scenarios._kernellab_argv(scenario, root / "kl"), env),
        }
        walls: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, (argv_, env_) in commands.items():
                start = time.perf_counter()
                subprocess.run(argv_, env=env_, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
                walls[name].append(time.perf_counter() - start)
    arm_min = min(walls["Arm scenario-runner (tiny)"])
    print(f"{'command':45s} {'min ms':>8s} {'median ms':>10s} {'min / Arm':>10s}")
    for name, w in walls.items():
        print(f"{name:45s} {min(w) * 1000:8.0f} {statistics.median(w) * 1000:10.0f} {min(w) / arm_min:9.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
