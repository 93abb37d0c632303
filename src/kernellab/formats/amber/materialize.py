"""An AmberScript file as scenario files: a scenario JSON per checkpoint, its shaders and buffer
data beside it, read back through the scenario reader (so it is checked as any scenario is).

A checkpoint is where expectations are checked: after the last ``RUN``, and before a ``RUN``
that follows an ``EXPECT``. Checkpoint k's scenario holds the commands up to it, so running it
from the initial data gives the buffers as Amber sees them at those ``EXPECT`` lines.
"""
from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import field
from pathlib import Path
from typing import Any

from kernellab.compiler_options import Options
from kernellab.errors import CompileError, InputError, Problem
from kernellab.formats.amber import images
from kernellab.formats.amber.bind import descriptor_fields
from kernellab.formats.amber.clspv_layout import (
    BUFFER_ARGUMENTS,
    IMAGE_ARGUMENTS,
    ordinal,
    placed_values,
    sampler_masks,
)
from kernellab.formats.amber.origins import ShaderOrigin, translated, write_origins
from kernellab.formats.amber.places import write_places
from kernellab.formats.amber.script import AmberScript, Binding, Copy, Expect, KernelArgument, Pipeline, Run, Shader
from kernellab.formats.amber.types import Element
from kernellab.outputs import write_bytes
from kernellab.records import dataclass

#: (SPIR-V assembly, target environment) -> module bytes; given by the caller (formats run no tools)
Assembler = Callable[[str, str], bytes]
#: (shader file written, its scenario shader type, target environment, spirv-opt passes) -> the
#: optimized module (SHADER_OPTIMIZATION); given by the caller
Optimizer = Callable[[Path, str, str, Options], bytes]
#: (HLSL source, entry point, target environment) -> the module; given by the caller
HlslCompiler = Callable[[str, str, str], bytes]
#: (OpenCL C file written, kernel, build options, clspv layout options) -> (the clspv module, where
#: its reflection puts each argument, by ordinal); given by the caller
KernelCompiler = Callable[[Path, str, str, Options], tuple[bytes, dict[int, KernelArgument]]]


@dataclass
class Checkpoint:
    scenario: Path
    expects: list[Expect] = field(default_factory=list)


def buffer_bytes(element: Element, values: list[int | float]) -> bytes:
    """The buffer's memory: each element's components at their offsets, padding zero."""
    import numpy as np

    n = len(element.components)
    count = len(values) // n
    if not count:  # SIZE 0
        return b""
    out = np.zeros(count * element.size, dtype=np.uint8)
    for k, (offset, dtype) in enumerate(element.components):
        column = np.array(values[k::n], dtype=np.float64 if dtype.startswith("float") else object)
        data = column.astype(dtype)
        raw = data.view(np.uint8).reshape(count, -1)
        idx = (np.arange(count) * element.size + offset)[:, None] + np.arange(raw.shape[1])[None, :]
        out[idx] = raw
    return out.tobytes()


