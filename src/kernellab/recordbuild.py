"""The class builder behind :func:`kernellab.records.dataclass` (start-up, issue 23): imported, with
:mod:`dataclasses`, when a command first builds a class (a ``run`` on buffers builds none: its
records are :class:`kernellab.records.Value` and :class:`kernellab.records.Frozen` classes).

:func:`_build` makes the class the standard decorator makes (its ``Field`` objects, ``__init__``,
``__repr__``, ``__eq__``, order, the frozen ``__setattr__``/``__delattr__``, ``__hash__``,
``__match_args__``, slots), without the standard decorator's per-class work: that examines every
field several times and writes the text of each method piece by piece, about 0.7 M instructions a
class even when classcode has kept the compiled methods. Here one pass over the class writes its
*shape*, a short text of what the generated code depends on (the options, each field's name, whether
it has a default or a factory and its ``init``/``repr``/``hash``/``compare`` flags, the methods the
class defines itself, ``__post_init__``, this module's own version); the shape keys the compiled
code of one function that does the rest for every class of that shape, straight through: it makes
the fields, defines the methods and sets them. The code is kept by :mod:`kernellab.classcode`'s
cache where a command installed it (:data:`_code_of`, set by :func:`kernellab.records.keep_code`):
its text is written from the shape alone (:func:`_source`), so equal shapes have equal code, and a
class whose fields change has another shape; a cache that is absent, unwritable or corrupt only
costs the compile.

The fast path covers what the standard decorator does with the options kernellab uses (``frozen``,
``eq``, ``order``, ``slots``, ``init``, ``repr``, ``match_args``) on the interpreter versions it was
compared with (:data:`CHECKED_VERSIONS`). Any other option, a keyword-only field, an ``InitVar``,
``ClassVar`` or ``KW_ONLY`` annotation, an annotation that is not text, a mutable default, or a
class the standard decorator refuses is refused (:class:`_Refused`) and handed to
:func:`dataclasses.dataclass`, which raises its own errors. ``tests/unit/test_records.py`` builds
every kernellab dataclass both ways and compares.
"""
from __future__ import annotations

import abc
import dataclasses
import itertools
import os
import sys
from _thread import get_ident
from dataclasses import MISSING, Field, FrozenInstanceError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import CodeType
    from typing import Any, TypeVar

    _T = TypeVar("_T")

#: the interpreter versions whose :mod:`dataclasses` the built classes were compared with (the
#: private names of the standard module used here differ between versions); elsewhere the standard
#: decorator builds every class
CHECKED_VERSIONS = ((3, 11),)
_IS_FIELD = getattr(dataclasses, "_FIELD", None)  # the marker of a real field (not a pseudo-field)
_FAST = sys.version_info[:2] in CHECKED_VERSIONS and _IS_FIELD is not None and hasattr(dataclasses, "_EMPTY_METADATA")
#: the options built here, in the order the shape writes them (any other goes to the standard decorator)
OPTIONS = ("init", "repr", "eq", "order", "frozen", "match_args", "slots")
_DEFAULTS = {"init": True, "repr": True, "eq": True, "order": False, "frozen": False, "match_args": True,
             "slots": False}
#: the methods and attributes the standard decorator adds unless the class has its own (or refuses)
_OWN = frozenset({"__init__", "__repr__", "__eq__", "__lt__", "__le__", "__gt__", "__ge__", "__setattr__",
                  "__delattr__", "__hash__", "__match_args__", "__slots__"})
#: defaults whose value is the class attribute itself (no ``__get__``): the rest are read with getattr
_PLAIN = frozenset({int, float, str, bytes, bool, type(None), tuple, frozenset, complex})
#: attributes every class has from ``type``/``object``: a field by such a name goes to the standard decorator
_CLASS_NAMES = frozenset(dir(type))


def _frozen_methods(cls: type, names: tuple[str, ...]) -> tuple[Callable[..., None], Callable[..., None]]:
    """The ``__setattr__`` and ``__delattr__`` of a frozen class whose fields are ``names`` (the
    same code for every class: kept with this module, not with each class's)."""

    def __setattr__(self: object, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)  # type: ignore[arg-type]  # cls: the class it is set on

    def __delattr__(self: object, name: str) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)  # type: ignore[arg-type]  # cls: the class it is set on

    for method in (__setattr__, __delattr__):
        method.__module__ = cls.__module__
        method.__annotations__ = {}
    return __setattr__, __delattr__


