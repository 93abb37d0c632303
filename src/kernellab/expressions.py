"""Safe symbolic expressions: ``"[dataset, dataset/4]"``, ``"partition_round(dataset, size_percent)"``.

Kernel specs carry sizes and arguments as strings that their original tool handed to Python's
``eval`` -- which runs whatever a spec file contains. Here a string is split into tokens and
parsed by a small recursive-descent parser of our own (Python's precedence and associativity,
checked against Python on random expressions in the tests) straight into closures; anything
outside the grammar below is refused while parsing, at the offending token. Nothing from the
string ever reaches ``eval``, attribute lookup or an import.

Allowed: int and float literals, variable names, ``+ - * / // % **``, unary ``+``/``-``,
parentheses, list literals, comparison chains (``<  <= > >= == !=``, giving 0 or 1), and calls of
``min``, ``max``, ``ceil``, ``floor``, ``partition_round`` and functions added with
:func:`register`. Anything else is an :class:`ExpressionError` naming the expression and the
column of the offending part.

Arithmetic is bounded: an integer may not grow past :data:`MAX_INT_BITS` bits, and ``a ** b`` is
refused *before* it is computed when its result would be larger (``10**10**10`` fails at parse
time because both operands are constants; ``dataset ** dataset`` fails at evaluation time, still
before the power is taken).
"""
from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from kernellab.errors import InputError, Problem
from kernellab.records import dataclass

#: largest integer magnitude an expression may produce, in bits (sizes are far below 2**64)
MAX_INT_BITS = 256
#: longest expression text accepted; real specs are a few dozen characters
MAX_LENGTH = 4096
#: deepest nesting accepted (each level costs a Python stack frame when evaluated)
MAX_DEPTH = 64

Number = int | float | Fraction
Value = Number | list


class ExpressionError(InputError):
    """A symbolic expression is malformed, refused, or failed to evaluate.

    ``expression`` is the text, ``column`` the 1-based column of the offending part (0 when the
    whole expression is at fault), ``reason`` the bare explanation. ``str()`` names all three; a
    spec reader re-wraps it with the file and the JSON pointer via :meth:`problem`.
    """

    def __init__(self, expression: str, column: int, reason: str, *, file: str = "", where: str = ""):
        self.expression = expression
        self.column = column
        self.reason = reason
        super().__init__([Problem(file, where, self.describe())])

    def describe(self) -> str:
        at = f" at column {self.column}" if self.column else ""
        return f"expression {self.expression!r}{at}: {self.reason}"

    def __str__(self) -> str:
        p = self.problems[0]
        return str(p) if p.file or p.where else self.describe()

    def problem(self, file: str, where: str) -> Problem:
        return Problem(file, where, self.describe())


# --- registered functions --------------------------------------------------------------------


@dataclass(frozen=True)
class Function:
    name: str
    func: Callable[..., Any]
    #: (fewest, most) positional arguments; most=None for any number
    arity: tuple[int, int | None]


def _min(*args: Value) -> Value:
    items = args[0] if len(args) == 1 and isinstance(args[0], list) else list(args)
    if not items:
        raise ValueError("min() of an empty list")
    return min(items)


def _max(*args: Value) -> Value:
    items = args[0] if len(args) == 1 and isinstance(args[0], list) else list(args)
    if not items:
        raise ValueError("max() of an empty list")
    return max(items)


def _ceil(x: Number) -> int:
    return math.ceil(x)


def _floor(x: Number) -> int:
    return math.floor(x)


def partition_round(n: Number, percent: Number) -> int:
    """The number of the ``n`` elements that a part covering ``percent`` % of them receives.

    Exact arithmetic, rounded half up: ``partition_round(4096, 25) == 1024``. In a partitioned
    run, ``size_percent`` and ``offset_percent`` are the exact percentages of the split (after it
    is rounded to a multiple of the local size), so ``partition_round(dataset, size_percent)`` is
    exactly a part's share of ``dataset``.
    """
    if isinstance(n, float) or isinstance(percent, float):
        n, percent = Fraction(n), Fraction(percent)
    if percent < 0 or percent > 100:
        raise ValueError(f"partition_round: percent must be within 0..100, got {_show(percent)}")
    share = Fraction(n) * Fraction(percent) / 100
    return math.floor(share + Fraction(1, 2))


