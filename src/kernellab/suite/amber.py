"""Running an AmberScript file: its scenarios on a session, its EXPECTs checked.

The file becomes scenario files (``formats.amber``) in a folder of the cache named by the file's
content, so a suite that runs it again reads the same files. Outcomes: ``pass`` (every EXPECT
holds), ``fail`` (one does not; each failure names its line), ``skip`` (the device lacks a
DEVICE_FEATURE / DEVICE_EXTENSION the file requires: Amber's own verdict for it too).
"""
from __future__ import annotations

from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernellab.formats.amber.materialize import Checkpoint
from kernellab.formats.amber.script import AmberScript, Expect, Pipeline
from kernellab.records import dataclass
from kernellab.suite.expectations import AMBER_SUFFIX, Check, OutputComparison, PixelProbe, ProbeExpectation

if TYPE_CHECKING:
    from kernellab.backends.vulkan_supported import Supported


def is_amber(path: str | Path) -> bool:
    return Path(path).suffix == AMBER_SUFFIX


def checks_of(script: AmberScript, expects: list[Expect]) -> list[Check]:
    """The EXPECTs as the suite's expectation kinds: each value at its byte offset and type."""
    out: list[Check] = []
    for e in expects:
        where = f"{script.path.name}:{e.line}"
        elem = script.buffers[e.buffer].element
        image = script.buffers[e.buffer].image
        if e.origin is not None and image is not None:
            # Amber's default: 0.002 of the normalized scale on every channel
            tolerances = tuple(e.tolerances) or ((0.002, False),)
            out.append(PixelProbe(e.buffer, image.format, image.width, e.origin, e.size, tuple(float(v) for v in e.values),
                                  tolerances, where, e.text))
            continue
        if e.other:
            tol = e.tolerances[0][0] if e.tolerances else None
            out.append(OutputComparison(e.buffer, e.comparator, e.other, elem.components[0][1], tol, where, e.text))
            continue
        components = []
        for i in range(len(e.values)):
            k, rest = i // len(elem.components), i % len(elem.components)
            offset, dtype = elem.components[rest]
            components.append((e.offset + k * elem.size + offset, dtype))
        values = tuple(float(v) if dtypes_float(dtype) else v for (_, dtype), v in zip(components, e.values))
        out.append(ProbeExpectation(e.buffer, e.comparator, tuple(components), values,
                                    e.tolerances[0] if e.tolerances else None, where, e.text))
    return out


def dtypes_float(dtype: str) -> bool:
    return dtype.startswith("float")


@dataclass
class AmberTest:
    script: AmberScript
    checkpoints: list[Checkpoint]
    checks: list[list[Check]] = field(default_factory=list)


def prepare(path: str | Path, folder: Path | None = None) -> AmberTest:
    """Parse ``path``, write its scenarios and turn its EXPECTs into checks per checkpoint."""
    from kernellab.compile.amber import prepare as write

    script, checkpoints = write(path, folder)
    return AmberTest(script, checkpoints, [checks_of(script, c.expects) for c in checkpoints])


def missing_requirements(script: AmberScript, device: int) -> list[str]:
    """What the file requires that the device lacks ("DEVICE_FEATURE shaderFloat64 (line 3)")."""
    from kernellab.backends.vulkan_supported import supported

    have = supported(device)
    missing = []
    for name, line in script.features:
        if not have.feature(name):
            missing.append(f"DEVICE_FEATURE {name} (line {line})")
    for name, line in script.extensions:
        if name not in have.extensions:
            missing.append(f"DEVICE_EXTENSION {name} (line {line})")
    for name, line in script.instance_extensions:
        if name not in have.instance_extensions:
            missing.append(f"INSTANCE_EXTENSION {name} (line {line})")
    for name, line in script.properties:
        if not have.feature(name):
            missing.append(f"DEVICE_PROPERTY {name} (line {line})")
    for p in script.pipelines.values():
        missing += missing_for_subgroup(p, have)
    missing += missing_for_images(script, have)
    if script.debugger_threads:  # no Vulkan driver offers one now (Amber dropped DEBUG with SwiftShader's)
        lines = ", ".join(map(str, script.debugger_threads))
        missing.append(f"a shader debugger for DEBUG's THREAD expectations (line {lines})")
    return missing


def missing_for_images(script: AmberScript, have: Supported) -> list[str]:
    """What a multisampled IMAGE needs (it is a storage image: the parser allows no other use)."""
    missing = []
    counts = have.limits.get("storageImageSampleCounts", 0)
    for b in script.buffers.values():
        if b.image is None or b.image.samples == 1:
            continue
        where = f"(IMAGE {b.name}, line {b.line})"
        if not have.feature("shaderStorageImageMultisample"):
            missing.append(f"shaderStorageImageMultisample {where}")
        elif not counts & b.image.samples:
            offered = ", ".join(str(1 << i) for i in range(7) if counts & (1 << i)) or "none"
            missing.append(f"storage images of {b.image.samples} samples (storageImageSampleCounts: {offered}) {where}")
    return missing


