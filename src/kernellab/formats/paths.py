"""Whether a path written in a file can name a file on this system at all.

A file is data: its paths may hold a NUL, lone surrogates or names longer than the file system
takes. Each reader asks here first and reports a problem at the path's JSON pointer, instead of
letting the operating system's error (ValueError, UnicodeEncodeError, ENAMETOOLONG) escape.
"""
from __future__ import annotations

import os
from collections.abc import Sequence

from kernellab.errors import InputError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)

try:  # CPython's own SHA-256: hashlib loads OpenSSL, which a run has no other use for
    from _sha256 import sha256  # Python 3.10 and 3.11
except ImportError:
    try:
        from _sha2 import sha256  # type: ignore[import-not-found,no-redef]  # 3.12 merged the SHA-2 modules
    except ImportError:  # an interpreter without the builtin modules
        from hashlib import sha256  # type: ignore[assignment]

if TYPE_CHECKING:
    from kernellab.model import Scenario

#: Linux's limits: PATH_MAX counts the terminating NUL, NAME_MAX is per component
PATH_MAX = 4095
NAME_MAX = 255


def path_problem(value: str, written: bool = False) -> str | None:
    """Why ``value`` cannot name a file here, or None when it can. A file kernellab ``written``
    (a ``dst``) holds no control or bidirectional character either: its name would reach every
    terminal that lists the output folder raw (``ls`` prints an ESC as it is)."""
    if "\x00" in value:
        return f"{_shown(value)} is not a usable file name: it holds a NUL character"
    if written and any(ord(c) < 0x20 or 0x7f <= ord(c) < 0xa0 or c in _BIDI for c in value):
        return f"{_shown(value)} is not a usable file name for an output: it holds a control or bidirectional character"
    try:
        encoded = os.fsencode(value)
    except UnicodeError:
        return f"{_shown(value)} is not a usable file name: it holds lone surrogates (not valid UTF-8)"
    if len(encoded) > PATH_MAX:
        return (f"{_shown(value)} is not a usable file name: {len(encoded)} bytes, more than the system "
                f"allows ({PATH_MAX})")
    if any(len(part) > NAME_MAX for part in encoded.split(b"/")):
        return f"{_shown(value)} is not a usable file name: a part longer than {NAME_MAX} bytes"
    return None


def _shown(value: str) -> str:
    text = value if len(value) <= 60 else value[:57] + "..."
    return repr(text.encode("utf-8", "backslashreplace").decode("utf-8"))


# --- file names made from file content ---------------------------------------------------------
# A uid, a task id, a kernel or module name is data: made into a file name as it is, "../../x"
# climbs out of the output folder, "-x" reads as an option, ".x" hides, "a\nb" breaks listings.
# Every name built from file content comes through one of the two functions below: `safe_name`
# where the value is meant to be the name and a bad one is the file's fault (refused with its place,
# exit 2), `escaped_name` where kernellab makes the name up (stage dumps, frame captures, exported
# kernels) and any value must still give a usable, distinct, deterministic name.

#: bytes of a file's content one file name may hold, leaving room within NAME_MAX for what is
#: appended (".frame12.npy", ".spirv-kernel.spvasm") and for the staged name (".NAME.kl<token>.tmp")
NAME_CAP = 160
#: bytes an escaped name keeps as they are (anything else becomes %XX)
_PLAIN = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+=,@.")
#: characters that change how text around them is shown (bidirectional controls)
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def name_problem(value: str) -> str | None:
    """Why ``value`` cannot be one file name as it is (a sentence naming it), or None when it can."""
    why = _name_flaw(value)
    return None if why is None else f"{_shown(value)} cannot name a file: {why}"


def _name_flaw(value: str) -> str | None:
    if not value:
        return "it is empty"
    if value in (".", ".."):
        return "it names a folder"
    if "/" in value:
        return "it holds '/', which would make it a path into other folders"
    if any(ord(c) < 0x20 or 0x7f <= ord(c) < 0xa0 or c in _BIDI for c in value):
        return "it holds a control or bidirectional character"
    if value[0] in ".-":
        return f"it starts with {value[0]!r} (a hidden file, or a word read as an option)"
    try:
        size = len(value.encode("utf-8"))
    except UnicodeError:
        return "it holds lone surrogates (not valid UTF-8)"
    if size > NAME_CAP:
        return f"it is {size} bytes long, more than the {NAME_CAP} a file name made from it may hold"
    return None


def safe_name(value: str, file: str | os.PathLike[str], where: str | Sequence[str | int]) -> str:
    """``value`` itself when it can be a file name, else an :class:`InputError` at ``where``."""
    if (why := name_problem(value)) is not None:
        raise InputError.at(os.fspath(file), where, why)
    return value


def uid_where(scenario: Scenario, uid: str) -> list[str | int]:
    """The JSON path of resource ``uid``'s ``uid`` field in its scenario file."""
    for n, r in enumerate(scenario.resources):
        if r.uid == uid:
            return ["resources", n, r.kind, "uid"]
    return ["resources"]


def escaped_name(value: str) -> str:
    """A file name for ``value`` that is always usable: bytes other than letters, digits and
    ``_-+=,@.`` become ``%XX`` (so are a leading ``.`` or ``-``, and ``%`` itself: distinct values
    give distinct names), and a name longer than :data:`NAME_CAP` keeps its start and a hash."""
    raw = value.encode("utf-8", "surrogatepass")
    text = "".join(chr(b) if b in _PLAIN and not (i == 0 and b in b".-") else f"%{b:02X}"
                   for i, b in enumerate(raw)) or "%"
    if len(text) > NAME_CAP:
        text = text[:NAME_CAP - 17] + "~" + sha256(raw).hexdigest()[:16]
    return text