_BUILTINS: dict[str, Function] = {
    "min": Function("min", _min, (1, None)),
    "max": Function("max", _max, (1, None)),
    "ceil": Function("ceil", _ceil, (1, 1)),
    "floor": Function("floor", _floor, (1, 1)),
    "partition_round": Function("partition_round", partition_round, (2, 2)),
}
#: the functions expressions may call: the built-ins and what the program registered (register() is the
#: public way a program adds its own, for every spec it reads later, as Python registers codecs)
_registry: dict[str, Function] = dict(_BUILTINS)


def register(name: str | Callable[..., Any] | None = None, func: Callable[..., Any] | None = None, *,
             min_args: int | None = None, max_args: int | None = None, replace: bool = False) -> Any:
    """Make a Python function callable from spec expressions.

    ``register("twice", lambda x: 2 * x)``, or as a decorator ``@register`` / ``@register("name")``.
    The arity is taken from the signature unless given. Its arguments are numbers or lists, its
    result must be a number or a list of numbers. Built-in names can only be replaced with
    ``replace=True``.
    """
    if callable(name) and func is None:  # bare @register
        return register(name.__name__, name, min_args=min_args, max_args=max_args, replace=replace)
    if func is None:
        return lambda f: register(name if isinstance(name, str) else f.__name__, f, min_args=min_args,
                                  max_args=max_args, replace=replace) or f
    if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
        raise ValueError(f"register: {name!r} is not a usable function name")
    if name in _registry and not replace:
        raise ValueError(f"register: {name!r} is already registered (pass replace=True to replace it)")
    if min_args is None or max_args is None:
        lo, hi = _arity_of(func)
        min_args = lo if min_args is None else min_args
        max_args = hi if max_args is None else max_args
    _registry[name] = Function(name, func, (min_args, max_args))
    _compile_text.cache_clear()
    return func


def unregister(name: str) -> None:
    """Remove a registered function (a built-in comes back if one was replaced)."""
    _registry.pop(name, None)
    if name in _BUILTINS:
        _registry[name] = _BUILTINS[name]
    _compile_text.cache_clear()


def registered() -> list[str]:
    return sorted(_registry)


def _arity_of(func: Callable[..., Any]) -> tuple[int, int | None]:
    import inspect

    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        return 0, None
    lo, hi = 0, 0
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL,):
            return lo, None
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            hi += 1
            if p.default is p.empty:
                lo += 1
    return lo, hi


# --- the tree --------------------------------------------------------------------------------


class _Refused(Exception):
    def __init__(self, column: int, reason: str):
        self.column = column
        self.reason = reason


class Expr:
    """A parsed expression: call :meth:`evaluate` with the variables it names (``names``);
    ``constant`` when it names none."""

    __slots__ = ("text", "names", "_run", "constant")

    def __init__(self, text: str, names: frozenset[str], run: Callable[[Mapping[str, Any]], Value], constant: bool):
        self.text = text
        self.names = names
        self._run = run
        self.constant = constant

    def __repr__(self) -> str:
        return f"Expr({self.text!r})"

    def evaluate(self, variables: Mapping[str, Any] | None = None) -> Value:
        try:
            return self._run(variables or {})
        except _Refused as exc:
            raise ExpressionError(self.text, exc.column, exc.reason) from None

    def __str__(self) -> str:
        return self.text


def _show(x: Any) -> str:
    if isinstance(x, Fraction):
        return str(float(x)) if x.denominator != 1 else str(x.numerator)
    return repr(x)