def _guarded_repr(user: Callable[[Any], str]) -> Callable[[Any], str]:
    """``user`` returning ``...`` for an object whose repr is already running in this thread, named
    as ``functools.wraps`` names the standard decorator's guard."""
    running: set[tuple[int, int]] = set()

    def __repr__(self: Any) -> str:
        key = id(self), get_ident()
        if key in running:
            return "..."
        running.add(key)
        try:
            result = user(self)
        finally:
            running.discard(key)
        return result

    __repr__.__module__ = user.__module__
    __repr__.__qualname__ = user.__qualname__
    __repr__.__annotations__ = user.__annotations__
    __repr__.__wrapped__ = user  # type: ignore[attr-defined]
    return __repr__


_EMPTY_METADATA = getattr(dataclasses, "_EMPTY_METADATA", None)
_new_object = object.__new__


def _plain_field(default: Any, name: str, annotation: Any) -> Field[Any]:
    """The Field the standard decorator makes of a field with no field(): ``Field(default, MISSING,
    True, True, None, True, None, False)`` named. Set here, where the stores are specialized after a
    few classes, not in each class's run-once function (a generic store each) and Field.__init__."""
    f = _new_object(Field)
    f.name = name
    f.type = annotation
    f.default = default
    f.default_factory = MISSING
    f.init = True
    f.repr = True
    f.hash = None
    f.compare = True
    f.metadata = _EMPTY_METADATA  # type: ignore[assignment]  # the standard module's own empty mapping
    f.kw_only = False
    f._field_type = _IS_FIELD  # type: ignore[attr-defined]
    return f


def _named_field(f: Field[Any], name: str, annotation: Any) -> Field[Any]:
    """A class's own field() named, as the standard decorator names it."""
    f.name = name
    f.type = annotation
    f.kw_only = False
    f._field_type = _IS_FIELD  # type: ignore[attr-defined]
    return f


#: what each built class's function is called with after the class and its values
_SUPPORT = (_plain_field, _named_field, MISSING, object, getattr(dataclasses, "_HAS_DEFAULT_FACTORY", None),
            getattr(dataclasses, "_DataclassParams", None), _frozen_methods, _guarded_repr)


def _version() -> str | None:
    """This module's own version in each shape (its file's and :mod:`kernellab.recordtext`'s time
    and size): a changed builder or writer of texts writes new keys. None where a file cannot be
    read: then nothing is kept."""
    try:
        st = os.stat(__file__)
        text = os.stat(os.path.join(os.path.dirname(__file__), "recordtext.py"))
    except (OSError, NameError):
        return None
    return f"records:{st.st_mtime_ns}:{st.st_size}:{text.st_mtime_ns}:{text.st_size}"


_VERSION = _version()
_FAST = _FAST and _VERSION is not None


def _compiled(key: str, source: Callable[[], str]) -> CodeType:
    # no __future__ flags from this module: the text compiles as the standard decorator's do
    return compile(source(), "<string>", "exec", dont_inherit=True)


#: the code of a shape: the copy kept by classcode's cache (handed over by
#: :func:`kernellab.records.keep_code`), or compiled (:func:`kernellab.records.dataclass` builds
#: here only with kept code: without, the standard decorator costs less)
_code_of: Callable[[str, Callable[[], str]], CodeType] = _compiled


class _Refused(Exception):
    """The standard decorator builds this class (it refuses it, or it needs what is not built here)."""


def _build(cls: type[_T], options: dict[str, bool]) -> type[_T]:
    opt = _options(options)
    key, values, annotations, namespace = _shape(cls, opt)
    code = _code_of(key, lambda: _source(key))
    scope: dict[str, Any] = {}
    exec(code, namespace, scope)
    scope["__create_fn__"](cls, values, annotations, _SUPPORT)
    if not cls.__doc__:
        cls.__doc__ = cls.__name__ + _signature_text(cls)
    if opt[6] == "1":
        cls = dataclasses._add_slots(cls, opt[4] == "1", False)  # type: ignore[attr-defined]
    abc.update_abstractmethods(cls)
    return cls


