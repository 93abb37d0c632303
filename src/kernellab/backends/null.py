"""A backend with no device: it keeps buffers in host memory and records every call, so unit tests
can drive the executor (barriers, frames, frame capture, repeats, output staging) with no driver.

Work follows the frame model of :mod:`kernellab.backends.base`: dispatches and barriers are
recorded into the current frame and *run* at :meth:`~kernellab.backends.base.Backend.submit`.
Running a dispatch applies the program's *effect*, if a test gave it one
(``NullBackend.effects[shader uid] = fn(buffers, push_data, groups)``, where ``buffers`` maps
``(set, binding)`` to the bound buffer's bytes as a writable uint8 array); without one a dispatch
changes nothing. Programs take every language as source: nothing is compiled.

What the device can take is configurable too, so tests can show each limit's refusal without a
driver: ``NullBackend.device_limits`` (a :class:`~kernellab.backends.base.Limits`, nothing limited by
default) and ``NullBackend.interfaces[shader uid]`` (the
:class:`~kernellab.backends.base.KernelInterface` a program's entry point declares; none: not checked).

Timings come from a logical clock (one tick, reported as one nanosecond, per recorded command), so
tests can check how the executor gathers them; they measure nothing. Every object the backend
creates is a numbered handle, and :attr:`NullBackend.live` holds those not yet destroyed, so the
contract test can show that closing frees them all.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from typing import Any, ClassVar

import numpy as np

from kernellab.backends.base import (
    SOURCE,
    Backend,
    BackendOptions,
    Buffer,
    Capabilities,
    CommandTiming,
    DeviceInfo,
    ImageBinding,
    KernelInterface,
    Limits,
    Program,
    ProgramSpec,
)
from kernellab.errors import DeviceError
from kernellab.records import dataclass

#: what a dispatch does when its frame runs: (bound buffers' bytes by (set, binding), push data, groups)
Effect = Callable[[dict[tuple[int, int], np.ndarray], bytes, tuple[int, int, int]], None]


@dataclass(frozen=True)
class Event:
    """One call the backend received: ``kind`` (alloc, write, clear, read, program, dispatch,
    barrier, submit, run, close), a label, and what else identifies it."""

    kind: str
    label: str = ""
    detail: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class NullBuffer(Buffer):
    size: int
    uid: str
    handle: int
    array: np.ndarray = field(repr=False)


@dataclass
class NullProgram(Program):
    spec: ProgramSpec
    handle: int


@dataclass
class _Recorded:
    label: str
    program: NullProgram | None
    bindings: dict[tuple[int, int], NullBuffer]
    push: bytes
    groups: tuple[int, int, int]


class NullBackend(Backend):
    name: ClassVar[str] = "null"
    capabilities: ClassVar[Capabilities] = Capabilities(
        title="null", languages={"glsl": SOURCE, "spirv": SOURCE, "opencl-c": SOURCE}, mapped_buffers=True,
        work_items=True)
    #: shader uid -> what its dispatches do when their frame runs (tests set this)
    effects: ClassVar[dict[str, Effect]] = {}
    #: the device's limits (tests set this)
    device_limits: ClassVar[Limits] = Limits()
    #: shader uid -> what its entry point expects (tests set this)
    interfaces: ClassVar[dict[str, KernelInterface]] = {}

    def __init__(self, device: DeviceInfo, options: BackendOptions = BackendOptions()):
        super().__init__(device, options)
        self.events: list[Event] = []
        #: handle -> what it is, for every object created and not yet destroyed
        self.live: dict[int, str] = {}
        self.created = 0
        self._handles = itertools.count(1)
        self._frame: list[_Recorded] = []
        self._clock = 0

    @classmethod
    def devices(cls) -> list[DeviceInfo]:
        return [DeviceInfo("null", 0, "null recording device", "other", driver="kernellab", api_version="1.3")]

    @property
    def limits(self) -> Limits:
        return self.device_limits

    def program_interface(self, spec: ProgramSpec) -> KernelInterface | None:
        return self.interfaces.get(spec.uid)

    # --- bookkeeping ------------------------------------------------------------------------
    def _new_handle(self, what: str) -> int:
        if self._closed:
            raise DeviceError(f"the null backend is closed: cannot create {what}")
        handle = next(self._handles)
        self.live[handle] = what
        self.created += 1
        return handle

    def _record(self, kind: str, label: str = "", **detail: Any) -> None:
        self.events.append(Event(kind, label, detail))

    def kinds(self) -> list[str]:
        """The kinds of the recorded events, in order (what tests usually compare)."""
        return [e.kind for e in self.events]

    # --- hooks ------------------------------------------------------------------------------
    def _alloc_buffer(self, size: int, uid: str) -> NullBuffer:
        buf = NullBuffer(size, uid, self._new_handle(f"buffer {uid}"), np.zeros(size, np.uint8))
        self._record("alloc", uid, size=size)
        return buf

    def _write_buffer(self, buf: Buffer, data: memoryview, offset: int) -> None:
        assert isinstance(buf, NullBuffer)
        buf.array[offset:offset + data.nbytes] = np.frombuffer(data, np.uint8)
        self._record("write", buf.uid, offset=offset, size=data.nbytes)

    def _clear_buffer(self, buf: Buffer) -> None:
        assert isinstance(buf, NullBuffer)
        buf.array.fill(0)
        self._record("clear", buf.uid)

    def _read_buffer(self, buf: Buffer) -> np.ndarray:
        assert isinstance(buf, NullBuffer)
        self._record("read", buf.uid)
        return buf.array

    def buffer_view(self, buf: Buffer) -> np.ndarray:
        assert isinstance(buf, NullBuffer)
        self._record("view", buf.uid)
        return buf.array

    def _create_program(self, spec: ProgramSpec) -> NullProgram:
        program = NullProgram(spec, self._new_handle(f"program {spec.uid}"))
        self._record("program", spec.uid, language=spec.language, slots=spec.slots)
        return program

    def _dispatch(self, program: Program, groups: tuple[int, int, int],
                  bindings: Mapping[tuple[int, int], Buffer | ImageBinding], push_data: bytes, label: str) -> None:
        assert isinstance(program, NullProgram)
        bound = {slot: b for slot, b in bindings.items() if isinstance(b, NullBuffer)}
        self._frame.append(_Recorded(label, program, bound, bytes(push_data), groups))
        self._record("dispatch", label, shader=program.spec.uid, groups=groups,
                     bindings={slot: b.uid for slot, b in bound.items()}, push=bytes(push_data))

    def _dispatch_range(self, program: Program, groups: tuple[int, int, int],
                        bindings: Mapping[tuple[int, int], Buffer | ImageBinding], push_data: bytes, label: str,
                        offset: tuple[int, ...], global_size: tuple[int, ...] | None) -> None:
        self._dispatch(program, groups, bindings, push_data, label)
        last = self.events[-1]
        self.events[-1] = Event(last.kind, last.label, {**last.detail, "offset": offset, "global_size": global_size})

    def _barrier(self, buffers: Sequence[tuple[Buffer, int, int]], memory: bool, label: str) -> None:
        self._frame.append(_Recorded(label, None, {}, b"", (0, 0, 0)))
        self._record("barrier", label, memory=memory,
                     ranges=[(b.uid, offset, size) for b, offset, size in buffers])

    def _submit(self) -> list[CommandTiming]:
        frame, self._frame = self._frame, []
        self._record("submit", commands=len(frame))
        timings = []
        for rec in frame:
            start = self._clock
            self._clock += 1
            if rec.program is not None:
                effect = self.effects.get(rec.program.spec.uid)
                if effect is not None:
                    effect({slot: b.array for slot, b in rec.bindings.items()}, rec.push, rec.groups)
                self._record("run", rec.label)
            if self.options.timestamps and rec.program is not None:
                timings.append(CommandTiming(rec.label, float(start), float(self._clock)))
        return timings

    def _close(self) -> None:
        self._frame.clear()
        self._record("close", destroyed=len(self.live))
        self.live.clear()
