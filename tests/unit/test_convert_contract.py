"""The kernel-instantiation <-> scenario converter drives its device through the backend contract
(the registry, ``Backend`` and its kernel-launch feature), never a concrete backend module."""
from __future__ import annotations

import ast
from pathlib import Path

import kernellab.convert.gpuverify_scenario as converter


def test_the_converter_imports_no_concrete_backend() -> None:
    tree = ast.parse(Path(converter.__file__).read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            # ``from kernellab.backends import opencl_abi`` imports kernellab.backends.opencl_abi
            imported |= {node.module} if node.module != "kernellab.backends" else {
                f"{node.module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
    backends = {name for name in imported if name.startswith("kernellab.backends")}
    # the contract: base, with the optional features' records (KernelArg) in feature_specs
    contract = {"kernellab.backends.base", "kernellab.backends.feature_specs", "kernellab.backends.opencl_abi",
                "kernellab.backends.registry"}
    assert backends <= contract, backends
