"""Includes, resolved and read by kernellab itself, so a compiler never opens a file of its own.

A workload file is data: the kernel it names may ``#include`` only files inside the workload's
folder (and the ``--allow-outside`` folders). A pattern over lines cannot decide that (a comment,
a line continuation or a symlink changes what the preprocessor opens), so this module follows the
preprocessor's own translation phases to find every directive, opens each included file itself
and checks it before reading, and hands the compiler one text with every ``#include`` replaced by
the file it names: the compiler, given that text and no include folders, has nothing left to open.

Why our own step and not ``clang -E -MD`` / ``glslangValidator -E``: a preprocessor reports the
files it opened only after opening them (a FIFO blocks it, ``/dev/zero`` fills its memory, and a
file outside the folder has been read already); glslang has no list of opened files at all, and
clang is not installed by pip. Here each file is resolved (symlinks followed) and checked against
the allowed folders *before* it is read, opened without blocking, and read only when it is a
regular file under :data:`MAX_FILE_BYTES`.

What counts as a directive is the preprocessor's rule, applied generously: after line splicing
(backslash-newline) and with comments read as white space, a line whose first token is ``#``
(``%:`` and ``??=`` in OpenCL C, where clang reads digraphs and trigraphs). Directives inside
``#if 0`` are followed too (their files are checked and inlined inside the same conditional, so
the compiler still skips them). An include whose target is not a quoted or ``<>`` name (a macro)
and ``__has_include`` (which probes files) are refused, as are ``#include_next`` and ``#import``.

The text is the source with each include replaced by the included text between ``#line``
markers, so diagnostics and debug lines name the right file and line.
"""
from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from kernellab.compile.cache import sha256
from kernellab.compile.source_files import MAX_FILE_BYTES, read_checked  # noqa: F401 - the limit named above
from kernellab.errors import InputError, Problem, ToolError, shown
from kernellab.records import dataclass

#: the included text of one kernel, all files together
MAX_TOTAL_BYTES = 64 << 20
#: deeper nesting than this is refused (a cycle of includes without guards)
MAX_DEPTH = 64
MAX_FILES = 4096

# the patterns are compiled on first use (re's cache); a run of a SPIR-V module reads its file
# through source_files.read_checked and never imports this module (issue 23: start-up)
_DIRECTIVE = rb"^[ \t\f\v]*(?:#|%:|\?\?=)[ \t\f\v]*([A-Za-z_][A-Za-z0-9_]*)?(.*)$"  # with re.S
_TARGET = rb'^[ \t\f\v]*(?:"([^"\n]*)"|<([^>\n]*)>)'
_PROBE = rb"\b__has_include(?:_next)?\b"
_FILE_MACRO = rb"\b__FILE__\b"
#: directives that make the preprocessor open a file
_OPENING = {b"include", b"include_next", b"import"}


@dataclass(frozen=True)
class Directive:
    """One preprocessing directive: its span in the file's bytes and its lines (1-based)."""

    start: int
    end: int  # the offset of the newline that ends it (or the file's end)
    line: int
    last_line: int
    text: bytes  # spliced, comments as one space


@dataclass(frozen=True)
class Expanded:
    """A source with its includes inlined, and every file read to make it."""

    text: bytes
    #: each file read, in order: (name: relative to the source's folder when inside it, sha256)
    files: tuple[tuple[str, str], ...]
    #: each include followed: (including file's name, line, included file's name)
    links: tuple[tuple[str, int, str], ...]
    #: the text uses ``__FILE__``: the output names the source's folder
    names_paths: bool

    @property
    def key(self) -> str:
        """Everything the text depends on except the folder it lies in."""
        h = sha256()
        for part in (*(f"{n}\0{d}" for n, d in self.files), *(f"{a}\0{n}\0{b}" for a, n, b in self.links)):
            data = part.encode("utf-8", "surrogateescape")
            h.update(len(data).to_bytes(8, "little"))
            h.update(data)
        return h.hexdigest()

    @property
    def has_includes(self) -> bool:
        return bool(self.links)


