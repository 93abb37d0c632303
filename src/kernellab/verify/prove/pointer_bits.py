"""Structs holding pointers that the kernel only stores and copies, for clspv (docs/verify-prove.md,
"Structs holding pointers").

clspv compiles to Vulkan's logical addressing, where no pointer is stored in memory: a struct
type with a pointer member in a ``__global`` buffer (GPUVerify's ``test_part_load_store``:
``q2[i].p = q1[i].p;``, ``q[i].p = p;``) is refused. Where the kernel never uses such a member
as a pointer — it only stores a pointer into it or copies it to another such member — the
member is only bytes moved: the source is rewritten (line numbers kept) so that each pointer
member is a ``ulong`` (a pointer of the spir64 target: the same size and alignment, so the same
layout and the same accesses), a copy stays a copy, and a store writes any value
(``((void)(p), (ulong)__kl_undefined())``: the stored pointer evaluated for its effects, then a
value the engine reads as any value, :mod:`kernellab.verify.prove.undefined`). Any value
over-approximates the address, so a proof of the rewritten kernel is one of the source; every
other use of such a member (read into a pointer, dereferenced, compared, its address taken, an
initialiser list of the struct) leaves the source as it is and the proof ``unknown``.

The uses are read from clang's AST (``-ast-dump=json``) of the text clspv compiles; the access
guard (:mod:`kernellab.verify.prove.kept`) then checks the rewritten module against the
*original* source's IR, as for every module.
"""
from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernellab.records import dataclass
from kernellab.verify.prove import undefined

#: the integer a pointer member becomes: a spir64 pointer's size and alignment
BITS = "ulong"
#: what a store of a pointer into such a member becomes (``{}``: the stored expression)
STORED = f"((void)({{}}), ({BITS}){undefined.FUNCTION}())"

#: a pointer type, perhaps an array of them: ``__global int *``, ``__global int *[5]``
_POINTER = re.compile(r"[^()\[\]*]*(?:\*\s*(?:const|volatile|restrict|__restrict)?\s*)+((?:\[\d+\])*)")
#: the address-space qualifiers a member's type may start with through a macro (EVERY_ACCESS's)
_QUALIFIER_MACROS = {"__global", "global", "__local", "local", "__constant", "constant"}
#: a vector or scalar type, whose initialiser lists give no pointer member a value (clang writes
#: ``short __attribute__((ext_vector_type(2)))`` for ``short2``)
_NO_MEMBERS = re.compile(r"(?:(?:const|volatile|__private|__global|__local|__constant|unsigned|signed) )*"
                         r"(?:u?char|u?short|u?int|u?long|char|short|int|long|float|double|half|bool|_Bool)"
                         r"(?:\d+| __attribute__\(\(ext_vector_type\(\d+\)\)\))?")


@dataclass
class Rewritten:
    """The source with its pointer members made integers (``text``), or why not (``reason``)."""

    text: str | None
    reason: str = ""
    #: a pointer member is used as a pointer (``reason`` names the use), not merely none found
    refused: bool = False
    #: the struct types rewritten (``struct a``)
    structs: tuple[str, ...] = ()


NEWLINE = b"\n"


class Refused(Exception):
    pass


@dataclass
class Place:
    """A source location of clang's JSON AST: the file it lies in, its byte offset and its token's
    length; ``macro``: where it came from a macro, its expansion (``arg``: from a macro's argument)."""

    file: str
    offset: int
    length: int
    macro: bool = False
    arg: bool = False


class Reader:
    """Walks clang's JSON AST in the order it was written, which decides what each location's
    ``file`` is (the dumper writes it only where it changes)."""

    def __init__(self) -> None:
        self.file = ""
        self.parent: dict[int, Any] = {}
        self.begin: dict[int, Place | None] = {}
        self.end: dict[int, Place | None] = {}
        self.nodes: list[Any] = []

    def bare(self, loc: dict[str, Any]) -> Place | None:
        if "file" in loc:
            self.file = loc["file"]
        if "offset" not in loc:
            return None
        return Place(self.file, loc["offset"], loc.get("tokLen", 0))

    def place(self, loc: dict[str, Any] | None) -> Place | None:
        if not loc:
            return None
        if "spellingLoc" in loc or "expansionLoc" in loc:
            self.bare(loc.get("spellingLoc", {}))
            got = self.bare(loc.get("expansionLoc", {}))
            if got is not None:
                got.macro, got.arg = True, bool(loc.get("isMacroArgExpansion"))
            return got
        return self.bare(loc)

    def walk(self, node: Any, parent: Any = None) -> None:
        key = id(node)
        self.nodes.append(node)
        self.parent[key] = parent
        self.place(node.get("loc"))
        rng = node.get("range") or {}
        self.begin[key] = self.place(rng.get("begin"))
        self.end[key] = self.place(rng.get("end"))
        for child in node.get("inner", ()):
            if isinstance(child, dict):
                self.walk(child, node)


