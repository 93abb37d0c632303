"""Did clspv keep every memory access the OpenCL C source makes? (docs/verify-prove.md, "Accesses
clspv deletes")

clspv deletes a load whose value is never used even at ``-O0``; a read that races is a defect
all the same, so a proof over such a module would be unsound. The guard: clang at ``-O0 -g``
(no optimisation: every access the source writes is an instruction) counts the loads, stores
and atomics through ``__global`` and ``__local`` pointers (SPIR address spaces 1 and 3) per
source line, in the kernel and every function it calls; clspv's module counts the same through
StorageBuffer and Workgroup pointers. A line with fewer accesses in the module than in clang's
IR is an access lost, and the proof is then ``unknown``.

Reads and writes are counted apart (a lost read is not hidden by an extra write); an atomic
counts as a write. clspv may split an access into several (a struct, a vector), never the other
way at ``-O0``, so more in the module is no alarm.

Only accesses a run can reach count, on both sides: in the module, those of blocks a path from
the function's entry reaches; in clang's IR, the same, except the edges of branches on a
comparison with a NaN, which is false (or true) for every value in IEEE 754 arithmetic and which
clspv folds (``if (x == NAN) out[i] = -1;``: the store is never made, and clspv deletes it).
"""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from kernellab.spirvsim.module import successors
from kernellab.verify.prove.annotations import INSTANTIATION_LINES, split_top_level

#: (source line, "read" | "write")
Key = tuple[int, str]

_DEFINE = re.compile(r"^define\b.*?@([\w.$]+)\(")
_CALL = re.compile(r"\bcall\b[^@]*@([\w.$]+)\(")
_DBG = re.compile(r"!dbg !(\d+)")
_LOCATION = re.compile(r"^!(\d+) = (?:distinct )?!DILocation\(line: (\d+)")
#: a typed operand's type, up to its first address space: ``i8 addrspace(1)* align 4 %d``
_POINTER_TYPE = re.compile(r"^[^(]*?addrspace\((\d+)\)(\*+)")
_ACCESS = re.compile(r"^\s*(?:%[\w.$]+ = )?(load|store|atomicrmw|cmpxchg|call)\b(.*)$")
_MEMORY_INTRINSIC = re.compile(r"@llvm\.(memcpy|memmove|memset)\.")


def _operands(text: str) -> list[str]:
    """``text`` split at its top-level commas (not those inside (), [], {} or <>)."""
    return split_top_level(text, "([{<", ")]}>")


def _shared(operand: str) -> bool:
    """Whether a typed operand (``i32 addrspace(1)* %p``) is a __global or __local pointer."""
    m = _POINTER_TYPE.match(operand)
    return m is not None and m.group(1) in ("1", "3") and m.group(2) == "*"


def _instruction_accesses(op: str, rest: str) -> list[str]:
    """The kinds ("read", "write") of the __global/__local accesses of one LLVM instruction."""
    rest = re.sub(r"^\s*(atomic|volatile|weak)\b", "", rest).strip()
    rest = re.sub(r"^\s*(atomic|volatile)\b", "", rest).strip()
    if op == "call":
        m = _MEMORY_INTRINSIC.search(rest)
        if not m:
            return []
        args = _operands(rest[rest.index("(", m.end()) + 1:rest.rindex(")")])
        kinds = ["write"] if args and _shared(args[0]) else []
        if m.group(1) != "memset" and len(args) > 1 and _shared(args[1]):
            kinds.append("read")
        return kinds
    parts = _operands(rest)
    if op == "load":
        return ["read"] if len(parts) > 1 and _shared(parts[1]) else []
    if op == "store":
        return ["write"] if len(parts) > 1 and _shared(parts[1]) else []
    # atomicrmw <op> <ptr>, ... / cmpxchg <ptr>, ...
    first = parts[0].split(" ", 1)[1] if op == "atomicrmw" and " " in parts[0] else parts[0]
    return ["write"] if _shared(first) else []