class _Refused(Exception):
    def __init__(self, file: Path, line: int, message: str):
        super().__init__(message)
        self.file, self.line, self.message = file, line, message
        self.renumbered = False  # told under a ``#line`` name: the file read is not the one to show


def directives(data: bytes, opencl: bool) -> list[Directive]:
    """The directives of a file, found as translation phases 1-4 find them (see the module)."""
    found: list[Directive] = []
    n = len(data)
    i = 0
    line = 1
    at_line_start = True
    while i < n:
        c = data[i]
        if c == 0x5C and data.startswith(b"\n", i + 1):  # backslash-newline: spliced
            i += 2
            line += 1
            continue
        if c == 0x5C and data.startswith(b"\r\n", i + 1):
            i += 3
            line += 1
            continue
        if c == 0x0A:
            line += 1
            at_line_start = True
            i += 1
            continue
        if c in b" \t\r\f\v":
            i += 1
            continue
        if data.startswith(b"/*", i):
            end = data.find(b"*/", i + 2)
            end = n if end < 0 else end + 2
            newlines = data.count(b"\n", i, end)
            line += newlines
            at_line_start = at_line_start or newlines > 0  # generous: a comment's new line starts a line
            i = end
            continue
        if data.startswith(b"//", i):
            i = _line_comment_end(data, i)
            continue
        is_hash = c == 0x23 or (opencl and (data.startswith(b"%:", i) or data.startswith(b"??=", i)))
        if at_line_start and is_hash:
            d = _directive_at(data, i, line)
            found.append(d)
            line = d.last_line
            i = d.end
            continue
        at_line_start = False
        if c in b"\"'":
            i = _literal_end(data, i)
            continue
        i += 1
    return found


def _line_comment_end(data: bytes, i: int) -> int:
    """The offset of the newline that ends a ``//`` comment (a spliced newline does not)."""
    while True:
        nl = data.find(b"\n", i)
        if nl < 0:
            return len(data)
        back = nl - 1 if nl > 0 and data[nl - 1] == 0x0D else nl
        if back > 0 and data[back - 1] == 0x5C:
            i = nl + 1
            continue
        return nl


def _literal_end(data: bytes, i: int) -> int:
    quote = data[i]
    j = i + 1
    while j < len(data):
        c = data[j]
        if c == 0x5C:
            j += 2
            continue
        if c == quote or c == 0x0A:
            return j + 1 if c == quote else j
        j += 1
    return j


def _directive_at(data: bytes, start: int, line: int) -> Directive:
    """The directive starting at ``start``: spliced, its comments read as one space each."""
    out = bytearray()
    i = start
    n = len(data)
    last = line
    while i < n:
        c = data[i]
        if c == 0x5C and (data.startswith(b"\n", i + 1) or data.startswith(b"\r\n", i + 1)):
            i += 2 if data[i + 1] == 0x0A else 3
            last += 1
            continue
        if c == 0x0A:
            break
        if data.startswith(b"/*", i):
            end = data.find(b"*/", i + 2)
            end = n if end < 0 else end + 2
            last += data.count(b"\n", i, end)
            out += b" "
            i = end
            continue
        if data.startswith(b"//", i):
            i = _line_comment_end(data, i)
            break
        if c in b"\"'<" and out.strip().startswith((b"#", b"%:", b"??=")):
            j = data.find(b">", i) if c == ord("<") else _literal_end(data, i)
            j = n if j < 0 else (j + 1 if c == ord("<") else j)
            nl = data.find(b"\n", i, j)
            if nl >= 0:
                j = nl
            out += data[i:j]
            i = j
            continue
        out.append(c)
        i += 1
    return Directive(start, i, line, last, bytes(out).rstrip(b"\r"))