def type_text(node: Any) -> str:
    t = node.get("type") or {}
    return str(t.get("desugaredQualType") or t.get("qualType") or "")


def pointer_suffix(type_text: str) -> str | None:
    """The array suffix (``"[5]"``, ``""``) of a pointer type or an array of pointers, None for any
    other type."""
    m = _POINTER.fullmatch(type_text.strip())
    return m.group(1) if m else None


Edit = tuple[int, int, str]


class _Members:
    """The pointer members of a translation unit's structs and the edits that make them bits."""

    def __init__(self, ast: dict[str, Any], data: bytes, main: str, source_start: int) -> None:
        self.r = Reader()
        self.r.walk(ast)
        self.data, self.main, self.source_start = data, main, source_start
        self.fields: dict[str, Any] = {}
        self.structs: list[str] = []
        self.edits: list[Edit] = []

    def line(self, place: Place | None) -> str:
        if place is None:
            return "a line clang gave none"
        return f"line {self.data.count(NEWLINE, self.source_start, place.offset) + 1}"

    def where(self, node: Any) -> str:
        return self.line(self.r.begin[id(node)])

    def in_source(self, b: Place | None, e: Place | None) -> bool:
        return b is not None and e is not None and b.file == self.main and e.file == self.main \
            and not e.macro and b.offset >= self.source_start

    def declare(self, record: Any) -> None:
        """Each pointer member of ``record`` declared as bits."""
        starts = {start for start, _, _ in self.edits}
        for f in record.get("inner", ()):
            t = type_text(f)
            if f.get("kind") != "FieldDecl" or "*" not in t:
                continue
            suffix = pointer_suffix(t)
            b, e = self.r.begin[id(f)], self.r.end[id(f)]
            if suffix is None:
                raise Refused(f"a member {f.get('name')!r} of type {t!r} ({self.line(b)})")
            # a member's type may start with an address space EVERY_ACCESS defines as a macro
            if not self.in_source(b, e) or b is None or e is None or (b.macro and self.data[
                    b.offset:b.offset + b.length].decode(errors="replace") not in _QUALIFIER_MACROS):
                raise Refused(f"a pointer member {f.get('name')!r} declared through a macro or outside the "
                               f"source ({self.line(b)})")
            if b.offset in starts:  # `int *p, *q;`: one type for two members
                raise Refused(f"pointer members declared together ({self.line(b)})")
            starts.add(b.offset)
            declared = self.data[b.offset:e.offset + e.length]
            if b"*" not in declared or not re.sub(rb"\s", b"", declared).endswith(f"{f['name']}{suffix}".encode()):
                raise Refused(f"a pointer member {f.get('name')!r} not found where clang's AST said ({self.line(b)})")
            self.fields[f["id"]] = f
            self.edits.append((b.offset, e.offset + e.length, f"{BITS} {f['name']}{suffix}"))
            name = f"{record.get('tagUsed', 'struct')} {record.get('name', '(unnamed)')}"
            if name not in self.structs:
                self.structs.append(name)

    def up(self, node: Any) -> tuple[Any, Any]:
        """``node`` with the parentheses around it, and what holds them."""
        parent = self.r.parent[id(node)]
        while parent is not None and parent.get("kind") == "ParenExpr":
            node, parent = parent, self.r.parent[id(parent)]
        return node, parent

    def lvalue(self, node: Any) -> Any:
        """The lvalue of one pointer a member use names (the member, or an element of an array
        member); None for no such member, False for an array member not indexed."""
        if node.get("kind") != "MemberExpr" or node.get("referencedMemberDecl") not in self.fields:
            return None
        if not pointer_suffix(type_text(self.fields[node["referencedMemberDecl"]])):
            return node
        node, parent = self.up(node)
        if parent is None or parent.get("castKind") != "ArrayToPointerDecay":
            return False
        node, parent = self.up(parent)
        return parent if parent is not None and parent.get("kind") == "ArraySubscriptExpr" else False

    def is_member(self, node: Any) -> bool:
        """Whether ``node`` (an assignment's side) is such a member, or an element of one."""
        node = unparen(node)
        if node.get("kind") == "MemberExpr":
            return bool(self.lvalue(node))
        if node.get("kind") == "ArraySubscriptExpr":
            return any(c.get("castKind") == "ArrayToPointerDecay" and bool(self.lvalue(unparen(c["inner"][0])))
                       for c in node.get("inner", ()))
        return False

    def is_read(self, node: Any) -> bool:
        node = unparen(node)
        return node.get("castKind") == "LValueToRValue" and self.is_member(node["inner"][0])

    def use(self, node: Any) -> None:
        """Check one use of a member (``node``, a MemberExpr of one): a store or a copy."""
        lv = self.lvalue(node)
        if lv is None:
            return
        if lv is False:
            raise Refused(f"an array of pointers used whole ({self.where(node)})")
        target, parent = self.up(lv)
        if _assigns(parent) and parent["inner"][0] is target:
            if not _statement(parent, self.r.parent[id(parent)]):
                raise Refused(f"a store of a pointer member whose value is used ({self.where(node)})")
            rhs = parent["inner"][1]
            if not self.is_read(rhs):  # a copy between two such members moves the bits as they are
                self.stored(rhs)
            return
        if parent is not None and parent.get("castKind") == "LValueToRValue":
            reader, user = self.up(parent)
            if _assigns(user) and user["inner"][1] is reader and self.is_member(user["inner"][0]):
                return
        raise Refused(f"a pointer member used as a pointer ({self.where(node)})")

    def stored(self, rhs: Any) -> None:
        """The pointer ``rhs`` a store writes, evaluated, then any value stored in its place."""
        b, e = self.r.begin[id(rhs)], self.r.end[id(rhs)]
        if not self.in_source(b, e) or b is None or e is None or b.macro:
            raise Refused(f"a stored pointer written through a macro ({self.line(b)})")
        if not self.data[self.source_start:b.offset].rstrip().endswith(b"="):  # where clang's AST said
            raise Refused(f"a stored pointer not found after its '=' ({self.line(b)})")
        self.edits.append((b.offset, b.offset, "((void)("))
        self.edits.append((e.offset + e.length, e.offset + e.length, f"), ({BITS}){undefined.FUNCTION}())"))


