"""The device record every backend reports, and the one rule that matches a device selector.

A selector (``--device``, ``--devices``, a compile request's device) is one of: empty (every
device), an index, a kind word (``cpu``; ``gpu`` = any GPU kind), or a case-insensitive
substring of the device's name, its platform's name or its version string (PoCL names itself
only there: ``OpenCL 3.0 PoCL ...``). Matches come best first: discrete
GPU > integrated > virtual > CPU > other (simulators such as Oclgrind report "other", so they
are chosen only when named), then by index.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field

from kernellab.errors import UsageError
from kernellab.records import dataclass

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any

#: device kinds, best first: discrete GPU > integrated > virtual > CPU
DEVICE_KINDS = ("discrete-gpu", "integrated-gpu", "virtual-gpu", "cpu", "other")
GPU_KINDS = ("discrete-gpu", "integrated-gpu", "virtual-gpu")
#: selector words that name a kind of device rather than a device
KIND_WORDS: Mapping[str, tuple[str, ...]] = {"cpu": ("cpu",), "gpu": GPU_KINDS}


@dataclass(frozen=True)
class DeviceInfo:
    """One device a backend found: its index, name, kind and details."""
    backend: str
    index: int
    name: str
    kind: str
    driver: str = ""
    api_version: str = ""
    details: Mapping[str, Any] = field(default_factory=dict)

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
