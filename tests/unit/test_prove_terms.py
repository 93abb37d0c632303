"""terms.py: conjunctions taken apart and made from z3's handles, and encode._join over them."""
from __future__ import annotations

import pytest

z3 = pytest.importorskip("z3")

from kernellab.verify.prove import terms  # noqa: E402
from kernellab.verify.prove.encode import _join  # noqa: E402


def _equivalent(a: object, b: object) -> bool:
    s = z3.Solver()
    s.add(a != b)
    return s.check() == z3.unsat


def test_conjunct_handles_are_the_children() -> None:
    a, b, c = z3.Bools("a b c")
    p = z3.And(a, b, c)
    assert [i for i, _ in terms.conjunct_handles(p)] == [x.get_id() for x in p.children()]
    assert [i for i, _ in terms.conjunct_handles(a)] == [a.get_id()]  # not an And: itself


def test_conjunction_of_handles() -> None:
    a, b, c = z3.Bools("a b c")
    hs = [h for _, h in terms.conjunct_handles(z3.And(a, b, c))]
    assert terms.conjunction(hs[:2], a.ctx).eq(z3.And(a, b))
    assert terms.conjunction(hs[2:], a.ctx).eq(c)
    assert z3.is_true(terms.conjunction([], a.ctx))


def test_conj_is_and() -> None:
    a, b = z3.Bools("a b")
    x = z3.BitVec("x", 8)
    assert terms.conj([a, x > 3]).eq(z3.And(a, x > 3))
    assert terms.conj([a, True]).eq(z3.And(a, True))  # a Python bool: z3's coercion
    with pytest.raises(z3.Z3Exception):
        terms.conj([a, x])  # a bit-vector is no conjunct, as in z3.And
    with pytest.raises(ValueError):
        terms.conj([])


def test_join_takes_out_shared_conjuncts() -> None:
    p, q, c, d = z3.Bools("p q c d")
    j = _join([z3.And(p, q, c), z3.And(p, q, z3.Not(c))])
    assert j.eq(z3.And(p, q))  # the branch condition's two sides: just the shared part
    j2 = _join([z3.And(p, c), z3.And(p, d), q])
    assert _equivalent(j2, z3.Or(z3.And(p, c), z3.And(p, d), q))
    j3 = _join([z3.And(p, q, c), z3.And(q, p, d)])
    assert _equivalent(j3, z3.Or(z3.And(p, q, c), z3.And(p, q, d)))
    assert j3.num_args() == 3  # p, q and (c or d)
