"""Host data of a PySchedCL kernel spec: the arrays its buffers start from and the files its
outputs end in (``arg<pos>.npy``, shaped by the element type)."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from kernellab.errors import InputError, UsageError
from kernellab.formats.pyschedcl.kernel import ResolvedBuffer, ResolvedKernel
from kernellab.outputs import OutputSet


def host_array(buf: ResolvedBuffer) -> np.ndarray:
    return np.zeros(buf.count * buf.spec.type.width, dtype=buf.spec.type.dtype)


def fill_inputs(kernel: ResolvedKernel, seed: int = 0, files: Mapping[int, str | Path] | None = None,
                stream: int | None = None) -> dict[int, np.ndarray]:
    """Host data for every buffer: input and io buffers from ``files`` (pos -> .npy) or from the
    seed (one stream per position, so a buffer's data does not depend on the others), output
    buffers zero. ``stream`` separates the data of several kernels run with one seed."""
    files = dict(files or {})
    known = {b.pos for b in kernel.buffers}
    for pos in files:
        if pos not in known:
            raise UsageError(f"--input {pos}=...: argument {pos} of {kernel.spec.name} is not a buffer "
                             f"(buffers: {', '.join(map(str, sorted(known)))})")
    host: dict[int, np.ndarray] = {}
    for b in kernel.buffers:
        et = b.spec.type
        n = b.count * et.width
        if b.pos in files:
            host[b.pos] = load_input(files[b.pos], b, kernel.spec.name)
        elif b.spec.read_by_kernel:
            rng = np.random.default_rng([seed, b.pos] if stream is None else [seed, b.pos, stream])
            if et.dtype.kind == "f":
                host[b.pos] = rng.random(n, dtype=np.float64).astype(et.dtype)
            else:
                hi = min(256, int(np.iinfo(et.dtype).max) + 1)
                host[b.pos] = rng.integers(0, hi, n).astype(et.dtype)
        else:
            host[b.pos] = host_array(b)
    return host


def load_input(path: str | Path, buf: ResolvedBuffer, kernel_name: str) -> np.ndarray:
    path = Path(path)
    try:
        arr = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read it as .npy: {exc}", path) from None
    et = buf.spec.type
    want = buf.count * et.width
    if arr.size != want:
        raise InputError(f"argument {buf.pos} of {kernel_name} needs {buf.count} {et.name} elements "
                         f"({want} values) but the file holds {arr.size}", path)
    if arr.dtype != et.dtype:
        if not np.can_cast(arr.dtype, et.dtype, casting="same_kind"):
            raise InputError(f"argument {buf.pos} of {kernel_name} is {et.name} but the file holds {arr.dtype}", path)
        arr = arr.astype(et.dtype)
    return np.ascontiguousarray(arr.reshape(-1))


def output_array(buf: ResolvedBuffer, flat: np.ndarray) -> np.ndarray:
    """A flat host array in the shape the spec's element type gives it (``float4`` -> (n, 4))."""
    return flat.reshape(buf.spec.type.shape(buf.count))


def write_outputs(kernel: ResolvedKernel, outputs: Mapping[int, np.ndarray], output_dir: str | Path,
                  prefix: str = "arg") -> list[Path]:
    """``DIR/arg<pos>.npy`` for every output and io buffer, with the spec's element type; all files
    appear together or none do."""
    out_dir = Path(output_dir)
    with OutputSet(out_dir) as outs:
        for b in kernel.buffers:
            if b.spec.written_by_kernel:
                outs.npy(out_dir / f"{prefix}{b.pos}.npy", output_array(b, outputs[b.pos]))
        return outs.commit()
