"""A kernel argument that is a struct holding a pointer, passed by value (docs/verify-prove.md,
"Structs holding pointers"; GPUVerify's ``test_structs/store_ptr_element``, ``use_ptr_element``).

clspv passes such an argument's bytes as plain data (a push constant or a uniform buffer), where
logical addressing has no pointer: it crashes. The argument is a private copy, and its pointer
member's value is the host's, which the proof does not know; it is known where the kernel's
first statements give it — they assign it (``q.p = p;``: the host's value is never read), or a
precondition pins it (``__requires(q.p == p);`` with ``p`` a pointer parameter: the launches
proven are those where it holds, and in them ``q.p`` *is* ``p``). Then the argument is rewritten
(line numbers kept) as a struct of the same layout with the pointer as a ``ulong``
(:data:`~kernellab.verify.prove.pointer_bits.BITS`), and the kernel starts by copying its other
members into a local ``struct s q`` and setting each pinned pointer: private structs holding
pointers clspv compiles. A pointer member read before the first statements set it, the argument
used other than member by member (its address, a copy of it whole), an array member or one
declared through a macro leaves the source as it is (``unknown``).
"""
from __future__ import annotations

import re
from typing import Any

from kernellab.verify.prove.pointer_bits import (
    BITS,
    NEWLINE,
    Edit,
    Place,
    Reader,
    Refused,
    pointer_suffix,
    type_text,
    unparen,
)

#: the annotation header's function a ``__requires`` in a kernel calls
REQUIRES = "__kl_requires"
_RECORD = re.compile(r"(?:__private )?(struct|union) (\w+)")
_SIDE_EFFECTS = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="}


def _refs(node: Any, decl: str) -> bool:
    """Whether ``node`` names the declaration ``decl`` anywhere."""
    if node.get("kind") == "DeclRefExpr" and (node.get("referencedDecl") or {}).get("id") == decl:
        return True
    return any(_refs(c, decl) for c in node.get("inner", ()) if isinstance(c, dict))


def _changes(node: Any) -> bool:
    """Whether ``node`` assigns, increments or calls anything (other than a __requires)."""
    kind = node.get("kind")
    if kind == "BinaryOperator" and node.get("opcode") in _SIDE_EFFECTS or kind == "CompoundAssignOperator" \
            or kind == "UnaryOperator" and node.get("opcode") in ("++", "--"):
        return True
    if kind == "CallExpr" and _callee(node) != REQUIRES:
        return True
    return any(_changes(c) for c in node.get("inner", ()) if isinstance(c, dict))


def _callee(call: Any) -> str:
    inner = call.get("inner") or [{}]
    node = inner[0]
    while node.get("kind") == "ImplicitCastExpr":
        node = (node.get("inner") or [{}])[0]
    return str((node.get("referencedDecl") or {}).get("name", ""))


def _bare(node: Any) -> Any:
    node = unparen(node)
    while node.get("kind") == "ImplicitCastExpr" and node.get("castKind") in ("LValueToRValue", "NoOp"):
        node = unparen(node["inner"][0])
    return node


class _Argument:
    """One by-value struct argument ``param`` of ``kernel`` whose struct holds a pointer."""

    def __init__(self, r: Reader, kernel: Any, param: Any, record: Any) -> None:
        self.r, self.kernel, self.param, self.record = r, kernel, param, record
        self.name = param["name"]
        self.fields = [f for f in record.get("inner", ()) if f.get("kind") == "FieldDecl"]
        self.pointers = {f["name"] for f in self.fields if "*" in type_text(f)}

    def member(self, node: Any) -> str | None:
        """The pointer member of this argument ``node`` names (``q.p``), or None."""
        node = unparen(node)
        if node.get("kind") != "MemberExpr" or node.get("isArrow") or node.get("name") not in self.pointers:
            return None
        base = _bare(node["inner"][0])
        return node["name"] if base.get("kind") == "DeclRefExpr" and \
            (base.get("referencedDecl") or {}).get("id") == self.param["id"] else None

    def pinned(self, call: Any, pointer_params: dict[str, str]) -> tuple[str, str] | None:
        """``(member, parameter)`` of ``__requires(q.m == p)``, or None."""
        args = call.get("inner", ())[1:]
        cond = unparen(args[0]) if args else {}
        if cond.get("kind") == "ConditionalOperator":
            cond = unparen(cond["inner"][0])
        if cond.get("kind") != "BinaryOperator" or cond.get("opcode") != "==":
            return None
        for a, b in (cond["inner"], cond["inner"][::-1]):
            m, other = self.member(_bare(a)) or self.member(a), _bare(b)
            ref = (other.get("referencedDecl") or {}) if other.get("kind") == "DeclRefExpr" else {}
            if m and ref.get("id") in pointer_params:
                return m, pointer_params[ref["id"]]
        return None

    def set_first(self, body: Any, pointer_params: dict[str, str]) -> dict[str, str | None]:
        """Each pointer member the body's first statements give a value: the parameter a
        precondition pins it to, or None where a statement assigns it (nothing to copy)."""
        given: dict[str, str | None] = {}
        for stmt in body.get("inner", ()):
            if stmt.get("kind") == "BinaryOperator" and stmt.get("opcode") == "=":
                m = self.member(stmt["inner"][0])
                rhs = stmt["inner"][1]
                if m is None or _refs(rhs, self.param["id"]) or _changes(rhs):
                    break
                given.setdefault(m, None)
                continue
            if stmt.get("kind") == "CallExpr" and _callee(stmt) == REQUIRES and not _changes(stmt):
                pin = self.pinned(stmt, pointer_params)
                if pin is not None:
                    given.setdefault(pin[0], pin[1])
                elif _refs(stmt, self.param["id"]):
                    break
                continue
            break
        return given


