"""Declaring JSON objects once: the message a user reads and the JSON Schema from one declaration.

A :class:`Node` subclass lists its fields as class attributes made by the helpers here
(``size = Int(1, U64, description=...)``, ``dims = List(Int(1), min_len=1)``,
``memory_group = Nested(MemoryGroup, default=None)``). From that one declaration come

- ``Cls.model_validate(data)`` (and ``Cls(**fields)``): every problem of the object at once, each a
  path relative to the object and the exact message (``expected an integer >= 1, got "40"``), raised
  as :class:`Invalid`; unknown fields are kept in ``model_extra`` for the reader to warn about;
- :func:`json_schema_defs`: the draft 2020-12 schema of each class, for ``kernellab schema``;
- :func:`dump`: the JSON form of an object, fields at their defaults left out.

A class may also name *locations* (``model_locations = ("src_path",)``): where on disk its files
are, which the file does not say but its reader finds (``Cls(src="k.cl", src_path=Path(...))``,
``Cls.model_validate(data, src_path=...)``, or :meth:`Node.located` for a resolved copy). They are
given when the object is made, kept as ``_src_path`` and read through properties. This module
is plain Python on purpose: a run reads a handful of objects, and importing a validation library
cost more than the rest of reading a scenario (issue 11, start-up).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

from kernellab.errors import Problem, json_pointer

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any, ClassVar, TypeVar

Loc = tuple[str | int, ...]
if TYPE_CHECKING:  # a bound given as text compiles it at run time: the AST machinery, 9 M instructions
    N = TypeVar("N", bound="Node")

#: the widths of the Vulkan/OpenCL struct fields a value ends up in: a number past them is refused
#: here, with its JSON path, instead of overflowing in a driver struct
U32 = 2**32 - 1
I64 = 2**63 - 1
U64 = 2**64 - 1


def show(value: Any) -> str:
    """A value as the user wrote it (JSON), shortened for a message."""
    import json  # for a message only

    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class Invalid(ValueError):
    """The problems of one object: (path inside the object, message) pairs."""

    def __init__(self, errors: list[tuple[Loc, str]]):
        self.errors = errors
        super().__init__("; ".join(f"{json_pointer(loc)}: {msg}" for loc, msg in errors))

    def problems(self, file: str, prefix: Loc = ()) -> list[Problem]:
        """The errors as :class:`Problem` s of ``file``, their paths below ``prefix``."""
        return [Problem(file, json_pointer(prefix + loc), msg) for loc, msg in self.errors]


# --- value types ----------------------------------------------------------------------------------

class Type:
    """What a value must be: ``check`` returns the value as kept (or raises :class:`Invalid`),
    ``schema`` the JSON Schema of it."""

    def check(self, value: Any) -> Any:
        raise NotImplementedError

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError


def _given(**keywords: Any) -> dict[str, Any]:
    """The schema keywords that have a value (a bound left open is not written)."""
    return {k: v for k, v in keywords.items() if v is not None}


def _fail(message: str) -> Invalid:
    return Invalid([((), message)])


class _Int(Type):
    def __init__(self, lo: int | None, hi: int | None):
        self.lo, self.hi = lo, hi

    def _bounds(self, with_hi: bool) -> str:
        # a bound that is only the width of the struct field is named when a value passes it, not
        # in every message about a wrong type or a small value
        lo, hi = self.lo, self.hi
        if not with_hi and hi in (U32, I64, U64):
            hi = None
        if lo is not None and hi is not None:
            return f" >= {lo} and <= {hi}"
        return f" >= {lo}" if lo is not None else f" <= {hi}" if hi is not None else ""

    def check(self, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int) or (self.lo is not None and value < self.lo):
            raise _fail(f"expected an integer{self._bounds(False)}, got {show(value)}")
        if self.hi is not None and value > self.hi:
            raise _fail(f"expected an integer{self._bounds(True)}, got {show(value)}")
        return value

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        return {"type": "integer", **_given(minimum=self.lo, maximum=self.hi)}


class _Str(Type):
    def __init__(self, nonempty: bool):
        self.nonempty = nonempty

    def check(self, value: Any) -> Any:
        if not isinstance(value, str):
            raise _fail(f"expected a string, got {show(value)}")
        if self.nonempty and not value:
            raise _fail("expected a non-empty string")
        return value

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        return {"type": "string", "minLength": 1} if self.nonempty else {"type": "string"}


class _Bool(Type):
    def check(self, value: Any) -> Any:
        if not isinstance(value, bool):
            raise _fail(f"expected true or false, got {show(value)}")
        return value

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        return {"type": "boolean"}


class _Enum(Type):
    def __init__(self, values: tuple[str, ...], aliases: dict[str, str]):
        self.values, self.aliases = values, aliases

    def check(self, value: Any) -> Any:
        if isinstance(value, str) and value in self.aliases:
            return self.aliases[value]
        if not isinstance(value, str) or value not in self.values:
            raise _fail(f"expected one of {'|'.join(self.values)}, got {show(value)}")
        return value

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        accepted = [*self.values, *self.aliases]
        if len(accepted) == 1:
            return {"const": accepted[0], "type": "string"}
        return {"enum": accepted, "type": "string"}


class _Number(Type):
    def check(self, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _fail(f"expected a number, got {show(value)}")
        return value

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        return {"anyOf": [{"type": "integer"}, {"type": "number"}]}


class _Scalar(Type):
    """A specialization constant's value: 32 bits wide, so an int32 or a uint32, a float or a bool."""

    def check(self, value: Any) -> Any:
        if not isinstance(value, (int, float, bool)):
            raise _fail(f"expected an integer, a float or a boolean, got {show(value)}")
        if isinstance(value, int) and not isinstance(value, bool) and not -(2**31) <= value <= U32:
            raise _fail(f"expected a 32-bit integer (>= -2147483648 and <= 4294967295), got {show(value)}")
        return value

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        return {"anyOf": [{"type": "boolean"}, {"type": "integer"}, {"type": "number"}]}


