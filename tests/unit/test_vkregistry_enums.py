from __future__ import annotations

from pathlib import Path

import pytest

from kernellab.vkregistry import enums


def test_table_matches_registry():
    pytest.importorskip("vulkan_object", reason="pip vulkan-object (kernellab[ml]) is needed to re-derive the table")
    committed = {enum: enums.values(enum) for enum in enums.ENUMS}
    assert committed == enums.derive_from_registry(), \
        "src/kernellab/data/vkenums.json is stale: run python -m kernellab.vkregistry.enums"


def test_descriptor_types_match_vulkan_binding():
    vk = pytest.importorskip("vulkan")
    # the core types only: the binding's extension values lag the registry (its MUTABLE_EXT is stale)
    core = {n: v for n, v in enums.values("VkDescriptorType").items() if v < 1_000_000_000}
    assert len(core) == 11
    assert all(getattr(vk, n) == v for n, v in core.items())


def test_value_and_name():
    tensor = enums.value("VkDescriptorType", "VK_DESCRIPTOR_TYPE_TENSOR_ARM")
    assert tensor == 1000460000
    assert enums.names("VkDescriptorType")[tensor] == "VK_DESCRIPTOR_TYPE_TENSOR_ARM"
    # a promoted value maps back to the registry's own name, not to an alias
    assert enums.names("VkDescriptorType")[1000138000] == "VK_DESCRIPTOR_TYPE_INLINE_UNIFORM_BLOCK"


@pytest.mark.parametrize("module", ["spirv", "enums", "vkformat", "binding"])
def test_help_of_a_regenerator_writes_nothing(module: str, tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from kernellab.vkregistry import tables

    table = {"spirv": "vkspirv.json", "enums": "vkenums.json", "vkformat": "vkformats.json"}.get(module)
    before = tables.data_path(table).stat().st_mtime_ns if table else None
    done = subprocess.run([sys.executable, "-m", f"kernellab.vkregistry.{module}", "--help"], capture_output=True,
                          text=True, timeout=60, cwd=tmp_path, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert done.returncode == 0 and done.stdout.startswith(f"usage: python -m kernellab.vkregistry.{module}")
    assert "wrote" not in done.stderr, done.stderr
    if table:
        assert tables.data_path(table).stat().st_mtime_ns == before