def _statement(node: Any, parent: Any) -> bool:
    """Whether ``node`` is a statement of its own, whose value nothing uses: one of a block, or
    the body of an ``if``, ``for`` or ``while`` (their last parts; an ``if`` with an ``else`` has
    two)."""
    if parent is None:
        return False
    kind, inner = parent.get("kind"), parent.get("inner", [])
    if kind == "CompoundStmt":
        return True
    if kind in ("IfStmt", "ForStmt", "WhileStmt") and inner:
        bodies = inner[-2:] if kind == "IfStmt" and parent.get("hasElse") else inner[-1:]
        return any(b is node for b in bodies)
    return False


def _assigns(node: Any) -> bool:
    return node is not None and node.get("kind") == "BinaryOperator" and node.get("opcode") == "="


def rewrite(ast: dict[str, Any], data: bytes, main: str, source_start: int) -> tuple[list[Edit], list[str]]:
    """The edits (byte offsets in ``data``, the file ``main`` clang compiled, each at or past
    ``source_start``: start, end, new text) that make every pointer member of a struct an
    integer, and the structs they change. Raises :class:`Refused` naming what cannot be."""
    m = _Members(ast, data, main, source_start)
    for node in m.r.nodes:
        if node.get("kind") == "RecordDecl":
            m.declare(node)
    if not m.fields:
        return [], []
    for node in m.r.nodes:
        if node.get("kind") == "InitListExpr" and not _NO_MEMBERS.fullmatch(type_text(node).strip()):
            # it may give a pointer member its value (`struct a x = {p, 1};`)
            raise Refused(f"an initialiser list of a struct or array ({m.where(node)})")
        m.use(node)
    return m.edits, m.structs