def literal_samplers(layout: dict[int, KernelArgument], resources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The sampler bindings of a kernel's ``sampler_t`` constants where clspv's reflection puts
    them, each sampler's 1x1 holder image appended to ``resources`` once."""
    bindings = []
    for a in layout.values():
        if a.kind == "LiteralSampler":
            holder = images.sampler_holder(images.literal_sampler(a.literal_bits))
            if holder not in resources:
                resources.append(holder)
            bindings.append({"set": a.set, "id": a.binding, "resource_ref": holder["image"]["uid"],
                             "descriptor_type": "VK_DESCRIPTOR_TYPE_SAMPLER"})
    return bindings


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
    for arg, elem, vals, line in p.kernel_args:
        if not vals:
            continue
        index = names.index(arg) if isinstance(arg, str) and arg in names else arg
        if not isinstance(index, int) or not 0 <= index < len(params):
            raise error(line, f"the kernel has no argument {arg!r}")
        values[index] = (elem, vals)
    out = bytearray()
    for index in sorted(values):
        elem, vals = values[index]
        align = max(np.dtype(d).itemsize for _, d in elem.components)
        out.extend(b"\0" * (-len(out) % align))
        out.extend(buffer_bytes(elem, vals))
    return bytes(out)


#: the suffix of the file a shader's text is written to, by format (a module's: ``spv``)
_SOURCE_SUFFIXES = {"GLSL": "comp", "OPENCL-C": "cl", "HLSL": "hlsl"}


def origin(script: AmberScript, shader: Shader) -> ShaderOrigin:
    """Where ``shader``'s text is in the user's files."""
    return ShaderOrigin(str(script.path), shader.name, shader.format, shader.line, shader.text_file or str(script.path),
                        shader.text_line, shader.source if shader.format == "SPIRV-ASM" else "")


#: the shader a COPY after a RUN dispatches: word i of the target from word i of the source
COPY_SHADER = "amber.copy"
COPY_GLSL = """#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer Source { uint source[]; };
layout(set = 0, binding = 1) writeonly buffer Target { uint target[]; };
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < uint(target.length())) {
    target[i] = source[i];
  }
}
"""


class _Writer:
    def __init__(self, script: AmberScript, folder: Path, assemble: Assembler, optimize: Optimizer | None = None,
                 compile_kernel: KernelCompiler | None = None, compile_hlsl: HlslCompiler | None = None):
        self.script = script
        self.folder = folder
        self.assemble = assemble
        self.optimize = optimize
        self.compile_kernel = compile_kernel
        self.compile_hlsl = compile_hlsl
        self.files: dict[str, str] = {}
        #: samplers whose kernels read their bits and normalize coordinates themselves
        self.self_normalizing: set[str] = set()
        self.initial: dict[str, bytes] = {name: buffer_bytes(b.element, b.values)
                                          for name, b in script.buffers.items()}
        #: each pipeline's scenario bindings, in order: the line of the BIND each stands for
        self.binding_lines: dict[str, list[int]] = {}

    def error(self, line: int, message: str) -> InputError:
        return InputError([Problem(str(self.script.path), f"line {line}", message)])

    def shader_file(self, shader: Shader) -> tuple[str, str]:
        """(file name, scenario shader type) of the shader's source or module."""
        name = self.shader_name(shader)
        if shader.format == "GLSL":
            kind, data = "GLSL", shader.source.encode()
        elif shader.format == "OPENCL-C":
            kind, data = "OpenCL-C", shader.source.encode()
        elif shader.format == "HLSL":  # compiled per pipeline, for its entry point (hlsl_file)
            kind, data = "HLSL", shader.source.encode()
        elif shader.format == "SPIRV-HEX":
            try:
                data = bytes(int(t, 16) for t in shader.source.split())
            except ValueError:
                raise self.error(shader.line, "SPIRV-HEX: expected hexadecimal bytes") from None
            kind = "SPIR-V"
        else:
            kind = "SPIR-V"
            with self.told_in_script(shader):
                data = self.assemble(shader.source, shader.target_env)
        self.write(name, data)
        return name, kind

    @contextlib.contextmanager
    def told_in_script(self, shader: Shader) -> Iterator[None]:
        """A compile error of ``shader`` raised inside the block names the script's line (or its
        FILE's) instead of the files kernellab wrote."""
        try:
            yield
        except CompileError as exc:
            raise translated(exc, origin(self.script, shader), [self.shader_name(shader)]) from None

    def shader_name(self, shader: Shader) -> str:
        """The name of the file the shader's text (or module) is written to."""
        index = list(self.script.shaders).index(shader.name)
        return f"shader{index}.{_SOURCE_SUFFIXES.get(shader.format, 'spv')}"

    def origins(self) -> dict[str, ShaderOrigin]:
        """Each file a compiler reads, by name, with the shader it holds."""
        out = {self.shader_name(s): origin(self.script, s) for s in self.script.shaders.values()}
        for n, p in enumerate(self.script.pipelines.values()):
            if p.shader in self.script.shaders:
                for made in ("hlsl.spv", "clspv.spv", "opt.spv"):
                    out[f"pipeline{n}.{made}"] = origin(self.script, self.script.shaders[p.shader])
        return out

    def hlsl_file(self, p: Pipeline, shader: Shader) -> tuple[str, str]:
        """The pipeline's HLSL shader compiled for its entry point, as a SPIR-V file of its own."""
        if self.compile_hlsl is None:
            raise self.error(shader.line, "an HLSL shader needs an HLSL compiler (glslangValidator)")
        name = f"pipeline{list(self.script.pipelines).index(p.name)}.hlsl.spv"
        try:
            with self.told_in_script(shader):
                module = self.compile_hlsl(shader.source, p.entry, shader.target_env)
        except CompileError:
            raise
        except InputError as exc:  # named at the shader's line of the script
            raise self.error(shader.line, "; ".join(pr.message for pr in exc.problems)) from None
        self.write(name, module)
        return name, "SPIR-V"

    def kernel_file(self, p: Pipeline, src: str) -> tuple[str, str, dict[int, KernelArgument]]:
        """The pipeline's kernel compiled by clspv with its layout options, as a SPIR-V file of its
        own, and where clspv's reflection puts each argument."""
        if self.compile_kernel is None:
            raise self.error(p.line, "placing a kernel's arguments where clspv's reflection says (COMPILE_OPTIONS "
                                     "that move them, a sampler_t argument) needs clspv")
        with self.told_in_script(self.script.shaders[p.shader]):
            module, layout = self.compile_kernel(self.folder / src, p.entry, p.compile_options, p.clspv_layout)
        name = f"pipeline{list(self.script.pipelines).index(p.name)}.clspv.spv"
        self.write(name, module)
        return name, "SPIR-V", layout

    def optimized_file(self, p: Pipeline, shader: Shader, src: str, kind: str) -> tuple[str, str]:
        """The pipeline's module after its SHADER_OPTIMIZATION passes, as a SPIR-V file of its own
        (Amber optimizes the compiled module before the pipeline is made)."""
        if self.optimize is None:
            raise self.error(p.line, "SHADER_OPTIMIZATION needs the SPIR-V optimizer (spirv-opt)")
        name = f"pipeline{list(self.script.pipelines).index(p.name)}.opt.spv"
        with self.told_in_script(shader):
            module = self.optimize(self.folder / src, kind, shader.target_env, p.optimizations)
        self.write(name, module)
        return name, "SPIR-V"

    def write(self, name: str, data: bytes) -> None:
        # staged under a name of this process's own, never followed if a symlink: runs of one
        # script at once share its folder, and a fixed NAME.tmp was truncated under the other's rename
        write_bytes(self.folder / name, data)

    def data_file(self, name: str, data: bytes) -> str:
        import io

        import numpy as np

        fname = f"buffer{list(self.script.buffers).index(name)}.npy"
        out = io.BytesIO()
        np.save(out, np.frombuffer(data or b"\0", dtype=np.int8))
        self.write(fname, out.getvalue())
        return fname

    def resources(self) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
        # before any compiler runs: a compile of the files, now or later, names the script's lines
        write_origins(self.folder, self.origins())
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
            dispatch_base[p.name] = self.pipeline(p, resources)
        # a kernel that reads a sampler's bits normalizes its coordinates itself (clspv does so for
        # 3D images, where Vulkan has no unnormalized coordinates): its Vulkan sampler is normalized
        resources += [images.sampler_holder(self.script.samplers[name], normalized=True)
                      for name in sorted(self.self_normalizing)]
        return resources, dispatch_base

    def pipeline(self, p: Pipeline, resources: list[dict[str, Any]]) -> dict[str, Any]:
        """The pipeline's scenario shader (and push data, and clspv's blocks of by-value
        arguments) appended to ``resources``; its dispatch, less the work-group counts."""
        shader = self.script.shaders[p.shader]
        index = list(self.script.pipelines).index(p.name)
        src, kind = self.shader_file(shader)
        if kind == "HLSL":
            src, kind = self.hlsl_file(p, shader)
        if p.optimizations and kind != "OpenCL-C":
            src, kind = self.optimized_file(p, shader, src, kind)
        params = _opencl_params(shader.source, p.entry) if kind == "OpenCL-C" else []
        layout = None
        # a kernel that reads an image through a sampler_t argument reads the sampler's bits from
        # a push constant only clspv's reflection places: compiled at import too
        samplers = {ordinal(b.arg, params): images.opencl_sampler_bits(self.script.samplers[b.sampler])
                    for b in p.bindings if b.kind == "kernel" and b.sampler}
        # so does one whose source defines a sampler_t constant (clspv gives it a descriptor of its
        # own and moves the arguments to set 1)
        literal = kind == "OpenCL-C" and re.search(r"\bsampler_t\s+\w+\s*=", shader.source) is not None
        # and one to optimize: Amber runs SHADER_OPTIMIZATION's passes on clspv's module
        if (p.clspv_layout or samplers or literal or p.optimizations) and kind == "OpenCL-C":
            src, kind, layout = self.kernel_file(p, src)
            if p.optimizations:
                src, kind = self.optimized_file(p, shader, src, kind)
        uid = f"pipeline.{p.name}"
        entry: dict[str, Any] = {"uid": uid, "src": src, "type": kind, "entry": p.entry}
        if p.specializations:
            entry["specialization_constants"] = [{"id": i, "value": v} for i, v in p.specializations]
        if p.compile_options and kind == "OpenCL-C":  # a module clspv made has them built in
            entry["build_options"] = p.compile_options
        if p.subgroup is not None:
            size, full, varying, _ = p.subgroup
            entry["subgroup"] = {"full_subgroups": full, "varying_size": varying,
                                 **({"required_size_bound": size.lower()} if isinstance(size, str)
                                    else {"required_size": size} if size else {})}
        dispatch: dict[str, Any] = {"shader_ref": uid, "bindings": []}
        push = b""
        for b in p.bindings:
            if b.kind == "push_constant":
                push = self.initial[b.buffer]
            else:
                dispatch["bindings"].append(self.binding(p, b, params, layout))
        lines = {id(d): b.line for d, b in zip(dispatch["bindings"], (b for b in p.bindings
                                                                    if b.kind != "push_constant"))}
        dispatch["bindings"] += literal_samplers(layout or {}, resources)
        # a derived pipeline's BIND of an argument by number replaces one by name: the last wins
        dispatch["bindings"] = list({(d["set"], d["id"], d.get("array_element", 0)): d
                                     for d in dispatch["bindings"]}.values())
        self.binding_lines[p.name] = [lines.get(id(d), p.line) for d in dispatch["bindings"]]
        if kind == "OpenCL-C":
            push = _pod_bytes(p, params, self.error) or push
        elif layout is not None:
            push, blocks = placed_values(p, params, layout, buffer_bytes, self.error)
            push = sampler_masks(p, push, layout, samplers, self.error)
            for (dset, dbinding), data in blocks.items():
                block_uid = f"pod.{p.name}.{dset}.{dbinding}"
                block_file = f"pod{index}.{dset}.{dbinding}.npy"
                self.write(block_file, _npy(data + b"\0" * (-len(data) % 16)))
                resources.append({"buffer": {"uid": block_uid, "size": len(data) + (-len(data) % 16),
                                             "shader_access": "readonly", "src": block_file}})
                dispatch["bindings"].append({"set": dset, "id": dbinding, "resource_ref": block_uid})
        if push:
            push_uid = f"push.{p.name}"
            self.write(f"push{index}.npy", _npy(push + b"\0" * (-len(push) % 4)))
            resources.append({"raw_data": {"uid": push_uid, "src": f"push{index}.npy"}})
            entry["push_constants_size"] = len(push) + (-len(push) % 4)
            dispatch["push_data_ref"] = push_uid
        resources.append({"shader": entry})
        return dispatch

    def binding(self, p: Pipeline, b: Binding, params: list[tuple[str, bool]],
                layout: dict[int, KernelArgument] | None) -> dict[str, Any]:
        """A BIND as a scenario binding: a kernel argument where clspv's reflection (``layout``)
        or kernellab's convention puts it, a descriptor with its range and type."""
        image = images.is_image_binding(self.script, b)
        if image and b.kind != "kernel":
            return images.binding_entry(self.script, p, b)
        dset, binding = b.set, b.binding
        where = None
        if b.kind == "kernel" and layout is not None:
            index = ordinal(b.arg, params)
            where = layout.get(index) if index is not None else None
            if where is None or where.kind not in (IMAGE_ARGUMENTS if image else BUFFER_ARGUMENTS):
                raise self.error(b.line, f"kernel argument {b.arg!r} is not {'an image or sampler' if image else 'a buffer'} "
                                         f"argument of {p.entry} (clspv's reflection)")
            dset, binding = where.set, where.binding
        elif b.kind == "kernel":
            names = [n for n, _ in params]
            arg_index: int | str = names.index(b.arg) if b.arg in names else b.arg
            if not isinstance(arg_index, int) or not 0 <= arg_index < len(params) or not params[arg_index][1]:
                raise self.error(b.line, f"kernel argument {b.arg!r} is not a global or constant pointer "
                                         f"of {p.entry}")
            binding = sum(1 for _, ptr in params[:arg_index] if ptr)
        if image:
            entry = images.binding_entry(self.script, p, b, binding)
            entry["set"] = dset
            if where is not None and where.sampler_mask_offset >= 0:
                self.self_normalizing.add(b.sampler)
                entry["resource_ref"] += images.NORMALIZED_HOLDER
            return entry
        out: dict[str, Any] = {"set": dset, "id": binding, "resource_ref": b.buffer}
        if b.kind != "kernel":
            try:
                out.update(descriptor_fields(b, max(len(self.initial[b.buffer]), 1),
                                             self.script.buffers[b.buffer].element))
            except ValueError as exc:
                raise self.error(b.line, str(exc)) from None
        return out

    def copy_dispatch(self, c: Copy, resources: list[dict[str, Any]]) -> dict[str, Any]:
        """A COPY after a RUN: a dispatch of kernellab's copy shader (each invocation one word of
        the target from the source), on the buffers as the commands before it left them."""
        sizes = len(self.initial[c.source]), len(self.initial[c.target])
        if sizes[0] != sizes[1] or sizes[0] % 4 or not sizes[0]:
            raise self.error(c.line, f"COPY {c.source} TO {c.target} after a RUN: the buffers are {sizes[0]} and "
                                     f"{sizes[1]} bytes; kernellab copies between buffers of one size, a multiple "
                                     "of 4 bytes, once the device has them")
        if not any(r.get("shader", {}).get("uid") == COPY_SHADER for r in resources):
            self.write("amber_copy.comp", COPY_GLSL.encode())
            resources.append({"shader": {"uid": COPY_SHADER, "src": "amber_copy.comp", "type": "GLSL",
                                         "entry": "main"}})
        return {"shader_ref": COPY_SHADER, "rangeND": [-(-sizes[0] // 4 // 64), 1, 1],
                "bindings": [{"set": 0, "id": 0, "resource_ref": c.source},
                             {"set": 0, "id": 1, "resource_ref": c.target}]}

    def checkpoints(self, stem: str) -> list[Checkpoint]:
        resources, dispatches = self.resources()
        #: JSON pointer of the scenario -> the line of the script it stands for
        places: dict[str, int] = {}
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
                places[f"/commands/{len(commands)}"] = c.line
                places.update({f"/commands/{len(commands)}/dispatch_compute/bindings/{k}": line
                               for k, line in enumerate(self.binding_lines[c.pipeline])})
                commands.append({"dispatch_compute": d})
                ran = True
            elif isinstance(c, Copy) and ran:
                if pending:  # the EXPECTs before it see the buffers before it
                    close()
                places[f"/commands/{len(commands)}"] = c.line
                commands.append({"dispatch_compute": self.copy_dispatch(c, resources)})
            elif isinstance(c, Copy):
                self.initial[c.target] = self.initial[c.source]
                resources[:] = [r for r in resources]
                for r in resources:
                    if r.get("buffer", {}).get("uid") == c.target:
                        r["buffer"]["size"] = max(len(self.initial[c.target]), 1)
                        r["buffer"]["src"] = self.data_file(c.target, self.initial[c.target])
        if pending or not out:
            close()
        places.update(self.resource_lines(resources))
        write_places(self.folder, str(self.script.path), places)
        return out

    def resource_lines(self, resources: list[dict[str, Any]]) -> dict[str, int]:
        """The line each scenario resource stands for: its BUFFER (IMAGE, SAMPLER) statement, or
        the PIPELINE whose shader, push constants or by-value arguments it holds."""
        lines = {name: b.line for name, b in self.script.buffers.items()}
        lines.update({name: s.line for name, s in self.script.samplers.items()})
        for p in self.script.pipelines.values():
            lines.update({f"pipeline.{p.name}": p.line, f"push.{p.name}": p.line})
        out: dict[str, int] = {}
        for n, r in enumerate(resources):
            body: dict[str, Any] = next(iter(r.values()), {})
            uid = str(body.get("uid", ""))
            line = lines.get(uid) or next((p.line for p in self.script.pipelines.values()
                                           if uid.startswith(f"pod.{p.name}.")), 0)
            if line:
                out[f"/resources/{n}"] = line
        return out


def _npy(data: bytes) -> bytes:
    import io

    import numpy as np

    out = io.BytesIO()
    np.save(out, np.frombuffer(data, dtype=np.int8))
    return out.getvalue()


def write_scenarios(script: AmberScript, folder: Path, assemble: Assembler, optimize: Optimizer | None = None,
                    compile_kernel: KernelCompiler | None = None,
                    compile_hlsl: HlslCompiler | None = None) -> list[Checkpoint]:
    """Write the scenario files of ``script`` into ``folder`` (made if missing); the checkpoints
    in order, each with the EXPECTs checked there."""
    folder.mkdir(parents=True, exist_ok=True)
    return _Writer(script, folder, assemble, optimize, compile_kernel, compile_hlsl).checkpoints(script.path.stem)