class _VkFormat(Type):
    PATTERN = r"^VK_FORMAT_\w+$"

    def check(self, value: Any) -> Any:
        if not isinstance(value, str) or not value.startswith("VK_FORMAT_") or value == "VK_FORMAT_":
            raise _fail(f"expected a VkFormat name such as \"VK_FORMAT_R32_SFLOAT\", got {show(value)}")
        return value

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        return {"type": "string", "pattern": self.PATTERN}


class _List(Type):
    def __init__(self, item: Type, min_len: int | None, max_len: int | None):
        self.item, self.min_len, self.max_len = item, min_len, max_len

    def check(self, value: Any) -> Any:
        if not isinstance(value, list):
            raise _fail(f"expected an array, got {show(value)}")
        lo, hi = self.min_len, self.max_len
        if lo is not None and len(value) < lo or hi is not None and len(value) > hi:
            want = f"exactly {lo}" if lo == hi else f"at least {lo}" if hi is None else f"{lo} to {hi}"
            raise _fail(f"expected an array of {want} entries, got {len(value)}")
        out, errors = [], []
        for i, v in enumerate(value):
            try:
                out.append(self.item.check(v))
            except Invalid as exc:
                errors += [((i, *loc), msg) for loc, msg in exc.errors]
        if errors:
            raise Invalid(errors)
        return out

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        return {"type": "array", "items": self.item.schema(defs),
                **_given(minItems=self.min_len, maxItems=self.max_len)}


