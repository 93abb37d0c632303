"""SPIR-V functions as listings in the IGA JSON schema: labels with CFG edges, instructions with
operands, def/use links and live totals. ``docs/listing.md`` explains each mapping.
"""
from __future__ import annotations

from typing import Any

from kernellab.listing.disasm import format_literal
from kernellab.listing.spirv import Instruction, Module, Operand
from kernellab.records import dataclass

#: the listing schema version written (the IGA JSON format's own)
LISTING_VERSION = "2.0"
#: register-file name of function-local SSA values, and of module-scope variables
LOCAL_FILE = "v"
GLOBAL_FILE = "g"

_CONSTANT_OPS = frozenset({
    "OpConstant", "OpConstantTrue", "OpConstantFalse", "OpConstantComposite", "OpConstantNull",
    "OpSpecConstant", "OpSpecConstantTrue", "OpSpecConstantFalse", "OpSpecConstantComposite",
    "OpSpecConstantOp", "OpConstantSampler", "OpUndef",
})


@dataclass(frozen=True)
class ListingOptions:
    defs: bool = False
    pcs: bool = False
    hex_floats: bool = False
    #: e.g. ``vulkan1.2``; inferred from the module when empty
    target_env: str = ""


def target_env_of(module: Module) -> str:
    """The environment the module was made for: glslang records it, else the capabilities tell."""
    for inst in module.instructions:
        if inst.opname == "OpModuleProcessed":
            text = str(inst.operands[0].value)
            if text.startswith("target-env ") and not text.startswith("target-env spirv"):
                return text.split(" ", 1)[1]
        elif inst.opname == "OpFunction":
            break
    if "Kernel" in module.capabilities:
        return "opencl"
    return "vulkan" if "Shader" in module.capabilities else "universal"


class _Names:
    """Readable names for types, values and constants, in the style of spirv-dis's friendly names."""

    def __init__(self, module: Module, hex_floats: bool):
        self.m = module
        self.hex_floats = hex_floats
        self._types: dict[int, str] = {}
        self._consts: dict[int, str] = {}
        self.entries = entry_point_names(module)

    def type(self, tid: int | None) -> str:
        if tid is None:
            return ""
        cached = self._types.get(tid)
        if cached is None:
            self._types[tid] = f"%{tid}"  # guards recursive pointer types
            cached = self._types[tid] = self._type(tid)
        return cached

    def _type(self, tid: int) -> str:
        m = self.m
        t = m.types.get(tid)
        if t is None:
            return m.names.get(tid) or f"%{tid}"
        op = t.op
        if op == "OpTypeVoid":
            return "void"
        if op == "OpTypeBool":
            return "bool"
        if op == "OpTypeInt":
            base = {8: "char", 16: "short", 32: "int", 64: "long"}.get(t.width, f"int{t.width}")
            return base if t.signed else "u" + base
        if op == "OpTypeFloat":
            return {16: "half", 32: "float", 64: "double"}.get(t.width, f"fp{t.width}")
        if op == "OpTypeVector":
            return f"v{t.width}{self.type(t.args[0])}"
        if op == "OpTypeMatrix":
            col = self.type(t.args[0])
            return f"mat{t.width}{col}"
        if op == "OpTypePointer":
            return f"_ptr_{t.storage}_{self.type(t.args[0])}"
        if op == "OpTypeRuntimeArray":
            return f"_runtimearr_{self.type(t.args[0])}"
        if op == "OpTypeArray":
            length = self.m.defs.get(t.args[1])
            ltype = self.type(length.type) + "_" if length is not None and length.type is not None else ""
            return f"_arr_{self.type(t.args[0])}_{ltype}{self.constant(t.args[1])}"
        if tid in m.names and m.names[tid]:
            return m.names[tid]
        if op == "OpTypeStruct":
            return f"_struct_{tid}"
        if op == "OpTypeFunction":
            return f"_fn_{tid}"
        return f"{op[6:].lower()}_{tid}"

    def constant(self, cid: int) -> str:
        cached = self._consts.get(cid)
        if cached is None:
            cached = self._consts[cid] = self._constant(cid)
        return cached

    def _constant(self, cid: int) -> str:
        inst = self.m.defs.get(cid)
        if inst is None:
            return f"%{cid}"
        op = inst.opname
        if op in ("OpConstant", "OpSpecConstant"):
            return format_literal(inst.operands[0], self.hex_floats)
        if op in ("OpConstantTrue", "OpSpecConstantTrue"):
            return "true"
        if op in ("OpConstantFalse", "OpSpecConstantFalse"):
            return "false"
        if op == "OpConstantNull":
            return "null"
        if op == "OpUndef":
            return "undef"
        if op in ("OpConstantComposite", "OpSpecConstantComposite"):
            return "{" + ", ".join(self.constant(int(o.value)) for o in inst.operands) + "}"
        if op == "OpSpecConstantOp":
            args = " ".join(self.constant(int(o.value)) if o.role == "id" else str(o.value) for o in inst.operands)
            return f"({args})"
        return f"%{cid}"

    def value(self, vid: int) -> str:
        name = self.m.names.get(vid)
        return name if name else f"%{vid}"


