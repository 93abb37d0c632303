"""The executor's steps that a run of buffers and SPIR-V compute shaders never takes: Arm's
pipeline-cache file, OpenCL C handed to a driver, tensor, graph and optical-flow pipelines, and
the release of a lent backend's buffers. They live here, loaded on first use, so that every run
does not read their code when it imports the executor (start-up, issue 23); ``ex`` is the
:class:`~kernellab.runtime.executor.Executor` whose step it is.
"""
from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

from kernellab import model as m
from kernellab import parsed_options
from kernellab.backends import base
from kernellab.compile.pipeline import expand_request
from kernellab.errors import InputError
from kernellab.shader_languages import SHADER_TYPE_OF_LANGUAGE as TYPE_OF_LANGUAGE

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any

    from kernellab.backends.base import Backend, KernelInterface, ProgramSpec, SpecConstant
    from kernellab.compile.stage import CompileRequest


def load_pipeline_cache(ex: Any, device: base.DeviceInfo) -> bytes | None:
    """Arm's pipeline-cache file of the scenario (``--pipeline-caching``), loaded for ``device``."""
    from kernellab.compile.pipeline_cache import PipelineCacheFile

    ex.pipeline_cache = PipelineCacheFile.for_scenario(ex.options.cache_dir, ex.scenario.file or Path("scenario.json"))
    ex.say("INFO", "Load Pipeline Cache")
    t = time.perf_counter()
    cache_data: bytes | None = ex.pipeline_cache.load(_device_id(device.details, "vendor_id"),
                                                      _device_id(device.details, "device_id"),
                                                      ex.options.clear_pipeline_cache, ex.say)
    ex.report.count("Load Pipeline Cache.", "Load Pipeline Cache", t)
    return cache_data


def store_pipeline_cache(ex: Any, backend: Backend) -> None:
    if ex.fail_on_miss:
        ex.say("INFO", "Pipeline Cache not stored")
        return
    blob = backend.pipeline_cache_blob()
    if blob is not None:
        ex.pipeline_cache.save(blob, ex.say)


def _device_id(details: Mapping[str, Any], key: str) -> int:
    """``vendor_id``/``device_id`` of a device's details ("0x10005"); 0 when the backend has none."""
    try:
        return int(str(details.get(key, "0")), 0)
    except ValueError:
        return 0


def check_ml_backend(ex: Any, backend: Backend) -> None:
    """The backend has what the scenario's tensors, graphs and optical flow need."""
    if ex.ml is not None:
        ex.ml.check_backend(backend)
    if ex.optical_flows is not None:
        from kernellab.runtime.optical_flow import check_backend

        check_backend(backend)


def create_ml_programs(ex: Any, backend: Backend, modules: Any) -> None:
    """The graph and optical-flow pipelines, after the compute ones."""
    if ex.ml is not None:
        t = time.perf_counter()
        try:
            ex.ml.prepare_graphs(backend, ex.push_data, modules.spirv, ex.buffers)
        except base.PipelineCacheMiss as exc:
            ex.say("ERROR", str(exc))
            raise
        ex.report.count("Create Graph Pipelines", "Pipeline Setup", t)
        ex.report.session_memory = ex.ml.session_memory()
    if ex.optical_flows is not None:
        from kernellab.runtime.optical_flow import NAME

        t = time.perf_counter()
        try:
            ex.optical_flows.prepare(backend, ex.images)
        except base.PipelineCacheMiss as exc:
            ex.say("ERROR", str(exc))
            raise
        ex.report.count(f"Create Optical Flow Pipeline: {NAME}", "Pipeline Setup", t)
        ex.report.session_memory += ex.optical_flows.session_memory()


def record_graph(ex: Any, backend: Backend, index: int, c: m.Command) -> None:
    """An optical-flow or graph dispatch, and the barrier it asks for after itself."""
    if c.kind == "dispatch_optical_flow" and isinstance(c, m.DispatchOpticalFlow):
        ex.say("INFO", "Dispatch graph")
        ex.optical_flows.run(backend, index)
        ex._implicit_barrier(backend, index, c)
    elif c.kind in ("dispatch_graph", "dispatch_data_graph") and isinstance(c, (m.DispatchGraph, m.DispatchDataGraph)):
        ex.ml.run_graph(backend, index)
        ex._implicit_barrier(backend, index, c)


def refuse_language(ex: Any, backend: Backend, shader: m.Shader) -> InputError:
    """The error of a shader in a language the backend runs in no form."""
    caps = backend.capabilities
    taken = " and ".join(TYPE_OF_LANGUAGE.get(lang, lang) for lang in caps.languages)
    where = f"/resources/{ex.scenario.resources.index(shader)}"
    return InputError.at(str(ex.scenario.file or ""), where,
                         f"shader \"{shader.uid}\" is {shader.type}; the {caps.title} backend runs {taken} "
                         f"shaders only ({caps.elsewhere})")


def source_program(ex: Any, shader: m.Shader, language: str, specialization: tuple[SpecConstant, ...],
                   slots: tuple[base.BindingSlot, ...], request: CompileRequest) -> ProgramSpec:
    """The program of a shader a driver builds from source (OpenCL C to an OpenCL driver, issue 3):
    the source with its includes inlined and checked, and no include folder."""
    assert shader.src_path is not None
    code = expand_request(request).text
    return base.ProgramSpec(uid=shader.uid, code=code, language=language, entry=shader.entry,
                            specialization=specialization, push_constants_size=shader.push_constants_size,
                            slots=slots, options=driver_options_of(request))


def driver_options_of(request: CompileRequest) -> parsed_options.Options:
    """The options an OpenCL driver builds a shader's request with: its file's, through the door,
    less include folders (the driver gets the source with its includes inlined)."""
    request.check_file_options()
    return request.option_list.without_include_dirs()


def driver_interface(backend: Backend, shader: m.Shader, spec: ProgramSpec,
                     spec_values: Mapping[int, Any]) -> tuple[KernelInterface | None, tuple[int, int, int] | None, bool]:
    """What a driver tells of a program it built (OpenCL C on OpenCL): its interface, the local
    size set by specialization ids 0-2 when given (else the driver's: None) and whether it was given."""
    from kernellab.backends import opencl_abi  # OpenCL's ABI: a Vulkan run of SPIR-V needs none

    known = backend.program_interface(spec)
    given_size = any(i in spec_values for i in opencl_abi.LOCAL_SIZE_SPEC_IDS)
    size = opencl_abi.local_size(spec_values, (0, 0, 0)) \
        if shader.type == "OpenCL-C" and given_size else None  # type: ignore[arg-type]
    return known, size, given_size


def free_buffers(ex: Any) -> None:
    """:meth:`~kernellab.runtime.executor.Executor.free_buffers`."""
    if ex.backend is None:
        return
    for view in ex._ranges.values():
        ex.backend.free_buffer(view)
    for buf in ex.buffers.values():
        ex.backend.free_buffer(buf)
    ex._ranges.clear()
    ex.buffers.clear()