class _Nested(Type):
    """A JSON object declared by a :class:`Node` class (``null`` too when ``nullable``; a bare
    string too when ``shorthand`` names the field the string stands for). The class may be given
    as a function that returns it, called when the class is first needed: an object a file seldom
    holds is declared in a module loaded only then."""

    def __init__(self, cls: type[Node] | Callable[[], type[Node]], nullable: bool = False,
                 shorthand: str | None = None):
        self._cls, self.nullable, self.shorthand = cls, nullable, shorthand

    @property
    def cls(self) -> type[Node]:
        cls = self._cls
        if not isinstance(cls, type):
            cls = self._cls = cls()
        return cls

    def check(self, value: Any) -> Any:
        if value is None and self.nullable:
            return None
        if isinstance(value, self.cls):
            return value
        if self.shorthand is not None and isinstance(value, str):
            return self.cls.model_validate({self.shorthand: value})
        return self.cls.model_validate(value)

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        name = self.cls.__name__
        if name not in defs:
            defs[name] = {}  # taken before recursing: a class may refer to itself
            defs[name] = self.cls.json_schema(defs)
        ref: dict[str, Any] = {"$ref": f"#/$defs/{name}"}
        if self.shorthand is not None:
            ref = {"anyOf": [{"type": "string"}, ref]}
        return {"anyOf": [ref, {"type": "null"}]} if self.nullable else ref


# --- fields ----------------------------------------------------------------------------------------

REQUIRED: Any = type("Required", (), {"__repr__": lambda self: "REQUIRED"})()


class Field:
    """One field of a :class:`Node`: its type, its default (``REQUIRED`` when it has none) and
    what it means. A field that is absent takes its default; a value given is always checked."""

    def __init__(self, type: Type, default: Any = REQUIRED, description: str = "",
                 default_factory: Callable[[], Any] | None = None):
        self.type, self.default, self.description = type, default, description
        self.default_factory = default_factory

    @property
    def required(self) -> bool:
        return self.default is REQUIRED and self.default_factory is None

    def make_default(self) -> Any:
        if self.default_factory is not None:
            return self.default_factory()
        # a fresh list per object, as if each had been read from its own file
        return list(self.default) if isinstance(self.default, list) else self.default

    def schema(self, name: str, defs: dict[str, Any]) -> dict[str, Any]:
        out = self.type.schema(defs)
        if not isinstance(self.type, _Nested):  # a reference carries its class's title
            out["title"] = name.title().replace("_", " ")
        if self.default is not REQUIRED:
            out["default"] = self.default
        if self.description:
            out["description"] = self.description
        return out


def _as_type(item: Any) -> Type:
    if isinstance(item, Field):
        return item.type
    if isinstance(item, type) and issubclass(item, Node):
        return _Nested(item)
    if isinstance(item, Type):
        return item
    raise TypeError(f"not a field type: {item!r}")


def Int(lo: int | None = None, hi: int | None = None, default: Any = REQUIRED, description: str = "") -> Any:
    """An integer field with bounds; ``Int(1)`` is a positive integer."""
    return Field(_Int(lo, hi), default, description)


def Str(default: Any = REQUIRED, nonempty: bool = False, description: str = "") -> Any:
    return Field(_Str(nonempty), default, description)


def Bool(default: Any = REQUIRED, description: str = "") -> Any:
    return Field(_Bool(), default, description)


def Enum(*values: str, default: Any = REQUIRED, description: str = "", aliases: dict[str, str] | None = None) -> Any:
    """A string from ``values``; ``aliases`` are other accepted spellings, normalized on reading."""
    return Field(_Enum(values, dict(aliases or {})), default, description)


def List(item: Any, default: Any = REQUIRED, min_len: int | None = None, max_len: int | None = None,
         description: str = "") -> Any:
    """An array of ``item`` (a field helper's result, a :class:`Node` class or a value type)."""
    return Field(_List(_as_type(item), min_len, max_len), default, description)


