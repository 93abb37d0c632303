"""An OpenCL C compiler's messages told in the user's files and lines.

kernellab hands a compiler one text: the user's kernel with its includes inlined between
``#line`` markers (:mod:`kernellab.compile.preprocess`), the first naming the kernel's own file.
A compiler that honours the markers names the user's files and lines itself (clang, PoCL,
Oclgrind, and the other clang-based drivers: AMD's, Apple's, Intel's, Mesa's); where no named
marker is in effect it names the text by a name of its own, at lines the markers already moved.
Two compilers ignore the markers and count the text's physical lines, so their places are
mapped back through the markers here:

* clspv names the text ``source`` (``source:6:27: error: ...``);
* NVIDIA's OpenCL compiler names it ``<kernel>`` (``<kernel>:6:27: error: expected
  expression``, driver 580 on an H100), and older NVIDIA drivers give no name at all
  (``:551:3: error: ...`` at the start of a line).

The names the other drivers give the text, seen in their public logs, are replaced by the
kernel's name, their lines kept: PoCL's temporary ``.../tempfile_XXXXXX.cl``, Apple's
``<program source>``, ARM Mali's ``<source>``, Mesa's ``input.cl``, AMD's temporary
``.../OCL1234T5.cl`` and ``/tmp/AMD_1_2/t_1_2.cl`` (and its legacy compiler's EDG form
``"NAME", line L: error: ...``, rewritten ``NAME:L: error: ...``).
"""
from __future__ import annotations

import re

#: a ``#line N ["file"]`` directive, as :mod:`kernellab.compile.preprocess` writes them
_LINE_MARKER = re.compile(r'^[ \t]*#[ \t]*line[ \t]+(\d+)(?:[ \t]+"((?:[^"\\]|\\.)*)")?[ \t]*$')
#: the names of the text of drivers that count its physical lines (NVIDIA's)
PHYSICAL_NAMES = ("<kernel>",)
#: the names drivers that honour ``#line`` give the text where no named marker is in effect
_DRIVER_NAMES = re.compile(
    r"(?<![\w/.\\<])(?:\S*(?:tempfile_|input\.cl|\.cl_|[\\/]OCL\w+\.(?:tmp\.)?cl|/AMD_\d+_\d+/t_)\w*(?:\.cl)?"
    r"|<program source>|<source>)(?=:\d)")
#: the EDG front end's place (AMD's legacy compiler): ``"NAME", line L: error``
_EDG = re.compile(r'^"([^"\n]+)", line (\d+): ', re.M)


def _markers(text: str) -> list[tuple[int, str | None, int]]:
    """Each ``#line`` marker of ``text``: (the first physical line after it, the file it names or
    None, the line number it gives that line)."""
    starts: list[tuple[int, str | None, int]] = []
    file: str | None = None
    for number, line in enumerate(text.split("\n"), 1):
        m = _LINE_MARKER.match(line)
        if m is not None:
            if m.group(2) is not None:
                file = re.sub(r"\\(.)", r"\1", m.group(2))
            starts.append((number + 1, file, int(m.group(1))))
    return starts


def presumed_locations(log: str, text: str, buffer: str = "source", *, name: str | None = None,
                       line_start: bool = False) -> str:
    """``log`` with each ``BUFFER:LINE:COL`` (a compiler's name for ``text`` and a physical line
    of it) turned into the file and line the text's ``#line`` markers give: the user's kernel or
    header. A line before any named marker keeps ``name`` (default: ``buffer``).
    ``line_start``: only places at the start of a line (an empty ``buffer``)."""
    starts = _markers(text)

    def place(m: re.Match[str]) -> str:
        physical = int(m.group(1))
        file, line = None, physical
        for start, marked, first in starts:
            if start > physical:
                break
            file, line = marked, first + physical - start
        return f"{file or (buffer if name is None else name)}:{line}:{m.group(2)}"

    before = "^" if line_start else r"(?<![\w/.])"
    return re.sub(rf"{before}{re.escape(buffer)}:(\d+):(\d+)", place, log, flags=re.M)


def driver_log(log: str, text: str, name: str) -> str:
    """An OpenCL driver's build log for ``text`` with its places in the user's files and lines
    (see the module): NVIDIA's physical lines mapped through the markers, the other drivers'
    names of the text replaced by ``name`` (the kernel's)."""
    log = _EDG.sub(r"\1:\2: ", log)
    for buffer in PHYSICAL_NAMES:
        log = presumed_locations(log, text, buffer, name=name)
    log = presumed_locations(log, text, "", name=name, line_start=True)
    return _DRIVER_NAMES.sub(name, log)
