"""GPUVerify's specification functions in the proof (docs/verify-prove.md, "Specification
functions").

A function named ``__spec_F`` whose body is only a contract (``__requires``, ``__ensures``,
``__writes_to(p)``, ``__reads_from(p)``) stands for any function that keeps it: its
preconditions are checked at the call and assumed; it may write (read) the array ``p`` points
into at any element, and nothing else; its postconditions are assumed after it. The source pass
(:func:`kernellab.verify.prove.annotations.spec_function_edits`) puts the postconditions after
the effects, between the markers this module reads.

``__writes_to(p)`` is one write access of an element-aligned offset ``w`` within the array, any
one the postconditions allow: GPUVerify's access log picks one of the accesses made at random, so
a postcondition on the log (``__write_implies(p, __write_offset_bytes(p) / 4 == gid)``) holds of
every access the function makes; the access is therefore reached where the postconditions hold
with the log being that access. One symbolic offset stands for every access, so every race and
every bound it could break is checked. This invocation's view of the array is then any contents
(its own earlier writes forgotten), which the postconditions constrain.
"""
from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import Any

import z3

from kernellab.records import dataclass
from kernellab.verify.prove.spec import subterms

#: the markers the source pass writes (``annotations.ANNOTATION_HEADER``)
NAMES = ("__kl_spec", "__kl_spec_write", "__kl_spec_read", "__kl_spec_ensures", "__kl_spec_end")


@dataclass
class Contract:
    """A specification function's call being encoded."""

    #: the accesses its effects made (records of the trace)
    accesses: list[Any] = field(default_factory=list)
    #: its postconditions
    ensures: list[Any] = field(default_factory=list)


class Contracts:
    """The specification-function markers of one invocation's encoding (``enc``: the
    :class:`~kernellab.verify.prove.encode.Encoder`)."""

    def __init__(self, enc: Any):
        self.enc = enc
        self.open: Contract | None = None

    def call(self, env: dict[Any, Any], pred: Any, inst: Any, name: str, args: list[Any]) -> Any:
        enc = self.enc
        if name == "__kl_spec":
            if self.open is not None:
                raise enc.unmodelled(inst, "a __spec_ function called from another one's contract")
            self.open = Contract()
            return None
        contract = self.open
        if contract is None:
            raise enc.unmodelled(inst, "__writes_to, __reads_from or a contract outside a __spec_ function")
        if name in ("__kl_spec_write", "__kl_spec_read"):
            self.effect(env, pred, inst, "write" if name == "__kl_spec_write" else "read")
        elif name == "__kl_spec_ensures":
            cond = enc.specs.scalar(env, inst, name, args[0])
            cond = cond if z3.is_bool(cond) else cond != 0
            contract.ensures.append(cond)
            enc.trace.assumes.append(z3.Implies(pred, cond))
        else:
            self.close()
        return None

    def effect(self, env: dict[Any, Any], pred: Any, inst: Any, kind: str) -> None:
        """An access of any element of the array the pointer points into (reached where the
        postconditions allow it: :meth:`close`); a write leaves any contents there."""
        enc = self.enc
        pointer, _ = enc.specs.probe(env, inst, "__writes_to" if kind == "write" else "__reads_from")
        if not hasattr(pointer, "root"):
            raise enc.unmodelled(inst, f"__{kind}s_to/from of a pointer chosen at run time")
        if pointer.storage not in ("StorageBuffer", "Workgroup"):
            raise enc.unmodelled(inst, f"__{kind}s_to/from of {pointer.storage} memory")
        size = max(pointer.pointee.size, 1)
        offset = z3.BitVec(f"{enc.tag}_spec_off{next(enc.fresh_count)}", 64)
        where = [z3.URem(offset, size) == 0]
        bound = enc.var_size.get(pointer.root)
        if bound is not None:  # the function touches its own array only (a contract of a legal function)
            where.append(z3.ULE(offset, bound - size) if bound >= size else z3.BoolVal(False))
        enc.record(env, z3.And(pred, *where), dataclasses.replace(pointer, offset=offset, steps=[]), size, kind, inst)
        assert self.open is not None
        self.open.accesses.append(enc.trace.accesses[-1])
        if kind == "write" and pointer.root not in enc.memory.read_only:
            env[("mem", pointer.root)] = enc.fresh_memory()
            enc.stored.add(pointer.root)

    def close(self) -> None:
        """Each access of the contract is reached where the postconditions hold with the access log
        of its array and kind being that access."""
        enc, contract = self.enc, self.open
        self.open = None
        assert contract is not None
        if not contract.ensures:
            return
        ensures = z3.And(*contract.ensures)
        logs = enc.specs.log_vars
        for r in contract.accesses:
            pairs = []
            for x in subterms([ensures], lambda x: x.get_id() in logs):
                kind, root, _ = logs[x.get_id()]
                if kind == r.kind and root == r.root:
                    pairs.append((x, z3.BoolVal(True) if z3.is_bool(x) else r.offset))
            r.pred = z3.And(r.pred, z3.substitute(ensures, *pairs) if pairs else ensures)