def Nested(cls: type[Node] | Callable[[], type[Node]], default: Any = REQUIRED, default_factory: Callable[[], Any] | None = None,
           description: str = "", shorthand: str | None = None) -> Any:
    """An object declared by ``cls`` (or by the class a function returns, asked when first needed);
    with ``default=None`` the field may also be ``null``; with ``shorthand`` a string may stand for
    the object with that one field set."""
    return Field(_Nested(cls, nullable=default is None, shorthand=shorthand), default, description, default_factory)


#: value types used bare, as a list's items or as a required field
Number: Any = _Number()
Scalar: Any = _Scalar()
VkFormat: Any = _VkFormat()


# --- objects ---------------------------------------------------------------------------------------

class Node:
    """Base of every JSON object: declared fields, unknown fields kept in ``model_extra``."""

    model_fields: ClassVar[dict[str, Field]] = {}
    #: where this object's files are on disk, given when it is made (kept as ``_<name>``)
    model_locations: ClassVar[tuple[str, ...]] = ()
    model_extra: dict[str, Any]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        fields = dict(cls.model_fields)  # the base class's, in their order
        for name, value in list(vars(cls).items()):
            if isinstance(value, Type):
                value = Field(value)
            if isinstance(value, Field):
                fields[name] = value
                # the attribute lives on the object only: a field never read falls back to nothing
                delattr(cls, name)
        cls.model_fields = fields

    def __init__(self, **data: Any) -> None:
        where = {name: data.pop(name) for name in type(self).model_locations if name in data}
        self.__dict__.update(type(self)._checked(data))
        self._locate(where)

    @classmethod
    def model_validate(cls: type[N], data: Any, **where: Any) -> N:
        """The object ``data`` (a dict, as read from JSON) declares, at the locations ``where``
        (:attr:`model_locations`); :class:`Invalid` lists every problem."""
        obj = cls.__new__(cls)
        obj.__dict__.update(cls._checked(data))
        obj._locate(where)
        return obj

    def located(self: N, **where: Any) -> N:
        """A copy of this object at the locations ``where`` (its reader resolved its files)."""
        obj = type(self).__new__(type(self))
        obj.__dict__.update(self.__dict__)
        obj._locate(where)
        return obj

    def _locate(self, where: dict[str, Any]) -> None:
        unknown = set(where) - set(type(self).model_locations)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no location {', '.join(sorted(unknown))}")
        for name, value in where.items():
            self.__dict__[f"_{name}"] = value

    @classmethod
    def _checked(cls, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise _fail(f"expected an object, got {show(data)}")
        values: dict[str, Any] = {}
        errors: list[tuple[Loc, str]] = []
        for name, field in cls.model_fields.items():
            if name not in data:
                if field.required:
                    errors.append(((), f"missing required field \"{name}\""))
                else:
                    values[name] = field.make_default()
                continue
            try:
                values[name] = field.type.check(data[name])
            except Invalid as exc:
                errors += [((name, *loc), msg) for loc, msg in exc.errors]
        if errors:
            raise Invalid(errors)
        values["model_extra"] = {k: v for k, v in data.items() if k not in cls.model_fields}
        return values

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        names = [*type(self).model_fields, "model_extra"]
        return all(getattr(self, n) == getattr(other, n) for n in names)

    __hash__ = None  # type: ignore[assignment]  # objects change (paths are filled in): never keys

    def __repr__(self) -> str:
        shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in type(self).model_fields)
        return f"{type(self).__name__}({shown})"

    @classmethod
    def json_schema(cls, defs: dict[str, Any]) -> dict[str, Any]:
        """This class's schema; the classes it refers to are added to ``defs``."""
        out: dict[str, Any] = {"type": "object", "title": cls.__name__, "additionalProperties": False,
                               "properties": {n: f.schema(n, defs) for n, f in cls.model_fields.items()}}
        required = [n for n, f in cls.model_fields.items() if f.required]
        if required:
            out["required"] = required
        if "__doc__" in vars(cls) and cls.__doc__:
            import inspect
            out["description"] = inspect.cleandoc(cls.__doc__)
        return out


