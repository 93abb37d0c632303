"""Which checker verifies each file, and verifying many files at once.

A kernel-instantiation file, and a scenario whose dispatches are all OpenCL C, go to Oclgrind
(:mod:`kernellab.verify.run`); a scenario with a GLSL or SPIR-V shader (or OpenCL C with
``vulkan``) to the SPIR-V checker (:mod:`kernellab.verify.vulkan`). Each scenario is loaded
once here and handed to the checker that takes it.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kernellab.verify.model import VerifyResult

if TYPE_CHECKING:  # the scenario model only for scenarios: a kernel-instantiation verify starts without it
    from kernellab import model as m


def verify_many(paths: Sequence[str | Path], *, formats: Sequence[str] | None = None, index: int | None = None,
                seed: int = 0, check: Sequence[str] = (), jobs: int = 1, vulkan: bool = False,
                timeout: float | None = 1800, subgroup_size: int | str | None = None,
                simulated: dict[int, list[dict[str, bytes]]] | None = None) -> list[VerifyResult]:
    """:func:`kernellab.verify.run.verify_many`, with the scenarios whose shaders run on Vulkan
    checked by the SPIR-V checker; one result per file, in the order given. ``simulated``, when
    given, receives per file the SPIR-V checker checked (by its number) the buffers it computed
    before the first dispatch and after each (:func:`kernellab.verify.vulkan.verify_scenario`)."""
    from kernellab.verify import run
    files = [Path(p) for p in paths]
    formats = list(formats) if formats else ["kernel-instantiation"] * len(files)
    scenarios: dict[int, m.Scenario] = {}
    if "scenario" in formats:
        from kernellab.formats.scenario import load_scenario
        scenarios = {n: load_scenario(f)[0] for n, (f, fmt) in enumerate(zip(files, formats)) if fmt == "scenario"}
    mine: list[int] = []
    if scenarios:  # the SPIR-V checker's imports only when a scenario may need them (verify's start-up)
        from kernellab.verify.vulkan import uses_vulkan_checker
        mine = [n for n, s in scenarios.items() if uses_vulkan_checker(s, vulkan)]
    rest = [n for n in range(len(files)) if n not in mine]
    results: dict[int, VerifyResult] = {}
    if rest:
        others = run.verify_many([files[n] for n in rest], formats=[formats[n] for n in rest], index=index,
                                 seed=seed, check=check, jobs=jobs, timeout=timeout,
                                 loaded={k: scenarios[n] for k, n in enumerate(rest) if n in scenarios})
        results.update(zip(rest, others))
    for n in mine:
        from kernellab.verify.vulkan import verify_scenario
        results[n] = verify_scenario(files[n], scenario=scenarios[n], check=check, index=index, file_number=n,
                                     timeout=timeout, subgroup_size=subgroup_size,
                                     simulated=None if simulated is None else simulated.setdefault(n, []))
    return [results[n] for n in range(len(files))]