def _shape(cls: type, opt: str) -> tuple[str, list[Any], dict[str, Any], dict[str, Any]]:
    """The key of ``cls``'s shape, the values its function takes (each field's default, field()
    or base class's Field), its annotations and its module's namespace."""
    own = cls.__dict__
    module = sys.modules.get(cls.__module__)
    namespace = module.__dict__ if module is not None else {}
    annotations = own.get("__annotations__", {})
    own_base = cls.__bases__ == (object,)
    # each field's part of the key and its value, by name (a base class's first, in its order)
    shapes: dict[str, str] = {}
    values: dict[str, Any] = {}
    if not own_base:
        _base_fields(cls, opt[4] == "1", shapes, values)
    declared = 0  # the class's own field()s
    for name, annotation in annotations.items():  # one pass, inline: this loop is most of a class's cost
        if type(annotation) is not str:
            raise _Refused
        names = _leading_names.get(annotation) or _leading(annotation)
        if names[1] is not None:
            obj = namespace.get(names[1]) if names[0] is None else _held(namespace, *names)
            if obj is not None and _pseudo_field(obj):
                raise _Refused
        value = own.get(name, MISSING)
        if value is MISSING:
            # no default, and no base class to hold one: most fields (inline, not a call each)
            shapes[name], values[name] = ("n:" + name, MISSING) if own_base and name not in _CLASS_NAMES else \
                _inherited_default(cls, name)
        elif type(value) is Field:
            if value.kw_only not in (MISSING, False):  # type: ignore[attr-defined]
                raise _Refused
            shapes[name] = f"F{_flags(value)}:{name}"
            values[name] = value
            declared += 1
        else:
            if type(value) not in _PLAIN:
                value = _plain_default(cls, name, value)
            shapes[name] = "d:" + name
            values[name] = value
    if sum(map(isinstance, own.values(), itertools.repeat(Field))) != declared:
        raise _Refused  # a field() without an annotation
    explicit_hash = own.get("__hash__", MISSING)
    # a class of type's with object its only base finds __post_init__ in its own namespace or nowhere
    # (hasattr's miss formats an AttributeError first)
    post_init = "__post_init__" in own if own_base and type(cls) is type else hasattr(cls, "__post_init__")
    flags = ("1" if post_init else "0") + (
        "0" if explicit_hash is MISSING or (explicit_hash is None and "__eq__" in own) else "1")
    # most classes define none of these (isdisjoint walks the class's names, with no set made)
    owned = "" if _OWN.isdisjoint(own) else ",".join(sorted(_OWN.intersection(own)))
    key = "|".join([_VERSION or "", opt, flags, owned, ";".join(shapes.values())])
    return key, list(values.values()), annotations, namespace


#: an annotation's leading (module, name), as the standard decorator's pattern reads them; the same
#: texts come back class after class ("int", "str", "tuple[int, ...]")
_leading_names: dict[str, tuple[str | None, str | None]] = {}


def _leading(annotation: str) -> tuple[str | None, str | None]:
    names: tuple[str | None, str | None]
    if annotation.isascii() and annotation.isidentifier():  # "int", "Path": the pattern's answer, without it
        names = (None, annotation)
    else:
        found = _leading_name(annotation)
        names = found.groups() if found is not None else (None, None)
    _leading_names[annotation] = names
    return names


def _held(namespace: dict[str, Any], holder: str | None, name: str | None) -> Any:
    """``holder.name`` looked up as the standard decorator looks up ``typing.ClassVar`` and the like."""
    return getattr(namespace.get(holder or ""), "__dict__", {}).get(name)


def _inherited_default(cls: type, name: str) -> tuple[str, Any]:
    """(shape, default) of a field whose class holds no value for it: a base class may."""
    if cls.__bases__ != (object,):
        value = getattr(cls, name, MISSING)
        if isinstance(value, Field):
            raise _Refused  # the standard decorator would delete the base class's attribute
    elif name in _CLASS_NAMES:
        raise _Refused
    else:
        value = MISSING
    if value is MISSING:
        return "n:" + name, MISSING
    return "d:" + name, _plain_default(cls, name, value)


