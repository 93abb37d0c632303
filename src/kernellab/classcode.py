"""The compiled code of dataclasses' generated methods, kept between runs (start-up, issue 11),
and of kernellab's own modules (:class:`ModuleCode`, issue 23).

Building a dataclass compiles the source text of each method it generates (``__init__``,
``__repr__``, ``__eq__``, ``__hash__``, the frozen ``__setattr__``...): 0.4-1 ms a class, most of
the cost of the fifty-odd classes a ``kernellab run`` imports. A method's text depends only on
the class's fields and options, and the same text compiles to the same code, so the code is
kept by its text in the user's cache folder; :func:`install` (``cli.program`` calls it before
the command's modules load) has :mod:`dataclasses` take it from there. The classes built are exactly those the
standard library builds: only the ``compile`` of an identical text is skipped.
"""
from __future__ import annotations

import _imp
import builtins
import gc
import marshal
import os
import sys
from collections.abc import Callable, Sequence

# the import system's own classes (importlib.machinery, which names them, is one more module to import)
from importlib._bootstrap import ModuleSpec
from importlib._bootstrap_external import SourceFileLoader
from pathlib import Path
from types import CodeType, ModuleType

from kernellab.cachedir import code_in

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
# dataclasses itself is imported by kernellab.records when a class is first built (a run builds none)

#: the most of a kept-code file read (the module code's is bounded at MAX_MODULE_BYTES when written;
#: a larger file is not kernellab's, and is not read whole)
MAX_FILE_BYTES = 64 << 20


def read_own_file(file: Path) -> bytes | None:
    """The bytes of ``file`` when code may be run from it (:func:`kernellab.cachedir.read_private`:
    the user's own regular file, in a folder of the user's own, that no one else may write). None
    when it is absent, unreadable or not."""
    from kernellab.cachedir import read_private  # imported by install() before any file is read

    return read_private(file, MAX_FILE_BYTES)


#: a bound on a file: a command builds a few hundred methods (``run`` on buffers: about 270)
MAX_ENTRIES = 1024


#: the entry of a file regrouped by a run that compiled nothing (see :meth:`CodeCache.save`)
REGROUPED = "\0regrouped"


class CodeCache:
    """Code by source text (or by a key its text is written from: records.py), loaded from and
    saved to two files. The entries the run that wrote them used are kept as code objects in the
    first, read by the one unmarshal of the file (names shared between entries are read once, not
    per entry: ~25 % of a ``tiny`` run's unmarshal of its classes' code); the others, as marshalled
    bytes, in the second (:attr:`cold_file`), read only when a class asks for code the first does
    not hold. A cache that many kinds of run have filled (up to :data:`MAX_ENTRIES`, megabytes of
    source texts) thus costs a run that finds its code in the first file nothing: read whole at
    each start, the texts cost a ``tiny`` run 7.8 M instructions (3.6 %) more than a fresh cache."""

    def __init__(self, file: Path):
        self.file = file
        self.cold_file = file.with_name(file.name.removesuffix(".marshal") + "-cold.marshal")
        self.blobs, self.codes = self._load(file)
        # bytes in the first file: one of the layout before the second file, written again once
        self.mixed = any(key != REGROUPED for key in self.blobs)
        self.cold_loaded = False
        self.added = 0
        self.used: set[str] = set()

    def load_cold(self) -> None:
        """The entries of :attr:`cold_file` too (once): a key of the first file keeps its entry."""
        if not self.cold_loaded:
            self.cold_loaded = True
            for key, blob in self._load(self.cold_file)[0].items():
                self.blobs.setdefault(key, blob)

    def _load(self, file: Path) -> tuple[dict[str, bytes], dict[str, CodeType]]:
        data = read_own_file(file)
        try:
            # loads of the bytes: marshal.load on a file reads it item by item, many times slower
            loaded = marshal.loads(data) if data is not None else None
        except (EOFError, ValueError, TypeError, MemoryError):
            # an interrupted write, or a damaged count (a tuple's: marshal allocates it before
            # reading its items): compile as usual and replace it
            return {}, {}
        if not isinstance(loaded, dict):
            return {}, {}
        blobs = {k: v for k, v in loaded.items() if isinstance(k, str) and isinstance(v, bytes)}
        codes = {k: v for k, v in loaded.items() if isinstance(k, str) and isinstance(v, CodeType)}
        return blobs, codes

    def exec(self, source: Any, globals: dict[str, Any] | None = None,
             locals: dict[str, Any] | None = None) -> None:
        """``exec`` as :mod:`dataclasses` calls it, with the compiled code of ``source`` kept."""
        if not isinstance(source, str):
            return builtins.exec(source, globals, locals)
        return builtins.exec(self.code(source), globals, locals)

    def code(self, key: str, source: Callable[[], str] | None = None) -> CodeType:
        """The compiled code of ``source()`` (the text ``key`` where there is no ``source``): the
        copy kept under ``key``, or compiled now and kept."""
        code = self.codes.get(key)
        if code is None:
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
        if blob is None and not self.cold_loaded:
            self.load_cold()
            blob = self.blobs.get(source)
        if blob is None:
            return None
        return code_in(blob)

    def save(self) -> None:
        """Write the files when this process compiled new texts (temp file, then rename): what it
        used as code objects in the first, the rest as bytes in the second. Besides, once after
        each such write, when this process left code objects unused (the writing run compiled a
        shader, say, which later runs do not): a write costs ~9 M instructions, so runs that
        alternate between scenarios do not rewrite the files each time to regroup them."""
        stale = not self.codes.keys() <= self.used
        if not self.added and not self.mixed and (REGROUPED in self.blobs or not stale):
            return
        from kernellab.codesave import save_codes  # what a run that writes needs only

        save_codes(self, MAX_ENTRIES, REGROUPED)


