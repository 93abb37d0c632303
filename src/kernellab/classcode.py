"""The compiled code of dataclasses' generated methods, kept between runs (start-up, issue 11).

Building a dataclass compiles the source text of each method it generates (``__init__``,
``__repr__``, ``__eq__``, ``__hash__``, the frozen ``__setattr__``...): 0.4-1 ms a class, most of
the cost of the fifty-odd classes a ``kernellab run`` imports. A method's text depends only on
the class's fields and options, and the same text compiles to the same code, so the code is
kept by its text in the user's cache folder; :func:`install` (``cli.program`` calls it before
the command's modules load) has :mod:`dataclasses` take it from there. The classes built are exactly those the
standard library builds: only the ``compile`` of an identical text is skipped.
"""
from __future__ import annotations

import builtins
import gc
import marshal
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import CodeType, ModuleType

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class _OnFirstUse(ModuleType):
    """A stand-in for a standard module that imports it when one of its names is first read.

    :mod:`dataclasses` imports :mod:`inspect` (with ``ast``, ``dis``, ``tokenize``: about 20 M
    instructions, 4 % of a ``tiny`` run) for one use: ``inspect.signature`` writes the ``__doc__``
    of a class that has none. kernellab's classes on the run path have their own (the import
    budget test keeps ``inspect`` out of a run), so there the module is never imported. (The
    standard ``importlib.util.LazyLoader`` does not serve: Python 3.11's ``import`` statement
    reads the module's ``__spec__``, which executes it.)"""

    __spec__ = None  # an ``import`` of the stand-in finds a module that is not initializing

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):  # probes for __file__, __path__...: not the module's own names
            raise AttributeError(attr)
        if sys.modules.get(self.__name__) is self:
            del sys.modules[self.__name__]
        real = __import__(self.__name__)
        vars(self).update(vars(real))
        return getattr(real, attr)


def _imported_on_first_use(name: str) -> None:
    """Module ``name`` imported when one of its names is first read (:class:`_OnFirstUse`)."""
    if name not in sys.modules:
        sys.modules[name] = _OnFirstUse(name)


def _class_annotations(obj: Any, *, globals: Any = None, locals: Any = None, eval_str: bool = False) -> Any:
    """``inspect.get_annotations`` of a class with its annotations as written (what Python 3.12's
    dataclasses asks of every class it builds) without importing inspect; any other call is the
    real function's."""
    if isinstance(obj, type) and not eval_str:
        ann = obj.__dict__.get("__annotations__")
        if ann is None or isinstance(ann, dict):
            return dict(ann or {})
    stand_in = sys.modules.get("inspect")
    if isinstance(stand_in, _OnFirstUse):
        stand_in.signature  # noqa: B018 - reading a name imports the real module in its place
    import inspect

    return inspect.get_annotations(obj, globals=globals, locals=locals, eval_str=eval_str)


_imported_on_first_use("inspect")
if sys.version_info >= (3, 12) and type(sys.modules["inspect"]) is _OnFirstUse:
    vars(sys.modules["inspect"])["get_annotations"] = _class_annotations
# dataclasses uses copy (with weakref: 3.6 M instructions) only in asdict/astuple's deepcopy
_imported_on_first_use("copy")
import dataclasses  # noqa: E402 - after inspect and copy are made lazy

from kernellab import records  # noqa: E402 - imports dataclasses

#: a bound on a file: a command builds a few hundred methods (``run`` on buffers: about 270)
MAX_ENTRIES = 1024