class _Expander:
    def __init__(self, source: Path, opencl: bool, include_dirs: Sequence[Path], roots: Sequence[Path]):
        self.source = source
        self.base = source.parent
        self.opencl = opencl
        self.include_dirs = list(include_dirs)
        self.roots = [Path(os.path.realpath(r)) for r in roots]
        self.files: list[tuple[str, str]] = []
        self.links: list[tuple[str, int, str]] = []
        self.once: set[Path] = set()
        self.total = 0
        self.names_paths = False

    def name(self, real: Path) -> str:
        try:
            return real.relative_to(Path(os.path.realpath(self.base))).as_posix()
        except ValueError:
            return str(real)

    def expand(self, named: Path, data: bytes, real: Path, depth: int) -> bytes:
        found = self.scan(named, data, real)
        out = bytearray()
        at = 0
        # the file's own ``#line`` directive moves the lines and name the marker after an include
        # gives back: (the physical line the directive numbers, the number it gives it, the name)
        renumbered: tuple[int, int, Path] | None = None
        for d in found:
            m = re.match(_DIRECTIVE, d.text, re.S)
            word = m.group(1) if m else None
            if word == b"line" and m is not None:
                renumbered = _line_directive(m.group(2), d.last_line + 1, renumbered[2] if renumbered else named)
                continue
            if word == b"pragma" and m is not None and m.group(2).split() == [b"once"]:
                self.once.add(real)
                if depth > 0:
                    out += data[at:d.start]
                    at = d.end  # the line stays, empty: line numbers hold
                continue
            if word not in _OPENING:
                continue
            assert m is not None
            try:
                if word != b"include":
                    raise _Refused(named, d.line, f"#{word.decode()} is not allowed (only #include)")
                inc_named, inc_real, inc_data = self.included(named, d, m.group(2), depth)
            except _Refused as exc:
                raise _numbered(exc, renumbered) from None
            self.links.append((self.name(real), d.line, self.name(inc_real)))
            out += data[at:d.start]
            if inc_real in self.once:
                out += b"\n" * (d.last_line - d.line)
            else:
                body = self.expand(inc_named, inc_data, inc_real, depth + 1)
                out += self.marker(1, inc_named) + body
                if not body.endswith(b"\n"):
                    out += b"\n"
                after, as_named = d.last_line + 1, named
                if renumbered is not None:
                    after, as_named = renumbered[1] + after - renumbered[0], renumbered[2]
                out += self.marker(after, as_named).rstrip(b"\n")
            at = d.end
        out += data[at:]
        return bytes(out)

    def scan(self, named: Path, data: bytes, real: Path) -> list[Directive]:
        """The directives of one file, once it is counted (hash, total size) and known to probe no file."""
        self.files.append((self.name(real), sha256(data).hexdigest()))
        self.total += len(data)
        if self.total > MAX_TOTAL_BYTES:
            raise _Refused(named, 1, f"the kernel and its includes are larger than {MAX_TOTAL_BYTES >> 20} MiB")
        if re.search(_FILE_MACRO, data):
            self.names_paths = True
        found = directives(data, self.opencl)
        probe = re.search(_PROBE, _without_comments(data, found))
        if probe is not None:
            raise _Refused(named, data.count(b"\n", 0, probe.start()) + 1,
                           "__has_include is not allowed: it probes files the compiler would open")
        return found

    def included(self, named: Path, d: Directive, operand: bytes, depth: int) -> tuple[Path, Path, bytes]:
        """The file an ``#include`` of ``named`` names: as found, resolved, and its bytes (checked)."""
        target = re.match(_TARGET, operand)
        if target is None:
            raise _Refused(named, d.line, f"#include {operand.strip().decode(errors='replace')}: "
                                          "only a \"name\" or <name> is allowed (not a macro)")
        quoted = target.group(1) is not None
        text = (target.group(1) if quoted else target.group(2)).decode("utf-8", "surrogateescape")
        directive = f'#include "{text}"' if quoted else f"#include <{text}>"
        if depth + 1 > MAX_DEPTH:
            raise _Refused(named, d.line, f"{directive}: includes nest deeper than {MAX_DEPTH} (a cycle?)")
        if len(self.files) >= MAX_FILES:
            raise _Refused(named, d.line, f"{directive}: more than {MAX_FILES} included files")
        inc_named = self.lookup(Path(text), named.parent if quoted else None)
        if inc_named is None:
            raise _Refused(named, d.line, f"{directive}: file not found (looked in "
                                          f"{', '.join(map(shown, self.folders(named.parent if quoted else None)))})")
        try:
            inc_real, inc_data = read_checked(inc_named, self.roots)
        except ValueError as exc:
            raise _Refused(named, d.line, f"{directive}: {exc}") from None
        return inc_named, inc_real, inc_data

    def marker(self, line: int, named: Path) -> bytes:
        if named == self.source and not self.opencl:
            # glslang compiles the copy under the source's base name and must meet that name
            # again (its -gVS debug info crashes on another name for the file it was given)
            named = Path(self.source.name)
        quoted = str(named).replace("\\", "\\\\").replace('"', '\\"')
        return f'#line {line} "{quoted}"\n'.encode("utf-8", "surrogateescape")

    def folders(self, own: Path | None) -> list[Path]:
        return ([own] if own is not None else []) + self.include_dirs

    def lookup(self, name: Path, own: Path | None) -> Path | None:
        candidates = [name] if name.is_absolute() else [folder / name for folder in self.folders(own)]
        for candidate in candidates:
            if os.path.lexists(candidate):
                return candidate
        return None


