"""The text of the function that builds a dataclass of one shape (:mod:`kernellab.records`),
written from the shape's key alone on a cache miss: a run whose classes' code is all kept never
imports this module (start-up, issue 23). ``records``' version in each key includes this file's,
so a changed writer writes new keys."""
from __future__ import annotations

import sys

_ORDER = (("__lt__", "<"), ("__le__", "<="), ("__gt__", ">"), ("__ge__", ">="))


class Refused(Exception):
    """The shape needs what the standard decorator does (its own error): it builds the class."""


_HEAD = ("def __create_fn__(cls, __dataclass_values__, __dataclass_annotations__, __dataclass_support__):\n"
         " (__dataclass_plain_field__, __dataclass_named_field__, MISSING, __dataclass_builtins_object__,"
         " _HAS_DEFAULT_FACTORY, _DataclassParams, __dataclass_frozen__, __dataclass_guarded__) = __dataclass_support__\n")


class _Field:
    """One field as its shape gives it."""

    def __init__(self, index: int, shape: str):
        kind, self.name = shape.split(":", 1)
        self.var = f"_f{index}"
        self.kind = kind[0]  # n(o default), d(efault), F(ield() of the class), B(ase class's Field)
        flags = kind[1:] if kind[0] in "FB" else ("11N1" + ("d" if kind == "d" else "-"))
        self.init, self.repr, self.compare = flags[0] == "1", flags[1] == "1", flags[3] == "1"
        self.hash = self.compare if flags[2] == "N" else flags[2] == "1"
        self.default, self.factory = flags[4] == "d", flags[4] == "f"


def source(key: str) -> str:
    """The function that builds a class of shape ``key`` (see :func:`_build`)."""
    _, opt, flags, owned, shapes = key.split("|")
    init, repr_, eq, order, frozen, match_args, slots = (c == "1" for c in opt)
    post_init, explicit_hash = flags[0] == "1", flags[1] == "1"
    own = frozenset(owned.split(",")) if owned else frozenset()
    fields = [_Field(i, shape) for i, shape in enumerate(shapes.split(";"))] if shapes else []
    lines = [_HEAD]
    if fields:
        lines.append(f" {''.join(f.var + ',' for f in fields)} = __dataclass_values__\n")
    # Python 3.12's parameters also record match_args, kw_only, slots and weakref_slot
    more = f", {match_args}, False, {slots}, False" if sys.version_info >= (3, 12) else ""
    lines.append(f" cls.__dataclass_params__ = _DataclassParams({init}, {repr_}, {eq}, {order}, False, {frozen}{more})\n")
    lines += _field_lines(fields)
    methods: list[str] = []
    if init:
        lines += _init_lines(fields, frozen, slots, post_init, methods, "__init__" not in own)
    if repr_ and "__repr__" not in own:
        lines += _repr_lines(fields, methods)
    lines += _compare_lines(fields, eq, order, own, methods)
    if frozen:
        lines += _frozen_lines(fields, own, methods)
    if eq and not explicit_hash and frozen:
        hashed = _tuple_of("self", [f.name for f in fields if f.hash])
        lines += [" def __hash__(self):\n", f"  return hash({hashed})\n"]
        methods.append("__hash__")
    if methods:
        lines.append(" __dataclass_qualname__ = cls.__qualname__\n")
    for name in methods:
        lines += [f" {name}.__qualname__ = __dataclass_qualname__ + '.{name}'\n", f" cls.{name} = {name}\n"]
    if eq and not explicit_hash and not frozen:
        lines.append(" cls.__hash__ = None\n")
    if match_args and "__match_args__" not in own:
        lines.append(f" cls.__match_args__ = {tuple(f.name for f in fields if f.init)!r}\n")
    if slots and "__slots__" in own:
        raise Refused  # the standard decorator's error
    return "".join(lines)


def _tuple_of(who: str, names: list[str]) -> str:
    return "(" + "".join(f"{who}.{name}," for name in names) + ")"


