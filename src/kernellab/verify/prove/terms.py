"""Conjunctions taken apart and made without z3's Python wrappers per argument.

A path predicate is a flat conjunction of every branch condition on the way (dozens of
conjuncts in nested loops), and each join of paths takes its edges' predicates apart
(:func:`kernellab.verify.prove.encode._join`). ``ExprRef.children()`` wraps each argument in a
Python object (a sort query, a reference count, debug checks) and ``z3.And`` re-checks every
argument's sort: a third of ``return_tests/multiloop_return``'s proof. Here the arguments stay
z3's own AST handles, which the parent term keeps alive, until a result is made."""
from __future__ import annotations

from typing import Any

import z3
from z3 import z3core


def conjunct_handles(p: Any) -> list[tuple[int, Any]]:
    """``p``'s conjuncts (``p`` itself when it is not an ``And``) as (AST id, AST handle) pairs.
    A handle is valid while ``p`` lives: hold ``p`` while using it."""
    ctx = p.ctx_ref()
    ast = p.as_ast()
    if not z3.is_and(p):
        return [(z3core.Z3_get_ast_id(ctx, ast), ast)]
    app = z3core.Z3_to_app(ctx, ast)
    out = []
    for k in range(z3core.Z3_get_app_num_args(ctx, app)):
        a = z3core.Z3_get_app_arg(ctx, app, k)
        out.append((z3core.Z3_get_ast_id(ctx, a), a))
    return out


def conjunction(handles: list[Any], ctx: z3.Context) -> Any:
    """The ``And`` of Boolean AST ``handles`` (``True`` for none, the term itself for one)."""
    if not handles:
        return z3.BoolVal(True, ctx)
    if len(handles) == 1:
        return z3.BoolRef(handles[0], ctx)
    arr = (z3core.Ast * len(handles))(*handles)
    return z3.BoolRef(z3core.Z3_mk_and(ctx.ref(), len(handles), arr), ctx)


def conj(terms: list[Any]) -> Any:
    """``z3.And(*terms)`` of Boolean terms, without its per-argument sort coercion (a path
    predicate's ``And`` with a branch condition, thousands of times per proof)."""
    if not terms:
        raise ValueError("conj of no terms")
    if not all(isinstance(t, z3.BoolRef) for t in terms):
        return z3.And(*terms)  # Python booleans, probes, ...: z3's own coercion
    ctx = terms[0].ctx
    if len(terms) == 1:
        return z3.And(terms[0])
    arr = (z3core.Ast * len(terms))(*[t.as_ast() for t in terms])
    return z3.BoolRef(z3core.Z3_mk_and(ctx.ref(), len(terms), arr), ctx)