def json_schema_defs(classes: Iterable[type[Node]]) -> dict[str, Any]:
    """The ``$defs`` of a schema for ``classes`` and every class they refer to, keys sorted."""
    defs: dict[str, Any] = {}
    for cls in classes:
        _Nested(cls).schema(defs)
    return {name: _sorted(defs[name]) for name in sorted(defs)}


#: how alike a key and a declared name must be to be called a misspelling (difflib's ratio):
#: "bindngs"/"bindings" is 0.93, "sise"/"size" 0.75, "src"/"dst" 0.33
NEAR_CUTOFF = 0.75


def nearest(word: str, names: Iterable[str]) -> str | None:
    """The name in ``names`` that ``word`` is a likely misspelling of, or None."""
    import difflib

    close = difflib.get_close_matches(word, list(names), n=1, cutoff=NEAR_CUTOFF)
    return close[0] if close else None


def unknown_fields(cls: type[Node], data: Any, *, near: bool = False) -> list[Any]:
    """The paths of the fields in ``data`` that ``cls`` does not declare, those of nested objects
    included; found in the data as written, so also for an object that is refused. With ``near``,
    (path, the absent declared field the key likely misspells, or None) pairs."""
    if not isinstance(data, dict):
        return []
    declared = cls.model_fields
    out: list[Any] = [(key,) for key in data if key not in declared]
    if out and near:
        absent = [name for name in declared if name not in data]
        out = [(key, nearest(str(key[0]), absent)) for key in out]
    for name, kind in _object_fields(cls):
        value = data.get(name)
        if isinstance(kind, _Nested):
            if isinstance(value, dict):  # only an object given has fields: no class is asked for otherwise
                out += [_below((name,), u, near) for u in unknown_fields(kind.cls, value, near=near)]
        elif isinstance(value, list):
            assert isinstance(kind, _List) and isinstance(kind.item, _Nested)
            for j, item in enumerate(value):
                out += [_below((name, j), u, near) for u in unknown_fields(kind.item.cls, item, near=near)]
    return out


_OBJECT_FIELDS: dict[type[Node], list[tuple[str, Type]]] = {}


def _object_fields(cls: type[Node]) -> list[tuple[str, Type]]:
    """The fields of ``cls`` that hold objects (a :class:`Node`, or a list of them), in their
    order: :func:`unknown_fields` looks inside those only (found once a class)."""
    found = _OBJECT_FIELDS.get(cls)
    if found is None:
        found = _OBJECT_FIELDS[cls] = [
            (name, field.type) for name, field in cls.model_fields.items()
            if isinstance(field.type, _Nested)
            or isinstance(field.type, _List) and isinstance(field.type.item, _Nested)]
    return found


def _below(prefix: Loc, found: Any, near: bool) -> Any:
    return ((*prefix, *found[0]), found[1]) if near else (*prefix, *found)


def _sorted(schema: Any, in_properties: bool = False) -> Any:
    # keys sorted as JSON Schema tools print them; a class's properties keep their declared order
    if isinstance(schema, dict):
        keys = schema if in_properties else sorted(schema)
        return {k: schema[k] if k == "default" else _sorted(schema[k], k == "properties" and not in_properties)
                for k in keys}
    if isinstance(schema, list):
        return [_sorted(v) for v in schema]
    return schema


def dump(obj: Any) -> Any:
    """The JSON form of ``obj``: a field at its default or ``None`` is left out, unknown fields kept."""
    if isinstance(obj, Node):
        out = {}
        for name, field in type(obj).model_fields.items():
            value = getattr(obj, name)
            if value is None or (not field.required and value == field.make_default()):
                continue
            out[name] = dump(value)
        out.update((k, dump(v)) for k, v in obj.model_extra.items() if v is not None)
        return out
    if isinstance(obj, (list, tuple)):
        return [dump(v) for v in obj]
    return obj