#: the bound on the module code file (kernellab's whole .pyc tree is about 4 MB; a ``run`` on
#: buffers imports 0.9 MB of it): above it, only the modules of the run that wrote it are kept
MAX_MODULE_BYTES = 4 << 20
#: the first item of the module code file: a file of another layout is not read
MODULE_FORMAT = "kernellab-modulecode-2"


class _KeptLoader(SourceFileLoader):
    """The loader of a module served from the module code file: the standard source loader (its
    ``__file__``, ``get_source``, ``importlib.resources`` reader, ``is_package``) whose first
    ``get_code`` returns the kept code instead of reading the ``.pyc`` again."""

    def __init__(self, fullname: str, path: str, code: CodeType):
        super().__init__(fullname, path)
        self.code: CodeType | None = code

    def get_code(self, fullname: str) -> CodeType | None:
        code, self.code = self.code, None
        if code is None or fullname != self.name:
            return super().get_code(fullname)
        # as the source loader does: the code names the file where it is now
        _imp._fix_co_filename(code, self.path)  # type: ignore[attr-defined]
        return code


#: a module's entry: (where: the folder its parent package's path names, its file, whether it is a
#: package, where's mtime in ns, the source's mtime in s and size as its .pyc's header keeps
#: them (32 bits each), the .pyc's path)
ModuleEntry = tuple[str, str, bool, int, int, int, str]


def _is_code_of(code: CodeType, name: str, is_package: bool) -> bool:
    """Whether ``code`` was compiled from module ``name``'s file: the end of its ``co_filename``
    is the module's place in its package. Not the whole path: a ``.pyc`` keeps the path it was
    compiled under (``compileall src`` from a checkout writes it relative; a tree moved after it
    was compiled keeps the old one), which the source loader rewrites at each import (as
    :class:`_KeptLoader` does), so a file compared whole would be declined and rewritten at
    every run."""
    tail = name.replace(".", "/") + ("/__init__.py" if is_package else ".py")
    compiled = code.co_filename.replace(os.sep, "/")
    return compiled == tail or compiled.endswith("/" + tail)


