"""JSON text read by the interpreter's own C scanner, without importing :mod:`json` (issue 23).

The ``json`` package compiles its regular expressions and builds its encoder when imported, about
5 M instructions of a ``kernellab run`` that only reads its scenario and a few small JSON files.
:func:`loads` calls the scanner ``json.loads`` calls (``_json.make_scanner``, with a
``JSONDecoder``'s settings); any text it does not read whole and clean — an error, a BOM, extra
data — goes to ``json.loads`` itself, so every value, exception and message is json's. Writing
JSON imports ``json`` where it is done.
"""
from __future__ import annotations

from types import SimpleNamespace

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

try:
    from _json import make_scanner as _make_scanner
except ImportError:  # an interpreter without json's C half: json.loads does it all
    _make_scanner = None  # type: ignore[misc, assignment] # typeshed declares make_scanner a class

#: what JSON calls whitespace (json.decoder.WHITESPACE)
_WHITESPACE = " \t\n\r"
#: json.decoder's constants (parse_constant)
_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}


def _settings(parse_int: Callable[[str], Any]) -> SimpleNamespace:
    """What the C scanner reads from a ``JSONDecoder``: json.loads's defaults, ``parse_int`` given
    (a namespace, not a class of its own built on every start: ~0.07 M instructions, issue 23)."""
    return SimpleNamespace(strict=True, object_hook=None, object_pairs_hook=None,
                           array_hook=None,  # read from Python 3.15
                           parse_float=float, parse_constant=_CONSTANTS.__getitem__, parse_int=parse_int)


_scanners: dict[object, Callable[[str, int], tuple[Any, int]]] = {}


def loads(text: str, *, parse_int: Callable[[str], Any] | None = None) -> Any:
    """``json.loads(text, parse_int=parse_int)``: the same value, or the same exception (an
    exception ``parse_int`` raises comes through as it is)."""
    if _make_scanner is not None and not text.startswith("\ufeff"):
        parse = int if parse_int is None else parse_int
        scanner = _scanners.get(parse)
        if scanner is None:
            # typeshed wants a scanner for the context; the C scanner reads only these attributes
            scanner = _scanners[parse] = _make_scanner(_settings(parse))  # type: ignore[arg-type]
        start = len(text) - len(text.lstrip(_WHITESPACE))
        try:
            value, end = scanner(text, start)
        except (StopIteration, ValueError, SystemError):
            # nothing there, or not JSON: json.loads raises its error (or parse_int's again). An
            # error inside an array or object is raised by the scanner as json.decoder's
            # JSONDecodeError, which it looks up in sys.modules only: with json not imported yet,
            # a SystemError ("returned NULL without setting an exception")
            pass
        else:
            if end == len(text.rstrip(_WHITESPACE)):
                return value
    import json

    return json.loads(text, parse_int=parse_int)


def __getattr__(name: str) -> Any:
    """``DecodeError``: ``json.JSONDecodeError``, looked up where an ``except`` clause matches it
    (json is loaded by then: its scanner or json.loads raised it)."""
    if name == "DecodeError":
        import json

        return json.JSONDecodeError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