class CodeCache:
    """Code by source text (or by a key its text is written from: records.py), loaded from and
    saved to one file. Each entry stays marshalled bytes until a class asks for it, so entries this
    run does not use cost a copy, not a code object."""

    def __init__(self, file: Path):
        self.file = file
        self.blobs = self._load()
        self.added = 0
        self.used: set[str] = set()

    def _load(self) -> dict[str, bytes]:
        try:
            with open(self.file, "rb") as fh:
                st = os.fstat(fh.fileno())
                # code is run from this file: only the user's own, and not writable by others
                getuid = getattr(os, "getuid", None)  # POSIX; elsewhere the mode check alone
                if (getuid is not None and st.st_uid != getuid()) or st.st_mode & 0o022:
                    return {}
                data = fh.read()
            # loads of the bytes: marshal.load on a file reads it item by item, many times slower
            loaded = marshal.loads(data)
        except (OSError, EOFError, ValueError, TypeError):
            return {}  # absent, or from an interrupted write: compile as usual and replace it
        if not isinstance(loaded, dict):
            return {}
        return {k: v for k, v in loaded.items() if isinstance(k, str) and isinstance(v, bytes)}

    def exec(self, source: Any, globals: dict[str, Any] | None = None,
             locals: dict[str, Any] | None = None) -> None:
        """``exec`` as :mod:`dataclasses` calls it, with the compiled code of ``source`` kept."""
        if not isinstance(source, str):
            return builtins.exec(source, globals, locals)
        return builtins.exec(self.code(source), globals, locals)

    def code(self, key: str, source: Callable[[], str] | None = None) -> CodeType:
        """The compiled code of ``source()`` (the text ``key`` where there is no ``source``): the
        copy kept under ``key``, or compiled now and kept."""
        code = self._kept(key)
        if code is None:
            # dont_inherit: the text compiles with no __future__ flags, as dataclasses' own exec does
            code = compile(key if source is None else source(), "<string>", "exec", dont_inherit=True)
            self.blobs[key] = marshal.dumps(code)
            self.added += 1
        self.used.add(key)
        return code

    def _kept(self, source: str) -> CodeType | None:
        blob = self.blobs.get(source)
        if blob is None:
            return None
        try:
            code = marshal.loads(blob)
        except (EOFError, ValueError, TypeError):
            return None
        return code if isinstance(code, CodeType) else None

    def save(self) -> None:
        """Write the file when this process compiled new texts (temp file, then rename)."""
        if not self.added:
            return
        if len(self.blobs) > MAX_ENTRIES:  # keep what this process used: the file is read on each start
            self.blobs = {text: blob for text, blob in self.blobs.items() if text in self.used}
        import tempfile

        try:
            self.file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd, tmp = tempfile.mkstemp(prefix=".classcode.", dir=self.file.parent)
        except OSError:
            return  # a cache that cannot be written only costs time
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(marshal.dumps(self.blobs))
            os.replace(tmp, self.file)
            self.added = 0
        except (OSError, ValueError):
            try:
                os.unlink(tmp)
            except OSError:
                pass


#: the code cache in place for this process's command (install() puts it once; the dataclass hook reads it)
_installed: CodeCache | None = None


class collector_paused:  # noqa: N801 - used as a function: ``with collector_paused():``
    """No garbage collection inside the block (start-up: imports and reading the workload).

    Importing allocates tens of thousands of objects that live until exit, and every few hundred
    allocations the collector walks the young ones to find no garbage. Nothing the block builds
    is a cycle to free; collection resumes after it as it was. (A class, not a
    ``contextlib.contextmanager``: a run imports no contextlib.)"""

    def __enter__(self) -> None:
        self.was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self.was_enabled:
            gc.enable()


def cache_file(cache_dir: Path, command: str) -> Path:
    """The file of one command for this interpreter (code objects are only valid for the version
    that made them): one per command, so a start reads only the code that command builds."""
    tag = f"{sys.implementation.cache_tag}-{sys.hexversion:x}"
    return cache_dir / "python" / f"classcode-{command}-{tag}.marshal"


def install(command: str) -> CodeCache | None:
    """Have :mod:`dataclasses` use the kept code of ``command`` from now on (once per process);
    the file is written at exit when new classes were built. Off with ``KERNELLAB_NO_CACHE=1``."""
    global _installed
    if _installed is not None:
        return _installed
    # from the environment, not the settings: the settings' own classes are built through the hook
    from kernellab.cachedir import cache_dir, cache_off

    if cache_off():
        return None
    _installed = CodeCache(cache_file(cache_dir(), command))
    # dataclasses looks ``exec`` up in its module globals before the builtins
    dataclasses.exec = _installed.exec  # type: ignore[attr-defined]
    records.keep_code(_installed.code)  # kernellab's own classes: one kept text each
    import atexit

    atexit.register(_installed.save)
    return _installed


def uninstall() -> None:
    """Back to the standard ``exec`` (tests)."""
    global _installed
    if _installed is not None:
        import atexit

        atexit.unregister(_installed.save)
        _installed.save()
        _installed = None
    dataclasses.__dict__.pop("exec", None)
    records.keep_code(None)