class ModuleCode:
    """A meta path finder that serves kernellab's modules from one file of their kept code, read
    once, in place of a search of the package's folders and a ``.pyc`` opened, read and checked
    per module (about 0.15 M instructions each of the sixty-odd modules a ``run`` imports).

    A module is served only where its normal import would find the same code: its parent
    package's first path entry is the folder it was kept from, that folder's listing is
    unchanged (its mtime: no module, package or extension of the same name has appeared beside
    it) and its source has the mtime and size that the ``.pyc`` its code was read from was made
    for, the check CPython makes of a timestamp ``.pyc``. Anything else is declined: the normal
    finders import it, and :meth:`save` keeps its code at exit.

    The file: the length of its index (8 bytes), the index (the format, ``sys.pycache_prefix``,
    each module's entry with where its code lies, the length of the shared group and whether a
    regrouping wrote it), then the shared group: the code of the modules the writing run imported,
    as one marshalled tuple, read at the start by one unmarshal (a name shared between modules is
    read once, not per module: 19 % of the unmarshal, 3.4 M instructions of a ``tiny`` run), then
    each other module's code as its ``.pyc`` holds it, unmarshalled when it is imported. The file
    is one buffer, neither copied per module nor freed (a freed megabyte raises the C library's
    threshold for mapping fresh pages, and the Vulkan driver's zeroed allocations then cost a
    memset: 2 M measured)."""

    def __init__(self, file: Path, package: str = "kernellab"):
        self.file = file
        self.prefix = package + "."  # its submodules: the package itself is imported before the finder
        self.codes = memoryview(b"")
        #: the shared group's code objects (an entry's start -1: its end is its place here)
        self.shared: tuple[Any, ...] = ()
        self.regrouped = False
        self.entries = self._load()
        #: the modules declined this run: the folder searched for each and that folder's mtime
        self.declined: dict[str, tuple[str, int]] = {}
        self.folders: dict[str, int] = {}  # folder -> its mtime in ns (-1: none), once a run

    def _load(self) -> dict[str, tuple[ModuleEntry, int, int]]:
        data = read_own_file(self.file)
        if data is None:
            return {}
        view = memoryview(data)
        end = 8 + int.from_bytes(view[:8], "little")
        try:
            loaded = marshal.loads(view[8:end])
        except (EOFError, ValueError, TypeError, MemoryError):  # MemoryError: a damaged count
            return {}
        # another layout, or .pyc paths made under another PYTHONPYCACHEPREFIX: not used
        if (not isinstance(loaded, tuple) or len(loaded) != 5 or loaded[0] != MODULE_FORMAT
                or loaded[1] != sys.pycache_prefix or not isinstance(loaded[2], dict) or type(loaded[3]) is not int):
            return {}
        entries = loaded[2]
        if not all(type(kept) is tuple and len(kept) == 3 for kept in entries.values()):
            return {}
        shared_end = end + max(loaded[3], 0)
        if shared_end > end:
            try:
                shared = marshal.loads(view[end:shared_end])
            except (EOFError, ValueError, TypeError, MemoryError):
                return {}
            if type(shared) is not tuple:
                return {}
            self.shared = shared
        self.regrouped = loaded[4] is True
        self.codes = view[shared_end:]
        return entries

    def _folder_stamp(self, folder: str) -> int:
        stamp = self.folders.get(folder)
        if stamp is None:
            try:
                stamp = os.stat(folder).st_mtime_ns
            except OSError:
                stamp = -1
            self.folders[folder] = stamp
        return stamp

    def find_spec(self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None) -> ModuleSpec | None:
        kept = self.entries.get(name)
        if kept is None:
            if path and name.startswith(self.prefix):
                self._decline(name, path[0])
            return None
        try:
            (where, file, is_package, where_stamp, mtime, size, cached), start, end = kept
            if not path or path[0] != where or self._folder_stamp(where) != where_stamp:
                raise LookupError(name)
            st = os.stat(file)
            # _validate_timestamp_pyc's test: whole seconds and the size, each in 32 bits
            if (int(st.st_mtime) & 0xFFFFFFFF) != mtime or (st.st_size & 0xFFFFFFFF) != size:
                raise LookupError(name)
            if start == -1 and end < 0:
                raise LookupError(name)
            code = self.shared[end] if start == -1 else marshal.loads(self.codes[start:end])
            # the code of the module's own file: an entry that holds another's (a damaged file)
            # would run that module in its place, at every start; dropped, it is kept anew at exit
            if not isinstance(code, CodeType) or not _is_code_of(code, name, is_package):
                del self.entries[name]
                raise LookupError(name)
        except (LookupError, OSError, ValueError, TypeError, EOFError, MemoryError):
            if path:
                self._decline(name, path[0])
            return None
        spec = ModuleSpec(name, _KeptLoader(name, file, code), origin=file, is_package=is_package)
        spec.has_location = True  # __file__ and __cached__, as the path finder's specs
        spec.cached = cached
        if is_package:
            spec.submodule_search_locations = [os.path.dirname(file)]
        return spec

    def invalidate_caches(self) -> None:
        """``importlib.invalidate_caches()``: the folders are looked at again, as the path
        finder's listings are."""
        self.folders.clear()

    def _decline(self, name: str, where: str) -> None:
        # the folder's mtime before the normal finders list it: a file added after is a change
        self.declined[name] = (where, self._folder_stamp(where))

    def save(self) -> None:
        """Keep the code of each module declined this run that the normal path finder imported
        from its source (temp file, then rename), the modules this run imported as the shared
        group; besides, once after each such write, regroup when the shared group holds a module
        this run did not import (as :meth:`CodeCache.save` does). Nothing under
        ``sys.dont_write_bytecode``."""
        if sys.dont_write_bytecode:
            return
        regroup = not self.regrouped and any(
            start == -1 and name not in sys.modules for name, (_, start, _) in self.entries.items())
        if not self.declined and not regroup:
            return
        from kernellab.codesave import save_modules  # what a run that writes needs only

        save_modules(self, MODULE_FORMAT, MAX_MODULE_BYTES, regroup)


