"""The same small checks on every registered backend and every device it sees (lavapipe, PoCL,
Oclgrind, the null backend): bytes round-trip, a dispatch runs at submit, a barrier orders two
dispatches, what a backend declares it cannot do it refuses, and closing frees what it created.
"""
from __future__ import annotations

import collections
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kernellab.backends.base import (
    SOURCE,
    Backend,
    BackendOptions,
    BindingSlot,
    DeviceInfo,
    ProgramSpec,
    UnsupportedError,
)
from kernellab.backends.feature_specs import ImageSpec
from kernellab.backends.null import NullBackend
from kernellab.backends.registry import backend_class, names
from kernellab.errors import KernellabError

N = 16

SOURCES = {
    "glsl": """#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer Data { uint v[]; };
void main() { v[gl_GlobalInvocationID.x] += 1u; }
""",
    "opencl-c": "__kernel void increment(__global uint *v) { v[get_global_id(0)] += 1u; }\n",
}
ENTRY = {"glsl": "main", "opencl-c": "increment"}


def _increment(buffers: dict[tuple[int, int], np.ndarray], push: bytes, groups: tuple[int, int, int]) -> None:
    """What the kernels above do, for the null backend (which runs no code)."""
    values = buffers[(0, 0)].view(np.uint32)
    values[:groups[0]] += 1


def _targets() -> Iterator[Any]:
    for name in names(listed_only=False):
        try:
            found = backend_class(name).devices()
        except (KernellabError, ImportError) as exc:
            yield pytest.param((name, None), marks=pytest.mark.skip(reason=f"{name}: {exc}"), id=name)
            continue
        for device in found:
            yield pytest.param((name, device), id=f"{name}-{device.index}-{device.name.split()[0]}")


@pytest.fixture(params=list(_targets()))
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Backend]:
    name, device = request.param
    monkeypatch.setitem(NullBackend.effects, "increment", _increment)
    b = backend_class(name)(device, BackendOptions())
    try:
        yield b
    finally:
        b.close()


def _program(backend: Backend, tmp_path: Path) -> ProgramSpec:
    """The increment kernel in a language the backend takes, in the form it declares."""
    caps = backend.capabilities
    language = next(lang for lang in ("glsl", "opencl-c") if caps.program_form(lang) is not None)
    source = SOURCES[language]
    slots = (BindingSlot(0, 0, "storage-buffer"),)
    if caps.program_form(language) == SOURCE:
        return ProgramSpec(uid="increment", code=source.encode(), language=language, entry=ENTRY[language],
                           slots=slots)
    from kernellab.compile.pipeline import Compiler, CompileRequest

    path = tmp_path / "increment.comp"
    path.write_text(source)
    module = Compiler(CompileRequest(source=path, language=language, entry=ENTRY[language])).vulkan_module()
    return ProgramSpec(uid="increment", code=module.data, language="spirv", entry=ENTRY[language], slots=slots)


def test_bytes_round_trip(backend: Backend) -> None:
    buf = backend.alloc_buffer(64, "data")
    backend.clear_buffer(buf)
    backend.write_buffer(buf, bytes(range(10, 26)), offset=8)
    got = backend.read_buffer(buf).tobytes()
    assert got == bytes(8) + bytes(range(10, 26)) + bytes(40)
    with pytest.raises(ValueError):
        backend.write_buffer(buf, bytes(8), offset=60)


