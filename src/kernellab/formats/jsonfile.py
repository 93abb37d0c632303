"""Reading JSON input files with errors that name the file and the line."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kernellab.errors import InputError, Problem


def load_json(path: str | Path) -> Any:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("file not found", file=path) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a JSON file", file=path) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", file=path) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", file=path) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError([Problem(str(path), f"line {exc.lineno}, column {exc.colno}",
                                  f"invalid JSON: {exc.msg}")]) from None


def pydantic_problems(file: str, prefix: tuple[str | int, ...], error: Any) -> list[Problem]:
    """Turn a pydantic ValidationError into Problems with JSON pointers and our wording."""
    from kernellab.errors import json_pointer
    from kernellab.model import _show

    out = []
    for e in error.errors(include_url=False):
        loc = prefix + tuple(e["loc"])
        kind = e["type"]
        if kind == "missing":
            msg = f"missing required field \"{loc[-1]}\""
            loc = loc[:-1]
        elif kind in ("model_type", "dict_type", "model_attributes_type"):
            msg = f"expected an object, got {_show(e.get('input'))}"
        elif kind == "list_type":
            msg = f"expected an array, got {_show(e.get('input'))}"
        else:
            msg = e["msg"]
        out.append(Problem(file, json_pointer(loc), msg))
    return out