def _check_int(v: Value, col: int) -> Value:
    if isinstance(v, int) and v.bit_length() > MAX_INT_BITS:
        raise _Refused(col, f"the result exceeds {MAX_INT_BITS} bits")
    if isinstance(v, Fraction) and (v.numerator.bit_length() > MAX_INT_BITS
                                    or v.denominator.bit_length() > MAX_INT_BITS):
        raise _Refused(col, f"the result exceeds {MAX_INT_BITS} bits")
    if isinstance(v, float) and not math.isfinite(v):
        raise _Refused(col, "the result is not a finite number")
    return v


def _number(v: Any, col: int, what: str) -> Number:
    if isinstance(v, bool) or not isinstance(v, (int, float, Fraction)):
        raise _Refused(col, f"{what} must be a number, got {type(v).__name__}")
    return v


def _power(a: Number, b: Number, col: int) -> Number:
    """``a ** b``, refused before computing when the result would be too large."""
    if isinstance(b, Fraction):
        b = float(b) if b.denominator != 1 else b.numerator
    if isinstance(a, int) and isinstance(b, int):
        if b < 0:
            if a == 0:
                raise _Refused(col, "zero to a negative power")
            return 1 / _power(a, -b, col)  # a float or a fraction: no bits to check
        if abs(a) > 1 and b * math.log2(abs(a)) > MAX_INT_BITS:
            raise _Refused(col, f"{a} ** {b} would exceed {MAX_INT_BITS} bits; refused before computing it")
        return a ** b
    base = float(a)
    exp = float(b)
    if base == 0 and exp < 0:
        raise _Refused(col, "zero to a negative power")
    if base < 0 and not exp.is_integer():
        raise _Refused(col, "a negative number to a fractional power")
    if abs(base) > 1 and exp * math.log2(abs(base)) > 1023:
        raise _Refused(col, f"{_show(a)} ** {_show(b)} would overflow a float; refused before computing it")
    if 0 < abs(base) < 1 and exp < 0 and -exp * -math.log2(abs(base)) > 1023:
        raise _Refused(col, f"{_show(a)} ** {_show(b)} would overflow a float; refused before computing it")
    return base ** exp


def _binop(op: str, a: Any, b: Any, col: int) -> Value:
    a = _number(a, col, f"the left operand of {op}")
    b = _number(b, col, f"the right operand of {op}")
    if op == "+":
        r = a + b
    elif op == "-":
        r = a - b
    elif op == "*":
        r = a * b
    elif op == "/":
        if b == 0:
            raise _Refused(col, "division by zero")
        r = (Fraction(a) / b) if isinstance(a, Fraction) or isinstance(b, Fraction) else a / b
    elif op == "//":
        if b == 0:
            raise _Refused(col, "division by zero")
        r = a // b
        if isinstance(r, Fraction):
            r = int(r)
    elif op == "%":
        if b == 0:
            raise _Refused(col, "modulo by zero")
        r = a % b
    elif op == "**":
        r = _power(a, b, col)
    else:  # pragma: no cover - the whitelist keeps this unreachable
        raise _Refused(col, f"operator {op} is not allowed")
    return _check_int(r, col)


_INT_LIMIT = 1 << MAX_INT_BITS
#: int-only fast paths (the general :func:`_binop` handles zero divisors, floats and limits)
_FAST_INT_OPS: dict[str, Callable[[int, int], int]] = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "//": lambda a, b: a // b, "%": lambda a, b: a % b,
}
# --- the parser: tokens -> closures -------------------------------------------------------------

_TOKEN = re.compile(r"""\s*(?:
    (?P<string>[rRbBuUfF]{0,2}['"])
  | (?P<name>[^\W\d]\w*)
  | (?P<number>0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+
              |(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][-+]?\d[\d_]*)?[jJ]?)
  | (?P<op>\*\*=?|//=?|<<=?|>>=?|<=|>=|==|!=|:=|->|[-+*/%()\[\],<>.{}:;=~&|^@!`$?\\])
  | (?P<other>\S))""", re.VERBOSE | re.DOTALL)