def _field_lines(fields: list[_Field]) -> list[str]:
    """The Field of each field the class declares, as the standard decorator makes and names it."""
    lines = []
    for f in fields:
        if f.kind == "B":
            continue
        make = "__dataclass_named_field__" if f.kind == "F" else "__dataclass_plain_field__"
        first = f.var if f.kind != "n" else "MISSING"
        lines.append(f" {f.var} = {make}({first}, {f.name!r}, __dataclass_annotations__[{f.name!r}])\n")
    for f in fields:  # the class shows a field()'s default, or nothing
        if f.kind == "F":
            lines.append(f" setattr(cls, {f.name!r}, {f.var}.default)\n" if f.default else
                         f" delattr(cls, {f.name!r})\n")
    items = ", ".join(f"{f.name!r}: {f.var}" for f in fields)
    lines.append(f" cls.__dataclass_fields__ = {{{items}}}\n")
    return lines


def _init_lines(fields: list[_Field], frozen: bool, slots: bool, post_init: bool, methods: list[str],
                wanted: bool) -> list[str]:
    """``__init__`` (when ``wanted``: not the class's own), its types and defaults taken from the Fields."""
    self_name = "__dataclass_self__" if any(f.name == "self" for f in fields) else "self"
    lines: list[str] = []
    params = [self_name]
    body = []
    seen_default = False
    for f in fields:
        name = f.name
        if f.init:
            if seen_default and not (f.default or f.factory):
                raise Refused  # a field without a default after one with: the standard decorator's error
            seen_default = seen_default or f.default or f.factory
            # read from the Field where the parameter is made, not through a local of its own:
            # the same annotations and defaults, with fewer names in the kept code to unmarshal
            default = f"={f.var}.default" if f.default else "=_HAS_DEFAULT_FACTORY" if f.factory else ""
            params.append(f"{name}:{f.var}.type{default}")
        if f.factory:
            lines.append(f" _dflt_{name} = {f.var}.default_factory\n")
            value = f"_dflt_{name}() if {name} is _HAS_DEFAULT_FACTORY else {name}" if f.init else f"_dflt_{name}()"
        elif f.default and f.init:
            value = name
        elif f.default and slots:  # a slot has no class attribute to fall back on
            lines.append(f" _dflt_{name} = {f.var}.default\n")
            value = f"_dflt_{name}"
        elif f.init:
            value = name
        else:
            continue  # the class attribute holds the default
        if frozen:
            body.append(f"  __dataclass_builtins_object__.__setattr__({self_name},{name!r},{value})\n")
        else:
            body.append(f"  {self_name}.{name}={value}\n")
    if post_init:
        body.append(f"  {self_name}.__post_init__()\n")
    if not wanted:
        return []
    methods.append("__init__")
    return [*lines, f" def __init__({','.join(params)})->None:\n", *(body or ["  pass\n"])]


def _repr_lines(fields: list[_Field], methods: list[str]) -> list[str]:
    """``__repr__`` inside the standard decorator's guard against recursion (:func:`_guarded_repr`)."""
    shown = ", ".join(f"{f.name}={{self.{f.name}!r}}" for f in fields if f.repr)
    methods.append("__repr__")
    return [" def __repr__(self):\n", f'  return self.__class__.__qualname__ + f"({shown})"\n',
            " __repr__ = __dataclass_guarded__(__repr__)\n"]


def _compare_lines(fields: list[_Field], eq: bool, order: bool, own: frozenset[str],
                   methods: list[str]) -> list[str]:
    compared = [f.name for f in fields if f.compare]
    mine, theirs = _tuple_of("self", compared), _tuple_of("other", compared)
    wanted = [("__eq__", "==")] if eq else []
    if order:
        if any(name in own for name, _ in _ORDER):
            raise Refused  # the standard decorator's error
        wanted += _ORDER
    lines = []
    for name, op in wanted:
        if name not in own:
            lines += [f" def {name}(self, other):\n", "  if other.__class__ is self.__class__:\n",
                      f"   return {mine}{op}{theirs}\n", "  return NotImplemented\n"]
            methods.append(name)
    return lines


def _frozen_lines(fields: list[_Field], own: frozenset[str], methods: list[str]) -> list[str]:
    if "__setattr__" in own or "__delattr__" in own:
        raise Refused  # the standard decorator's error
    methods += ["__setattr__", "__delattr__"]
    names = tuple(f.name for f in fields)
    return [f" __setattr__, __delattr__ = __dataclass_frozen__(cls, {names!r})\n"]
