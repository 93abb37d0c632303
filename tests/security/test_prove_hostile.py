"""verify --prove's annotation step facing a hostile kernel source: its time and its output grow
at most with the source, not with the invariants times the loops or the edits times the text."""
from __future__ import annotations

import time

from kernellab.verify.prove.annotations import MAX_INSERTED, prepare


def test_function_wide_invariants_do_not_multiply_the_source() -> None:
    """400 invariants and 400 loops (17 KB) became a 2.9 MB source in 4 s (each loop gets every
    invariant, and each edit copied the whole text); past the limit the invariants stay as they
    are written (unsupported: the proof says unknown), and it takes milliseconds."""
    n = 400
    source = "void f(int x){\n" + "__function_wide_invariant(x>0);\n" * n + "for(;;){}\n" * n + "}\n"
    start = time.monotonic()
    out = prepare(source)
    assert time.monotonic() - start < 2
    assert len(out) <= len(source) + MAX_INSERTED and out == source
    # a few invariants still reach every loop
    small = "void f(int x){\n__function_wide_invariant(x>0);\nfor(;;){}\nwhile(1){}\n}\n"
    assert prepare(small).count("__invariant(x>0)") == 2


def test_many_edits_take_one_pass() -> None:
    source = "void g(int x){\n" + "__requires(x);\n" * 100_000 + "}\n"
    start = time.monotonic()
    out = prepare(source)
    assert time.monotonic() - start < 10
    assert out.count("__requires_in_function(x);") == 100_000
    assert out.count("\n") == source.count("\n")
