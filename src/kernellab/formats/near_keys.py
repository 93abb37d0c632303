"""Misspelled keys: the declared name a user probably meant (``bindngs`` → ``bindings``).

An unknown key is only a warning (Arm's runner tolerates them), so a misspelling of a field the
run needs shows up later as that field's absence ("nothing is bound there", "missing required
field"). :func:`with_misspelling_hints` adds the misspelled key and its correction to such an
error, found from the error's JSON path in the file as written.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from kernellab.errors import Problem
from kernellab.modelkit import nearest

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any

#: compiled on first use (re's cache): only a document with problems needs it (issue 23: start-up)
_MISSING = r'missing required field "([^"]+)"'


def hint(misspelled: str, meant: str) -> str:
    return f'"{misspelled}" is not a field: did you mean "{meant}"?'


def unknown_field_message(key: str, meant: str | None) -> str:
    """The warning for an unknown key, with the declared field it probably misspells."""
    return f'unknown field "{key}"' + (f' (did you mean "{meant}"?)' if meant else "")


def _object_at(data: Any, pointer: str) -> Any:
    if pointer in ("", "/"):
        return data
    node = data
    for raw in pointer.lstrip("/").split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _misspelling_of(obj: Any, field: str) -> str | None:
    """The key of ``obj`` that stands for its absent ``field``."""
    if not isinstance(obj, dict) or field in obj:
        return None
    return next((key for key in obj if isinstance(key, str) and nearest(key, [field]) is not None), None)


def with_misspelling_hints(problems: Sequence[Problem], data: Any) -> list[Problem]:
    """``problems`` of the JSON document ``data``, each error about an absent field that a key of
    its object misspells followed by that key and the field (warnings are left as they are)."""
    out = []
    for p in problems:
        found = None
        if not p.warning and p.where.startswith("/"):
            if (missing := re.search(_MISSING, p.message)) is not None:
                field, obj = missing.group(1), _object_at(data, p.where)
            else:
                parent, _, last = p.where.rpartition("/")
                field, obj = last.replace("~1", "/").replace("~0", "~"), _object_at(data, parent or "/")
            if (key := _misspelling_of(obj, field)) is not None and hint(key, field) not in p.message:
                found = hint(key, field)
        out.append(Problem(p.file, p.where, f"{p.message} ({found})", p.warning) if found else p)
    return out