def unparen(node: Any) -> Any:
    while node.get("kind") == "ParenExpr":
        node = node["inner"][0]
    return node


def clang_ast(annotated: Path, options: list[str], include: Path) -> dict[str, Any]:
    """clang's AST of the annotated source (the text clspv compiles), as JSON."""
    from kernellab import tools
    from kernellab.compile.opencl_stages import DEFAULT_CL_STD

    clang = tools.require("clang", "reading which struct members hold pointers (verify --prove)")
    std = [] if any(o.startswith("-cl-std=") for o in options) else [DEFAULT_CL_STD]
    kept = [o for o in options if o not in ("-O0", "-g") and not o.startswith("-O")]
    args = ["-x", "cl", "-Xclang", "-finclude-default-header", *std, *kept, f"-I{include}", "-fsyntax-only",
            "-Xclang", "-ast-dump=json", "-target", "spir64", annotated.name]
    out = clang.run(args, cwd=annotated.parent, what="reading the kernel's AST (pointer members)").stdout
    return json.loads(out)


#: another rewrite, tried where the members cannot be bits: the AST, the text, the file's name and
#: where the source starts in it, to edits (:mod:`kernellab.verify.prove.pointer_arguments`)
Fallback = Callable[[dict[str, Any], bytes, str, int], list[Edit]]


def rewritten(text: str, annotated: str, source_start: int, options: list[str], include: Path,
              fallback: Fallback | None = None) -> Rewritten:
    """``text`` (the source; ``annotated``: what clspv compiles, whose bytes from ``source_start``
    on are the source's lines as the annotation pass left them) with its pointer members made
    integers, or why it cannot be; where they cannot, ``fallback``'s edits where it has any."""
    from kernellab.errors import ToolError

    data = annotated.encode()
    with tempfile.TemporaryDirectory(prefix="kl-prove-") as tmp:
        path = Path(tmp) / "kernel.cl"
        path.write_bytes(data)
        try:
            ast = clang_ast(path, options, include)
        except (ToolError, ValueError) as exc:
            return Rewritten(None, f"clang could not read the kernel's AST: {str(exc).splitlines()[0][:120]}")
    try:
        edits, structs = rewrite(ast, data, path.name, source_start)
    except Refused as exc:
        if fallback is None:
            return Rewritten(None, str(exc), refused=True)
        try:
            edits, structs = fallback(ast, data, path.name, source_start), ["a struct argument"]
        except Refused as why:
            return Rewritten(None, str(why), refused=True)
        if not edits:
            return Rewritten(None, str(exc), refused=True)
    if not edits:
        return Rewritten(None, "no struct member holds a pointer")
    return _applied(text, data, source_start, edits, structs)


def _applied(text: str, data: bytes, source_start: int, edits: list[Edit],
             structs: list[str]) -> Rewritten:
    """The edits, made at offsets of the annotated text, made on ``text`` line by line: each
    line they touch must be the source's own (the annotation pass left it as written)."""
    source = text.split("\n")
    lines: dict[int, list[Edit]] = {}
    for start, end, new in edits:
        index = data.count(b"\n", source_start, start)
        first = data.rfind(b"\n", 0, start) + 1
        if data.count(b"\n", start, end) or index >= len(source):
            return Rewritten(None, f"a pointer member's use spans lines (line {index + 1})", refused=True)
        stop = data.find(b"\n", start)
        shown = data[first:stop if stop >= 0 else len(data)]
        if shown != source[index].encode():
            return Rewritten(None, f"line {index + 1} was changed by the annotation pass", refused=True)
        lines.setdefault(index, []).append((start - first, end - first, new))
    for index, items in lines.items():
        raw = source[index].encode()
        for start, end, new in sorted(items, key=lambda e: (e[0], e[1]), reverse=True):
            raw = raw[:start] + new.encode() + raw[end:]
        source[index] = raw.decode(errors="replace")
    return Rewritten("\n".join(source), structs=tuple(structs))