def test_a_dispatch_runs_at_submit_and_a_barrier_orders_the_next(backend: Backend, tmp_path: Path) -> None:
    program = backend.create_program(_program(backend, tmp_path))
    buf = backend.alloc_buffer(4 * N, "data")
    backend.write_buffer(buf, np.arange(N, dtype=np.uint32))
    backend.dispatch(program, [N], {(0, 0): buf})
    backend.barrier(memory=True)
    backend.dispatch(program, [N], {(0, 0): buf})
    backend.submit()
    assert backend.read_buffer(buf).view(np.uint32).tolist() == [i + 2 for i in range(N)]
    backend.dispatch(program, [N // 2], {(0, 0): buf})
    backend.submit()
    assert backend.read_buffer(buf).view(np.uint32).tolist() == [i + 3 if i < N // 2 else i + 2 for i in range(N)]


def test_what_is_not_declared_is_refused(backend: Backend) -> None:
    caps = backend.capabilities
    if not caps.images:
        with pytest.raises(UnsupportedError):
            backend.alloc_image(ImageSpec("img", "VK_FORMAT_R8G8B8A8_UNORM", 4, 4, storage=True))
    buf = backend.alloc_buffer(16, "mapped")
    if caps.mapped_buffers:
        backend.buffer_view(buf)[:] = 7
        assert backend.read_buffer(buf).tolist() == [7] * 16
    else:
        with pytest.raises(UnsupportedError):
            backend.buffer_view(buf)


def test_close_is_final_and_idempotent(backend: Backend) -> None:
    backend.alloc_buffer(16, "x")
    backend.close()
    backend.close()
    assert backend._closed


# --- closing frees every handle ------------------------------------------------------------------

def test_closing_the_null_backend_frees_every_handle(tmp_path: Path) -> None:
    b = NullBackend(NullBackend.devices()[0])
    for i in range(3):
        b.alloc_buffer(16, f"b{i}")
    b.create_program(_program(b, tmp_path))
    assert b.created == 4 and len(b.live) == 4
    b.close()
    assert not b.live


def _vulkan_device() -> DeviceInfo:
    try:
        return backend_class("vulkan").devices()[0]
    except (KernellabError, ImportError) as exc:
        pytest.skip(f"no Vulkan device: {exc}")


def _count_vulkan_handles(monkeypatch: pytest.MonkeyPatch) -> tuple[collections.Counter, collections.Counter]:
    """Wrap both bindings' create/destroy calls (the compute binding's, and the ``vulkan``
    package's, which a device with images switches to); returns (created, destroyed) handle
    counters keyed by (object type, address). The shared VkInstance is not the backend's and is
    left out."""
    import vulkan

    from kernellab.native import vkbind

    created: collections.Counter = collections.Counter()
    destroyed: collections.Counter = collections.Counter()
    ffi = vulkan.ffi

    def key(kind: str, handle: Any) -> tuple[str, int]:
        return kind, int(ffi.cast("uintptr_t", handle))

    def wrap_create(name: str, kind: str, count_at: int | None = None) -> None:
        for module in (vulkan, vkbind):
            if hasattr(module, name):
                wrap_create_in(module, name, kind, count_at)

    def wrap_create_in(module: Any, name: str, kind: str, count_at: int | None) -> None:
        fn = getattr(module, name)

        def create(*args: Any, **kwargs: Any) -> Any:
            out = fn(*args, **kwargs)
            # calls that create several objects return an array, their count is an argument
            for h in ([out[i] for i in range(args[count_at])] if count_at is not None else [out]):
                created[key(kind, h)] += 1
            return out

        monkeypatch.setattr(module, name, create)

    def wrap_destroy(name: str, kind: str, position: int) -> None:
        for module in (vulkan, vkbind):
            if hasattr(module, name):
                wrap_destroy_in(module, name, kind, position)

    def wrap_destroy_in(module: Any, name: str, kind: str, position: int) -> None:
        fn = getattr(module, name)

        def destroy(*args: Any, **kwargs: Any) -> Any:
            destroyed[key(kind, args[position])] += 1
            return fn(*args, **kwargs)

        monkeypatch.setattr(module, name, destroy)

    kinds = ["Buffer", "Image", "ImageView", "Sampler", "ShaderModule", "PipelineLayout", "DescriptorSetLayout",
             "DescriptorPool", "QueryPool", "Fence", "CommandPool", "PipelineCache"]
    for kind in kinds:
        wrap_create(f"vkCreate{kind}", kind)
        wrap_destroy(f"vkDestroy{kind}", kind, 1)
    wrap_create("vkCreateComputePipelines", "Pipeline", count_at=2)
    wrap_destroy("vkDestroyPipeline", "Pipeline", 1)
    wrap_create("vkAllocateMemory", "DeviceMemory")
    wrap_destroy("vkFreeMemory", "DeviceMemory", 1)
    wrap_create("vkCreateDevice", "Device")
    wrap_destroy("vkDestroyDevice", "Device", 0)
    return created, destroyed


def test_closing_the_vulkan_backend_frees_every_handle(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    device = _vulkan_device()
    created, destroyed = _count_vulkan_handles(monkeypatch)
    b = backend_class("vulkan")(device, BackendOptions(timestamps=True))
    program = b.create_program(_program(b, tmp_path))
    buf = b.alloc_buffer(4 * N, "data")
    image = b.alloc_image(ImageSpec("img", "VK_FORMAT_R8G8B8A8_UNORM", 4, 4, mips=2, sampled=True, storage=True))
    b.write_image(image, bytes(4 * 4 * 4))
    b.dispatch(program, [N], {(0, 0): buf})
    b.barrier(memory=True)
    b.submit()
    b.read_image(image, 1)
    assert sum(created.values()) > 10  # the wrappers saw the backend's calls
    b.close()
    assert created == destroyed, \
        f"not destroyed: {created - destroyed}; destroyed twice or unknown: {destroyed - created}"


def test_closing_the_opencl_backend_releases_its_memory_objects(monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        devices = [d for d in backend_class("opencl").devices() if d.kind != "other"]
    except (KernellabError, ImportError) as exc:
        pytest.skip(f"no OpenCL device: {exc}")
    if not devices:
        pytest.skip("no OpenCL device other than a simulator")
    b = backend_class("opencl")(devices[0], BackendOptions())
    released: list[Any] = []
    mems = [b.alloc_buffer(64, "a").mem, b.alloc_with_flags(32, ["CL_MEM_READ_ONLY"], "b").mem]  # type: ignore[attr-defined]
    originals: dict[int, Callable[[], None]] = {}
    for mem in mems:
        originals[id(mem)] = mem.release
    monkeypatch.setattr(type(mems[0]), "release", lambda self: (released.append(self), originals[id(self)]()))
    b.close()
    assert {id(m) for m in released} == {id(m) for m in mems}


def test_closing_frees_tensors_and_shared_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """VK_ARM_tensors objects (made through kernellab's own FFI) and memory-group allocations too."""
    device = _vulkan_device()
    from kernellab.backends.feature_specs import BufferSpec, TensorSpec
    from kernellab.backends.vulkan_arm_calls import ArmDevice

    created, destroyed = _count_vulkan_handles(monkeypatch)
    arm_live: collections.Counter = collections.Counter()

    def counted(name: str, step: int) -> None:
        fn = getattr(ArmDevice, name)

        def call(self: ArmDevice, *args: Any, **kwargs: Any) -> Any:
            out = fn(self, *args, **kwargs)
            arm_live[name.split("_", 1)[1].replace("tensor_view", "view")] += step
            return out

        monkeypatch.setattr(ArmDevice, name, call)

    for name, step in (("create_tensor", 1), ("destroy_tensor", -1), ("create_tensor_view", 1),
                       ("destroy_tensor_view", -1)):
        counted(name, step)
    try:
        b = backend_class("vulkan")(device, BackendOptions(ml=True))
    except KernellabError as exc:
        pytest.skip(f"no VK_ARM_tensors on this device: {exc}")
    tensors = b.need(b.tensors(), "tensors")
    tensor = tensors.alloc_tensor(TensorSpec("t", "VK_FORMAT_R32_SFLOAT", (2, 4)))
    tensors.write_tensor(tensor, np.arange(8, dtype=np.float32))
    b.need(b.memory_groups(), "memory_groups").alloc_group([(BufferSpec("buf", 64), 0),
                                                            (TensorSpec("g", "VK_FORMAT_R8_UINT", (16,)), 0)])
    tensors.read_tensor(tensors.alloc_tensor(TensorSpec("opt", "VK_FORMAT_R32_SFLOAT", (4,), "OPTIMAL")))
    assert arm_live["tensor"] == 3 and arm_live["view"] == 3
    b.close()
    assert not +arm_live and not -arm_live, arm_live
    assert created == destroyed, \
        f"not destroyed: {created - destroyed}; destroyed twice or unknown: {destroyed - created}"
