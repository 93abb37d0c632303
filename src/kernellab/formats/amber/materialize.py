"""An AmberScript file as scenario files: a scenario JSON per checkpoint, its shaders and buffer
data beside it, read back through the scenario reader (so it is checked as any scenario is).

A checkpoint is where expectations are checked: after the last ``RUN``, and before a ``RUN``
that follows an ``EXPECT``. Checkpoint k's scenario holds the commands up to it, so running it
from the initial data gives the buffers as Amber sees them at those ``EXPECT`` lines.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernellab.errors import InputError, Problem
from kernellab.formats.amber import images
from kernellab.formats.amber.script import AmberScript, Copy, Expect, Pipeline, Run, Shader
from kernellab.formats.amber.types import Element

#: (SPIR-V assembly, target environment) -> module bytes; given by the caller (formats run no tools)
Assembler = Callable[[str, str], bytes]


@dataclass
class Checkpoint:
    scenario: Path
    expects: list[Expect] = field(default_factory=list)


def buffer_bytes(element: Element, values: list[int | float]) -> bytes:
    """The buffer's memory: each element's components at their offsets, padding zero."""
    import numpy as np

    n = len(element.components)
    count = len(values) // n
    out = np.zeros(count * element.size, dtype=np.uint8)
    for k, (offset, dtype) in enumerate(element.components):
        column = np.array(values[k::n], dtype=np.float64 if dtype.startswith("float") else object)
        data = column.astype(dtype)
        raw = data.view(np.uint8).reshape(count, -1)
        idx = (np.arange(count) * element.size + offset)[:, None] + np.arange(raw.shape[1])[None, :]
        out[idx] = raw
    return out.tobytes()


def _opencl_params(source: str, entry: str) -> list[tuple[str, bool]]:
    """(name, is a global/constant pointer) of the kernel's parameters, in order."""
    m = re.search(r"(?:__)?kernel\s+void\s+" + re.escape(entry) + r"\s*\(([^)]*)\)", source)
    if not m:
        return []
    params = []
    for p in m.group(1).split(","):
        p = p.strip()
        name = re.findall(r"\w+", p)[-1] if re.findall(r"\w+", p) else ""
        params.append((name, ("*" in p or images.opencl_descriptor_param(p)) and not re.search(r"\b(__)?local\b", p)))
    return params


def _pod_bytes(p: Pipeline, params: list[tuple[str, bool]], error: Callable[[int, str], InputError]) -> bytes:
    """The by-value arguments packed as a C struct, in parameter order."""
    import numpy as np

    values: dict[int, tuple[Element, list[int | float]]] = {}
    names = [n for n, _ in params]
    for arg, elem, vals in p.kernel_args:
        if not vals:
            continue
        index = names.index(arg) if isinstance(arg, str) and arg in names else arg
        if not isinstance(index, int) or not 0 <= index < len(params):
            raise error(p.line, f"the kernel has no argument {arg!r}")
        values[index] = (elem, vals)
    out = bytearray()
    for index in sorted(values):
        elem, vals = values[index]
        align = max(np.dtype(d).itemsize for _, d in elem.components)
        out.extend(b"\0" * (-len(out) % align))
        out.extend(buffer_bytes(elem, vals))
    return bytes(out)