class _Function:
    """One function's instructions grouped in blocks, with the indices the listing uses."""

    def __init__(self, module: Module, start: int, end: int):
        insts = module.instructions
        self.header = insts[start]
        self.params: list[Instruction] = []
        self.blocks: list[tuple[Instruction, list[Instruction]]] = []
        self.end = insts[end] if end < len(insts) else None
        #: instruction -> its comment location (file id or name, line) from OpLine/DebugLine
        self.lines: dict[int, tuple[str, int]] = {}
        current: tuple[str, int] | None = None
        for inst in insts[start + 1:end]:
            op = inst.opname
            if op == "OpFunctionParameter":
                self.params.append(inst)
                continue
            if op == "OpLabel":
                self.blocks.append((inst, []))
                continue
            if op == "OpLine":
                fid, line = int(inst.operands[0].value), int(inst.operands[1].value)
                current = (module.strings.get(fid, f"%{fid}"), line)
                continue
            if op == "OpNoLine":
                current = None
                continue
            if op == "OpExtInst" and inst.ext_set.startswith("NonSemantic."):
                if inst.ext_op == "DebugLine":
                    current = _debug_line(module, inst) or current
                elif inst.ext_op == "DebugNoLine":
                    current = None
                continue
            if not self.blocks:
                continue  # malformed: an instruction before the first label; spirv-val rejects it
            self.blocks[-1][1].append(inst)
            if current is not None:
                self.lines[id(inst)] = current
            if inst.opname in _TERMINATORS:
                current = None  # OpLine's scope ends with its block


_TERMINATORS = frozenset({
    "OpBranch", "OpBranchConditional", "OpSwitch", "OpReturn", "OpReturnValue", "OpKill", "OpUnreachable",
    "OpTerminateInvocation", "OpIgnoreIntersectionKHR", "OpTerminateRayKHR", "OpEmitMeshTasksEXT",
})


def _debug_line(module: Module, inst: Instruction) -> tuple[str, int] | None:
    """(file, line) of a NonSemantic.Shader.DebugInfo.100 DebugLine (its operands are ids)."""
    ids = [int(o.value) for o in inst.operands if o.role == "id"]
    if len(ids) < 3:
        return None
    source = module.defs.get(ids[1])
    line_const = module.defs.get(ids[2])
    if source is None or source.ext_op != "DebugSource" or line_const is None \
            or line_const.opname != "OpConstant" or not isinstance(line_const.operands[0].value, int):
        return None  # not what the debug-info grammar says: no line rather than a wrong one
    src_ids = [int(o.value) for o in source.operands if o.role == "id"]
    file = module.strings.get(src_ids[1], "") if len(src_ids) > 1 else ""
    return (file, line_const.operands[0].value)


def _functions(module: Module) -> list[_Function]:
    out = []
    start = None
    for i, inst in enumerate(module.instructions):
        if inst.opname == "OpFunction":
            start = i
        elif inst.opname == "OpFunctionEnd" and start is not None:
            out.append(_Function(module, start, i))
            start = None
    return out


def source_texts(module: Module) -> dict[str, list[str]]:
    """File name -> its source lines, where OpSource or DebugSource embed the text."""
    texts: dict[str, list[str]] = {}
    last: str | None = None
    for inst in module.instructions:
        if inst.opname == "OpSource":
            ids = [int(o.value) for o in inst.operands if o.role == "id"]
            strs = [str(o.value) for o in inst.operands if o.role == "string"]
            last = None
            if ids and strs:
                last = module.strings.get(ids[0], "")
                texts[last] = [strs[0]]
        elif inst.opname == "OpSourceContinued" and last is not None:
            texts[last].append(str(inst.operands[0].value))
        elif inst.opname == "OpExtInst" and inst.ext_op == "DebugSource":
            ids = [int(o.value) for o in inst.operands if o.role == "id"]
            if len(ids) >= 3 and module.strings.get(ids[1]) is not None and ids[2] in module.strings:
                texts.setdefault(module.strings[ids[1]], [module.strings[ids[2]]])
        elif inst.opname == "OpFunction":
            break
    return {name: _numbered_lines("".join(parts)) for name, parts in texts.items()}


