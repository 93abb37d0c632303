"""Safe symbolic expressions: ``"[dataset, dataset/4]"``, ``"partition_round(dataset, size_percent)"``.

Kernel specs carry sizes and arguments as strings that their original tool handed to Python's
``eval`` -- which runs whatever a spec file contains. Here a string is parsed by :mod:`ast` into
Python's syntax tree, every node is checked against a short whitelist, and the survivors are
turned into a small tree of our own (:class:`Expr`) that is evaluated by closures. Nothing from
the string ever reaches ``eval``, attribute lookup or an import.

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

import ast
import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Mapping, Sequence, Union

from kernellab.errors import InputError, Problem

#: largest integer magnitude an expression may produce, in bits (sizes are far below 2**64)
MAX_INT_BITS = 256
#: longest expression text accepted; real specs are a few dozen characters
MAX_LENGTH = 4096
#: deepest nesting accepted (each level costs a Python stack frame when evaluated)
MAX_DEPTH = 64

Number = Union[int, float, Fraction]
Value = Union[Number, list]


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


@dataclass(frozen=True)
class Expr:
    """A parsed expression: call :meth:`evaluate` with the variables it names."""

    text: str
    names: frozenset[str]
    _run: Callable[[Mapping[str, Any]], Value]
    constant: bool

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
    if isinstance(v, Fraction) and (v.numerator.bit_length() > MAX_INT_BITS or v.denominator.bit_length() > MAX_INT_BITS):
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
            return _check_int(1 / _power(a, -b, col), col)
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
_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**"}
_CMPOPS: dict[type, tuple[str, Callable[[Any, Any], bool]]] = {
    ast.Lt: ("<", lambda a, b: a < b), ast.LtE: ("<=", lambda a, b: a <= b),
    ast.Gt: (">", lambda a, b: a > b), ast.GtE: (">=", lambda a, b: a >= b),
    ast.Eq: ("==", lambda a, b: a == b), ast.NotEq: ("!=", lambda a, b: a != b),
}
#: what each refused node type is called in messages
_NODE_WORDS = {
    ast.Attribute: "attribute access (a.b)", ast.Subscript: "subscripting (a[i])", ast.Lambda: "lambda",
    ast.Dict: "a dict literal", ast.Set: "a set literal", ast.Tuple: "a tuple", ast.ListComp: "a comprehension",
    ast.SetComp: "a comprehension", ast.DictComp: "a comprehension", ast.GeneratorExp: "a generator expression",
    ast.IfExp: "a conditional expression", ast.BoolOp: "and/or", ast.JoinedStr: "an f-string",
    ast.Starred: "a starred argument", ast.NamedExpr: "an assignment expression", ast.Await: "await",
    ast.Yield: "yield", ast.YieldFrom: "yield",
}


class _Builder:
    """Turns a checked :mod:`ast` tree into closures; records the variable names it reads."""

    def __init__(self, text: str):
        self.text = text
        self.names: set[str] = set()

    def col(self, node: ast.AST) -> int:
        return getattr(node, "col_offset", -1) + 1

    def build(self, node: ast.AST, depth: int = 0) -> tuple[Callable[[Mapping[str, Any]], Value], bool]:
        """(closure, is_constant); constant sub-trees are computed now, which is what refuses
        ``10**10**10`` before anything runs."""
        if depth > MAX_DEPTH:
            raise _Refused(self.col(node), f"nested more than {MAX_DEPTH} levels deep")
        col = node.col_offset + 1 if hasattr(node, "col_offset") else 0
        fn, const = self._build(node, depth, col)
        if const and not isinstance(node, ast.Constant):
            value = fn({})
            return (lambda _v, value=value: value), True
        return fn, const

    def _build(self, node: ast.AST, depth: int, col: int) -> tuple[Callable[[Mapping[str, Any]], Value], bool]:
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                kind = "a string" if isinstance(v, (str, bytes)) else f"the constant {v!r}"
                raise _Refused(col, f"{kind} is not allowed; only numbers")
            _check_int(v, col)
            return (lambda _v, v=v: v), True
        if isinstance(node, ast.Name):
            name = node.id
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
                    raise _Refused(col, f"unknown variable {name!r} (known: {known}; set one with --set {name}=N)") from None
                if isinstance(value, list):
                    return value
                return _number(value, col, f"variable {name!r}")
            return var, False
        if isinstance(node, ast.BinOp):
            op = _BINOPS.get(type(node.op))
            if op is None:
                raise _Refused(col, f"the operator {type(node.op).__name__} is not allowed (use + - * / // % **)")
            left, lc = self.build(node.left, depth + 1)
            right, rc = self.build(node.right, depth + 1)
            fast = _FAST_INT_OPS.get(op)
            if fast is None:
                def binop(v: Mapping[str, Any]) -> Value:
                    return _binop(op, left(v), right(v), col)
            else:
                def binop(v: Mapping[str, Any]) -> Value:
                    a = left(v)
                    b = right(v)
                    if type(a) is int and type(b) is int and (b or op in "+-*"):
                        r = fast(a, b)
                        if -_INT_LIMIT < r < _INT_LIMIT:
                            return r
                    return _binop(op, a, b, col)
            return binop, lc and rc
        if isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, (ast.UAdd, ast.USub)):
                raise _Refused(col, f"the operator {type(node.op).__name__} is not allowed (only unary + and -)")
            operand, oc = self.build(node.operand, depth + 1)
            neg = isinstance(node.op, ast.USub)

            def unary(v: Mapping[str, Any]) -> Value:
                x = _number(operand(v), col, "the operand of unary -" if neg else "the operand of unary +")
                return -x if neg else x
            return unary, oc
        if isinstance(node, ast.Compare):
            parts = [self.build(node.left, depth + 1)]
            ops = []
            for op_node, comp in zip(node.ops, node.comparators):
                entry = _CMPOPS.get(type(op_node))
                if entry is None:
                    raise _Refused(col, f"the comparison {type(op_node).__name__} is not allowed")
                ops.append(entry[1])
                parts.append(self.build(comp, depth + 1))
            fns = [p[0] for p in parts]

            def compare(v: Mapping[str, Any]) -> Value:
                left = _number(fns[0](v), col, "a compared value")
                for op_fn, right_fn in zip(ops, fns[1:]):
                    right = _number(right_fn(v), col, "a compared value")
                    if not op_fn(left, right):
                        return 0
                    left = right
                return 1
            return compare, all(p[1] for p in parts)
        if isinstance(node, ast.List):
            items = [self.build(e, depth + 1) for e in node.elts]
            fns = [i[0] for i in items]
            return (lambda v: [f(v) for f in fns]), all(i[1] for i in items)
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name):
                what = _NODE_WORDS.get(type(node.func), "a computed function")
                raise _Refused(self.col(node.func), f"only named functions can be called ({what} is not allowed)")
            name = node.func.id
            func = _registry.get(name)
            if func is None:
                raise _Refused(col, f"call of {name!r} is not allowed (allowed functions: {', '.join(registered())})")
            if node.keywords:
                raise _Refused(self.col(node.keywords[0].value) if node.keywords[0].value else col,
                               f"{name}() takes positional arguments only")
            lo, hi = func.arity
            n = len(node.args)
            if n < lo or (hi is not None and n > hi):
                want = str(lo) if lo == hi else (f"{lo} to {hi}" if hi is not None else f"at least {lo}")
                raise _Refused(col, f"{name}() takes {want} argument{'s' if want != '1' else ''}, got {n}")
            args = [self.build(a, depth + 1) for a in node.args]
            fns = [a[0] for a in args]
            # registered functions are user code: never constant-folded, they may have effects
            const = all(a[1] for a in args) and name in _BUILTINS and _registry[name] is _BUILTINS[name]

            def call(v: Mapping[str, Any]) -> Value:
                values = [f(v) for f in fns]
                try:
                    result = func.func(*values)
                except _Refused:
                    raise
                except (ValueError, TypeError, ArithmeticError) as exc:
                    raise _Refused(col, f"{name}() failed: {exc}") from None
                return _result(result, col, name)
            return call, const
        word = _NODE_WORDS.get(type(node)) or f"a {type(node).__name__} expression"
        raise _Refused(col, f"{word} is not allowed")


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
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        col = exc.offset or 0
        raise ExpressionError(text, col, f"syntax error: {exc.msg}") from None
    except (RecursionError, MemoryError, ValueError) as exc:
        raise ExpressionError(text, 0, f"cannot be parsed: {type(exc).__name__}") from None
    builder = _Builder(text)
    lead = len(text) - len(text.lstrip())
    try:
        fn, const = builder.build(tree.body)
    except _Refused as exc:
        raise ExpressionError(text, exc.column + lead if exc.column > 0 else 0, exc.reason) from None
    except RecursionError:
        raise ExpressionError(text, 0, "nested too deeply") from None
    if lead:
        def run(v: Mapping[str, Any], fn: Callable[[Mapping[str, Any]], Value] = fn) -> Value:
            try:
                return fn(v)
            except _Refused as exc:
                raise _Refused(exc.column + lead, exc.reason) from None
        fn = run
    return Expr(text, frozenset(builder.names), fn, const)


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
    raise ExpressionError(repr(text), 0, f"expected a number, a list or an expression string, got {type(text).__name__}")


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