def _plain_default(cls: type, name: str, value: Any) -> Any:
    """The default of a field as the standard decorator reads it (a descriptor's own answer)."""
    if isinstance(value, Field):
        raise _Refused  # a subclass of Field
    value = getattr(cls, name)
    if type(value).__hash__ is None or type(value).__name__ == "member_descriptor":
        raise _Refused  # a mutable default, or a slot of a base class
    return value


#: by the options as given, in their order (a decorator's options come in one order each time)
_option_codes: dict[tuple[tuple[str, bool], ...], str] = {}


def _options(options: dict[str, bool]) -> str:
    """The options as a string of 0s and 1s in :data:`OPTIONS`' order (refused: another option)."""
    given = tuple(options.items())
    code = _option_codes.get(given)
    if code is None:
        if not options.keys() <= _DEFAULTS.keys() or any(type(v) is not bool for v in options.values()):
            raise _Refused
        full = {**_DEFAULTS, **options}
        if full["order"] and not full["eq"]:
            raise _Refused
        code = _option_codes[given] = "".join("1" if full[name] else "0" for name in OPTIONS)
    return code


def _flags(f: Field[Any]) -> str:
    """init, repr, hash (N: as compare), compare, and d(efault)/f(actory)/- of a Field."""
    hashed = f.hash
    return "".join(["1" if f.init else "0", "1" if f.repr else "0",
                    "N" if hashed is None else "1" if hashed else "0", "1" if f.compare else "0",
                    "d" if f.default is not MISSING else "f" if f.default_factory is not MISSING else "-"])  # type: ignore[misc]


def _base_fields(cls: type, frozen: bool, shapes: dict[str, str], values: dict[str, Any]) -> None:
    """The fields of the dataclasses ``cls`` derives from, into ``shapes`` and ``values`` by name."""
    bases = frozen_bases = 0
    for base in cls.__mro__[-1:0:-1]:
        base_fields = getattr(base, "__dataclass_fields__", None)
        if base_fields is None:
            continue
        bases += 1
        for f in base_fields.values():
            if f._field_type is not _IS_FIELD or f.kw_only is not False:
                raise _Refused  # a pseudo-field or a keyword-only field
            shapes[f.name] = f"B{_flags(f)}:{f.name}"
            values[f.name] = f
        frozen_bases += bool(getattr(base, "__dataclass_params__").frozen)  # noqa: B009 - a class's attribute
    if bases and (frozen_bases > 0) != frozen:
        raise _Refused  # frozen over mutable or the reverse: the standard decorator's error


_leading_name = getattr(dataclasses, "_MODULE_IDENTIFIER_RE", None).match  # type: ignore[union-attr]


def _pseudo_field(obj: Any) -> bool:
    """``obj``, the value of an annotation's leading name, is ``ClassVar``, ``InitVar`` or ``KW_ONLY``
    (the standard decorator's test: the name looked up in the class's module)."""
    if obj is dataclasses.InitVar or obj is dataclasses.KW_ONLY or type(obj) is dataclasses.InitVar:
        return True
    if type(obj) is type:  # a class: not typing's ClassVar
        return False
    typing = sys.modules.get("typing")
    return typing is not None and (obj is typing.ClassVar or getattr(obj, "__origin__", None) is typing.ClassVar)


def _signature_text(cls: type) -> str:
    """What the standard decorator writes after the name of a class without a docstring."""
    import inspect  # only for such a class (kernellab's classes on the run path have docstrings)

    try:
        return str(inspect.signature(cls)).replace(" -> None", "")
    except (TypeError, ValueError):
        return ""


def _source(key: str) -> str:
    """The function that builds a class of shape ``key`` (written on a cache miss only:
    :mod:`kernellab.recordtext`, which a run whose classes are all kept never imports)."""
    from kernellab import recordtext

    try:
        return recordtext.source(key)
    except recordtext.Refused:
        raise _Refused from None
