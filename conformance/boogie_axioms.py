"""The axioms of a GPUVerify test's ``--boogie-file`` as z3 formulas over its uninterpreted
functions (``DECLARE_UF_*``), for ``gpuverify_prove.py``.

GPUVerify passes the file to Boogie unchanged; its tests use a small part of Boogie: ``type T =
bvN;``, ``function {:bvbuiltin "bvule"} ULE(T, T) : bool;`` and ``axiom (forall x, y : T :: { trigger }
e);`` with ``==``, ``!=``, ``&&``, ``||``, ``==>``, ``<==>``, ``!``, calls and ``NbvW`` literals.
That part is read here; anything else raises :class:`BoogieError` (the test is then unknown,
never proven on a misread axiom).
"""
from __future__ import annotations

import re
from typing import Any

import z3

_TOKEN = re.compile(r"\s*(?:(//[^\n]*)|(\d+bv\d+)|([A-Za-z_$.][\w$.]*)|(<==>|==>|==|!=|&&|\|\||::|<=|>=|[(){}:,;!<>=\"]))")
_BUILTINS = {"bvule": z3.ULE, "bvult": z3.ULT, "bvuge": z3.UGE, "bvugt": z3.UGT, "bvsle": lambda a, b: a <= b,
             "bvslt": lambda a, b: a < b, "bvsge": lambda a, b: a >= b, "bvsgt": lambda a, b: a > b,
             "bvadd": lambda a, b: a + b, "bvsub": lambda a, b: a - b, "bvmul": lambda a, b: a * b}


class BoogieError(Exception):
    pass


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip() == "":
                break
            raise BoogieError(f"cannot read the Boogie text at {text[pos:pos + 30]!r}")
        pos = m.end()
        if m.group(1) is None:
            out.append(next(g for g in m.groups()[1:] if g is not None))
    return out


class _Reader:
    def __init__(self, tokens: list[str], functions: dict[str, Any]):
        self.t, self.k = tokens, 0
        self.functions = dict(functions)
        self.types: dict[str, Any] = {}
        self.axioms: list[Any] = []

    def peek(self) -> str | None:
        return self.t[self.k] if self.k < len(self.t) else None

    def take(self, want: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (want is not None and tok != want):
            raise BoogieError(f"expected {want!r}, found {tok!r}")
        self.k += 1
        return tok

    def sort(self) -> Any:
        name = self.take()
        if name in self.types:
            return self.types[name]
        m = re.fullmatch(r"bv(\d+)", name)
        if m:
            return z3.BitVecSort(int(m.group(1)))
        if name == "bool":
            return z3.BoolSort()
        raise BoogieError(f"unknown type {name!r}")

    def declarations(self) -> None:
        while self.peek() is not None:
            word = self.take()
            if word == "type":
                name = self.take()
                self.take("=")
                self.types[name] = self.sort()
                self.take(";")
            elif word == "function":
                builtin = None
                if self.peek() == "{":
                    self.take("{"), self.take(":")
                    attribute = self.take()
                    self.take('"')
                    builtin = self.take()
                    self.take('"'), self.take("}")
                    if attribute != "bvbuiltin" or builtin not in _BUILTINS:
                        raise BoogieError(f"function attribute {attribute} {builtin}")
                name = self.take()
                self.take("(")
                while self.take() != ")":
                    pass
                self.take(":")
                self.sort()
                self.take(";")
                if builtin is None:
                    raise BoogieError(f"function {name} without a built-in meaning")
                self.functions[name] = _BUILTINS[builtin]
            elif word == "axiom":
                self.axioms.append(self.expression({}))
                self.take(";")
            else:
                raise BoogieError(f"unsupported Boogie declaration {word!r}")

    def expression(self, scope: dict[str, Any]) -> Any:
        return self.binary(scope, 0)

    _LEVELS = [("<==>",), ("==>",), ("||",), ("&&",), ("==", "!=", "<", ">", "<=", ">=")]

    def binary(self, scope: dict[str, Any], level: int) -> Any:
        if level == len(self._LEVELS):
            return self.unary(scope)
        left = self.binary(scope, level + 1)
        while self.peek() in self._LEVELS[level]:
            op = self.take()
            right = self.binary(scope, level + 1 if op != "==>" else level)  # ==> is right-associative
            left = {"<==>": lambda a, b: a == b, "==>": z3.Implies, "||": z3.Or, "&&": z3.And,
                    "==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
                    ">": lambda a, b: a > b, "<=": lambda a, b: a <= b, ">=": lambda a, b: a >= b}[op](left, right)
        return left

    def unary(self, scope: dict[str, Any]) -> Any:
        tok = self.take()
        if tok == "!":
            return z3.Not(self.unary(scope))
        if tok == "(":
            if self.peek() == "forall":
                return self.forall(scope)
            inner = self.expression(scope)
            self.take(")")
            return inner
        m = re.fullmatch(r"(\d+)bv(\d+)", tok)
        if m:
            return z3.BitVecVal(int(m.group(1)), int(m.group(2)))
        if tok in ("true", "false"):
            return z3.BoolVal(tok == "true")
        if self.peek() == "(":
            if tok not in self.functions:
                raise BoogieError(f"unknown function {tok!r}")
            self.take("(")
            args = [self.expression(scope)]
            while self.peek() == ",":
                self.take(",")
                args.append(self.expression(scope))
            self.take(")")
            return self.functions[tok](*args)
        if tok in scope:
            return scope[tok]
        raise BoogieError(f"unknown name {tok!r}")

    def forall(self, scope: dict[str, Any]) -> Any:
        self.take("forall")
        names = [self.take()]
        while self.peek() == ",":
            self.take(",")
            names.append(self.take())
        self.take(":")
        sort = self.sort()
        self.take("::")
        inner = dict(scope)
        bound = [z3.Const(n, sort) for n in names]
        inner.update(zip(names, bound))
        while self.peek() == "{":  # triggers: z3 finds its own patterns
            depth = 0
            while True:
                tok = self.take()
                depth += tok == "{"
                depth -= tok == "}"
                if depth == 0:
                    break
        body = self.expression(inner)
        self.take(")")
        return z3.ForAll(bound, body)


def read(text: str, functions: dict[str, Any]) -> list[Any]:
    """The axioms of ``text`` as z3 formulas; ``functions``: the z3 function each name the axioms
    use stands for."""
    r = _Reader(_tokens(text), functions)
    r.declarations()
    return r.axioms
