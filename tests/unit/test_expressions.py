"""The safe expression evaluator: what is allowed, what is refused (before it runs), and where."""
from __future__ import annotations

import time
from fractions import Fraction

import pytest

from kernellab import expressions as ex
from kernellab.expressions import ExpressionError


@pytest.mark.parametrize("text, variables, expected", [
    ("dataset", {"dataset": 4096}, 4096),
    ("[dataset]", {"dataset": 4096}, [4096]),
    ("[dataset, dataset // 4]", {"dataset": 4096}, [4096, 1024]),
    ("1 + 2 * 3 - 4", {}, 3),
    ("(1 + 2) * 3", {}, 9),
    ("7 / 2", {}, 3.5),
    ("7 // 2", {}, 3),
    ("-7 // 2", {}, -4),
    ("7 % 3", {}, 1),
    ("2 ** 10", {}, 1024),
    ("2 ** -1", {}, 0.5),
    ("-x", {"x": 3}, -3),
    ("+x", {"x": 3}, 3),
    ("1 < 2 <= 2", {}, 1),
    ("3 > 4", {}, 0),
    ("n == 4", {"n": 4}, 1),
    ("n != 4", {"n": 4}, 0),
    ("min(3, 1, 2)", {}, 1),
    ("max([1, 9, 2])", {}, 9),
    ("ceil(7 / 2)", {}, 4),
    ("floor(7 / 2)", {}, 3),
    ("partition_round(4096, 25)", {}, 1024),
    ("partition_round(10, 33)", {}, 3),
    ("partition_round(dataset, size_percent)", {"dataset": 1000, "size_percent": Fraction(100 * 448, 1000)}, 448),
    ("m1*p1", {"m1": 3, "p1": 5}, 15),
    ("1e3", {}, 1000.0),
    ("  dataset  ", {"dataset": 2}, 2),
])
def test_valid(text, variables, expected):
    assert ex.evaluate(text, variables) == expected


def test_constants_and_lists_pass_through():
    assert ex.evaluate(5) == 5
    assert ex.evaluate([1, "n*2"], {"n": 3}) == [1, 6]


def test_names_are_recorded():
    assert ex.parse("partition_round(dataset, size_percent) + k").names == {"dataset", "size_percent", "k"}


@pytest.mark.parametrize("text, column, words", [
    ("__import__('os')", 1, "call of '__import__' is not allowed"),
    ("__import__('os').system('true')", 1, "attribute access"),
    ("os.path.join", 1, "attribute access"),
    ("(1).real", 1, "attribute access"),
    ("a.b.c + 1", 1, "attribute access"),
    ("x[0]", 1, "subscripting"),
    ("dataset + [1, 2][0]", 11, "subscripting"),
    ("eval('1')", 1, "call of 'eval' is not allowed"),
    ("open('/etc/passwd')", 1, "call of 'open' is not allowed"),
    ("1 + getattr(x, 'y')", 5, "call of 'getattr' is not allowed"),
    ("(lambda: 1)()", 2, "only named functions can be called"),
    ("lambda: 1", 1, "lambda is not allowed"),
    ("'abc'", 1, "a string is not allowed"),
    ("[x for x in y]", 1, "a comprehension"),
    ("1 if x else 2", 1, "a conditional expression"),
    ("x and y", 1, "and/or"),
    ("1 << 40", 1, "the operator LShift is not allowed"),
    ("~x", 1, "the operator Invert is not allowed"),
    ("not x", 1, "the operator Not is not allowed"),
    ("x in y", 1, "the comparison In is not allowed"),
    ("min(1, key=2)", 12, "positional arguments only"),
    ("ceil(1, 2)", 1, "ceil() takes 1 argument, got 2"),
    ("partition_round(1)", 1, "takes 2 arguments, got 1"),
    ("min", 1, "is a function"),
    ("(x := 3)", 2, "an assignment expression"),
    ("{1: 2}", 1, "a dict literal"),
    ("(1, 2)", 1, "a tuple"),
    ("True", 1, "the constant True is not allowed"),
    ("1j", 1, "the constant 1j is not allowed"),
    ("1 +", 0, "syntax error"),
    ("", 0, "empty expression"),
    ("*x", 1, "syntax error"),
])
def test_refused_at_parse_time(text, column, words):
    with pytest.raises(ExpressionError) as info:
        ex.parse(text)
    err = info.value
    assert words in err.reason
    assert err.column == column
    assert repr(text) in str(err)
    if column:
        assert f"at column {column}" in str(err)


