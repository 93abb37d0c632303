"""Text from files shown to a person: control and direction characters made visible.

A uid, a field name, a path, a compiler log or an op name comes from a file kernellab did not
write. Printed raw, ESC starts a terminal escape sequence (retitling the window, hiding text,
rewriting a line already shown), BEL rings, a carriage return overwrites the line, and the
bidirectional formatting characters (U+202E RIGHT-TO-LEFT OVERRIDE and its kin) reorder what the
reader sees ("Trojan Source"). Every place where such text leaves kernellab for a person goes
through :func:`escape` (terminal messages, logs, findings, tables) or :func:`xml_text` (JUnit XML),
which replace each of those characters by the escape Python would write for it: ``\\x1b``,
``\\x07``, ``\\u202e``.

What is escaped: C0 controls (U+0000..U+001F) except the newline and the tab where the text may
span lines (``multiline=True``: messages, compiler logs, listings; a one-line field escapes them
too), DEL, C1 controls (U+0080..U+009F), the bidirectional and invisible formatting characters
(U+061C, U+180E, U+200B..U+200F, U+202A..U+202E, U+2060..U+2064, U+2066..U+2069, U+FEFF, the
tag characters U+E0000..U+E007F), the line and paragraph separators (U+2028, U+2029), the
noncharacters U+FFFE and U+FFFF, and lone surrogates (bytes that were not UTF-8, kept by
``surrogateescape``). A backslash is left alone: the text stays readable as the file wrote it,
and an escape shown is always one of the characters above or the file's own backslash.

JSON reports need none of this: :func:`json.dumps` (with ``ensure_ascii``) writes every such
character as a ``\\uXXXX`` escape, and the value read back is the file's own.
"""
from __future__ import annotations

import functools
import re

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import IO, Any

_ALWAYS = ("\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069"
           "\ufeff\ufffe\uffff\ud800-\udfff\U000e0000-\U000e007f")


@functools.lru_cache(maxsize=2)
def _pattern(multiline: bool) -> re.Pattern[str]:
    """The characters :func:`escape` rewrites, compiled when first needed: a command that prints
    nothing does without (compiling these classes costs about 9 M instructions)."""
    return re.compile(f"[{_ALWAYS}]" if multiline else f"[\t\n{_ALWAYS}]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def escape(text: object, *, multiline: bool = True) -> str:
    """``text`` with control, direction and invisible characters as visible escapes; newlines and
    tabs kept when ``multiline`` (messages, logs), escaped in a one-line field (a name, a path)."""
    s = text if isinstance(text, str) else str(text)
    return _pattern(multiline).sub(_visible, s)


def escape_line(text: object) -> str:
    """:func:`escape` for a field that must stay on one line."""
    return escape(text, multiline=False)


def xml_text(text: object, *, multiline: bool = True) -> str:
    """Text for an XML 1.0 document (element text, attribute values): :func:`escape` removes every
    character XML 1.0 forbids even as an entity (C0 but tab and newline, lone surrogates, U+FFFE,
    U+FFFF), so any input gives a well-formed document; the XML writer adds ``&lt;``/``&amp;``."""
    return escape(text, multiline=multiline)


class EscapingStream:
    """A text stream that escapes what is written to it (the terminal's ``stdout``/``stderr``
    while a command runs): every ``print`` of every command reaches the person through it.
    Binary output (``.buffer``) and everything else go to the stream underneath; :func:`raw`
    gives that stream to a writer whose own escape sequences are meant (rich's progress bars),
    which then escapes the text it is given itself."""

    def __init__(self, stream: IO[str], label: str = ""):
        self.stream = stream
        #: what a failed write names (``standard output``): an OSError of a stream has no file name
        self.label = label

    def write(self, text: str) -> int:
        try:
            self.stream.write(escape(text))
        except OSError as exc:
            exc.filename = exc.filename or self.label or None
            raise
        return len(text)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except OSError as exc:
            exc.filename = exc.filename or self.label or None
            raise

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def raw(stream: IO[str]) -> IO[str]:
    """The stream underneath an :class:`EscapingStream` (``stream`` itself otherwise)."""
    return stream.stream if isinstance(stream, EscapingStream) else stream  # type: ignore[return-value]
