"""The executor's collaborators, as the protocols a caller's own implementations are checked
against: where a run's data comes from (:class:`InputSource`), where saved resources go
(:class:`OutputSink`), which modules are remembered (:class:`ModuleCache`) and whose backend it
runs on (:class:`BackendLease`). The executor's defaults are ``FileInputs``, files, ``CompileEach``
and ``OwnBackend``; at run time nothing is checked against these, so only the checker imports them."""
from __future__ import annotations

from typing import IO, Protocol

TYPE_CHECKING = False  # typing.TYPE_CHECKING: this module is the checker's alone
if TYPE_CHECKING:
    from collections.abc import Callable
    from contextlib import AbstractContextManager
    from pathlib import Path

    from kernellab import model as m
    from kernellab.backends.base import Backend, Buffer, Program, ProgramSpec
    from kernellab.backends.feature_specs import Image
    from kernellab.compile.pipeline import Compiler


class InputSource(Protocol):
    """Where a run's resources get their initial data."""

    def fill_buffer(self, backend: Backend, r: m.Buffer, buf: Buffer, element: str) -> bool:
        """Write ``r``'s initial bytes into ``buf``; False when it has none (the executor zeroes
        it). ``element`` is the NumPy type code of the scalars the shaders read it as ("" unknown)."""
        ...

    def fill_image(self, backend: Backend, r: m.Image, image: Image) -> None:
        """Write ``r``'s initial texels into ``image``, if it has any."""
        ...

    def raw_data(self, r: m.RawData) -> bytes | None:
        """The bytes of ``r`` (push constants), None when it has none."""
        ...


class OutputSink(Protocol):
    """Where saved resources go, files (:class:`~kernellab.outputs.OutputSet`) or memory: a
    file named ``path`` opened for writing, kept when it is closed."""

    def open(self, path: Path) -> IO[bytes]: ...


class ModuleCache(Protocol):
    """The Vulkan SPIR-V module of a compile request (compiled, or remembered from before)."""

    def vulkan_module(self, compiler: Compiler) -> bytes: ...


class BackendLease(Protocol):
    """The backend a run uses: opened for it, or lent by a longer-lived owner (a session) that
    may also hand out its buffers and programs."""

    def lease(self, own: Callable[[], Backend], needs_own_device: bool) -> AbstractContextManager[Backend]:
        """The backend, as a context manager; ``own()`` opens one of the run's own (``needs_own_device``:
        the run needs a device with extensions only it enables)."""
        ...

    def alloc_buffer(self, backend: Backend, size: int, uid: str) -> Buffer: ...

    def create_program(self, backend: Backend, spec: ProgramSpec) -> Program: ...
