"""An OpenCL C kernel's arguments placed where clspv's reflection says they are, for a pipeline
whose COMPILE_OPTIONS move them (``-pod-ubo``: by-value arguments in a uniform buffer;
``-cluster-pod-kernel-args``/``-pod-pushconstant``: in push constants at clspv's offsets).
Without such options kernellab's fixed convention applies (docs/opencl.md)."""
from __future__ import annotations

from collections.abc import Callable, Sequence

from kernellab.errors import InputError
from kernellab.formats.amber.script import KernelArgument, Pipeline
from kernellab.formats.amber.types import Element

#: the reflection kinds of a pointer argument bound as a buffer, and of a by-value one in a buffer
BUFFER_ARGUMENTS = ("ArgumentStorageBuffer", "ArgumentUniform")
#: the reflection kinds of an image or sampler argument (each a descriptor of its own)
IMAGE_ARGUMENTS = ("ArgumentSampledImage", "ArgumentStorageImage", "ArgumentSampler", "ArgumentStorageTexelBuffer",
                   "ArgumentUniformTexelBuffer")
POD_IN_BUFFER = ("ArgumentPodUniform", "ArgumentPodStorageBuffer")


def ordinal(arg: str | int, params: Sequence[tuple[str, bool]]) -> int | None:
    """The argument's position: its number, or the position of the parameter of that name."""
    if isinstance(arg, int):
        return arg if 0 <= arg < len(params) else None
    names = [n for n, _ in params]
    return names.index(arg) if arg in names else None


def placed_values(p: Pipeline, params: Sequence[tuple[str, bool]], layout: dict[int, KernelArgument],
                  to_bytes: Callable[[Element, list[int | float]], bytes],
                  error: Callable[[int, str], InputError]) -> tuple[bytes, dict[tuple[int, int], bytes]]:
    """(push constant bytes, bytes of each (set, binding) buffer clspv reads by-value arguments
    from) for the pipeline's ``SET KERNEL ARG`` values."""
    push = bytearray()
    buffers: dict[tuple[int, int], bytearray] = {}
    for arg, elem, values, line in p.kernel_args:
        index = ordinal(arg, params)
        where = layout.get(index) if index is not None else None
        if where is None or where.kind not in ("ArgumentPodPushConstant", *POD_IN_BUFFER):
            raise error(line, f"kernel argument {arg!r} of {p.entry} is not a by-value argument clspv passes "
                                "in push constants or a buffer")
        data = to_bytes(elem, values)[:where.size]
        target = push if where.kind == "ArgumentPodPushConstant" else \
            buffers.setdefault((where.set, where.binding), bytearray())
        end = where.offset + len(data)
        target.extend(b"\0" * max(0, end - len(target)))
        target[where.offset:end] = data
    # a block is as long as its last argument clspv placed, even one the file left unset
    for a in layout.values():
        if a.kind in POD_IN_BUFFER:
            block = buffers.setdefault((a.set, a.binding), bytearray())
            block.extend(b"\0" * max(0, a.offset + a.size - len(block)))
        elif a.kind == "ArgumentPodPushConstant":
            push.extend(b"\0" * max(0, a.offset + a.size - len(push)))
    return bytes(push), {k: bytes(v) for k, v in buffers.items()}


def sampler_masks(p: Pipeline, push: bytes, layout: dict[int, KernelArgument], samplers: dict[int | None, int],
                  error: Callable[[int, str], InputError]) -> bytes:
    """``push`` with the OpenCL bits of each sampler_t argument's sampler (``samplers``: by the
    argument's ordinal) where clspv's reflection says the kernel reads them
    (``NormalizedSamplerMaskPushConstant``: the kernel normalizes coordinates itself)."""
    out = bytearray(push)
    for index, a in sorted(layout.items()):
        if a.sampler_mask_offset < 0:
            continue
        if index not in samplers:
            raise error(p.line, f"argument {index} of {p.entry} is a sampler_t: bind it with BIND SAMPLER s KERNEL "
                                f"ARG_NUMBER {index}")
        end = a.sampler_mask_offset + 4
        out.extend(b"\0" * max(0, end - len(out)))
        out[a.sampler_mask_offset:end] = samplers[index].to_bytes(4, "little")
    return bytes(out)
