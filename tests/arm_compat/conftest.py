"""Fixtures for the Arm compatibility tests; the machinery is in arm_compat_helpers.py."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from arm_compat.arm_compat_helpers import Case
from kernellab.testing.arm_runner import ArmRunner, lavapipe_icd, require_arm_runner


@pytest.fixture(scope="session")
def arm_runner(tmp_path_factory: pytest.TempPathFactory) -> ArmRunner:
    # Arm's runner is installed in CI (pip ai-ml-sdk-scenario-runner, ai-ml-emulation-layer-for-vulkan);
    # a missing install is a failure that names the packages, not a skip.
    return require_arm_runner(tmp_path_factory.mktemp("arm-layers"))


@pytest.fixture(scope="session")
def icd() -> Path:
    found = lavapipe_icd()
    if found is None:
        pytest.fail("lavapipe is not installed: apt-get install mesa-vulkan-drivers libvulkan1")
    return found


@pytest.fixture
def case(tmp_path: Path, arm_runner: ArmRunner, icd: Path) -> Case:
    root = tmp_path / "case"
    root.mkdir()
    return Case(root, arm_runner, icd)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261122)
