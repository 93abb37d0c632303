"""The device record every backend reports, and the one rule that matches a device selector.

A selector (``--device``, ``--devices``, a compile request's device) is one of: empty (every
device), an index, a kind word (``cpu``; ``gpu`` = any GPU kind), or a case-insensitive
substring of the device's name, its platform's name or its version string (PoCL names itself
only there: ``OpenCL 3.0 PoCL ...``). Matches come best first: discrete
GPU > integrated > virtual > CPU > other (simulators such as Oclgrind report "other", so they
are chosen only when named), then by index.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from kernellab.errors import UsageError
from kernellab.records import Frozen

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any

#: device kinds, best first: discrete GPU > integrated > virtual > CPU
DEVICE_KINDS = ("discrete-gpu", "integrated-gpu", "virtual-gpu", "cpu", "other")
GPU_KINDS = ("discrete-gpu", "integrated-gpu", "virtual-gpu")
#: selector words that name a kind of device rather than a device
KIND_WORDS: Mapping[str, tuple[str, ...]] = {"cpu": ("cpu",), "gpu": GPU_KINDS}


class ExtensionNames:
    """The extension names a driver listed, kept as it wrote them: records of ``stride`` bytes,
    each starting with a NUL-terminated name (``VkExtensionProperties``). ``name in names`` is a
    search of those bytes; the names are decoded only when iterated (sorted). A run asks two or
    three names of ~100 (start-up, issue 23)."""

    __slots__ = ("raw", "stride")

    def __init__(self, raw: bytes, stride: int):
        self.raw, self.stride = raw, stride

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        key = name.encode("utf-8", "surrogatepass") + b"\0"
        at = self.raw.find(key)
        while at >= 0:
            if at % self.stride == 0:  # at a record's start, not inside a longer name
                return True
            at = self.raw.find(key, at + 1)
        return False

    def __iter__(self) -> Iterator[str]:
        raw, stride = self.raw, self.stride
        return iter(sorted(raw[at:raw.find(b"\0", at, at + stride)].decode("utf-8", "replace")
                           for at in range(0, len(raw) - stride + 1, stride)))

    def __len__(self) -> int:
        return len(self.raw) // self.stride

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ExtensionNames):
            return list(self) == list(other)
        return isinstance(other, (list, tuple)) and list(self) == list(other)

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"ExtensionNames({list(self)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return ExtensionNames, (self.raw, self.stride)


class DeviceInfo(Frozen):
    """One device a backend found: its index, name, kind and details. (A frozen record, not a
    dataclass: a run imports no dataclasses, issue 23.)"""

    _fields = _compared = ("backend", "index", "name", "kind", "driver", "api_version", "details")
    backend: str
    index: int
    name: str
    kind: str
    driver: str
    api_version: str
    details: Mapping[str, Any]

    def __init__(self, backend: str, index: int, name: str, kind: str, driver: str = "", api_version: str = "",
                 details: Mapping[str, Any] | None = None):
        vars(self).update(backend=backend, index=index, name=name, kind=kind, driver=driver,
                          api_version=api_version, details={} if details is None else details)

    @property
    def rank(self) -> int:
        return DEVICE_KINDS.index(self.kind) if self.kind in DEVICE_KINDS else len(DEVICE_KINDS)


def selector_kind(wanted: str | None) -> str:
    """What a selector names: "any", "index", "kind" or "name" (callers word their errors by it)."""
    w = (wanted or "").strip()
    if not w:
        return "any"
    if w.isdigit():
        return "index"
    return "kind" if w.lower() in KIND_WORDS else "name"


def select(devices: Sequence[DeviceInfo], wanted: str | None) -> list[DeviceInfo]:
    """The devices ``wanted`` matches, best first (empty when none does)."""
    ranked = sorted(devices, key=lambda d: (d.rank, d.index))
    w = (wanted or "").strip()
    kind = selector_kind(w)
    if kind == "any":
        return ranked
    if kind == "index":
        return [d for d in ranked if d.index == int(w)]
    low = w.lower()
    if kind == "kind":
        return [d for d in ranked if d.kind in KIND_WORDS[low]]
    return [d for d in ranked if low in f"{d.name} {d.details.get('platform', '')} {d.api_version}".lower()]


def choose_device(devices: Sequence[DeviceInfo], wanted: str | None) -> DeviceInfo:
    """The best device ``wanted`` (``--device``) matches; None or "" = the best of all."""
    if not devices:
        raise UsageError("no devices found")
    matches = select(devices, wanted)
    if matches:
        return matches[0]
    assert wanted is not None
    if selector_kind(wanted) == "index":
        have = ", ".join(str(d.index) for d in devices)
        raise UsageError(f"--device {wanted}: no device with that index (have {have})")
    names = "; ".join(f"{d.index}: {d.name}" for d in devices)
    raise UsageError(f"--device {wanted!r}: no device name contains it (have {names})")
