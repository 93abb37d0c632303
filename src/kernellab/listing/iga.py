"""Reading listings in the IGA JSON format (IGA's ``-Xprint-json`` or kernellab's own output).

Validation reports every problem of the file at once, each with its JSON pointer; fields the
(partial, volatile) format may add later are accepted and left alone.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import Any

from kernellab.errors import InputError, Problem, Problems
from kernellab.formats.jsonfile import MAX_JSON_BYTES, decode_json, read_text_input
from kernellab.records import dataclass

OPERAND_KINDS = ("RD", "RI", "IM", "LB", "DA", "AD")


class _Checker(Problems):
    def typed(self, obj: dict, key: str, types: type | tuple[type, ...], path: list[str | int],
              required: bool = False, what: str = "") -> Any:
        if key not in obj:
            if required:
                self.add(path, f"missing required field {key!r}")
            return None
        v = obj[key]
        bad = isinstance(v, bool) and bool not in (types if isinstance(types, tuple) else (types,))
        if bad or not isinstance(v, types):
            self.add([*path, key], f"{key!r} must be {what or _type_name(types)}, not {_json_type(v)}")
            return None
        return v

    def int_list(self, obj: dict, key: str, path: list[str | int]) -> list[int]:
        v = obj.get(key)
        if v is None:
            return []
        if not isinstance(v, list):
            self.add([*path, key], f"{key!r} must be a list of integers, not {_json_type(v)}")
            return []
        out = []
        for k, x in enumerate(v):
            if isinstance(x, bool) or not isinstance(x, int):
                self.add([*path, key, k], f"must be an integer, not {_json_type(x)}")
            else:
                out.append(x)
        return out


def _type_name(types: type | tuple[type, ...]) -> str:
    ts = types if isinstance(types, tuple) else (types,)
    names = {str: "a string", int: "an integer", list: "a list", dict: "an object", bool: "true or false",
             float: "a number"}
    return " or ".join(names.get(t, t.__name__) for t in ts)


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    return {str: "a string", int: "an integer", float: "a number", list: "a list", dict: "an object"}.get(
        type(v), type(v).__name__)


@dataclass
class _Ids:
    """The label and instruction ids seen so far, and the references to check once all are known."""

    labels: set[int] = field(default_factory=set)
    insts: set[int] = field(default_factory=set)
    #: (path, "label"|"inst", id)
    refs: list[tuple[list[str | int], str, int]] = field(default_factory=list)


def validate_listing(doc: Any, file: str, base: list[str | int] | None = None) -> list[Problem]:
    """Every problem of one listing object (``base`` is its JSON path inside the file)."""
    c = _Checker(file)
    base = base or []
    if not isinstance(doc, dict):
        c.add(base, f"a listing must be an object with 'version', 'platform' and 'elems', not {_json_type(doc)}")
        return c.problems
    c.typed(doc, "version", str, base, required=True)
    c.typed(doc, "platform", str, base, required=True)
    elems = c.typed(doc, "elems", list, base, required=True)
    if elems is None:
        return c.problems
    ids = _Ids()
    for n, el in enumerate(elems):
        _check_element(c, el, [*base, "elems", n], ids)
    for path, what, x in ids.refs:
        if what == "label" and x not in ids.labels:
            c.add(path, f"no label has id {x}")
        elif what == "inst" and x not in ids.insts:
            c.add(path, f"no instruction has id {x}")
    return c.problems


def _check_element(c: _Checker, el: Any, path: list[str | int], ids: _Ids) -> None:
    if not isinstance(el, dict):
        c.add(path, f"a listing element must be an object, not {_json_type(el)}")
        return
    kind = el.get("kind")
    if kind not in ("L", "I"):
        c.add([*path, "kind"], f"'kind' must be \"L\" (label) or \"I\" (instruction), not {json.dumps(kind)}")
        return
    ident = c.typed(el, "id", int, path, required=True)
    c.typed(el, "pc", int, path)
    seen, what = (ids.labels, "label") if kind == "L" else (ids.insts, "instruction")
    if ident is not None:
        if ident in seen:
            c.add([*path, "id"], f"{what} id {ident} is used by an earlier {what}")
        seen.add(ident)
    if kind == "L":
        _check_label(c, el, path, ids)
    else:
        _check_instruction(c, el, path, ids)


def _check_label(c: _Checker, el: dict, path: list[str | int], ids: _Ids) -> None:
    c.typed(el, "symbol", str, path, required=True)
    for key in ("preds", "succs"):
        for k, x in enumerate(c.int_list(el, key, path)):
            ids.refs.append(([*path, key, k], "label", x))


def _check_instruction(c: _Checker, el: dict, path: list[str | int], ids: _Ids) -> None:
    c.typed(el, "op", str, path, required=True)
    for key in ("es", "eo"):
        c.typed(el, key, int, path)
    c.typed(el, "wren", bool, path)
    c.typed(el, "comment", str, path)
    c.typed(el, "opts", list, path)
    lt = c.typed(el, "liveTotals", dict, path)
    for rf, v in (lt or {}).items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            c.add([*path, "liveTotals", rf], f"a live total must be a non-negative integer, not {json.dumps(v)}")
    fm = c.typed(el, "fm", dict, path)
    if fm is not None:
        c.typed(fm, "cond", str, [*path, "fm"])
    c.typed(el, "regDist", str, path)
    if el.get("sbid") is not None:
        c.typed(el, "sbid", dict, path, what="an object or null")
    pred = c.typed(el, "pred", dict, path)
    if pred is not None:
        c.typed(pred, "inv", bool, [*path, "pred"])
        c.typed(pred, "func", str, [*path, "pred"])
        for k, x in enumerate(c.int_list(pred, "defs", [*path, "pred"])):
            ids.refs.append(([*path, "pred", "defs", k], "inst", x))
    _check_reg_field(c, el, "freg", path)
    dst = c.typed(el, "dst", dict, path)
    if dst is not None:
        _check_operand(c, dst, [*path, "dst"], ids.refs)
    srcs = c.typed(el, "srcs", list, path)
    for k, s in enumerate(srcs or []):
        if not isinstance(s, dict):
            c.add([*path, "srcs", k], f"an operand must be an object, not {_json_type(s)}")
        else:
            _check_operand(c, s, [*path, "srcs", k], ids.refs)


def _check_reg(c: _Checker, reg: dict, path: list[str | int]) -> None:
    c.typed(reg, "rn", str, path, required=True)
    c.typed(reg, "r", int, path, required=True)
    c.typed(reg, "sr", int, path)


def _check_reg_field(c: _Checker, obj: dict, key: str, path: list[str | int], required: bool = False) -> None:
    """``obj[key]``, when there (or ``required``), is a register object."""
    reg = c.typed(obj, key, dict, path, required=required)
    if reg is not None:
        _check_reg(c, reg, [*path, key])


def _check_ri(c: _Checker, op: dict, path: list[str | int]) -> None:
    _check_reg_field(c, op, "areg", path, required=True)
    c.typed(op, "aoff", int, path)


def _check_da(c: _Checker, op: dict, path: list[str | int]) -> None:
    _check_reg_field(c, op, "reg", path, required=True)
    c.typed(op, "len", int, path)


def _check_ad(c: _Checker, op: dict, path: list[str | int]) -> None:
    _check_reg_field(c, op, "areg", path)
    addr = c.typed(op, "addr", dict, path)
    if addr is not None and addr.get("reg") is not None:
        _check_reg_field(c, addr, "reg", [*path, "addr"])
    c.typed(op, "surf", dict, path)


#: the fields each operand kind adds to the common ones
_OPERAND_CHECKS: dict[str, Callable[[_Checker, dict, list[str | int]], None]] = {
    "RD": lambda c, op, path: _check_reg_field(c, op, "reg", path, required=True),
    "RI": _check_ri,
    "IM": lambda c, op, path: c.typed(op, "value", str, path, required=True,
                                      what="a string (IGA writes immediates as strings)"),
    "LB": lambda c, op, path: c.typed(op, "target", str, path, required=True),
    "DA": _check_da,
    "AD": _check_ad,
}


def _check_operand(c: _Checker, op: dict, path: list[str | int], refs: list) -> None:
    kind = op.get("kind")
    if kind not in OPERAND_KINDS:
        c.add([*path, "kind"], f"operand 'kind' must be one of {', '.join(OPERAND_KINDS)}, not {json.dumps(kind)}")
        return
    c.typed(op, "type", str, path)
    c.typed(op, "mods", str, path)
    rgn = c.typed(op, "rgn", dict, path)
    if rgn is not None:
        for key in ("h", "v", "w"):
            c.typed(rgn, key, int, [*path, "rgn"])
    check = _OPERAND_CHECKS.get(kind)
    if check is not None:
        check(c, op, path)
    for key in ("defs", "uses"):
        if op.get(key) is None:
            continue  # null: dataflow analysis was off
        for k, x in enumerate(c.int_list(op, key, path)):
            refs.append(([*path, key, k], "inst", x))


def load_listings(path: str | Path) -> list[dict[str, Any]]:
    """The listing(s) in ``path``: one listing object, or a list of them (one per function)."""
    file = str(path)
    text = read_text_input(path, "a listing (JSON)", MAX_JSON_BYTES)
    doc = decode_json(text, file, invalid="not valid JSON")
    docs = doc if isinstance(doc, list) else [doc]
    problems: list[Problem] = []
    for n, d in enumerate(docs):
        problems += validate_listing(d, file, [n] if isinstance(doc, list) else [])
    if isinstance(doc, list) and not doc:
        problems.append(Problem(file, "/", "an empty list: expected a listing object or a list of listings"))
    if problems:
        raise InputError(problems)
    return docs