def _numbered(exc: _Refused, renumbered: tuple[int, int, Path] | None) -> _Refused:
    """A refusal at a physical line told by the file's own ``#line`` numbering, when one is in
    force: the line and name a person finds in their file (verify --prove's annotated copy puts a
    header before the user's source and numbers the source from 1 under its own name)."""
    if renumbered is None or exc.line < renumbered[0]:
        return exc
    told = _Refused(renumbered[2], renumbered[1] + exc.line - renumbered[0], exc.message)
    told.renumbered = True
    return told


def _line_directive(operand: bytes, next_line: int, named: Path) -> tuple[int, int, Path] | None:
    """A ``#line N ["name"]`` directive's operand read (None: not a plain number and name, such
    as a macro, which the marker then ignores): the physical line it numbers, its number, its name."""
    m = re.match(rb'^[ \t]*(\d+)(?:[ \t]+"((?:[^"\\\n]|\\.)*)")?[ \t]*$', operand.rstrip(b"\r\n"))
    if m is None:
        return None
    name = named if m.group(2) is None else Path(re.sub(rb"\\(.)", rb"\1", m.group(2)).decode("utf-8", "surrogateescape"))
    return next_line, int(m.group(1)), name


def _without_comments(data: bytes, found: Sequence[Directive]) -> bytes:
    """``data`` with comments blanked (for the ``__has_include`` search): directives' own
    text is already spliced and comment-free."""
    out = re.sub(rb"/\*.*?\*/|//[^\n]*", b" ", data, flags=re.S)
    return out + b"\n".join(d.text for d in found)


def expand(source: Path, language: str, include_dirs: Sequence[Path] = (), roots: Sequence[Path] = (),
           data: bytes | None = None, place: tuple[str, str] | None = None, *, marked: bool = False) -> Expanded:
    """The source with its includes inlined (see the module); an InputError naming the include
    (file and line) and ``place`` (the workload file and JSON path of the kernel) when one is
    refused. ``roots`` default to the source's folder and ``include_dirs``. OpenCL C text starts
    with a ``#line`` marker naming ``source`` when it has includes, or with ``marked`` (a source
    read from the user's own file, not from a copy whose name the caller maps back itself)."""
    source = Path(source)
    opencl = language in ("opencl-c", "OpenCL-C")
    allowed = list(roots) or [source.parent, *include_dirs]
    ex = _Expander(source, opencl, include_dirs, allowed)
    try:
        if data is None:
            real, data = read_checked(source, ex.roots)
        else:
            real = Path(os.path.realpath(source))
        text = ex.expand(source, data, real, 0)
    except ValueError as exc:
        raise _error(place, source, f"cannot read the kernel: {exc}") from None
    except _Refused as exc:
        raise _error(place, exc.file if exc.renumbered else source, f"{shown(exc.file)}:{exc.line}: {exc.message}") from None
    if opencl and (ex.links or marked):
        # the compiler names the user's file in its messages, not its temp copy, "source" or the
        # kernel's uid (a driver builds from a string; clspv reads a copy)
        text = ex.marker(1, source) + text
    return Expanded(text, tuple(ex.files), tuple(ex.links), ex.names_paths)