#: VK_SHADER_STAGE_COMPUTE_BIT
_COMPUTE_STAGE = 0x20


def missing_for_subgroup(p: Pipeline, have: Supported) -> list[str]:
    """What the pipeline's SUBGROUP asks that the device cannot honour (Amber's own checks)."""
    if p.subgroup is None:
        return []
    size, full, varying, line = p.subgroup
    where = f"(SUBGROUP of pipeline {p.name}, line {line})"
    missing = [f"{need} {where}" for need, wanted in (("computeFullSubgroups", full),
                                                      ("subgroupSizeControl", bool(size) or varying))
               if wanted and not have.feature(need)]
    low, high = have.limits.get("minSubgroupSize", 0), have.limits.get("maxSubgroupSize", 0)
    # MIN and MAX are the device's own bounds, so only a number can fall outside them
    if isinstance(size, int) and size and not missing and not low <= size <= high:
        missing.append(f"a subgroup size of {size} (it offers {low} to {high}) {where}")
    if size and not missing and not have.limits.get("requiredSubgroupSizeStages", 0) & _COMPUTE_STAGE:
        missing.append(f"a required subgroup size in compute shaders (requiredSubgroupSizeStages) {where}")
    return missing


def missing_for_shaders(scenario_path: Path, session: Any) -> list[str]:
    """What the pipelines' SPIR-V needs that the device cannot enable ("pipeline.p: SPIR-V
    extension SPV_KHR_x (needs VK_KHR_y)"): the requirement an AmberScript file need not declare
    (the CTS adds it from its C++ test list), so a device without it skips the file rather than
    failing at pipeline creation. The modules are compiled as the run compiles them (its cache)."""
    from kernellab import model as m
    from kernellab.backends.vulkan_supported import missing_for_spirv, supported
    from kernellab.compile.pipeline import Compiler
    from kernellab.compile.sources import target_env_for_api
    from kernellab.formats.scenario import load_scenario
    from kernellab.runtime.executor import shader_request

    device = session.device_info
    if device.backend != "vulkan":
        return []
    have = supported(device.index)
    scenario, _ = load_scenario(scenario_path)
    missing = []
    for shader in scenario.resources:
        if isinstance(shader, m.Shader):
            req = shader_request(scenario, shader, target_env_for_api(device.api_version), device.name)
            module = Compiler(req).vulkan_module().data
            missing += [f"{shader.uid}: {what}" for what in missing_for_spirv(module, have)]
    return missing


@dataclass
class AmberOutcome:
    #: pass | fail | skip
    status: str
    report: str = ""
    phases: list[Any] = field(default_factory=list)


def run_amber(session: Any, path: str | Path) -> AmberOutcome:
    """Run every checkpoint of the file on ``session`` and check its EXPECTs; a refusal of the
    files made from it names the script's line (``formats.amber.places``)."""
    from kernellab.errors import KernellabError
    from kernellab.formats.amber.places import error_in_script

    try:
        return _run_amber(session, path)
    except KernellabError as exc:
        told = error_in_script(exc)
        if told is exc:
            raise
        raise told from None


def _run_amber(session: Any, path: str | Path) -> AmberOutcome:
    from kernellab.errors import InputError, MissingToolError, Problem
    from kernellab.suite.compare import check_all

    if getattr(session, "backend_name", "vulkan") != "vulkan":
        # Amber's pipelines, EXPECTs and DEVICE_FEATUREs are Vulkan's; its OPENCL-C shaders go
        # through clspv to a Vulkan module as Amber compiles them
        raise InputError([Problem(str(path), "", f"an AmberScript file runs on a Vulkan device, not on the "
                                                 f"{session.backend_name} backend (drop --backend)")])
    try:
        test = prepare(path)
    except MissingToolError as exc:  # a shader's compiler (HLSL: glslangValidator) is not installed
        return AmberOutcome("skip", f"this machine lacks {exc}")
    missing = missing_requirements(test.script, session.device_info.index)
    if not missing:
        missing = missing_for_shaders(test.checkpoints[-1].scenario, session)
    if missing:
        return AmberOutcome("skip", "the device lacks " + ", ".join(missing))
    # a multisampled image's samples cannot be copied out (no EXPECT reads them: the parser refuses it)
    buffers = [n for n, b in test.script.buffers.items() if b.image is None or b.image.samples == 1]
    failures = []
    phases: list[Any] = []
    for checkpoint, checks in zip(test.checkpoints, test.checks):
        run = session.run_workload(checkpoint.scenario, outputs=buffers)
        phases.extend(run.phases)
        data = {name: run.outputs[name].tobytes() for name in buffers}
        for name, b in test.script.buffers.items():
            if name not in data:
                continue
            size = len(b.values) // len(b.element.components) * b.element.size
            data[name] = data[name][:size]
        result = check_all(checks, data)
        if not result.ok:
            failures.append(result.report())
    if failures:
        return AmberOutcome("fail", "\n".join(failures), phases)
    count = sum(len(c) for c in test.checks)
    return AmberOutcome("pass", f"{count} EXPECT{'s hold' if count != 1 else ' holds'}", phases)