_INT_PREFIXES = ("0x", "0X", "0o", "0O", "0b", "0B")
_BINARY_POWER = {"+": 10, "-": 10, "*": 20, "/": 20, "//": 20, "%": 20, "**": 31}
_COMPARISONS = {"<", "<=", ">", ">=", "==", "!="}
_UNARY_POWER = 25  # binds tighter than * /, looser than ** (-2**2 == -4, as in Python)
#: what refused tokens are called in messages
_REFUSED_OPS = {
    ".": "attribute access (a.b)", "{": "a dict or set literal", "}": "a dict or set literal",
    ":": "a slice or dict entry", ":=": "an assignment expression", "=": "assignment or a keyword argument",
    "<<": "the operator <<", ">>": "the operator >>", "&": "the operator &", "|": "the operator |",
    "^": "the operator ^", "~": "the operator ~", "@": "the operator @", ";": "a statement separator",
}
_KEYWORDS = {
    "lambda": "lambda", "and": "and/or", "or": "and/or", "not": "not", "if": "a conditional expression",
    "else": "a conditional expression", "for": "a comprehension", "in": "the operator in", "is": "the operator is",
    "await": "await", "yield": "yield", "import": "import", "from": "import", "async": "async", "del": "del",
    "global": "global", "nonlocal": "nonlocal", "class": "class", "def": "def", "return": "return",
    "with": "with", "as": "as", "assert": "assert", "pass": "pass", "raise": "raise", "try": "try",
    "while": "while", "break": "break", "continue": "continue", "except": "except", "finally": "finally",
    "elif": "elif",
}
_CONSTANT_NAMES = {"True", "False", "None", "Ellipsis", "NotImplemented"}

Fn = Callable[[Mapping[str, Any]], Value]


