"""``verify`` for scenarios whose compute shaders run on Vulkan: GLSL, SPIR-V, and OpenCL C
compiled by clspv (issue 14).

Each ``dispatch_compute`` runs, in command order, in the SPIR-V checker
(:mod:`kernellab.spirvsim`): the shader compiled for checking (GLSL with glslang's ``-gVS`` debug
information, so findings name GLSL lines), bound to the scenario's buffers as the runner binds
them, with the dispatch's push constants and the shader's specialization constants; the buffers
each dispatch leaves are what the next one reads. Then every pair of dispatches touching the same
bytes of a buffer, one writing, is a hazard unless a barrier of the scenario orders them
(:func:`dependencies`). This module is the checker's adapter: its findings become
:mod:`kernellab.verify.model`'s, so verdicts, kinds, JSON and exit statuses are OpenCL verify's.
Each shader is compiled and decoded once per verify, however many dispatches run it. The method,
limits and refusals are in docs/verify-vulkan.md.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kernellab import model as m
from kernellab import spirv_format, spirvsim
from kernellab.errors import InputError, Problem, TimeLimitError, UsageError
from kernellab.records import dataclass
from kernellab.shader_languages import LANGUAGE_OF_SHADER_TYPE
from kernellab.spirvsim.module import Module
from kernellab.verify import terms
from kernellab.verify.model import Access, Finding, Launch, Location, VerifyResult, WorkItem, checked_kinds, ordered

log = logging.getLogger(__name__)

#: the checker's limit of invocations x executed instructions per dispatch (each access is one
#: instruction): past it the check stops with an error naming the dispatch. About a minute of
#: checking; KERNELLAB_VERIFY_MAX_WORK sets another.
DEFAULT_MAX_WORK = 4_000_000_000
#: shader types the SPIR-V checker always takes; OpenCL C only when asked (--vulkan), since
#: OpenCL C dispatches are otherwise checked on Oclgrind
VULKAN_TYPES = ("GLSL", "SPIR-V")

#: options added for checking: debug information, so findings name source lines, and for clspv
#: no optimisation, since its optimiser deletes dead and out-of-bounds accesses (and with them
#: the defects the source has) before the checker could see them
_CHECKING_OPTIONS = {"glsl": " -gVS", "opencl-c": " -O0 -g"}
#: the file name clspv gives the source text it was handed (its OpLine file)
_CLSPV_SOURCE = "source"
_BYTES = re.compile(r"bytes (\d+)\.\.(\d+)")
_SCOPES = {"intra-workgroup": "intra-group", "inter-workgroup": "inter-group", "inter-dispatch": "inter-dispatch"}
#: what a scenario's access mask holds of a compute shader's accesses (Arm's runner records the
#: mask as given: COMPUTE_SHADER_* is VK_ACCESS_2_SHADER_*, GRAPH_* the data-graph accesses)
_ACCESSES = {"ACCESS_COMPUTE_SHADER_WRITE": ("write",), "ACCESS_MEMORY_WRITE": ("write",),
             "ACCESS_COMPUTE_SHADER_READ": ("read",), "ACCESS_MEMORY_READ": ("read",)}

#: a buffer's uid -> (the shader's name for it, offset of its array, bytes per element)
Layouts = dict[str, tuple[str | None, int, int]]


def uses_vulkan_checker(scenario: m.Scenario, vulkan: bool = False) -> bool:
    """Whether a scenario's dispatches go to the SPIR-V checker: any GLSL or SPIR-V shader, or
    OpenCL C when ``vulkan`` asks to check it as Vulkan runs it (compiled by clspv). A scenario
    with a command only Vulkan runs (a draw, optical flow) comes here too, to be refused by name."""
    if any(isinstance(c, _UNCHECKED) for c in scenario.commands):
        return True
    types = {getattr(scenario.by_uid.get(uid), "type", None) for c in scenario.commands
             for uid in ([c.shader_ref] if isinstance(c, m.DispatchCompute) else
                         [c.vertex_shader_ref, c.fragment_shader_ref] if isinstance(c, m.DispatchFragment) else [])}
    return bool(types & set(VULKAN_TYPES)) or (vulkan and "OpenCL-C" in types)


def verify_scenario(path: str | Path, *, scenario: m.Scenario | None = None, check: Sequence[str] = (),
                    index: int | None = None, file_number: int = 0, max_work: int | None = None,
                    timeout: float | None = None, subgroup_size: int | str | None = None,
                    simulated: list[dict[str, bytes]] | None = None) -> VerifyResult:
    """:func:`_verify_scenario`, quoting source lines only from files in the scenario's folder: a
    module names its source files itself (OpString), and may name any file. ``scenario``: the
    file already loaded (None: loaded here).

    ``subgroup_size``: the subgroup size to check with (None: the device's, :class:`DeviceSubgroups`),
    or ``"all"``: the scenario is checked once per size the device allows (when a shader depends
    on it), each finding's message naming its size. Each launch names the size it was checked
    with when a shader depends on it. ``simulated``, when given, receives the buffers' contents
    as the checker computed them (the specification's semantics, the device's subgroup size):
    before the first dispatch, then after each (what ``verify`` compares with an AmberScript
    file's EXPECTs, as a reference device)."""
    if scenario is None:
        from kernellab.formats.scenario import load_scenario
        scenario, _ = load_scenario(path)
    device = DeviceSubgroups()
    explicit = subgroup_size if isinstance(subgroup_size, int) else None
    with terms.reading_within([Path(path).resolve().parent]):
        result, uses_subgroups = _verify_scenario(Path(path), scenario, check=check, index=index,
                                                  file_number=file_number, max_work=max_work, timeout=timeout,
                                                  subgroup_size=explicit or device.size, simulated=simulated)
        if not uses_subgroups:
            return result  # no dispatch depends on the size: one check says it all
        first = explicit or device.size()
        checks = [(first, result)]
        if subgroup_size == "all":
            for size in device.sizes():
                if size != first:
                    checks.append((size, _verify_scenario(Path(path), scenario, check=check, index=index,
                                                          file_number=file_number, max_work=max_work,
                                                          timeout=timeout, subgroup_size=size)[0]))
    for size, one in checks:
        if len(checks) > 1:
            for f in one.findings:
                f.message = f"[subgroup size {size}] {f.message}"
        for launch in one.launches:
            launch.subgroup_size = size
    for _, one in checks[1:]:
        result.findings = ordered(result.findings + one.findings)
        result.launches += one.launches
        result.raw_messages += one.raw_messages
    return result


class DeviceSubgroups:
    """The subgroup sizes of the Vulkan device ``kernellab run`` would use, asked of it through the
    backend contract (:attr:`~kernellab.backends.base.Limits.subgroup_size` and
    ``subgroup_size_range``) the first time a shader depends on them, once per process. Where no
    device opens, the size is lavapipe's, :data:`~kernellab.spirvsim.subgroup.DEFAULT_SUBGROUP_SIZE`,
    and ``all`` is every size drivers report, with a warning saying so."""

    _found: tuple[int, tuple[int, ...]] | None = None

    def size(self) -> int:
        return self._ask()[0]

    def sizes(self) -> tuple[int, ...]:
        """What ``--subgroup-size all`` checks: the powers of two in the device's
        VK_EXT_subgroup_size_control range (its one size without the extension)."""
        return self._ask()[1]

    @classmethod
    def _ask(cls) -> tuple[int, tuple[int, ...]]:
        if cls._found is None:
            cls._found = _device_subgroups()
        return cls._found


def _device_subgroups() -> tuple[int, tuple[int, ...]]:
    from kernellab.spirvsim.subgroup import ALL_SUBGROUP_SIZES, DEFAULT_SUBGROUP_SIZE
    try:
        from kernellab.backends.registry import backend_class
        from kernellab.native.devices import choose_device

        cls = backend_class("vulkan")
        info = choose_device(cls.devices(), None)
        with cls(info) as backend:
            limits = backend.limits
    except Exception as exc:  # whatever keeps a device from opening (a driver's own errors too): the stated default
        log.warning("no Vulkan device opened (%s): subgroups checked with size %d (lavapipe's), "
                    "--subgroup-size all with %s", str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
                    DEFAULT_SUBGROUP_SIZE, ", ".join(map(str, ALL_SUBGROUP_SIZES)))
        return DEFAULT_SUBGROUP_SIZE, ALL_SUBGROUP_SIZES
    size = limits.subgroup_size or DEFAULT_SUBGROUP_SIZE
    low, high = limits.subgroup_size_range or (size, size)
    sizes = tuple(s for s in ALL_SUBGROUP_SIZES + (1, 2) if low <= s <= high) or (size,)
    log.info("subgroups checked as %s runs them: size %d (allowed %s)", info.name, size, sizes)
    return size, tuple(sorted(sizes))


@dataclass
class _Program:
    """A shader as the checker runs it: compiled for checking, with its specialization
    constants, and its module, decoded once for every dispatch of it and for the report's names."""

    shader: m.Shader
    spirv: bytes
    spec: dict[int, Any]
    _module: Module | None = None

    @property
    def kernel(self) -> str:
        return f"{self.shader.uid} ({self.shader.entry})"

    def module(self) -> Module:
        """The decoded module (decoded on first use: its errors are the dispatch's)."""
        if self._module is None:
            from kernellab.spirvsim.machine import eval_spec_op
            from kernellab.spirvsim.module import load
            self._module = load(self.spirv, self.shader.entry, file=str(self.shader.src_path),
                                spec_constants=self.spec, eval_spec_op=eval_spec_op)
        return self._module


def _program(scenario: m.Scenario, shader: m.Shader, path: Path) -> _Program:
    from kernellab.runtime.interface import clspv_specialization
    spirv = _compile(scenario, shader, path)
    return _Program(shader, spirv, clspv_specialization(scenario, shader, spirv))  # OpenCL C: __local sizes


def _subgroup_size(shader: m.Shader, module: Module, device: int | Callable[[], int]) -> int:
    """The size a pipeline runs with: its required size (VK_EXT_subgroup_size_control, AmberScript's
    SUBGROUP ... REQUIRED_SIZE) when it names one, else the device's (asked only of a shader that
    depends on it)."""
    from kernellab.spirvsim.dispatch import uses_subgroups
    from kernellab.spirvsim.subgroup import DEFAULT_SUBGROUP_SIZE
    wanted = shader.subgroup.required_size if shader.subgroup is not None else None
    if wanted:
        return int(wanted)
    if isinstance(device, int):
        return device
    return device() if uses_subgroups(module) else DEFAULT_SUBGROUP_SIZE


def _verify_scenario(path: Path, scenario: m.Scenario, *, check: Sequence[str] = (), index: int | None = None,
                     file_number: int = 0, max_work: int | None = None,
                     timeout: float | None = None, subgroup_size: int | Callable[[], int] = 8,
                     simulated: list[dict[str, bytes]] | None = None) -> tuple[VerifyResult, bool]:
    """Check every ``dispatch_compute`` of a scenario in the SPIR-V checker and the hazards
    between them. ``index`` keeps the findings of dispatch N only (all dispatches still run:
    each reads what the ones before it wrote). ``timeout``: seconds each dispatch may take in
    the checker (None or 0: no limit); past it, :class:`TimeLimitError` names the dispatch.
    ``subgroup_size``: the size, or where to ask it (only when a shader depends on it)."""
    try:
        # what the specification leaves undefined in a subgroup operation is a defect, as races are
        checked = checked_kinds(check) | {"subgroup-inactive-read", "subgroup-nonuniform"}
    except ValueError as exc:
        raise UsageError(f"--check: {exc}") from exc
    _refuse_draws(scenario, path)
    limit = max_work or _max_work()
    state = _Buffers(scenario, path)
    programs: dict[str, _Program] = {}
    result = VerifyResult(path, [], checked=checked, checker="spirv")
    uses_subgroups = False  # whether a dispatch depends on the subgroup size
    runs: list[tuple[int, spirvsim.DispatchResult]] = []
    layouts: Layouts = {}
    found: list[Finding] = []
    sources: dict[int, str | None] = {}  # command -> its shader file (clspv names it "source")
    dispatches = [(ci, c) for ci, c in enumerate(scenario.commands) if isinstance(c, m.DispatchCompute)]
    if simulated is not None:
        simulated.append(dict(state.data))
    for number, (ci, c) in enumerate(dispatches):
        shader = scenario.by_uid[c.shader_ref]
        assert isinstance(shader, m.Shader)
        if shader.uid not in programs:
            programs[shader.uid] = _program(scenario, shader, path)
        program = programs[shader.uid]
        bindings = state.bindings(c, ci)
        where = f"/commands/{ci}/dispatch_compute"
        try:
            r = spirvsim.check_dispatch(program.module(), shader.entry, c.workgroups, bindings=bindings,
                                        push_constants=state.push_constants(c), checks=checked,
                                        file=str(shader.src_path), max_work=limit, timeout=timeout,
                                        subgroup_size=_subgroup_size(shader, program.module(), subgroup_size),
                                        addressable=state.addressable())
            uses_subgroups |= bool(r.stats.get("subgroups"))
        except spirvsim.Unsupported:
            raise
        except TimeLimitError:
            from kernellab.verify.run import overrun_message
            raise TimeLimitError(overrun_message(str(path), number, f"{shader.uid} ({shader.entry})",
                                                 timeout or 0)) from None
        except InputError as exc:
            at = where + _binding_place(c, exc)
            raise InputError([Problem(str(path), at, f"{p.message}") for p in exc.problems]) from exc
        state.update(r.buffers)
        if simulated is not None:
            simulated.append(dict(state.data))
        runs.append((ci, r))
        layouts.update(_layouts(program.module(), c))
        layouts.update(_image_layouts(scenario, c))
        result.launches.append(Launch(number, program.kernel, command=ci, invocations=r.invocations,
                                      seconds=round(r.seconds, 3)))
        source = sources[ci] = str(shader.src_path)
        found += [_finding(f, program.kernel, number, ci, file_number, layouts, source) for f in r.findings]
    numbers = {ci: n for n, (ci, _) in enumerate(dispatches)}
    kernels = {l.command: l.kernel for l in result.launches if l.command is not None}
    for h in hazards(scenario, runs):
        found.append(_hazard(h, kernels, numbers, file_number, layouts, sources))
    if index is not None:
        found = [f for f in found if f.instantiation == index]
    for mine in found:
        mine.severity = "defect" if mine.kind in checked else "warning"
    result.findings = ordered(found)
    result.raw_messages = sum(f.count for f in found)
    return result, uses_subgroups


def _binding_place(c: m.DispatchCompute, exc: InputError) -> str:
    """``/bindings/K`` of the dispatch's binding the checker refused (``spirvsim.BindingError``:
    the one at its place, or the last that binds its buffer); else nothing: the dispatch's."""
    place, resource = getattr(exc, "binding", None), getattr(exc, "resource", None)
    ks = [k for k, b in enumerate(c.bindings) if (b.set, b.id, b.array_element) == place or b.resource_ref == resource]
    return f"/bindings/{ks[-1]}" if ks else ""


def _max_work() -> int:
    from kernellab import config
    return config.verify_max_work() or DEFAULT_MAX_WORK


# --- the scenario's memory ---------------------------------------------------------------------

class _Buffers:
    """The scenario's buffers as the runner starts them (their ``src`` file, else zeros, as Arm's
    runner clears them) and as each checked dispatch leaves them."""

    def __init__(self, scenario: m.Scenario, path: Path):
        from kernellab.formats import npy
        self.scenario, self.path = scenario, path
        self.data: dict[str, bytes] = {}
        self.push: dict[str, bytes] = {}
        for r in scenario.resources:
            if isinstance(r, m.Buffer):
                raw = bytes(npy.load_bytes(r.src_path)) if r.src_path is not None else b""
                self.data[r.uid] = raw[:r.size].ljust(r.size, b"\0")
            elif isinstance(r, m.RawData) and r.src_path is not None:
                self.push[r.uid] = bytes(npy.load_bytes(r.src_path))
            elif isinstance(r, m.Image):
                self.data[r.uid] = image_binding(r, None, b"").data

    def bindings(self, c: m.DispatchCompute, ci: int) -> dict[tuple[int, int], Any]:
        out: dict[tuple[int, int], Any] = {}
        for k, b in enumerate(c.bindings):
            r = self.scenario.by_uid[b.resource_ref]
            if isinstance(r, m.Buffer):
                if r.memory_group is not None:
                    raise InputError.at(str(self.path), f"/commands/{ci}/dispatch_compute/bindings/{k}",
                                        f"buffer {r.uid} shares memory (memory_group {r.memory_group.id}): aliased "
                                        "resources are not modelled by the SPIR-V checker")
                one = self._buffer(b, r, ci, k)
                if sum((a.set, a.id) == (b.set, b.id) for a in c.bindings) > 1:  # an array of buffers
                    elements = out.get((b.set, b.id), {})
                    elements[b.array_element] = one
                    out[(b.set, b.id)] = elements
                else:
                    out[(b.set, b.id)] = one
            elif isinstance(r, m.Image):
                out[(b.set, b.id)] = image_binding(r, b, self.data[r.uid])
            # tensors are not bound: a shader using one is refused by the checker
        # the scenario loader has checked that an array's bindings fill its elements from 0
        return {key: spirvsim.BufferArray(tuple(v[e] for e in sorted(v))) if isinstance(v, dict) else v
                for key, v in out.items()}

    def _buffer(self, b: m.Binding, r: m.Buffer, ci: int, k: int) -> Any:
        """A buffer binding as ``run`` binds it: the shader sees the buffer from the range's offset
        plus a dynamic descriptor's offset, as far as the range (absent: to the buffer's end, as
        VK_WHOLE_SIZE is taken at bind time for a dynamic descriptor)."""
        from kernellab.spirvsim import Binding, ImageBinding
        from kernellab.vkregistry import vkformat
        at = f"/commands/{ci}/dispatch_compute/bindings/{k}"
        offset, size = (b.buffer_range[0], b.buffer_range[1]) if b.buffer_range is not None else (0, None)
        if b.descriptor_type in ("VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC", "VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC"):
            offset += b.dynamic_offset
        # the scenario loader has checked that the range lies inside the buffer
        if b.descriptor_type in ("VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER", "VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER"):
            # a texel buffer: the range's bytes as texels of its view's format, one row of them
            # (read and written through the shared texel codec; races and bounds per texel)
            fmt = vkformat.lookup(b.texel_format or "")
            if fmt is None or fmt.packed:
                raise InputError.at(str(self.path), at + "/texel_format", f"buffer {r.uid}: texel buffers of format "
                                    f"{b.texel_format} are not supported by the SPIR-V checker")
            size = len(self.data[r.uid]) - offset if size is None else size
            return ImageBinding(r.uid, fmt.name, size // fmt.texel_size, 1, 1, self.data[r.uid], offset=offset,
                                texel_buffer=True)
        return Binding(r.uid, self.data[r.uid], offset, size)

    def addressable(self) -> list[tuple[int, Any]]:
        """Every buffer with the device address the checker gives it: the scenario's n-th buffer
        (in resource order, from 0) at ``spirvsim.pointers.address_of(n)``."""
        from kernellab.spirvsim import Binding
        from kernellab.spirvsim.pointers import address_of
        return [(address_of(n), Binding(uid, data)) for n, (uid, data) in enumerate(self.data.items())]

    def push_constants(self, c: m.DispatchCompute) -> bytes:
        return self.push.get(c.push_data_ref, b"") if c.push_data_ref else b""

    def update(self, buffers: dict[str, bytes]) -> None:
        self.data.update(buffers)


def image_binding(r: m.Image, b: m.Binding | None, texels: bytes) -> Any:
    """An image resource as the checker binds it (:class:`kernellab.spirvsim.ImageBinding`): the
    format the runner creates (a depth format's colour stand-in), the extent, the mip levels, the
    sampler of its filters and address mode, and the view the binding names (``lod``: that level;
    else the whole chain, which a storage image's view narrows to level 0). Without a binding
    ``b``, its texels as the runner starts it: its ``src`` file's levels, the rest generated,
    zeros without a file."""
    import numpy as np

    from kernellab.runtime.executor import image_extent
    from kernellab.spirvsim import ImageBinding, Sampler
    from kernellab.spirvsim.images import image_bytes
    from kernellab.vkregistry import vkformat
    width, height = image_extent(r)
    # kernellab's scenario extensions: a 3D image's slices follow one another (the runner's
    # layout: a 2D image depth times as high); what the checker's image model does not hold is
    # refused by name, not checked as another image
    depth = r.depth if r.image_type == "3D" else 1
    if depth > 1 and r.mips > 1:
        raise InputError(f"image {r.uid}: a 3D image with mip levels ({width}x{height}x{depth}, {r.mips} levels) "
                         "is not supported by the SPIR-V checker")
    fmt_name = vkformat.device_format_name(r.format)
    if b is None:
        loaded, levels = b"", 0
        if r.src_path is not None:
            from kernellab.formats import imagefile
            fmt = vkformat.lookup(r.format)
            assert fmt is not None  # the scenario reader checked the format
            data = imagefile.load(r.src_path, fmt, width, height * depth, r.mips)
            loaded, levels = bytes(data.data), data.mip_levels
        texels = image_bytes(fmt_name, width, height * depth, r.mips, loaded, levels)
    sampler = Sampler(r.min_filter or "NEAREST", r.mag_filter or "NEAREST", r.mip_filter or "NEAREST",
                      r.border_address_mode or "CLAMP_EDGE", r.border_color or "FLOAT_TRANSPARENT_BLACK",
                      tuple(r.custom_border_color) if r.custom_border_color else None)
    lod = b.lod if b is not None else None
    if r.samples > 1 and b is None:
        # each sample starts as its texel: samples stored one after another per texel
        size = vkformat.lookup(fmt_name).texel_size  # type: ignore[union-attr]
        texels = np.repeat(np.frombuffer(bytes(texels), np.uint8).reshape(-1, size), r.samples, axis=0).tobytes()
    return ImageBinding(r.uid, fmt_name, width, height, r.mips, texels, base_level=lod or 0,
                        levels=None if lod is None else 1, sampler=sampler, depth=depth, samples=r.samples)


def _image_layouts(scenario: m.Scenario, c: m.DispatchCompute) -> dict[str, tuple[str | None, int, int]]:
    """uid -> (None, 0, texel size) of the images a dispatch binds, so a hazard's byte offset in
    an image's packed texels reads as a texel index (level after level)."""
    from kernellab.vkregistry import vkformat
    out: dict[str, tuple[str | None, int, int]] = {}
    for b in c.bindings:
        r = scenario.by_uid.get(b.resource_ref)
        fmt = vkformat.lookup(vkformat.device_format_name(r.format)) if isinstance(r, m.Image) else None
        if fmt is not None:
            out[b.resource_ref] = (None, 0, fmt.texel_size)
    return out


#: commands the checker does not run, with what they are: a scenario holding one is refused
_UNCHECKED = (m.DispatchFragment, m.DispatchOpticalFlow)
_WHAT = {"dispatch_fragment": "a graphics pipeline", "dispatch_optical_flow": "an optical-flow pipeline"}


def _refuse_draws(scenario: m.Scenario, path: Path) -> None:
    """The checker runs compute shaders: a scenario that draws (or runs optical flow) is refused,
    not checked in part."""
    problems = [Problem(str(path), f"/commands/{ci}/{c.kind}",
                        f"verify checks dispatch_compute only; {c.kind} ({_WHAT[c.kind]}) is not checked "
                        "(run it with kernellab run)")
                for ci, c in enumerate(scenario.commands) if isinstance(c, _UNCHECKED)]
    # the checker numbers work-items from 0, as Vulkan does: an offset would be checked wrongly
    problems += [Problem(str(path), f"/commands/{ci}/dispatch_compute/global_offset",
                         "the SPIR-V checker runs whole work-groups from global id 0 and takes no global offset "
                         "(without --vulkan, Oclgrind checks an OpenCL C dispatch with one)")
                 for ci, c in enumerate(scenario.commands)
                 if isinstance(c, m.DispatchCompute) and c.global_offset and any(c.global_offset)]
    if problems:
        raise InputError(problems)


def _module_env(src: Path) -> str:
    """The environment a SPIR-V module is validated for: the Vulkan version its SPIR-V version
    needs (1.6: Vulkan 1.3, as glslc writes for Arm's scenarios), at least ``vulkan1.2``."""
    head = src.read_bytes()[:8]
    if len(head) == 8 and int.from_bytes(head[:4], "little") == spirv_format.MAGIC:
        minor = (int.from_bytes(head[4:], "little") >> 8) & 0xFF
        return "vulkan1.3" if minor >= 6 else "vulkan1.2"
    return "vulkan1.2"  # spirv-val will name what is wrong


def _compile(scenario: m.Scenario, shader: m.Shader, path: Path) -> bytes:
    """The SPIR-V the checker runs: what Vulkan runs, compiled with debug information (and, for
    clspv, without optimisation: :data:`_CHECKING_OPTIONS`). When clspv fails at ``-O0`` or
    writes a module spirv-val rejects (it does on some kernels it compiles at its default level),
    the default build is checked and a warning says so."""
    from kernellab.compile.pipeline import Compiler, CompileRequest
    from kernellab.errors import CompileError
    assert shader.src_path is not None
    language = LANGUAGE_OF_SHADER_TYPE[shader.type]
    index = scenario.resources.index(shader)
    place = (str(path), f"/resources/{index}/shader/build_options")
    env = _module_env(shader.src_path) if language == "spirv" else "vulkan1.2"

    def build(extra: str) -> bytes:
        req = CompileRequest(source=shader.src_path, language=language, entry=shader.entry,  # type: ignore[arg-type]
                             build_options=(shader.build_options + extra).strip(), include_dirs=shader.include_paths,
                             roots=(path.resolve().parent,), options_place=place, target_env=env,
                             place=(str(path), f"/resources/{index}/shader/src"))  # a failure names the workload
        return Compiler(req).vulkan_module().data

    extra = _CHECKING_OPTIONS.get(language, "")
    if language == "glsl":
        try:
            return build(extra)
        except CompileError as exc:
            # glslang's NonSemantic debug information is invalid for some shaders (buffer_reference
            # types: "Id is 0"); OpLine information (-g) still names every line
            if "spirv-val" not in str(exc):
                raise
            log.warning("%s: glslang -gVS wrote a module spirv-val rejects; checking the -g build (OpLine "
                        "debug information)", shader.src_path)
            return build(" -g")
    if language != "opencl-c":
        return build(extra)
    try:
        return build(extra)
    except CompileError as exc:
        fallback = extra.replace(" -O0", "")
        data = build(fallback)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        log.warning("%s: clspv%s failed (%s); checking its default (optimised) build, in which dead accesses may "
                    "have been removed", shader.src_path, extra, first)
        return data


def _layouts(module: Module, c: m.DispatchCompute) -> Layouts:
    """uid -> (the shader's name for the buffer, offset of its array, bytes per element), so a
    byte offset of a hazard reads as an element index."""
    from kernellab.spirvsim.types import scalar_sizes
    bound = {(b.set, b.id): b.resource_ref for b in c.bindings}
    out: Layouts = {}
    for vid, var in module.variables.items():
        ptr = module.types[var.words[0]]
        if ptr.storage not in ("StorageBuffer", "Uniform") or ptr.elem is None:
            continue
        ds, bd = module.decorated(vid, "DescriptorSet"), module.decorated(vid, "Binding")
        uid = bound.get((ds[0], bd[0])) if ds and bd else None
        if uid is None:
            continue
        block = ptr.elem
        name = module.names.get(vid) or module.names.get(block.id) or None
        offset, size = 0, 1
        for member, moff in zip(block.members, block.offsets):
            if member.kind in ("array", "runtime_array", "runtimearray") and member.stride:
                offset, size = moff, member.stride
                break
        else:
            if block.leaves:
                size = min(scalar_sizes(block))
        out[uid] = (name, offset, size)
    return out


# --- findings in the scenario's terms -------------------------------------------------------------

def _work_item(invocation: dict[str, list[int]]) -> WorkItem:
    return {"global": invocation["global"], "local": invocation["local"], "group": invocation["workgroup"]}


def _access(a: dict[str, Any], source: str | None = None) -> Access:
    """One side of a finding; ``source`` is the shader's file: clspv's line information calls it
    ``source``, glslang's its base name (it compiles a copy with the includes inlined; the
    included files keep their paths through ``#line``)."""
    loc = a.get("location")
    text = a.get("source_line")
    location: Location | None = None
    if loc and source is not None and loc["file"] in (_CLSPV_SOURCE, Path(source).name):
        loc = dict(loc, file=source)
        # the user's own line: a module's embedded text is the inlined copy's when there were includes
        text = terms.line_text(source, loc["line"]).strip() or text
    if loc:
        # the statement's first column: SPIR-V debug lines carry the line only
        column = 1
        if text is not None:
            raw = terms.line_text(loc["file"], loc["line"])
            column = (len(raw) - len(raw.lstrip()) + 1) if raw else 1
        location = Location(file=loc["file"], line=loc["line"], column=column)
    what = None if a.get("access") in ("read", "write", "barrier") else a.get("access")
    return Access(_work_item(a["invocation"]) if "invocation" in a else {}, location, text,
                      f"{a.get('instruction')} (word {a.get('word')})" if a.get("instruction") else None, what)


def _finding(f: spirvsim.Finding, kernel: str, number: int, ci: int, file_number: int, layouts: Layouts,
             source: str | None = None) -> Finding:
    """A finding of one dispatch in OpenCL verify's terms."""
    accesses = [_access(a, source) for a in f.accesses]
    race = None
    if f.kind == "data-race":
        kinds = [a.get("access", "") for a in f.accesses]
        race = {"type": "write-write" if all("write" in k for k in kinds) else "read-write",
                "scope": _SCOPES.get(f.scope or "", f.scope or "")}
    buffer = f.storage not in (None, "workgroup", "function", "private")
    out = Finding(f.kind, f.message, kernel, number, address_space=f.storage, accesses=accesses, race=race,
                      count=f.count, detail=f"scenario command /commands/{ci}", file=file_number,
                      resource=f.resource if buffer else None, index=f.index,
                      variable=(layouts.get(f.resource or "", (None,))[0] or f.resource) if buffer else f.resource)
    out.examples = []
    for ex in f.examples:
        items = [_work_item(a["invocation"]) for a in ex.get("accesses", []) if "invocation" in a]
        if "not_arrived" in ex:
            items.append(_work_item(ex["not_arrived"]))
        out.examples.append({"work_items": items, "address": None, "index": ex.get("index")})
    if f.kind == "barrier-divergence" and f.examples and "not_arrived" in f.examples[0]:
        w = _work_item(f.examples[0]["not_arrived"])
        out.detail += f"; e.g. {tuple(w['global'])} did not reach it"
    return out


def _hazard(f: spirvsim.Finding, kernels: dict[int, str | None], numbers: dict[int, int], file_number: int,
            layouts: Layouts, sources: dict[int, str | None]) -> Finding:
    """A hazard in OpenCL verify's terms: each access names its command (``what``), the
    invocation and source line that made it; each example the element, the two commands and
    both sides."""
    first, second = (a["command"] for a in f.accesses)
    name, offset, size = layouts.get(f.resource or "", (None, 0, 1))
    kinds = [a["access"] for a in f.accesses]
    race = {"type": "write-write" if kinds == ["wrote", "wrote"] else "read-write", "scope": "inter-dispatch"}

    def side(a: dict[str, Any]) -> Access:
        out = _access(a, sources.get(a["command"]))
        out.what = f"command {a['command']} ({kernels.get(a['command'])}) {a['access']}"
        return out
    accesses = [side(a) for a in f.accesses]
    elements = [(ex["byte_offset"] - offset) // size for ex in f.examples]
    span = _BYTES.search(f.message)
    lo, hi = (int(span.group(1)), int(span.group(2))) if span else (0, 0)
    out = Finding("data-race", f.message, kernels.get(second), numbers.get(second), address_space=f.storage,
                      accesses=accesses, race=race, count=max(1, f.count // size), resource=f.resource,
                      index=elements[0] if elements else None, variable=name or f.resource, file=file_number,
                      detail=f"elements {(lo - offset) // size}..{(hi - offset) // size} of {size} bytes; "
                             f"scenario commands /commands/{first} and /commands/{second}",
                      element_size=size)
    out.examples = []
    for e, ex in zip(elements, f.examples):
        sides = [side(a) for a in ex.get("accesses", [])]
        out.examples.append({
            "work_items": [s.work_item for s in sides if s.work_item], "address": None, "index": e,
            "commands": [first, second], "hazard": ex.get("hazard"),
            "accesses": [{"command": a["command"], "access": a["access"], "work_item": s.work_item,
                          "location": s.location, "source_line": s.source_line, "instruction": s.instruction}
                         for a, s in zip(ex.get("accesses", []), sides)]})
    return out


# --- hazards between dispatches -------------------------------------------------------------------

def _stages(names: Sequence[str]) -> int:
    from kernellab.spirvsim import sync
    bits = {"COMPUTE": sync.COMPUTE, "GRAPH": sync.GRAPH, "GRAPHICS": sync.GRAPHICS, "ALL": sync.ALL}
    out = 0
    for name in names:
        out |= bits[name]
    return out


def dependencies(scenario: m.Scenario) -> list[spirvsim.Dependency]:
    """The dependencies the runner records between the scenario's commands
    (:class:`kernellab.spirvsim.Dependency`), as Arm's runner records them: after a dispatch
    with ``implicit_barrier`` (the default) a full memory barrier (all commands, memory read and
    write on both sides); at a ``mark_boundary`` a submission the host waits for before
    recording the next (a full dependency: the fence signal makes every device write available,
    the next vkQueueSubmit makes it visible); each barrier of a ``dispatch_barrier`` its own
    dependency (synchronization2), with its stages, access masks and, for a buffer barrier, its
    buffer's range, for an image barrier its image's mip levels (tensor barriers order execution
    only). A
    ``dispatch_barrier`` naming no barrier records no dependency."""
    from kernellab.spirvsim import Dependency
    from kernellab.spirvsim.sync import full
    out = []
    for ci, c in enumerate(scenario.commands):
        where = f"/commands/{ci}"
        if isinstance(c, m.MarkBoundary):
            out.append(full(ci, f"mark_boundary ({where})"))
        elif isinstance(c, m.DispatchBarrier):
            for refs in (c.memory_barrier_refs, c.buffer_barrier_refs, c.image_barrier_refs, c.tensor_barrier_refs):
                for ref in refs:
                    b = scenario.by_uid[ref]
                    assert isinstance(b, m.BarrierBase)
                    sides = (_stages(b.src_stage), _stages(b.dst_stage), frozenset(_ACCESSES.get(b.src_access, ())),
                             frozenset(_ACCESSES.get(b.dst_access, ())))
                    name = f"{b.kind} {b.uid} ({where})"
                    if isinstance(b, m.BufferBarrier):
                        out.append(Dependency(ci, name, *sides, buffer=b.buffer_resource, offset=b.offset,
                                              size=b.size))
                    elif isinstance(b, m.ImageBarrier):
                        start, size = _image_barrier_range(scenario, b)
                        out.append(Dependency(ci, name, *sides, buffer=b.image_resource, offset=start, size=size))
                    else:
                        out.append(Dependency(ci, name, *sides, memory=isinstance(b, m.MemoryBarrier)))
        elif getattr(c, "implicit_barrier", False):
            out.append(full(ci, f"implicit barrier of {c.kind} ({where})"))
    return out


def _image_barrier_range(scenario: m.Scenario, b: m.ImageBarrier) -> tuple[int, int]:
    """The bytes of an image barrier's mip levels in its image's packed texels (the checker's
    layout: level after level)."""
    from kernellab.runtime.executor import image_extent
    from kernellab.spirvsim.images import level_offsets
    from kernellab.vkregistry import vkformat
    r = scenario.by_uid.get(b.image_resource)
    if not isinstance(r, m.Image):
        return 0, 0
    width, height = image_extent(r)
    offsets = level_offsets(vkformat.device_format_name(r.format), width, height, r.mips)
    rng = b.subresource_range
    first = min(rng.base_mip_level, r.mips)
    last = min(rng.base_mip_level + rng.level_count, r.mips)
    return offsets[first], offsets[last] - offsets[first]


def hazards(scenario: m.Scenario, runs: Sequence[tuple[int, spirvsim.DispatchResult]]) -> list[spirvsim.Finding]:
    """Hazard findings (spirvsim's, scope ``inter-dispatch``) between checked dispatches
    (command index, result): read-after-write, write-after-write and write-after-read, each
    with the bytes the scenario's dependencies order taken out."""
    from kernellab.spirvsim import dispatch_hazards
    return dispatch_hazards(runs, dependencies(scenario))