def llvm_accesses(ir: str, kernel: str) -> Counter[Key]:
    """The __global/__local accesses of ``kernel`` and every function it calls in clang's textual
    IR, by source line (0: no line)."""
    lines = ir.splitlines()
    locations = {int(m.group(1)): int(m.group(2)) for m in map(_LOCATION.match, lines) if m}
    bodies: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lines:
        m = _DEFINE.match(line)
        if m:
            current = bodies.setdefault(m.group(1), [])
        elif line.startswith("}"):
            current = None
        elif current is not None:
            current.append(line)
    out: Counter[Key] = Counter()
    seen: set[str] = set()
    todo = [kernel]
    while todo:
        name = todo.pop()
        if name in seen or name not in bodies:
            continue
        seen.add(name)
        for line in reachable_lines(bodies[name]):
            todo += _CALL.findall(line)
            m = _ACCESS.match(line)
            if not m:
                continue
            dbg = _DBG.search(line)
            where = locations.get(int(dbg.group(1)), 0) if dbg else 0
            code = line[:dbg.start()] if dbg else line
            m = _ACCESS.match(code.rstrip().rstrip(","))
            if m:
                body = re.sub(r",\s*align \d+$", "", m.group(2).strip())
                for kind in _instruction_accesses(m.group(1), body):
                    out[(where, kind)] += 1
    return out


_LABEL = re.compile(r"^([-\w.$]+):")
_LABEL_USE = re.compile(r"\blabel %([-\w.$]+)")
_FCMP = re.compile(r"^\s*(%[-\w.$]+) = fcmp (\w+) (?:half|float|double) ([^,]+), ([^,]+?)(?:,|$)")
_BRANCH = re.compile(r"^\s*br i1 (%[-\w.$]+|true|false), label %([-\w.$]+), label %([-\w.$]+)")
#: fcmp's predicates, by what they give when an operand is a NaN (IEEE 754: every ordered
#: comparison with a NaN is false, every unordered one true); ``false`` and ``true`` give themselves
_PREDICATES = {**dict.fromkeys(("oeq", "ogt", "oge", "olt", "ole", "one", "ord", "false"), False),
               **dict.fromkeys(("ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true"), True)}


def _nan(literal: str) -> bool:
    """Whether an LLVM floating-point literal is a NaN: ``0x`` and 16 hex digits (a double's bits,
    how LLVM writes float and double constants) or ``0xH`` and 4 (a half's)."""
    literal = literal.strip()
    if re.fullmatch(r"0x[0-9A-Fa-f]{16}", literal):
        bits = int(literal[2:], 16)
        return (bits >> 52) & 0x7FF == 0x7FF and bits & ((1 << 52) - 1) != 0
    if re.fullmatch(r"0xH[0-9A-Fa-f]{4}", literal):
        bits = int(literal[3:], 16)
        return (bits >> 10) & 0x1F == 0x1F and bits & 0x3FF != 0
    return False


def reachable_lines(body: list[str]) -> list[str]:
    """The lines of a function's body (clang's textual IR) in blocks a run can reach: from the
    entry block, along every edge but those of a branch on a comparison that is false (or true)
    whatever the values: ``x == NAN`` (``fcmp oeq double %x, 0x7FF8...``), false in IEEE 754
    arithmetic for every ``x``, which clspv folds, deleting the code it guards (GPUVerify's
    ``misc/pass/misc7``). A comparison with fast-math flags (``fcmp nnan ...``, where a NaN
    operand makes it poison) is not taken as constant."""
    blocks: dict[str, list[str]] = {}
    order: list[str] = []
    current = ""
    for line in body:
        m = _LABEL.match(line)
        if m:
            current = m.group(1)
        if current not in blocks:
            blocks[current] = []
            order.append(current)
        blocks[current].append(line)
    known: dict[str, bool] = {"true": True, "false": False}
    for line in body:
        m = _FCMP.match(line)
        if m and m.group(2) in _PREDICATES and (_nan(m.group(3)) or _nan(m.group(4))):
            known[m.group(1)] = _PREDICATES[m.group(2)]
    todo, seen = [order[0]] if order else [], set()
    while todo:
        name = todo.pop()
        if name in seen or name not in blocks:
            continue
        seen.add(name)
        for line in blocks[name]:
            m = _BRANCH.match(line)
            if m and m.group(1) in known:
                todo.append(m.group(2) if known[m.group(1)] else m.group(3))
            else:
                todo += _LABEL_USE.findall(line)
    return [line for name in order if name in seen for line in blocks[name]]


_SPIRV_READS = ("OpLoad", "OpAtomicLoad")
_SHARED_STORAGE = ("StorageBuffer", "Workgroup", "PhysicalStorageBuffer")


