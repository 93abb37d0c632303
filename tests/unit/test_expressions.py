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
    ("fr + rb", {"fr": 1, "rb": 2}, 3),  # string prefixes are names unless a quote follows
    ("0x10 + 0b11 + 0o7 + 1_000", {}, 1026),
    (".5 + 1.", {}, 1.5),
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
    ("__import__('os').system('true')", 1, "call of '__import__' is not allowed"),
    ("os.path.join", 3, "attribute access"),
    ("(1).real", 4, "attribute access"),
    ("a.b.c + 1", 2, "attribute access"),
    ("a.__class__", 2, "attribute access"),
    ("x[0]", 2, "subscripting"),
    ("dataset + [1, 2][0]", 17, "subscripting"),
    ("eval('1')", 1, "call of 'eval' is not allowed"),
    ("open('/etc/passwd')", 1, "call of 'open' is not allowed"),
    ("1 + getattr(x, 'y')", 5, "call of 'getattr' is not allowed"),
    ("(x)(1)", 4, "only named functions can be called"),
    ("(lambda: 1)()", 2, "lambda is not allowed"),
    ("lambda: 1", 1, "lambda is not allowed"),
    ("'abc'", 1, "a string is not allowed"),
    ("f'{x}'", 1, "a string is not allowed"),
    ("dataset'", 8, "a string is not allowed"),
    ("[x for x in y]", 4, "a comprehension"),
    ("(x for x in y)", 4, "a comprehension"),
    ("1 if x else 2", 3, "a conditional expression"),
    ("x and y", 3, "and/or"),
    ("1 << 40", 3, "the operator << is not allowed"),
    ("x & 1", 3, "the operator & is not allowed"),
    ("~x", 1, "the operator ~ is not allowed"),
    ("not x", 1, "not is not allowed"),
    ("x in y", 3, "the operator in is not allowed"),
    ("min(1, key=2)", 8, "positional arguments only"),
    ("min(*x)", 5, "positional arguments only"),
    ("ceil(1, 2)", 1, "ceil() takes 1 argument, got 2"),
    ("partition_round(1)", 1, "takes 2 arguments, got 1"),
    ("min", 1, "is a function"),
    ("(x := 3)", 4, "an assignment expression"),
    ("{1: 2}", 1, "a dict or set literal"),
    ("(1, 2)", 1, "a tuple"),
    ("1, 2", 2, "a tuple"),
    ("True", 1, "the constant True is not allowed"),
    ("None", 1, "the constant None is not allowed"),
    ("1j", 1, "the constant 1j is not allowed"),
    ("007", 1, "invalid number"),
    ("1abc", 1, "invalid number"),
    ("1 +", 4, "syntax error: the expression ends too early"),
    ("2 ** 3 **", 10, "syntax error: the expression ends too early"),
    ("", 0, "empty expression"),
    ("*x", 1, "syntax error: unexpected '*'"),
    ("1 2", 3, "syntax error: unexpected '2'"),
    ("x y", 3, "syntax error: unexpected 'y'"),
    ("(1", 1, "'(' is never closed"),
    ("[1, 2", 1, "'[' is never closed"),
    ("min(1", 4, "min( is never closed"),
    ("1)", 2, "unmatched ')'"),
    ("x; y", 2, "a statement separator"),
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


def test_agrees_with_python_on_random_expressions():
    """Differential check of precedence, associativity, unary minus and chained comparisons:
    random expressions of the allowed grammar evaluate as Python evaluates them."""
    import math
    import random

    rng = random.Random(6)
    env = {"a": 7, "b": -3, "c": 2, "d": 0.5}
    funcs = {"min": min, "max": max, "ceil": math.ceil, "floor": math.floor}

    def gen(depth: int) -> str:
        if depth == 0 or rng.random() < 0.25:
            return rng.choice(["a", "b", "c", "d", "1", "2", "3", "0.25", "10"])
        kind = rng.random()
        if kind < 0.5:
            op = rng.choice(["+", "-", "*", "/", "//", "%", "**", "+", "-", "*"])
            return f"{gen(depth - 1)} {op} {gen(depth - 1)}"
        if kind < 0.65:
            return f"-{gen(depth - 1)}"
        if kind < 0.8:
            return f"({gen(depth - 1)})"
        if kind < 0.9:
            return f"{rng.choice(['min', 'max'])}({gen(depth - 1)}, {gen(depth - 1)})"
        return f"{gen(depth - 1)} {rng.choice(['<', '<=', '==', '!=', '>', '>='])} {gen(depth - 1)}"

    checked = 0
    for _ in range(3000):
        text = gen(4)
        try:
            want = eval(text, {"__builtins__": {}, **funcs}, dict(env))  # noqa: S307 - our own generated texts
        except (ZeroDivisionError, OverflowError, ValueError, TypeError):
            continue
        if isinstance(want, complex) or (isinstance(want, float) and not math.isfinite(want)):
            continue
        if isinstance(want, bool):
            want = int(want)
        try:
            got = ex.evaluate(text, env)
        except ExpressionError as exc:
            assert any(w in exc.reason for w in ("exceed", "finite", "overflow", "fractional power")), (text, exc)
            continue
        assert got == pytest.approx(want, rel=1e-12, abs=1e-12), text
        checked += 1
    assert checked > 2000