class _Parser:
    """Recursive descent with precedence climbing over Python's expression grammar subset."""

    def __init__(self, text: str):
        self.text = text
        self.names: set[str] = set()
        tokens: list[tuple[str, str, int]] = []
        for m in _TOKEN.finditer(text):
            kind = m.lastgroup
            tokens.append((kind, m.group(kind), m.start(kind) + 1))  # type: ignore[arg-type]
        tokens.append(("end", "", len(text) + 1))
        self.tokens = tokens
        self.i = 0

    def peek(self) -> tuple[str, str, int]:
        return self.tokens[self.i]  # the methods below inline this: it is the parser's hot path

    def take(self) -> tuple[str, str, int]:
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def expect(self, value: str, opener: tuple[str, str, int]) -> None:
        kind, val, col = self.take()
        if val != value or kind != "op":
            if kind == "end":
                raise _Refused(opener[2], f"syntax error: {opener[1]!r} is never closed")
            self.refuse_token(kind, val, col, f"expected {value!r}")

    def refuse_token(self, kind: str, val: str, col: int, syntax: str) -> None:
        if kind == "string":
            raise _Refused(col, "a string is not allowed; only numbers")
        if kind == "op" and val in _REFUSED_OPS:
            raise _Refused(col, f"{_REFUSED_OPS[val]} is not allowed")
        if kind == "name" and val in _KEYWORDS:
            raise _Refused(col, f"{_KEYWORDS[val]} is not allowed")
        if kind == "end":
            raise _Refused(col, f"syntax error: the expression ends too early ({syntax})")
        raise _Refused(col, f"syntax error: unexpected {val!r} ({syntax})")

    # expression := arith (comparison arith)*
    def expression(self, depth: int) -> tuple[Fn, bool]:
        if depth > MAX_DEPTH:
            raise _Refused(self.tokens[self.i][2], f"nested more than {MAX_DEPTH} levels deep")
        first = self.tokens[self.i][2]
        left = self.arith(0, depth)
        if not (self.tokens[self.i][0] == "op" and self.tokens[self.i][1] in _COMPARISONS):
            return left
        parts = [left]
        ops: list[Callable[[Any, Any], bool]] = []
        while self.tokens[self.i][0] == "op" and self.tokens[self.i][1] in _COMPARISONS:
            ops.append(_CMP_FUNCS[self.take()[1]])
            parts.append(self.arith(0, depth))
        fns = [p[0] for p in parts]
        col = first

        def compare(v: Mapping[str, Any]) -> Value:
            left = _number(fns[0](v), col, "a compared value")
            for op_fn, right_fn in zip(ops, fns[1:]):
                right = _number(right_fn(v), col, "a compared value")
                if not op_fn(left, right):
                    return 0
                left = right
            return 1
        return self.fold(compare, all(p[1] for p in parts))

    def fold(self, fn: Fn, const: bool) -> tuple[Fn, bool]:
        """Constant sub-trees are computed now: that is what refuses ``10**10**10`` at parse time."""
        if const:
            value = fn({})
            return (lambda _v, value=value: value), True
        return fn, False

    def arith(self, min_power: int, depth: int) -> tuple[Fn, bool]:
        if depth > MAX_DEPTH:
            raise _Refused(self.tokens[self.i][2], f"nested more than {MAX_DEPTH} levels deep")
        kind, val, col = self.tokens[self.i]
        if kind == "op" and val in ("-", "+"):
            self.take()
            operand, oc = self.arith(_UNARY_POWER, depth + 1)
            neg = val == "-"

            def unary(v: Mapping[str, Any]) -> Value:
                x = operand(v)
                if type(x) is int:
                    return -x if neg else x
                x = _number(x, col, f"the operand of unary {val}")
                return -x if neg else x
            left = self.fold(unary, oc)
        else:
            left = self.primary(depth)
        start = col
        while True:
            kind, val, col = self.tokens[self.i]
            power = _BINARY_POWER.get(val) if kind == "op" else None
            if power is None:
                if kind == "op" and val in _REFUSED_OPS or kind in ("string", "number") or (
                        kind == "name" and val in _KEYWORDS):
                    self.refuse_token(kind, val, col, "expected an operator")
                if kind == "name":
                    raise _Refused(col, f"syntax error: unexpected {val!r} (expected an operator)")
                return left
            if power < min_power:
                return left
            self.take()
            # ** is right-associative: its right side may hold another ** (and a unary minus)
            right = self.arith(power - 1 if val == "**" else power + 1, depth + 1)
            left = self.fold(_binary(val, left[0], right[0], start), left[1] and right[1])

    def primary(self, depth: int) -> tuple[Fn, bool]:
        kind, val, col = self.take()
        if kind == "number":
            node = self.number(val, col)
        elif kind == "name":
            if val in _KEYWORDS:
                raise _Refused(col, f"{_KEYWORDS[val]} is not allowed")
            if val in _CONSTANT_NAMES:
                raise _Refused(col, f"the constant {val} is not allowed; only numbers")
            if self.tokens[self.i][1] == "(" and self.tokens[self.i][0] == "op":
                node = self.call(val, col, depth)
            else:
                node = self.variable(val, col)
        elif kind == "op" and val == "(":
            if self.tokens[self.i][1] == ")":
                raise _Refused(col, "a tuple is not allowed")
            node = self.expression(depth + 1)
            if self.tokens[self.i][1] == ",":
                raise _Refused(col, "a tuple is not allowed")
            if self.tokens[self.i][0] == "name" and self.tokens[self.i][1] == "for":
                raise _Refused(col, "a generator expression is not allowed")
            self.expect(")", (kind, val, col))
        elif kind == "op" and val == "[":
            node = self.list_literal(col, depth)
        else:
            self.refuse_token(kind, val, col, "expected a number, a name, '(' or '['")
            raise AssertionError  # unreachable: refuse_token raises
        # what may follow a value and is refused: calls of values, subscripts, attributes
        kind, val, col = self.tokens[self.i]
        if kind == "op" and val == "(":
            raise _Refused(col, "only named functions can be called")
        if kind == "op" and val == "[":
            raise _Refused(col, "subscripting (a[i]) is not allowed")
        if kind == "op" and val == ".":
            raise _Refused(col, "attribute access (a.b) is not allowed")
        return node

    def number(self, text: str, col: int) -> tuple[Fn, bool]:
        if text[-1] in "jJ":
            raise _Refused(col, f"the constant {text} is not allowed; only real numbers")
        nxt = self.tokens[self.i]
        if nxt[0] in ("name", "number") and nxt[2] == col + len(text):
            raise _Refused(col, f"syntax error: invalid number {text + nxt[1]!r}")
        try:
            if text.isdigit() and (text[0] != "0" or len(text) == 1):
                value: int | float = int(text)
            elif text[:2] in _INT_PREFIXES or not ("." in text or "e" in text or "E" in text):
                value = int(text, 0)
            else:
                value = float(text.replace("_", "")) if "__" not in text and not text.endswith("_") else float("x")
        except ValueError:
            raise _Refused(col, f"syntax error: invalid number {text!r}") from None
        if type(value) is not int or not -_INT_LIMIT < value < _INT_LIMIT:
            _check_int(value, col)
        return (lambda _v, value=value: value), True

    def variable(self, name: str, col: int) -> tuple[Fn, bool]:
        if name.startswith("__"):
            raise _Refused(col, f"the name {name!r} is not allowed")
        if name in _registry:
            raise _Refused(col, f"{name!r} is a function; call it with arguments")
        self.names.add(name)

        def var(v: Mapping[str, Any], name: str = name, col: int = col) -> Value:
            try:
                value = v[name]
                if type(value) is int:
                    return value
            except KeyError:
                known = ", ".join(sorted(v)) or "none"
                raise _Refused(col, f"unknown variable {name!r} (known: {known}; set one with "
                                    f"--set {name}=N)") from None
            if isinstance(value, list):
                return value
            return _number(value, col, f"variable {name!r}")
        return var, False

    def list_literal(self, col: int, depth: int) -> tuple[Fn, bool]:
        items: list[tuple[Fn, bool]] = []
        while not (self.tokens[self.i][0] == "op" and self.tokens[self.i][1] == "]"):
            items.append(self.expression(depth + 1))
            kind, val, c = self.tokens[self.i]
            if kind == "name" and val == "for":
                raise _Refused(col, "a comprehension is not allowed")
            if kind == "op" and val == ",":
                self.take()
            elif not (kind == "op" and val == "]"):
                if kind == "end":
                    raise _Refused(col, "syntax error: '[' is never closed")
                self.refuse_token(kind, val, c, "expected ',' or ']'")
        self.take()
        fns = [i[0] for i in items]
        return self.fold(lambda v: [f(v) for f in fns], all(i[1] for i in items))

    def call(self, name: str, col: int, depth: int) -> tuple[Fn, bool]:
        opener = self.take()
        func = _registry.get(name)
        if func is None:
            raise _Refused(col, f"call of {name!r} is not allowed (allowed functions: {', '.join(registered())})")
        args: list[tuple[Fn, bool]] = []
        while not (self.tokens[self.i][0] == "op" and self.tokens[self.i][1] == ")"):
            kind, val, c = self.tokens[self.i]
            if kind == "op" and val in ("*", "**"):
                raise _Refused(c, f"{name}() takes positional arguments only (no *args or **kwargs)")
            if kind == "name" and self.tokens[self.i + 1][1] == "=" and self.tokens[self.i + 1][0] == "op":
                raise _Refused(c, f"{name}() takes positional arguments only")
            args.append(self.expression(depth + 1))
            kind, val, c = self.tokens[self.i]
            if kind == "op" and val == ",":
                self.take()
            elif not (kind == "op" and val == ")"):
                if kind == "end":
                    raise _Refused(opener[2], f"syntax error: {name}( is never closed")
                self.refuse_token(kind, val, c, "expected ',' or ')'")
        self.take()
        lo, hi = func.arity
        n = len(args)
        if n < lo or (hi is not None and n > hi):
            want = str(lo) if lo == hi else (f"{lo} to {hi}" if hi is not None else f"at least {lo}")
            raise _Refused(col, f"{name}() takes {want} argument{'s' if want != '1' else ''}, got {n}")
        fns = [a[0] for a in args]

        def call(v: Mapping[str, Any]) -> Value:
            values = [f(v) for f in fns]
            try:
                result = func.func(*values)
            except _Refused:
                raise
            except (ValueError, TypeError, ArithmeticError) as exc:
                raise _Refused(col, f"{name}() failed: {exc}") from None
            return _result(result, col, name)
        # registered functions are user code: never computed at parse time, they may have effects
        builtin = name in _BUILTINS and _registry[name] is _BUILTINS[name]
        return self.fold(call, builtin and all(a[1] for a in args))


