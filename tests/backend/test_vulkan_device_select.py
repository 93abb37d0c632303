"""On a real loader: with one pinned driver and nothing asked of Mesa's device-selection layer,
kernellab's instance is created without the layer, and the devices it lists and the one it
chooses are those the instance with the layer gives (issue 23; docs/devices.md)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

LAYER = "libVkLayer_MESA_device_select"
#: the devices, the one chosen by default and by index 0, and whether the layer's library is loaded
SCRIPT = f"""
import json
from kernellab.backends.vulkan import VulkanBackend
from kernellab.native.devices import choose_device
devices = VulkanBackend.devices()
print(json.dumps({{"devices": [[d.index, d.name, d.kind] for d in devices],
                  "default": choose_device(devices, None).index, "index0": choose_device(devices, "0").name,
                  "layer": {LAYER!r} in open("/proc/self/maps").read()}}))
"""


def _lavapipe_manifest() -> Path:
    found = sorted(Path("/usr/share/vulkan/icd.d").glob("lvp_icd*.json"))
    if not found:
        pytest.fail("lavapipe's driver manifest is missing: apt-get install mesa-vulkan-drivers")
    return found[0]


def _devices(**env: str) -> dict[str, object]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("MESA_VK_DEVICE_SELECT", "DRI_PRIME"))
            and k not in ("NODEVICE_SELECT", "VK_DRIVER_FILES", "VK_ICD_FILENAMES", "VK_ADD_DRIVER_FILES")}
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True,
                          env={**full, "XDG_RUNTIME_DIR": "/tmp", **env})
    return json.loads(proc.stdout)


def test_the_layer_stays_out_and_the_choice_is_the_same() -> None:
    if not list(Path("/usr/share/vulkan/implicit_layer.d").glob("VkLayer_MESA_device_select*.json")):
        pytest.skip("Mesa's device-select layer is not installed here: nothing to keep out")
    manifest = str(_lavapipe_manifest())
    without = _devices(VK_ICD_FILENAMES=manifest)
    # a variable of the layer's that changes nothing it does: the user's setting keeps the layer
    kept = _devices(VK_ICD_FILENAMES=manifest, MESA_VK_DEVICE_SELECT_FORCE_DEFAULT_DEVICE="0")
    assert without.pop("layer") is False
    assert kept.pop("layer") is True
    assert without == kept
