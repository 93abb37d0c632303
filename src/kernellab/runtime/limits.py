"""A scenario checked against the device's limits before anything runs.

A descriptor set index past ``maxBoundDescriptorSets`` corrupts lavapipe's heap, a binding id of
2^32-1 or an image 32768 texels high crashes it, ``rangeND [4294967295]`` never ends: drivers do
not check what the Vulkan spec says the application must. Here each such number is an input
error naming its JSON path and the limit it passes, all of a scenario's found together.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from kernellab import model as m
from kernellab.backends.base import BindingSlot, Limits
from kernellab.errors import Problem, json_pointer
from kernellab.records import Value

_AXES = "xyz"


class LocalSize(Value):
    """A shader's workgroup size as the dispatches will run it, and the JSON path that sets it.
    (A value of a plain class: a run makes some, and a dataclass cost its start-up more to build
    than the class, issue 23.)"""

    __slots__ = ("size", "where")
    _fields = ("size", "where")

    def __init__(self, size: tuple[int, int, int], where: tuple[str | int, ...]):
        self.size = size
        self.where = where


def check_limits(scenario: m.Scenario, limits: Limits, file: str | Path, *,
                 slots: Mapping[int, Sequence[BindingSlot]] = {},
                 local_sizes: Mapping[str, LocalSize] = {},
                 shared_memory: Mapping[str, int] = {}) -> list[Problem]:
    """Every number of ``scenario`` beyond ``limits``. ``slots``: the descriptors each dispatch
    (by command index) binds; ``local_sizes``: the workgroup size of each shader (by uid);
    ``shared_memory``: the bytes of workgroup (``shared``/``__local``) memory each shader uses."""
    check = _Check(limits, str(file))
    check.shared_memory(scenario, shared_memory)
    storage_bound: set[tuple[int, int]] = set()
    for i, c in enumerate(scenario.commands):
        storage = {(s.set, s.id) for s in slots.get(i, ()) if s.descriptor == "storage-buffer"}
        # the kind first: a run of buffers builds no draw class
        if isinstance(c, m.DispatchCompute) or c.kind == "dispatch_fragment" and isinstance(c, m.DispatchFragment):
            storage_bound.update(b.resource_ref for b in c.bindings if (b.set, b.id) in storage)
    total = 0
    for i, r in enumerate(scenario.resources):
        if isinstance(r, m.Buffer):
            total += r.size
            at = ("resources", i, "buffer", "size")
            check.at_most(at, r.size, "max_allocation_size", f"buffer {r.uid!r} is {r.size} bytes")
            if r.uid in storage_bound:
                check.at_most(at, r.size, "max_storage_buffer_range",
                              f"buffer {r.uid!r} is bound as a storage buffer of {r.size} bytes")
        elif isinstance(r, m.Shader):
            check.at_most(("resources", i, "shader", "push_constants_size"), r.push_constants_size,
                          "max_push_constants_size", f"shader {r.uid!r} has {r.push_constants_size} bytes of push "
                          "constants")
        elif r.kind == "image" and isinstance(r, m.Image):
            _check_image(r, check, i)
        elif r.kind == "tensor" and isinstance(r, m.Tensor):
            _check_tensor(r, check, i)
        _check_group(r, check, i)
    check.at_most(("resources",), total, "memory_heap_size", f"the scenario's buffers take {total} bytes together")
    for uid, local in local_sizes.items():
        what = f"shader {uid!r} runs workgroups of {'x'.join(map(str, local.size))}"
        for k, n in enumerate(local.size):
            bound = limits.max_workgroup_size
            if bound is not None:
                check.at_most(local.where, n, "max_workgroup_size", what, bound[k], f"[{k}]")
        invocations = local.size[0] * local.size[1] * local.size[2]
        check.at_most(local.where, invocations, "max_workgroup_invocations", f"{what} = {invocations} invocations")
    for i, c in enumerate(scenario.commands):
        if isinstance(c, m.DispatchCompute) or c.kind == "dispatch_fragment" and isinstance(c, m.DispatchFragment):
            check.dispatch(i, c)
            kinds = {(s.set, s.id): s.descriptor for s in slots.get(i, ())}
            for j, b in enumerate(c.bindings):
                check.aligned(("commands", i, c.kind, "bindings", j), b, kinds.get((b.set, b.id), ""))
    return check.problems


def _check_image(r: m.Image, check: _Check, index: int) -> None:
    dims = list(r.dims)
    axes = (1, 2) if len(dims) >= 3 else (0, 1)
    for k, name in zip(axes, ("width", "height")):
        check.at_most(("resources", index, "image", "dims", k), dims[k], "max_image_dimension_2d",
                      f"image {r.uid!r} is {dims[k]} texels in {name}")
    from kernellab.vkregistry import vkformat  # the table of formats: an image's (a run of buffers reads none)

    fmt = vkformat.lookup(r.format)
    width, height = dims[axes[0]], dims[axes[1]]
    _check_mips(r, check, index, max(width, height))
    texel = fmt.texel_size if fmt is not None else 4
    # the mip chain adds at most a third; level 0 is what must fit
    nbytes = width * height * texel
    check.at_most(("resources", index, "image", "dims"), nbytes, "max_allocation_size",
                  f"image {r.uid!r} takes {nbytes} bytes")


def _check_group(r: m.Resource, check: _Check, index: int) -> None:
    """The group's one allocation reaches past each member's offset (2^63 reached the driver)."""
    group = r.memory_group if isinstance(r, m.DataResource) else None
    if group is None:
        return
    end = group.offset + (r.size if isinstance(r, m.Buffer) else 0)
    check.at_most(("resources", index, r.kind, "memory_group", "offset"), end, "max_allocation_size",
                  f"{r.kind} {r.uid!r} reaches byte {end} of memory group {group.id!r}")


def _check_tensor(r: m.Tensor, check: _Check, index: int) -> None:
    """A tensor's bytes: its dims' product reached the driver unchecked, and 2^31 x 2^31 elements
    of 4 bytes wrapped to a tensor of no memory (the run then failed reading it back)."""
    from kernellab.vkregistry import vkformat

    fmt = vkformat.lookup(r.format)
    nbytes = fmt.texel_size if fmt is not None else 1
    for n in r.dims:
        nbytes *= n
    check.at_most(("resources", index, "tensor", "dims"), nbytes, "max_allocation_size",
                  f"tensor {r.uid!r} takes {nbytes} bytes")


def _check_mips(r: m.Image, check: _Check, index: int, extent: int) -> None:
    """Arm refuses more mip levels than the device gives a 2D image (its src/image.cpp, with
    Arm's words); the extent bounds the chain too (floor(log2(largest side)) + 1 levels)."""
    levels = [max(extent, 1).bit_length()]
    if check.limits.max_image_dimension_2d:
        levels.append(check.limits.max_image_dimension_2d.bit_length())
    if r.mips > min(levels):
        check.problems.append(Problem(check.file, json_pointer(("resources", index, "image", "mips")),
                                      f"The mip level provided is not supported for {r.uid}: {r.mips} levels, the "
                                      f"device and size allow at most {min(levels)}"))


class _Check:
    def __init__(self, limits: Limits, file: str):
        self.limits = limits
        self.file = file
        self.problems: list[Problem] = []

    def at_most(self, at: Iterable[str | int], value: int, limit: str, what: str, bound: int | None = None,
                suffix: str = "") -> None:
        """A problem at ``at`` when ``value`` exceeds ``limit`` (or ``bound``, one part of it)."""
        if bound is None:
            bound = getattr(self.limits, limit)
        if bound is None or value <= bound:
            return
        self.problems.append(Problem(self.file, json_pointer(tuple(at)),
                                     f"{what}; the device allows at most {bound} "
                                     f"({self.limits.name(limit)}{suffix})"))

    def shared_memory(self, scenario: m.Scenario, sizes: Mapping[str, int]) -> None:
        """A shader's workgroup memory past the device's (a driver that does not check it
        allocates it per workgroup, or fails deep inside the dispatch)."""
        for uid, nbytes in sizes.items():
            shader = scenario.by_uid.get(uid)
            if shader is None:
                continue
            index = scenario.resources.index(shader)
            self.at_most(("resources", index, "shader"), nbytes, "max_shared_memory_size",
                         f"shader {uid!r} uses {nbytes} bytes of workgroup (shared/__local) memory")

    def below(self, at: Iterable[str | int], value: int, limit: str, what: str) -> None:
        """A problem when ``value``, an index, is not below ``limit`` (a count)."""
        count = getattr(self.limits, limit)
        if count is not None and value >= count:
            self.problems.append(Problem(self.file, json_pointer(tuple(at)),
                                         f"{what}; the device takes indices below {count} "
                                         f"({self.limits.name(limit)} is {count})"))

    def aligned(self, at: tuple[str | int, ...], b: m.Binding, descriptor: str) -> None:
        """A binding's range offset and dynamic offset: multiples of the device's alignment for
        its kind of descriptor (Vulkan requires it; a driver need not check)."""
        limit = "min_texel_buffer_offset_alignment" if "texel" in descriptor else \
            "min_uniform_buffer_offset_alignment" if descriptor.startswith("uniform") else \
            "min_storage_buffer_offset_alignment"
        align = getattr(self.limits, limit)
        for where, offset in ((("buffer_range", 0), b.buffer_range[0] if b.buffer_range else 0),
                              (("dynamic_offset",), b.dynamic_offset)):
            if align and offset % align:
                self.problems.append(Problem(self.file, json_pointer(at + where),
                                             f"offset {offset} into buffer {b.resource_ref!r} is not a multiple of "
                                             f"{align} ({self.limits.name(limit)})"))

    def dispatch(self, index: int, c: m.DispatchCompute | m.DispatchFragment) -> None:
        at = ("commands", index, c.kind)
        counts = self.limits.max_workgroup_count
        if not isinstance(c, m.DispatchCompute):  # a draw
            if c.render_extent is not None:  # the attachments' extents are checked as images
                for k, n in enumerate(c.render_extent):
                    self.at_most(at + ("render_extent", k), n, "max_image_dimension_2d",
                                 f"the draw renders {n} texels in {('width', 'height')[k]}")
        elif counts is not None:
            for k, n in enumerate(c.rangeND):
                self.at_most(at + ("rangeND", k), n, "max_workgroup_count",
                             f"{n} workgroups along {_AXES[k]}", counts[k], f"[{k}]")
        for j, b in enumerate(c.bindings):
            self.below(at + ("bindings", j, "set"), b.set, "max_bound_descriptor_sets",
                       f"binding {j} ({b.resource_ref!r}) is on descriptor set {b.set}")
            self.below(at + ("bindings", j, "id"), b.id, "max_per_set_descriptors",
                       f"binding {j} ({b.resource_ref!r}) has binding id {b.id}; drivers size a set up to its "
                       "largest id")


def local_memory_problems(file: str, entry: str, static: tuple[str, int], arguments: Sequence[tuple[str, int]],
                          limits: Limits) -> list[Problem]:
    """An OpenCL launch's ``__local`` memory past the device's, found before it is enqueued: a CPU
    driver allocates it per work-group (PoCL dies of SIGSEGV at 1 GiB); Oclgrind refuses only at
    the enqueue, when a check would already have counted the launch as run. ``static`` is (JSON
    path of the kernel file, bytes of its ``__local`` arrays); ``arguments`` (JSON path, bytes) of
    each ``__local`` argument. The problem names the largest part, where a file changes it."""
    bound = limits.max_shared_memory_size
    total = static[1] + sum(n for _, n in arguments)
    if bound is None or total <= bound:
        return []
    where, _ = max([static, *arguments], key=lambda part: part[1])
    parts = [f"{static[1]} in its __local arrays"] + [f"{n} in __local argument at {at}" for at, n in arguments]
    return [Problem(file, where, f"kernel {entry} needs {total} bytes of __local memory ({', '.join(parts)}); "
                                 f"the device allows at most {bound} ({limits.name('max_shared_memory_size')})")]