_CMP_FUNCS: dict[str, Callable[[Any, Any], bool]] = {
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
}


def _binary(op: str, left: Fn, right: Fn, col: int) -> Fn:
    fast = _FAST_INT_OPS.get(op)
    if fast is None:
        def binop(v: Mapping[str, Any]) -> Value:
            return _binop(op, left(v), right(v), col)
        return binop
    needs_divisor = op in ("//", "%")

    def fast_binop(v: Mapping[str, Any]) -> Value:
        a = left(v)
        b = right(v)
        if type(a) is int and type(b) is int and (b or not needs_divisor):
            r = fast(a, b)
            if -_INT_LIMIT < r < _INT_LIMIT:
                return r
        return _binop(op, a, b, col)
    return fast_binop


def _result(value: Any, col: int, name: str) -> Value:
    if isinstance(value, list):
        return [_result(v, col, name) for v in value]
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float, Fraction)):
        return _check_int(value, col)
    try:  # numpy scalars and the like
        import numbers

        if isinstance(value, numbers.Integral):
            return _check_int(int(value), col)
        if isinstance(value, numbers.Real):
            return _check_int(float(value), col)
    except Exception:  # pragma: no cover
        pass
    raise _Refused(col, f"{name}() returned {type(value).__name__}, not a number or a list")