def _numbered_lines(text: str) -> list[str]:
    """Source lines by line number (index 0 = line 1), honouring ``#line N`` directives: glslang
    embeds the source behind a few ``// OpModuleProcessed`` lines and a ``#line 1``."""
    out: list[str] = []
    number = 1
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#line"):
            parts = stripped.split()
            if len(parts) >= 2 and parts[1].isdigit():
                number = int(parts[1])
                continue
        while len(out) < number:
            out.append("")
        out[number - 1] = line
        number += 1
    return out


def entry_point_names(module: Module) -> dict[int, str]:
    out: dict[int, str] = {}
    for inst in module.instructions:
        if inst.opname == "OpEntryPoint":
            out.setdefault(int(inst.operands[1].value), str(inst.operands[2].value))
        elif inst.opname == "OpFunction":
            break
    return out


def function_name(module: Module, fid: int, entries: dict[int, str] | None = None) -> str:
    """An entry point's name, else the function's OpName, else ``%id``."""
    entries = entry_point_names(module) if entries is None else entries
    return entries.get(fid) or module.names.get(fid) or f"%{fid}"


def build_listings(module: Module, options: ListingOptions = ListingOptions()) -> list[dict[str, Any]]:
    """One listing per function of ``module``, in module order."""
    names = _Names(module, options.hex_floats)
    env = options.target_env or target_env_of(module)
    platform = f"spirv{module.version_string}-{env}"
    texts = source_texts(module)
    return [_listing(module, fn, names, platform, texts, options) for fn in _functions(module)]


def _listing(module: Module, fn: _Function, names: _Names, platform: str, texts: dict[str, list[str]],
             opts: ListingOptions) -> dict[str, Any]:
    m = module
    label_index = {int(label.result): b for b, (label, _) in enumerate(fn.blocks)}  # type: ignore[arg-type]
    ordered = _in_order(fn)
    inst_index = {id(inst): n for n, inst in enumerate(ordered)}
    local_def, value_bit = _local_values(m, ordered, inst_index)
    succs, preds = _control_flow(fn, label_index)
    uses_of, use_mask = _uses(ordered, local_def, value_bit)
    live = _live_totals(fn, ordered, inst_index, label_index, value_bit, use_mask, succs)

    elems: list[dict[str, Any]] = []
    label_name = {lid: names.value(lid) for lid in label_index}

    emitter = _Emitter(m, names, label_name, local_def, uses_of, fn, texts, opts)

    def emit(inst: Instruction) -> None:
        n = inst_index[id(inst)]
        elems.append(emitter.instruction(inst, n, live[n]))

    emit(fn.header)
    for p in fn.params:
        emit(p)
    for b, (label, body) in enumerate(fn.blocks):
        lab: dict[str, Any] = {"kind": "L", "id": b}
        if opts.pcs:
            lab["pc"] = label.offset
        lab["symbol"] = label_name[int(label.result)]  # type: ignore[arg-type]
        if preds[b]:
            lab["preds"] = preds[b]
        if succs[b]:
            lab["succs"] = succs[b]
        elems.append(lab)
        for inst in body:
            emit(inst)
    if fn.end is not None:
        emit(fn.end)
    return {"version": LISTING_VERSION, "platform": platform,
            "function": function_name(m, int(fn.header.result), names.entries),  # type: ignore[arg-type]
            "elems": elems}


def _in_order(fn: _Function) -> list[Instruction]:
    """The function's instructions as listed: header, parameters, each block's body, the end."""
    ordered: list[Instruction] = [fn.header, *fn.params]
    for _, body in fn.blocks:
        ordered.extend(body)
    if fn.end is not None:
        ordered.append(fn.end)
    return ordered


def _local_values(m: Module, ordered: list[Instruction],
                  inst_index: dict[int, int]) -> tuple[dict[int, int], dict[int, int]]:
    """Function-local SSA values (they get def/use links and count toward live totals): each one's
    defining instruction, and its bit in the liveness bitsets."""
    local_def: dict[int, int] = {}
    value_bit: dict[int, int] = {}
    for inst in ordered[1:]:
        if inst.result is not None and inst.type is not None and m.types.get(inst.type, None) is not None \
                and m.types[inst.type].op != "OpTypeVoid":
            local_def[inst.result] = inst_index[id(inst)]
            value_bit[inst.result] = 1 << len(value_bit)
    return local_def, value_bit