def test_huge_exponent_refused_before_it_runs():
    start = time.perf_counter()
    with pytest.raises(ExpressionError) as info:
        ex.parse("10**10**10")  # constant: refused at parse time
    assert "refused before computing it" in info.value.reason
    with pytest.raises(ExpressionError):
        ex.parse("2 ** 100000")
    expr = ex.parse("dataset ** dataset")  # depends on a variable: refused when evaluated
    assert expr.evaluate({"dataset": 3}) == 27
    with pytest.raises(ExpressionError) as info:
        expr.evaluate({"dataset": 10 ** 6})
    assert "refused before computing it" in info.value.reason
    with pytest.raises(ExpressionError):
        ex.evaluate("2.0 ** 5000")
    assert time.perf_counter() - start < 5  # generous; an unguarded 10**10**10 never returns


def test_growth_by_multiplication_is_bounded():
    text = "*".join(["n"] * 40)
    with pytest.raises(ExpressionError) as info:
        ex.evaluate(text, {"n": 2 ** 32})
    assert f"exceeds {ex.MAX_INT_BITS} bits" in info.value.reason


def test_deep_nesting_and_length_refused():
    with pytest.raises(ExpressionError):
        ex.parse("-(" * 100 + "1" + ")" * 100)
    with pytest.raises(ExpressionError) as info:
        ex.parse("1+" * 5000 + "1")
    assert "longer than" in info.value.reason


def test_evaluation_errors_name_the_place():
    with pytest.raises(ExpressionError) as info:
        ex.evaluate("1 + size / 0", {"size": 3})
    assert "division by zero" in info.value.reason and info.value.column == 5
    with pytest.raises(ExpressionError) as info:
        ex.evaluate("dataset * 2", {})
    assert "unknown variable 'dataset'" in info.value.reason and "--set dataset=N" in info.value.reason
    with pytest.raises(ExpressionError) as info:
        ex.evaluate("partition_round(10, 150)")
    assert "within 0..100" in info.value.reason
    with pytest.raises(ExpressionError):
        ex.evaluate("[1] + 2")


def test_register_functions():
    try:
        ex.register("twice", lambda x: 2 * x)

        @ex.register
        def clamp(x, lo, hi=100):
            return max(lo, min(hi, x))

        assert ex.evaluate("twice(dataset) + clamp(500, 0)", {"dataset": 4}) == 108
        with pytest.raises(ExpressionError) as info:
            ex.parse("clamp(1)")
        assert "clamp() takes 2 to 3 arguments" in info.value.reason
        with pytest.raises(ValueError):
            ex.register("twice", lambda x: x)
        with pytest.raises(ValueError):
            ex.register("min", lambda x: x)
        with pytest.raises(ValueError):
            ex.register("not a name", lambda x: x)
        ex.register("bad", lambda: "text")
        with pytest.raises(ExpressionError) as info:
            ex.evaluate("bad()")
        assert "returned str" in info.value.reason
        ex.register("boom", lambda x: 1 // x)
        with pytest.raises(ExpressionError) as info:
            ex.evaluate("boom(0)")
        assert "boom() failed" in info.value.reason
    finally:
        for name in ("twice", "clamp", "bad", "boom"):
            ex.unregister(name)
    with pytest.raises(ExpressionError):
        ex.parse("twice(1)")


def test_partition_round_is_exact_for_split_percentages():
    for total in (1000, 1024, 4097):
        for start in (0, 16, 448, total // 3):
            count = total - start
            size_percent = Fraction(100 * count, total)
            assert ex.partition_round(total, size_percent) == count