@functools.lru_cache(maxsize=4096)
def _compile_text(text: str) -> Expr:
    if len(text) > MAX_LENGTH:
        raise ExpressionError(text[:60] + "...", 0, f"longer than {MAX_LENGTH} characters")
    if not text.strip():
        raise ExpressionError(text, 0, "empty expression")
    parser = _Parser(text)
    try:
        fn, const = parser.expression(0)
        kind, val, col = parser.tokens[parser.i]
        if kind != "end":
            if kind == "op" and val in (")", "]"):
                raise _Refused(col, f"syntax error: unmatched {val!r}")
            if kind == "op" and val == ",":
                raise _Refused(col, "a tuple is not allowed")
            parser.refuse_token(kind, val, col, "expected the end of the expression")
    except _Refused as exc:
        raise ExpressionError(text, exc.column, exc.reason) from None
    except RecursionError:
        raise ExpressionError(text, 0, "nested too deeply") from None
    return Expr(text, frozenset(parser.names), fn, const)


def parse(text: str) -> Expr:
    """Parse and check ``text``; raises :class:`ExpressionError` for anything not allowed."""
    if not isinstance(text, str):
        raise ExpressionError(repr(text), 0, "an expression must be a string")
    return _compile_text(text)


def evaluate(text: str | int | float | Sequence[Any], variables: Mapping[str, Any] | None = None) -> Value:
    """Evaluate an expression string (numbers and lists of them pass through, checked)."""
    if isinstance(text, str):
        return parse(text).evaluate(variables)
    if isinstance(text, bool):
        raise ExpressionError(repr(text), 0, "a boolean is not a number")
    if isinstance(text, (int, float)):
        return _result(text, 0, "value") if not isinstance(text, bool) else int(text)
    if isinstance(text, list):
        return [evaluate(t, variables) for t in text]
    raise ExpressionError(repr(text), 0,
                          f"expected a number, a list or an expression string, got {type(text).__name__}")


def as_int(value: Value, text: str, what: str = "value") -> int:
    """``value`` as an int: an integral float or fraction is accepted (``dataset/2``)."""
    if isinstance(value, list):
        raise ExpressionError(text, 0, f"{what} must be a number, got a list")
    if isinstance(value, int):
        return value
    if isinstance(value, Fraction) and value.denominator == 1:
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise ExpressionError(text, 0, f"{what} must be a whole number, got {_show(value)}")