def _control_flow(fn: _Function, label_index: dict[int, int]) -> tuple[list[list[int]], list[list[int]]]:
    """Successors and predecessors of each block: a block's successors are the labels its terminator names."""
    succs: list[list[int]] = []
    for _, body in fn.blocks:
        out: list[int] = []
        if body and body[-1].opname in _TERMINATORS:
            for o in body[-1].operands:
                b = label_index.get(int(o.value)) if o.role == "id" else None
                if b is not None and b not in out:
                    out.append(b)
        succs.append(out)
    preds: list[list[int]] = [[] for _ in fn.blocks]
    for b, out in enumerate(succs):
        for s in out:
            if b not in preds[s]:
                preds[s].append(b)
    return succs, preds


def _uses(ordered: list[Instruction], local_def: dict[int, int],
          value_bit: dict[int, int]) -> tuple[dict[int, list[int]], list[int]]:
    """Who uses each local value (instruction numbers), and the bitset of local values each instruction reads."""
    uses_of: dict[int, list[int]] = {v: [] for v in local_def}
    use_mask: list[int] = [0] * len(ordered)
    for n, inst in enumerate(ordered):
        mask = 0
        for o in inst.operands:
            if o.role != "id":
                continue
            v = int(o.value)
            bit = value_bit.get(v)
            if bit is not None:
                if not uses_of[v] or uses_of[v][-1] != n:
                    uses_of[v].append(n)
                mask |= bit
        use_mask[n] = mask
    return uses_of, use_mask


def _live_totals(fn: _Function, ordered: list[Instruction], inst_index: dict[int, int],
                 label_index: dict[int, int], value_bit: dict[int, int], use_mask: list[int],
                 succs: list[list[int]]) -> list[int]:
    """Live SSA values at each instruction: those it reads, defines, or that stay live across it.

    Standard SSA liveness over the CFG with bitsets. A phi's incoming value is live at the end of
    the predecessor it comes from (not at the phi); a phi's result is live from its block's start.
    """
    nblocks = len(fn.blocks)
    def_b = [0] * nblocks
    upward = [0] * nblocks
    phi_defs = [0] * nblocks
    phi_uses = [0] * nblocks  # per predecessor block: values its successors' phis read from it
    for b, (_, body) in enumerate(fn.blocks):
        defs = up = 0
        for inst in body:
            n = inst_index[id(inst)]
            bit = value_bit.get(inst.result, 0) if inst.result is not None else 0
            if inst.opname == "OpPhi":
                phi_defs[b] |= bit
                ops = inst.operands
                for k in range(0, len(ops) - 1, 2):
                    vb = value_bit.get(int(ops[k].value), 0)
                    p = label_index.get(int(ops[k + 1].value))
                    if vb and p is not None:
                        phi_uses[p] |= vb
            else:
                up |= use_mask[n] & ~defs
            defs |= bit
        def_b[b] = defs
        upward[b] = up
    live_in = [0] * nblocks
    live_out = [0] * nblocks
    changed = True
    while changed:
        changed = False
        for b in range(nblocks - 1, -1, -1):
            out = phi_uses[b]
            for s in succs[b]:
                out |= live_in[s] & ~phi_defs[s]
            inn = phi_defs[b] | upward[b] | (out & ~def_b[b])
            if out != live_out[b] or inn != live_in[b]:
                live_out[b], live_in[b] = out, inn
                changed = True

    totals = [0] * len(ordered)
    for b, (_, body) in enumerate(fn.blocks):
        cur = live_out[b]
        for inst in reversed(body):
            n = inst_index[id(inst)]
            bit = value_bit.get(inst.result, 0) if inst.result is not None else 0
            if inst.opname == "OpPhi":
                totals[n] = (cur | bit).bit_count()
                cur &= ~bit
            else:
                totals[n] = (cur | use_mask[n] | bit).bit_count()
                cur = (cur & ~bit) | use_mask[n]
    cur = live_in[0] if nblocks else 0
    for param in reversed(fn.params):
        n = inst_index[id(param)]
        bit = value_bit.get(param.result, 0) if param.result is not None else 0
        totals[n] = (cur | bit).bit_count()
        cur &= ~bit
    totals[0] = cur.bit_count()
    return totals