def spirv_accesses(module: Any) -> Counter[Key]:
    """The StorageBuffer/Workgroup accesses of the entry point and every function it calls in a
    decoded module, by source line (0: no line)."""
    def storage(pointer: int) -> str:
        t = module.types.get(module.type_of.get(pointer, -1))
        return t.storage if t is not None else ""

    out: Counter[Key] = Counter()
    seen: set[int] = set()
    todo = [module.entry_function]
    while todo:
        fid = todo.pop()
        if fid in seen or fid not in module.functions:
            continue
        seen.add(fid)
        fn = module.functions[fid]
        for block in (fn.blocks[label] for label in _reached_blocks(fn)):
            for inst in block.insts:
                where = inst.line[1] if inst.line else 0
                for pointer, kind in _spirv_instruction_accesses(inst):
                    if storage(pointer) in _SHARED_STORAGE:
                        out[(where, kind)] += 1
                if inst.op == "OpFunctionCall":
                    todo.append(inst.words[2])
    return out


def _reached_blocks(fn: Any) -> set[int]:
    """The labels of the blocks of a decoded function a path from its entry reaches: an access in
    another is never made (clspv leaves a kernel's body unreachable behind an entry block that
    returns at once where it ends in ``while (true) {}``, docs/verify-prove.md)."""
    todo, seen = [fn.entry], set()
    while todo:
        label = todo.pop()
        if label in seen or label not in fn.blocks:
            continue
        seen.add(label)
        todo += successors(fn.blocks[label])
    return seen


def _spirv_instruction_accesses(inst: Any) -> list[tuple[int, str]]:
    if inst.op in _SPIRV_READS:
        return [(inst.words[2], "read")]
    if inst.op in ("OpStore", "OpAtomicStore"):
        return [(inst.words[0], "write")]
    if inst.op in ("OpCopyMemory", "OpCopyMemorySized"):
        return [(inst.words[0], "write"), (inst.words[1], "read")]
    if inst.op.startswith("OpAtomic"):
        return [(inst.words[2], "write")]
    return []


def lost(source: Counter[Key], module: Counter[Key]) -> Counter[Key]:
    """The accesses of ``source`` that ``module`` lacks, by line and kind. clspv's line of an
    access may be 0 (no OpLine): those make up for a lack on any line of the same kind. The lines
    of instantiated barrier invariants (no accesses of the kernel's) are left out."""
    source = Counter({k: n for k, n in source.items() if k[0] < INSTANTIATION_LINES})
    module = Counter({k: n for k, n in module.items() if k[0] < INSTANTIATION_LINES})
    missing = Counter({k: n - module.get(k, 0) for k, n in source.items() if k[0] and n > module.get(k, 0)})
    for kind in ("read", "write"):
        spare = module.get((0, kind), 0) - source.get((0, kind), 0)
        for key in sorted(k for k in missing if k[1] == kind):
            take = min(max(spare, 0), missing[key])
            missing[key] -= take
            spare -= take
    missing += Counter({k: n - module.get(k, 0) for k, n in source.items() if not k[0] and n > module.get(k, 0)})
    return +missing


def clang_ir(annotated: Path, options: list[str], include: Path) -> str:
    """clang ``-O0 -g`` of the annotated source (the text clspv compiled) as textual LLVM IR for
    the SPIR target. Raises :class:`~kernellab.errors.MissingToolError` without clang."""
    from kernellab import tools
    from kernellab.compile.opencl_stages import DEFAULT_CL_STD

    clang = tools.require("clang", "checking that clspv kept every memory access (verify --prove)")
    std = [] if any(o.startswith("-cl-std=") for o in options) else [DEFAULT_CL_STD]
    kept = [o for o in options if o not in ("-O0", "-g") and not o.startswith("-O")]
    args = ["-x", "cl", "-Xclang", "-finclude-default-header", *std, *kept, f"-I{include}", "-O0", "-g",
            "-S", "-emit-llvm", "-target", "spir64", annotated.name, "-o", "-"]
    return clang.run(args, cwd=annotated.parent, what="compiling OpenCL C to LLVM IR (access check)").stdout.decode()


def describe(missing: Counter[Key]) -> str:
    """The reason of an ``unknown`` verdict for accesses lost."""
    n = sum(missing.values())
    where = ", ".join(f"line {line}" if line else "a line clang gave none" for line in sorted({k[0] for k in missing}))
    kinds = "unused loads" if all(k[1] == "read" for k in missing) else "accesses"
    return f"clspv removed {n} memory access{'es' if n != 1 else ''} the source makes ({kinds}; {where}): not proven"
