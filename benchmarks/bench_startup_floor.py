#!/usr/bin/env python3
"""Where the start-up time of ``kernellab run`` goes, against what a Python process cannot avoid.

    python benchmarks/bench_startup_floor.py [--runs 9]

Runs, interleaved, each a fresh process on lavapipe: Arm's ``scenario-runner`` on the ``tiny``
scenario of bench_scenarios.py; ``python -c pass``; a bare script that imports ``vulkan`` and
creates an instance and a device (the floor for a runner on the ``vulkan`` binding); the binding's
import alone; and ``kernellab run`` on the same scenario. Prints min and median wall time and the
median CPU time (user + system, from the kernel's accounting of the child: steadier than wall time
on a shared machine) of each. The issue-11 target for ``tiny`` is 1.0x Arm's wall time; compare
it with the floors' ratios.

Two rows bound what any CPython runner can reach: ``python -S -c pass`` (the interpreter alone, no
site-packages) and a ``python -S`` script that creates the same instance and device through
``ctypes`` (no binding package, no import beyond ctypes): Vulkan's own start-up (the loader,
lavapipe and LLVM linked in, the device) plus the interpreter, less than a run needs.
"""
from __future__ import annotations

import argparse
import os
import resource
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

#: the same instance and device through ctypes, run with ``python -S``: the floor of a Python runner
CTYPES_FLOOR = """
import ctypes
vk = ctypes.CDLL("libvulkan.so.1")
u32, ptr = ctypes.c_uint32, ctypes.c_void_p
class App(ctypes.Structure):
    _fields_ = [("sType", ctypes.c_int), ("pNext", ptr), ("pApplicationName", ctypes.c_char_p),
                ("applicationVersion", u32), ("pEngineName", ctypes.c_char_p), ("engineVersion", u32),
                ("apiVersion", u32)]
class InstanceInfo(ctypes.Structure):
    _fields_ = [("sType", ctypes.c_int), ("pNext", ptr), ("flags", u32), ("pApplicationInfo", ctypes.POINTER(App)),
                ("enabledLayerCount", u32), ("ppEnabledLayerNames", ptr), ("enabledExtensionCount", u32),
                ("ppEnabledExtensionNames", ptr)]
class QueueInfo(ctypes.Structure):
    _fields_ = [("sType", ctypes.c_int), ("pNext", ptr), ("flags", u32), ("queueFamilyIndex", u32),
                ("queueCount", u32), ("pQueuePriorities", ctypes.POINTER(ctypes.c_float))]
class DeviceInfo(ctypes.Structure):
    _fields_ = [("sType", ctypes.c_int), ("pNext", ptr), ("flags", u32), ("queueCreateInfoCount", u32),
                ("pQueueCreateInfos", ctypes.POINTER(QueueInfo)), ("enabledLayerCount", u32),
                ("ppEnabledLayerNames", ptr), ("enabledExtensionCount", u32), ("ppEnabledExtensionNames", ptr),
                ("pEnabledFeatures", ptr)]
app = App(0, None, None, 0, None, 0, (1 << 22) | (1 << 12))
instance, physical, device = ptr(), ptr(), ptr()
assert vk.vkCreateInstance(ctypes.byref(InstanceInfo(1, None, 0, ctypes.pointer(app), 0, None, 0, None)),
                           None, ctypes.byref(instance)) == 0
count = u32(1)
vk.vkEnumeratePhysicalDevices(instance, ctypes.byref(count), ctypes.byref(physical))
priority = ctypes.c_float(1.0)
queue = QueueInfo(2, None, 0, 0, 1, ctypes.pointer(priority))
assert vk.vkCreateDevice(physical, ctypes.byref(DeviceInfo(3, None, 0, 1, ctypes.pointer(queue), 0, None, 0, None,
                                                            None)), None, ctypes.byref(device)) == 0
vk.vkDestroyDevice(device, None)
vk.vkDestroyInstance(instance, None)
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
        ctypes_floor = root / "ctypes_floor.py"
        ctypes_floor.write_text(CTYPES_FLOOR)
        commands = {
            "Arm scenario-runner (tiny)": (arm.command(scenario, output=root / "arm"), arm.environment(icd=icd)),
            "python -S -c pass": ([sys.executable, "-S", "-c", "pass"], env),
            "python -c pass": ([sys.executable, "-c", "pass"], env),
            "python -S: ctypes, instance + device": ([sys.executable, "-S", str(ctypes_floor)], env),
            "python: import vulkan, instance + device": ([sys.executable, str(floor)], env),
            "python -c 'import vulkan'": ([sys.executable, "-c", "import vulkan"], env),
            "kernellab run (tiny)": (bench_scenarios._kernellab_argv(scenario, root / "kl"), env),
        }
        walls: dict[str, list[float]] = {name: [] for name in commands}
        cpus: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, (argv_, env_) in commands.items():
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                start = time.perf_counter()
                subprocess.run(argv_, env=env_, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
                walls[name].append(time.perf_counter() - start)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpus[name].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    arm = "Arm scenario-runner (tiny)"
    arm_median, arm_cpu = statistics.median(walls[arm]), statistics.median(cpus[arm])
    print(f"{'command':45s} {'min ms':>8s} {'median ms':>10s} {'/ Arm':>7s} {'cpu ms':>8s} {'/ Arm':>7s}")
    for name, w in walls.items():
        median, cpu = statistics.median(w), statistics.median(cpus[name])
        print(f"{name:45s} {min(w) * 1000:8.0f} {median * 1000:10.0f} {median / arm_median:6.2f}x "
              f"{cpu * 1000:8.0f} {cpu / arm_cpu:6.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