class _Emitter:
    """Listing elements for one function's instructions. Operand objects for the same <id> are
    identical at every use, so each is built once and shared (the listing is data to serialize)."""

    def __init__(self, m: Module, names: _Names, label_name: dict[int, str], local_def: dict[int, int],
                 uses_of: dict[int, list[int]], fn: _Function, texts: dict[str, list[str]], opts: ListingOptions):
        self.m, self.names, self.label_name, self.local_def = m, names, label_name, local_def
        self.uses_of, self.fn, self.texts, self.opts = uses_of, fn, texts, opts
        self.by_id: dict[int, dict[str, Any]] = {}
        self.comments: dict[tuple[str, int], str] = {}

    def instruction(self, inst: Instruction, n: int, live: int) -> dict[str, Any]:
        m, opts = self.m, self.opts
        el: dict[str, Any] = {"kind": "I", "id": n}
        if opts.pcs:
            el["pc"] = inst.offset
        el["op"] = inst.opname
        operands = inst.operands
        if inst.opname == "OpExtInst":
            el["subop"] = inst.ext_op
            el["set"] = inst.ext_set
            operands = operands[2:]  # the set's id and the instruction number are in subop/set
        if inst.result is not None:
            # a function's own id is module-scope (calls name it); everything else here is local
            rn = GLOBAL_FILE if inst.opname == "OpFunction" else LOCAL_FILE
            dst: dict[str, Any] = {"kind": "RD", "reg": {"rn": rn, "r": inst.result, "sr": 0}}
            if inst.type is not None:
                dst["type"] = self.names.type(inst.type)
            sym = m.names.get(inst.result)
            if sym:
                dst["symbol"] = sym
            if opts.defs:
                dst["uses"] = self.uses_of.get(inst.result, [])
            el["dst"] = dst
        by_id = self.by_id
        srcs = []
        for o in operands:
            if o.role == "id":
                oid = int(o.value)
                d = by_id.get(oid)
                if d is None:
                    d = by_id[oid] = self._id_operand(oid)
                srcs.append(d)
            else:
                srcs.append(self._literal(o, inst))
        el["srcs"] = srcs
        el["liveTotals"] = {LOCAL_FILE: live}
        loc = self.fn.lines.get(id(inst))
        if loc is not None:
            comment = self.comments.get(loc)
            if comment is None:
                file, line = loc
                text = self.texts.get(file)
                comment = f"{file}:{line}"
                if text and 0 < line <= len(text):
                    comment += ": " + text[line - 1].strip()
                self.comments[loc] = comment
            el["comment"] = comment
        return el

    def _literal(self, o: Operand, inst: Instruction) -> dict[str, Any]:
        if o.role == "literal":
            out: dict[str, Any] = {"kind": "IM", "value": format_literal(o, self.opts.hex_floats)}
            if o.kind == "LiteralContextDependentNumber" and inst.type is not None:
                out["type"] = self.names.type(inst.type)
            return out
        if o.role == "string":
            return {"kind": "IM", "value": str(o.value), "type": "string"}
        return {"kind": "IM", "value": str(o.value), "type": o.kind}

    def _id_operand(self, v: int) -> dict[str, Any]:
        m, names = self.m, self.names
        if v in self.label_name:
            return {"kind": "LB", "target": self.label_name[v]}
        out: dict[str, Any]
        if v in self.local_def:
            out = {"kind": "RD", "reg": {"rn": LOCAL_FILE, "r": v, "sr": 0}, "type": names.type(m.type_of.get(v))}
            sym = m.names.get(v)
            if sym:
                out["symbol"] = sym
            if self.opts.defs:
                out["defs"] = [self.local_def[v]]
            return out
        d = m.defs.get(v)
        op = d.opname if d is not None else ""
        if op in _CONSTANT_OPS:
            out = {"kind": "IM", "value": names.constant(v), "type": names.type(d.type)}  # type: ignore[union-attr]
            sym = m.names.get(v)
            if sym:
                out["symbol"] = sym
            return out
        if op == "OpFunction":
            return {"kind": "LB", "target": function_name(m, v, names.entries)}
        if op.startswith("OpType"):
            return {"kind": "IM", "value": names.type(v), "type": "type"}
        # a module-scope variable (or any other module-level id): defined outside this function
        out = {"kind": "RD", "reg": {"rn": GLOBAL_FILE, "r": v, "sr": 0}}
        if d is not None and d.type is not None:
            out["type"] = names.type(d.type)
        sym = m.names.get(v)
        if sym:
            out["symbol"] = sym
        if self.opts.defs:
            out["defs"] = []
        return out