#: the code cache in place for this process's command (install() puts it once; the dataclass hook reads it)
_installed: CodeCache | None = None
#: the module finder of this process's command (``install(command, modules=True)``)
_modules: ModuleCode | None = None


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


#: the folder this kernellab is imported from: its kept code is its own
PACKAGE_FOLDER = os.path.dirname(os.path.abspath(__file__))


def install_tag(folder: str) -> str:
    """A short stable name of a kernellab install's folder (32-bit FNV-1a of its path: no hash
    module loaded for it)."""
    value = 0x811C9DC5
    for byte in os.fsencode(folder):
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return f"{value:08x}"


def cache_file(cache_dir: Path, command: str, kind: str = "classcode") -> Path:
    """The file of one command for this interpreter (code objects are only valid for the version
    that made them) and this install of kernellab: one per command, so a start reads only the
    code that command builds, and one per install, so two installs sharing the cache folder (a
    release's virtual environment and a checkout's, say) do not each find the other's modules in
    it and rewrite it at every run. The module code's is per optimization level too (``-O``
    compiles other code)."""
    tag = f"{sys.implementation.cache_tag}-{sys.hexversion:x}-{install_tag(PACKAGE_FOLDER)}"
    if kind == "modulecode":
        tag += f"-O{sys.flags.optimize}"
    return cache_dir / "python" / f"{kind}-{command}-{tag}.marshal"


def install(command: str, *, modules: bool = False) -> CodeCache | None:
    """Have :mod:`dataclasses` use the kept code of ``command`` from now on, once it is loaded
    (:func:`kernellab.records.keep_code`; once per process); with ``modules``, kernellab's
    modules imported from now on are served from their kept code too (:class:`ModuleCode`). The
    files are written at exit when there is new code. Off with ``KERNELLAB_NO_CACHE=1``."""
    global _installed, _modules
    if _installed is not None:
        return _installed
    # from the environment, not the settings: the settings' own classes are built through the hook
    from kernellab.cachedir import cache_dir, cache_off

    if cache_off():
        return None
    import atexit

    folder = cache_dir()
    if modules and _modules is None:
        finder = ModuleCode(cache_file(folder, command, "modulecode"))
        # with no file, and none to be written (PYTHONDONTWRITEBYTECODE), it would only decline
        if finder.entries or not sys.dont_write_bytecode:
            _modules = finder
            sys.meta_path.insert(0, finder)  # type: ignore[arg-type]
            atexit.register(finder.save)
    _installed = CodeCache(cache_file(folder, command))
    from kernellab import records  # after the module finder: served from the kept code

    # kernellab's own classes: one kept text each; the standard decorator's methods through exec
    records.keep_code(_installed.code, _installed.exec)
    atexit.register(_installed.save)
    return _installed


def uninstall() -> None:
    """Back to the standard ``exec`` and import (tests)."""
    global _installed, _modules
    import atexit

    if _installed is not None:
        atexit.unregister(_installed.save)
        _installed.save()
        _installed = None
    if _modules is not None:
        atexit.unregister(_modules.save)
        if _modules in sys.meta_path:
            sys.meta_path.remove(_modules)  # type: ignore[arg-type]
        _modules.save()
        _modules = None
    from kernellab import records  # it takes the hook out of dataclasses

    records.keep_code(None)
