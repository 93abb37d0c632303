"""Memory the interpreter addresses: regions of bytes and pointers into them.

A region is one variable's storage: a bound buffer range (one row for the whole dispatch),
workgroup memory (one row per workgroup of the batch) or function/private/input memory (one row
per invocation). A pointer holds, per lane, a byte offset inside its region's row, the element
index of its last array step (for findings) and whether an access-chain index left a sized array.
"""
from __future__ import annotations

import numpy as np

from kernellab.errors import InputError
from kernellab.records import dataclass
from kernellab.spirvsim.shadow import Shadow
from kernellab.spirvsim.types import Type

#: row of a lane: the same for all (buffers), per workgroup, per invocation
GLOBAL, GROUP, LANE = "global", "group", "lane"


#: the workgroup memory of the device the checker stands for: the largest
#: ``maxComputeSharedMemorySize`` common Vulkan drivers report (AMD and Intel 65536, NVIDIA 49152,
#: lavapipe 32768); a shader past it runs on none of them
MAX_WORKGROUP_MEMORY = 65536
#: bytes one batch of workgroups may take for its workgroup, private and function memory with
#: their shadows (the batch shrinks to fit; one workgroup past it is refused)
MAX_BATCH_MEMORY = 1 << 30


def row_bytes(size: int) -> int:
    """Bytes of one row of a :class:`Region` of ``size`` accessible bytes."""
    return max(8, (size + 7) // 8 * 8)


def workgroup_row_bytes(size: int) -> int:
    """Bytes one workgroup's row of a workgroup variable takes with its initialized flags and a
    shadow of byte units (the finest a module can ask for)."""
    row = row_bytes(size)
    return 2 * row + Shadow.bytes_for(row, across_groups=False)


def check_memory(workgroup: list[tuple[str, int]], per_invocation: int, group_size: int) -> int:
    """Refuse, before anything is allocated, a dispatch whose memory the checker cannot model:
    workgroup variables (name, bytes) past :data:`MAX_WORKGROUP_MEMORY` together, or one
    workgroup (``group_size`` invocations of ``per_invocation`` private/function bytes) needing
    more than :data:`MAX_BATCH_MEMORY`. Returns the bytes one workgroup takes."""
    shared = sum(size for _, size in workgroup)
    if shared > MAX_WORKGROUP_MEMORY:
        names = ", ".join(f"{name} ({size} bytes)" for name, size in sorted(workgroup, key=lambda v: -v[1])[:3])
        raise InputError(f"the shader uses {shared} bytes of workgroup (shared) memory ({names}); the SPIR-V "
                         f"checker's device allows at most {MAX_WORKGROUP_MEMORY} (maxComputeSharedMemorySize)")
    per_group = sum(workgroup_row_bytes(size) for _, size in workgroup) + group_size * row_bytes(per_invocation)
    if per_group > MAX_BATCH_MEMORY:
        raise InputError(f"one workgroup of {group_size} invocations needs {per_group >> 20} MiB of private and "
                         f"function memory with its shadow, past the checker's limit of {MAX_BATCH_MEMORY >> 20} MiB")
    return per_group


@dataclass(eq=False)
class Region:
    name: str  # the resource uid or the variable's name
    storage: str  # SPIR-V storage class
    per: str  # GLOBAL, GROUP or LANE
    rows: int
    size: int  # accessible bytes per row (a buffer's bound range)
    data: np.ndarray  # uint8 (rows * rowsize,), rowsize a multiple of 8
    rowsize: int
    writable: bool = True
    shadow: Shadow | None = None
    #: bytes per shadow unit: the smallest scalar the module accesses in this storage class
    granule: int = 1
    #: bytes written so far (workgroup memory, for the uninitialized-read check)
    init: np.ndarray | None = None
    #: bytes read / written by the dispatch (storage buffers, for hazards between dispatches)
    read: np.ndarray | None = None
    written: np.ndarray | None = None
    #: who last read / wrote each unit of ``unit`` bytes (global invocation number, -1: nobody)
    #: and with which instruction (index in Module.insts): what a hazard between dispatches names
    unit: int = 1
    read_by: np.ndarray | None = None
    read_at: np.ndarray | None = None
    written_by: np.ndarray | None = None
    written_at: np.ndarray | None = None
    #: per 4 bytes, the head of the release sequence an atomic there belongs to (invocation, its
    #: release count, storage-class bits, scope; -1: none): :mod:`kernellab.spirvsim.release`
    released: np.ndarray | None = None

    def track_accessors(self, unit: int, invocation_type: type = np.int64) -> None:
        """Keep, besides which bytes were read and written, who did it, per ``unit`` bytes
        (invocation numbers in ``invocation_type``: int32 halves the record when they fit); its size
        is :func:`accessor_bytes`."""
        units = -(-self.data.size // unit)
        self.unit = unit
        self.read = np.zeros(self.data.size, bool)
        self.written = np.zeros(self.data.size, bool)
        self.read_by, self.written_by = np.full(units, -1, invocation_type), np.full(units, -1, invocation_type)
        self.read_at, self.written_at = np.full(units, -1, np.int32), np.full(units, -1, np.int32)

    @property
    def label(self) -> str:
        return {"StorageBuffer": "storage-buffer", "Uniform": "uniform-buffer", "PushConstant": "push-constant",
                "Workgroup": "workgroup", "Function": "function", "Private": "private", "Input": "input", "Image": "image"}.get(
                    self.storage, self.storage)

    @classmethod
    def make(cls, name: str, storage: str, per: str, rows: int, size: int,
             content: bytes | np.ndarray | None = None, **kw: object) -> Region:
        rowsize = row_bytes(size)
        data = np.zeros(rows * rowsize, np.uint8)
        if content is not None:
            raw = np.frombuffer(bytes(content), np.uint8) if not isinstance(content, np.ndarray) else content
            data[:min(len(raw), rowsize)] = raw[:rowsize]
        return cls(name, storage, per, rows, size, data, rowsize, **kw)  # type: ignore[arg-type]


@dataclass(slots=True)
class Ptr:
    region: Region
    type: Type  # the pointee
    off: np.ndarray  # int64, 0-d or one per lane
    index: np.ndarray | None = None
    bad: np.ndarray | None = None  # bool per lane: an index outside a sized array
    #: a pointer chosen per lane among variables (OpPhi/OpSelect with VariablePointers): the
    #: variables and each lane's choice; ``region`` is then the first of them
    choice: tuple[tuple[Region, ...], np.ndarray] | None = None
    #: an array of buffers (one descriptor binding, an array of blocks): ``choice`` holds its
    #: elements' buffers and the access chain's first index picks one per lane
    descriptors: bool = False

    def regions(self) -> tuple[tuple[Region, ...], np.ndarray]:
        return self.choice if self.choice is not None else ((self.region,), np.zeros((), np.int64))


def accessor_bytes(size: int, unit: int, invocation_type: type) -> int:
    """What :meth:`Region.track_accessors` allocates for a buffer of ``size`` bytes: a read and a
    written flag per byte, and per unit who (``invocation_type``) and where (int32), both ways."""
    units = -(-size // unit)
    return 2 * size + 2 * units * (np.dtype(invocation_type).itemsize + 4)