def copies(ast: dict[str, Any], data: bytes, main: str, source_start: int) -> list[Edit]:
    """The edits (as :func:`kernellab.verify.prove.pointer_bits.rewrite`'s) that pass each
    by-value struct argument holding a pointer as bits and copy it into a local struct; none
    where there is no such argument. Raises ``Refused`` naming what cannot be."""
    r = Reader()
    r.walk(ast)
    records = {(n.get("tagUsed"), n.get("name")): n for n in r.nodes
               if n.get("kind") == "RecordDecl" and n.get("completeDefinition") and n.get("name")}
    edits: list[Edit] = []
    twins: dict[str, str] = {}

    def line(place: Place | None) -> str:
        return f"line {data.count(NEWLINE, source_start, place.offset) + 1}" if place else "a line clang gave none"

    def source(node: Any) -> tuple[int, int]:
        b, e = r.begin[id(node)], r.end[id(node)]
        if b is None or e is None or b.file != main or e.file != main or b.macro or e.macro \
                or b.offset < source_start:
            raise Refused(f"a struct argument holding a pointer written through a macro ({line(b)})")
        return b.offset, e.offset + e.length

    for kernel in r.nodes:
        if kernel.get("kind") != "FunctionDecl" or not any(
                c.get("kind") == "OpenCLKernelAttr" for c in kernel.get("inner", ())):
            continue
        params = [c for c in kernel.get("inner", ()) if c.get("kind") == "ParmVarDecl"]
        body = next((c for c in kernel.get("inner", ()) if c.get("kind") == "CompoundStmt"), None)
        pointer_params = {p["id"]: p["name"] for p in params if pointer_suffix(type_text(p).replace("__private", "")) == ""}
        for param in params:
            m = _RECORD.fullmatch(type_text(param).strip())
            record = records.get((m.group(1), m.group(2))) if m else None
            if record is None or body is None:
                continue
            arg = _Argument(r, kernel, param, record)
            if not arg.pointers:
                continue
            edits += _argument_edits(arg, body, pointer_params, twins, source, line, data)
    return edits


def _argument_edits(arg: _Argument, body: Any, pointer_params: dict[str, str], twins: dict[str, str],
                    source: Any, line: Any, data: bytes) -> list[Edit]:
    r = arg.r
    where = line(r.begin[id(arg.param)])
    for node in r.nodes:  # the argument used member by member only
        if node.get("kind") == "DeclRefExpr" and (node.get("referencedDecl") or {}).get("id") == arg.param["id"]:
            holder = r.parent[id(node)]
            while holder is not None and holder.get("kind") in ("ParenExpr", "ImplicitCastExpr"):
                holder = r.parent[id(holder)]
            if holder is None or holder.get("kind") != "MemberExpr" or holder.get("isArrow"):
                raise Refused(f"the struct argument {arg.name!r} holding a pointer used whole "
                               f"({line(r.begin[id(node)])})")
    given = arg.set_first(body, pointer_params)
    unset = sorted(arg.pointers - set(given))
    if unset:
        raise Refused(f"the struct argument {arg.name!r} holds a pointer ({unset[0]!r}) the kernel reads "
                       f"before it sets it, of a value the host gave ({where})")
    kind, name = arg.record["tagUsed"], arg.record["name"]
    twin = f"__kl_arg_{name}"
    edits: list[Edit] = []
    copied = []
    if name not in twins:
        members = []
        for f in arg.fields:
            t = type_text(f)
            if f["name"] in arg.pointers:
                if pointer_suffix(t) != "":
                    raise Refused(f"the struct argument {arg.name!r} holds an array of pointers ({where})")
                members.append(f"{BITS} {f['name']};")
            else:
                if "[" in t:
                    raise Refused(f"the struct argument {arg.name!r} holds an array ({where})")
                start, end = source(f)
                members.append(data[start:end].decode(errors="replace") + ";")
        twins[name] = f"{kind} {twin} {{ {' '.join(members)} }}; "
        start, _ = source(arg.kernel)
        edits.append((start, start, twins[name]))
    for f in arg.fields:
        if f["name"] not in arg.pointers:
            copied.append(f"{arg.name}.{f['name']} = __kl_arg_{arg.name}.{f['name']};")
    copied += [f"{arg.name}.{m} = {p};" for m, p in sorted(given.items()) if p is not None]
    start, end = source(arg.param)
    open_brace, _ = source(body)
    if not data[start:end].endswith(arg.name.encode()) or data[open_brace:open_brace + 1] != b"{":
        raise Refused(f"the struct argument {arg.name!r} not found where clang's AST said ({where})")
    edits.append((start, end, f"{kind} {twin} __kl_arg_{arg.name}"))
    edits.append((open_brace + 1, open_brace + 1, f" {kind} {name} {arg.name}; {' '.join(copied)}"))
    return edits
