"""The executor's part for tensors, shared memory and graphs (issue 5), kept out of the
buffer-only path: ``kernellab run`` on a scenario without tensors or graphs never imports the
ARM declarations, the VGF library or the emulation layer.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from kernellab import model as m
from kernellab.backends.base import AlignmentError, Backend, Buffer, UnsupportedError
from kernellab.backends.feature_specs import BufferSpec, Image, ImageSpec, TensorSpec
from kernellab.errors import InputError
from kernellab.formats import npy, npy_arm, tensorfile
from kernellab.outputs import OutputSet
from kernellab.runtime import aliasing
from kernellab.vkregistry import vkformat

if TYPE_CHECKING:
    from kernellab.backends.base import Tensor, TensorFeature
    from kernellab.runtime.graph import PreparedGraph

log = logging.getLogger("kernellab.run")


def uses_ml(scenario: m.Scenario) -> bool:
    """Whether the scenario needs VK_ARM_tensors / VK_ARM_data_graph."""
    return any(isinstance(r, (m.Tensor, m.Graph)) for r in scenario.resources)


class MlResources:
    """Tensors, memory groups and prepared graphs of one run."""

    def __init__(self, scenario: m.Scenario):
        self.scenario = scenario
        self.file = str(scenario.file or "")
        self.tensors: dict[str, Tensor] = {}
        #: uid -> buffer/image/tensor object created inside a shared allocation
        self.grouped: dict[str, Buffer | Image | Tensor] = {}
        self.graphs: dict[int, PreparedGraph] = {}
        #: graph uid -> (VGF resource table index -> the intermediate tensor or buffer created for it)
        self.intermediates: dict[str, dict[int, Tensor | Buffer]] = {}
        self.aliased_images = aliasing.aliased_images(scenario)
        for i, r in enumerate(scenario.resources):
            if isinstance(r, m.Tensor) and r.alias_target is not None:
                # the reader refuses it; a scenario built in Python must not run it unaliased
                from kernellab.formats.scenario_ml import ALIAS_TARGET_DEPRECATED

                raise InputError.at(self.file, f"/resources/{i}/tensor/alias_target", ALIAS_TARGET_DEPRECATED)

    def check_backend(self, backend: Backend) -> None:
        """Tensors, graphs and shared memory are the Vulkan backend's (VK_ARM_tensors, VK_ARM_data_graph)."""
        kinds = sorted({r.kind for r in self.scenario.resources if isinstance(r, (m.Tensor, m.Graph))}
                       | ({"memory_group"} if any(isinstance(r, m.DataResource) and r.memory_group is not None
                                                  for r in self.scenario.resources) else set()))
        caps = backend.capabilities
        able = {"tensor": caps.tensors, "graph": caps.graphs, "memory_group": caps.memory_groups}
        if not all(able.get(k, False) for k in kinds):
            raise UnsupportedError(f"the {backend.name} backend does not run {', '.join(k + 's' for k in kinds)}: "
                                   f"use --backend vulkan")

    # --- resources -----------------------------------------------------------------------------
    def tensor_spec(self, r: m.Tensor, alias_image: str | None = None) -> TensorSpec:
        return TensorSpec(r.uid, r.format, tuple(r.dims), r.tiling, None, alias_image is not None, alias_image)

    def alloc_groups(self, backend: Backend, image_spec: Callable[[m.Image], ImageSpec]) -> None:
        """Create every resource that shares memory (a memory_group), before the rest."""
        for group in aliasing.plan(self.scenario):
            groups = backend.need(backend.memory_groups(), "memory_groups")
            specs: list[tuple[BufferSpec | ImageSpec | TensorSpec, int]] = []
            for mb in group.members:
                r = mb.resource
                if isinstance(r, m.Buffer):
                    specs.append((BufferSpec(r.uid, r.size), mb.offset))
                elif isinstance(r, m.Image):
                    specs.append((image_spec(r), mb.offset))
                else:
                    assert isinstance(r, m.Tensor)
                    target = aliasing.alias_target_of(r, self.scenario)
                    specs.append((self.tensor_spec(r, target.uid if target is not None else None), mb.offset))
            try:
                objects = groups.alloc_group(specs)
            except AlignmentError as exc:
                raise InputError.at(self.file, group.members[exc.index].where, str(exc)) from None
            for mb, obj in zip(group.members, objects):
                self.grouped[mb.resource.uid] = obj
                if isinstance(mb.resource, m.Tensor):
                    assert not isinstance(obj, (Buffer, Image))
                    self.tensors[mb.resource.uid] = obj

    def load_tensor(self, backend: Backend, r: m.Tensor) -> Tensor:
        tensors = backend.need(backend.tensors(), "tensors")
        tensor = self.tensors.get(r.uid)
        if tensor is None:
            # a src fills every element: no need to zero the memory first
            tensor = tensors.alloc_tensor(self.tensor_spec(r), zero=r.src_path is None)
            self.tensors[r.uid] = tensor
        if r.src_path is not None:
            self._fill(tensors, tensor, r)
        return tensor

    def _fill(self, backend: TensorFeature, tensor: Tensor, r: m.Tensor) -> None:
        fmt = vkformat.lookup(r.format)
        assert fmt is not None
        target = backend.tensor_view_array(tensor)
        path = r.src_path
        assert path is not None
        hdr = npy.read_header(path)
        want = tuple(r.dims)
        if target is not None and not hdr.fortran_order and tuple(hdr.shape) == want \
                and fmt.npy_dtype_ok(np.dtype(hdr.dtype)) and hdr.nbytes == target.nbytes:
            # straight from the file into the mapped tensor memory: no intermediate copy
            with open(path, "rb") as fh:
                fh.seek(hdr.data_offset)
                got = fh.readinto(memoryview(target))  # type: ignore[arg-type]  # stubs: ndarray is no Buffer
            if got != hdr.nbytes:
                raise InputError(f"truncated .npy file: expected {hdr.nbytes} data bytes, read {got}", file=path)
            return
        backend.write_tensor(tensor, tensorfile.load(path, fmt, r.dims))

    def save_tensor(self, backend: Backend, outputs: OutputSet, r: m.Tensor, path: Path) -> None:
        """Write a tensor as Arm's runner does: shaped by dims, the format's descr."""
        fmt = vkformat.lookup(r.format)
        assert fmt is not None
        tensors = backend.need(backend.tensors(), "tensors")
        tensor = self.tensors[r.uid]
        data = tensors.tensor_view_array(tensor)
        if data is None:
            data = tensors.read_tensor(tensor)
        with outputs.open(path) as fh:
            npy_arm.write(fh, data, tuple(r.dims), fmt.npy_descr)

    # --- commands ------------------------------------------------------------------------------
    def tensor_barriers(self, backend: Backend, refs: list[str]) -> None:
        items: list[tuple[Tensor, Sequence[str], str, Sequence[str], str]] = []
        for uid in refs:
            tb = self.scenario.by_uid[uid]
            assert isinstance(tb, m.TensorBarrier)
            items.append((self.tensors[tb.tensor_resource], tb.src_stage, tb.src_access, tb.dst_stage, tb.dst_access))
        backend.need(backend.tensors(), "tensors").tensor_barrier(items)

    def prepare_graphs(self, backend: Backend, push_data: dict[str, bytes],
                       shader_spirv: Callable[[m.Shader], bytes], buffers: Mapping[str, Buffer] | None = None) -> None:
        """Pipelines of every graph command; ``buffers``: the scenario's buffers by uid (a VGF
        binds buffers as well as tensors)."""
        from kernellab.runtime.graph import prepare_data_graph, prepare_graph

        resources: dict[str, Tensor | Buffer] = {**(buffers or {}), **self.tensors}
        for index, c in enumerate(self.scenario.commands):
            if isinstance(c, m.DispatchGraph):
                self.graphs[index] = prepare_graph(backend, self.scenario, index, c, resources, push_data,
                                                   shader_spirv, self.intermediates)
            elif isinstance(c, m.DispatchDataGraph):
                self.graphs[index] = prepare_data_graph(backend, self.scenario, index, c, self.tensors)

    def session_memory(self) -> list[tuple[str, int]]:
        """(command name, session bytes) of every data-graph pipeline, in command order."""
        return [(program.spec.label.split(":", 2)[2], program.session_bytes)
                for index in sorted(self.graphs) for program, _ in self.graphs[index].segments
                if program.spec.kind == "graph"]

    def run_graph(self, backend: Backend, index: int) -> None:
        from kernellab.runtime.graph import run_graph

        run_graph(backend, self.graphs[index])


def tensor_shader_spirv(shader: m.Shader, target_env: str) -> bytes | None:
    """SPIR-V for a GLSL shader that uses GL_ARM_tensors (Arm's glslc), or None for any other shader."""
    from kernellab.compile.pipeline import compile_tensor_glsl
    from kernellab.compile.tensor_glsl import needs_arm_glslc

    if shader.type != "GLSL" or shader.src_path is None or not needs_arm_glslc(shader.src_path):
        return None
    return compile_tensor_glsl(shader.src_path, build_options=shader.build_options, include_dirs=shader.include_paths,
                               target_env=target_env)