class _Writer:
    def __init__(self, script: AmberScript, folder: Path, assemble: Assembler):
        self.script = script
        self.folder = folder
        self.assemble = assemble
        self.files: dict[str, str] = {}
        self.initial: dict[str, bytes] = {name: buffer_bytes(b.element, b.values)
                                          for name, b in script.buffers.items()}

    def error(self, line: int, message: str) -> InputError:
        return InputError([Problem(str(self.script.path), f"line {line}", message)])

    def shader_file(self, shader: Shader) -> tuple[str, str]:
        """(file name, scenario shader type) of the shader's source or module."""
        index = list(self.script.shaders).index(shader.name)
        if shader.format == "GLSL":
            name, kind, data = f"shader{index}.comp", "GLSL", shader.source.encode()
        elif shader.format == "OPENCL-C":
            name, kind, data = f"shader{index}.cl", "OpenCL-C", shader.source.encode()
        elif shader.format == "SPIRV-HEX":
            try:
                data = bytes(int(t, 16) for t in shader.source.split())
            except ValueError:
                raise self.error(shader.line, "SPIRV-HEX: expected hexadecimal bytes") from None
            name, kind = f"shader{index}.spv", "SPIR-V"
        else:
            name, kind = f"shader{index}.spv", "SPIR-V"
            data = self.assemble(shader.source, shader.target_env)
        self.write(name, data)
        return name, kind

    def write(self, name: str, data: bytes) -> None:
        path = self.folder / name
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)

    def data_file(self, name: str, data: bytes) -> str:
        import io

        import numpy as np

        fname = f"buffer{list(self.script.buffers).index(name)}.npy"
        out = io.BytesIO()
        np.save(out, np.frombuffer(data or b"\0", dtype=np.int8))
        self.write(fname, out.getvalue())
        return fname

    def resources(self) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
        resources: list[dict[str, Any]] = []
        dispatch_base: dict[str, dict[str, Any]] = {}
        for name in self.script.buffers:
            data = self.initial[name]
            index = list(self.script.buffers).index(name)
            if self.script.buffers[name].image is not None:
                resources.append(images.image_resource(self.script, name, index, data, self.write, self.error))
                continue
            resources.append({"buffer": {"uid": name, "size": max(len(data), 1), "shader_access": "readwrite",
                                         "src": self.data_file(name, data), "dst": f"buffer{index}.out.npy"}})
        resources += images.sampler_holders(self.script)
        for p in self.script.pipelines.values():
            shader = self.script.shaders[p.shader]
            src, kind = self.shader_file(shader)
            uid = f"pipeline.{p.name}"
            entry: dict[str, Any] = {"uid": uid, "src": src, "type": kind, "entry": p.entry}
            if p.specializations:
                entry["specialization_constants"] = [{"id": i, "value": v} for i, v in p.specializations]
            if p.compile_options:
                entry["build_options"] = p.compile_options
            if p.subgroup is not None:
                size, full, varying, _ = p.subgroup
                entry["subgroup"] = {"full_subgroups": full, "varying_size": varying,
                                     **({"required_size": size} if size else {})}
            dispatch: dict[str, Any] = {"shader_ref": uid, "bindings": []}
            push = b""
            params = _opencl_params(shader.source, p.entry) if kind == "OpenCL-C" else []
            for b in p.bindings:
                if images.is_image_binding(self.script, b) and b.kind != "kernel":
                    dispatch["bindings"].append(images.binding_entry(self.script, p, b))
                    continue
                if b.kind == "push_constant":
                    push = self.initial[b.buffer]
                    continue
                binding = b.binding
                if b.kind == "kernel":
                    names = [n for n, _ in params]
                    arg_index: int | str = names.index(b.arg) if b.arg in names else b.arg
                    if not isinstance(arg_index, int) or not 0 <= arg_index < len(params) or not params[arg_index][1]:
                        raise self.error(b.line, f"kernel argument {b.arg!r} is not a global or constant pointer "
                                                 f"of {p.entry}")
                    binding = sum(1 for _, ptr in params[:arg_index] if ptr)
                    if images.is_image_binding(self.script, b):
                        dispatch["bindings"].append(images.binding_entry(self.script, p, b, binding))
                        continue
                dispatch["bindings"].append({"set": b.set, "id": binding, "resource_ref": b.buffer})
            if kind == "OpenCL-C":
                push = _pod_bytes(p, params, self.error) or push
            if push:
                push_uid = f"push.{p.name}"
                self.write(f"{push_uid}.npy", _npy(push + b"\0" * (-len(push) % 4)))
                resources.append({"raw_data": {"uid": push_uid, "src": f"{push_uid}.npy"}})
                entry["push_constants_size"] = len(push) + (-len(push) % 4)
                dispatch["push_data_ref"] = push_uid
            resources.append({"shader": entry})
            dispatch_base[p.name] = dispatch
        return resources, dispatch_base

    def checkpoints(self, stem: str) -> list[Checkpoint]:
        resources, dispatches = self.resources()
        out: list[Checkpoint] = []
        commands: list[dict[str, Any]] = []
        pending: list[Expect] = []
        ran = False

        def close() -> None:
            name = f"{stem}.json" if not out else f"{stem}.checkpoint{len(out) + 1}.json"
            self.write(name, json.dumps({"resources": resources, "commands": list(commands)}, indent=1).encode())
            out.append(Checkpoint(self.folder / name, list(pending)))
            pending.clear()

        for c in self.script.commands:
            if isinstance(c, Expect):
                pending.append(c)
            elif isinstance(c, Run):
                if pending:
                    close()
                d = dict(dispatches[c.pipeline], rangeND=list(c.groups))
                commands.append({"dispatch_compute": d})
                ran = True
            elif isinstance(c, Copy):
                if ran:
                    raise InputError([Problem(str(self.script.path), f"line {c.line}",
                                              "COPY after a RUN is not supported by kernellab's AmberScript "
                                              "reader yet")])
                self.initial[c.target] = self.initial[c.source]
                resources[:] = [r for r in resources]
                for r in resources:
                    if r.get("buffer", {}).get("uid") == c.target:
                        r["buffer"]["size"] = max(len(self.initial[c.target]), 1)
                        r["buffer"]["src"] = self.data_file(c.target, self.initial[c.target])
        if pending or not out:
            close()
        return out


def _npy(data: bytes) -> bytes:
    import io

    import numpy as np

    out = io.BytesIO()
    np.save(out, np.frombuffer(data, dtype=np.int8))
    return out.getvalue()


def write_scenarios(script: AmberScript, folder: Path, assemble: Assembler) -> list[Checkpoint]:
    """Write the scenario files of ``script`` into ``folder`` (made if missing); the checkpoints
    in order, each with the EXPECTs checked there."""
    folder.mkdir(parents=True, exist_ok=True)
    return _Writer(script, folder, assemble).checkpoints(script.path.stem)