def option_include_dirs(options: Sequence[str], base: Path) -> list[Path]:
    """The ``-I`` folders of a build option list (``-Idir`` and ``-I dir``), relative ones
    against ``base``."""
    dirs: list[str] = []
    for i, o in enumerate(options):
        if o == "-I" and i + 1 < len(options):
            dirs.append(options[i + 1])
        elif o.startswith("-I") and len(o) > 2:
            dirs.append(o[2:])
    return [base / d for d in dirs]


def without_include_dirs(options: Sequence[str]) -> list[str]:
    """``options`` less their ``-I`` folders: a compiler given inlined text has nothing to find."""
    out: list[str] = []
    skip = False
    for o in options:
        if skip:
            skip = False
        elif o == "-I":
            skip = True
        elif not o.startswith("-I"):
            out.append(o)
    return out


def _error(place: tuple[str, str] | None, source: Path, message: str) -> InputError:
    if place is None:
        return InputError(message if message.startswith(shown(source)) else f"{shown(source)}: {message}")
    return InputError([Problem(place[0], place[1], message)])


#: the copies kept for failed compiles' repro commands: the newest this many (a user fixing a
#: shader compiles it again and again; each failure kept one folder in the temporary folder)
REPRO_KEPT = 16
#: a kept copy younger than this (seconds) is never pruned: another process's failure may be printing it
REPRO_MIN_AGE = 600.0
_REPRO_PREFIX = "kernellab-src-"


@contextlib.contextmanager
def staged(data: bytes, name: str) -> Iterator[Path]:
    """A fresh private folder holding ``data`` as the file ``name``: a compiler run there with
    that relative name and no include folder reads nothing else of the user's. The folder is
    removed, except after a tool's failure, whose repro command names the file in it: then it
    stays in the cache folder's ``repro`` (the newest :data:`REPRO_KEPT`), or, with no cache, in
    the temporary folder."""
    import shutil  # not on a run's start-up (tempfile brings random, bz2, lzma)
    import tempfile

    parent = _repro_parent()
    folder = Path(tempfile.mkdtemp(prefix=_REPRO_PREFIX, dir=parent))
    (folder / name).write_bytes(data)
    try:
        yield folder
    except ToolError:
        if parent is not None:
            _prune_repros(parent, keep=folder.name)
        raise  # kept: the error's repro command compiles this very copy
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    shutil.rmtree(folder, ignore_errors=True)


def _repro_parent() -> str | None:
    """``<cache>/repro`` when the cache is on and it is a folder of the user's own that no one
    else may write (made so if absent); else None (the temporary folder)."""
    from kernellab.cachedir import cache_dir, cache_off, private_folder

    if cache_off():
        return None
    parent = os.path.join(cache_dir(), "repro")
    try:
        os.makedirs(parent, mode=0o700, exist_ok=True)
    except OSError:
        return None
    fd = private_folder(parent)
    if fd is None:
        return None
    os.close(fd)
    return parent


def _prune_repros(parent: str, keep: str) -> None:
    """All but the newest :data:`REPRO_KEPT` kept copies in ``parent`` removed (never ``keep``,
    one younger than :data:`REPRO_MIN_AGE`, a symlink or anything not named as kernellab names them)."""
    import shutil
    import stat
    import time

    kept = []
    try:
        with os.scandir(parent) as entries:
            for entry in entries:
                if entry.name.startswith(_REPRO_PREFIX) and entry.name != keep:
                    st = entry.stat(follow_symlinks=False)
                    if stat.S_ISDIR(st.st_mode):
                        kept.append((st.st_mtime, entry.path))
    except OSError:
        return
    kept.sort(reverse=True)
    now = time.time()
    for mtime, path in kept[REPRO_KEPT - 1:]:
        if now - mtime > REPRO_MIN_AGE:
            shutil.rmtree(path, ignore_errors=True)
