"""The records and errors of the backend interface (``base.py``) that a run meets only on
occasion: a command's GPU time (a run with timestamps), an OpenCL ``__local`` argument, a compute
pipeline's subgroup sizing (a shader that asks for one), a program without the entry point asked
for, a pipeline the loaded cache lacks. ``base.py`` gives their names;
they are built when first used, so a run of buffers builds none of them (issue 23, start-up)."""
from __future__ import annotations

from collections.abc import Sequence

from kernellab.errors import KernellabError
from kernellab.records import dataclass


@dataclass
class CommandTiming:
    """GPU time of one recorded command, from timestamp queries (nanoseconds)."""

    label: str
    start_ns: float
    end_ns: float

    @property
    def duration_ns(self) -> float:
        return self.end_ns - self.start_ns


@dataclass(frozen=True)
class LocalArgument:
    """An OpenCL C ``__local`` pointer argument: its length is a specialization constant the
    scenario must set (no driver has a sensible default for it)."""

    index: int
    name: str
    spec_id: int
    #: clspv's reflection: bytes of one element of the array it declares, which need not be the
    #: declared pointee type (``__local long *`` may be a ``uint`` array); 0 when not from clspv
    element_size: int = 0
    #: the parameter's type as clspv's reflection names it (``long*``), "" when it does not
    type_name: str = ""


class UnknownEntryError(KernellabError):
    """The program does not define the entry point asked for; ``names`` are those it defines."""

    exit_status = 2

    def __init__(self, entry: str, names: Sequence[str], *, module: bool = False):
        self.entry = entry
        self.names = list(names)
        have = ", ".join(self.names) or "none"
        super().__init__(f"the module has no entry point {entry!r} (it has: {have})" if module else
                         f"no kernel named {entry!r} (the source defines: {have})")


class PipelineCacheMiss(KernellabError):
    """A pipeline the loaded pipeline cache did not hold (Arm's --fail-on-pipeline-cache-miss)."""

    def __init__(self, pipeline: str):
        super().__init__(f"Pipeline cache miss for pipeline: {pipeline}")
        self.pipeline = pipeline


@dataclass(frozen=True)
class SubgroupSizing:
    """How a compute pipeline's subgroups are sized (VK_EXT_subgroup_size_control): a required
    size (0: the device's choice), fully populated subgroups, a size that may vary."""

    required_size: int = 0
    full: bool = False
    varying: bool = False
