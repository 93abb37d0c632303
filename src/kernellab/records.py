"""kernellab's records: plain value classes (:class:`Value`, :class:`Frozen`) and the dataclass
decorator kernellab's other classes take (start-up, issues 11 and 23).

:class:`Value` and :class:`Frozen` give a class written with its own ``__init__`` a dataclass's
repr, equality, hash, frozenness and ``replace``, for the records every run makes: a run on buffers
builds no dataclass at all, and imports no :mod:`dataclasses`. :func:`dataclass` stands in for
:func:`dataclasses.dataclass`: where a command installed classcode's cache (:func:`keep_code`), a
class is built by its shape's kept function (:mod:`kernellab.recordbuild`, imported with
:mod:`dataclasses` when a first class is built); elsewhere (the Python API, pytest, the commands
that start workers) the standard decorator builds every class: compiling one function per class
costs more than its own texts.
"""
from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import CodeType
    from typing import Any, ClassVar, TypeVar

    _T = TypeVar("_T")
    _F = TypeVar("_F", bound="Frozen")


def _compile(source: str) -> CodeType:
    # no __future__ flags from this module: the text compiles as the standard decorator's do
    return compile(source, "<string>", "exec", dont_inherit=True)


def _compiled(key: str, source: Callable[[], str]) -> CodeType:
    return _compile(source())


#: the code of a shape: the copy kept by classcode's cache (:func:`keep_code`), or compiled (then
#: :func:`dataclass` leaves the class to the standard decorator)
_code_of: Callable[[str, Callable[[], str]], CodeType] = _compiled
#: ``exec`` for :mod:`dataclasses`' generated methods (classcode's cache), put in place when it loads
_exec_hook: Callable[..., None] | None = None


def keep_code(code_of: Callable[[str, Callable[[], str]], CodeType] | None,
              exec_hook: Callable[..., None] | None = None) -> None:
    """Take each shape's code from ``code_of(key, source)`` (classcode's cache, which compiles
    ``source()`` for a key it does not have), or compile it each time (None); with ``exec_hook``,
    :mod:`dataclasses` runs the text of each method it generates through it (now if it is loaded,
    else when a first class is built)."""
    global _code_of, _exec_hook
    _code_of = code_of if code_of is not None else _compiled
    _exec_hook = exec_hook
    _hand_over()


def _hand_over() -> None:
    """The kept code to the builder and the hook to :mod:`dataclasses`, where they are loaded."""
    global _handed
    builder = sys.modules.get("kernellab.recordbuild")
    if builder is not None:
        vars(builder)["_code_of"] = _code_of
        _handed = True
    dataclasses = sys.modules.get("dataclasses")
    if dataclasses is None:
        return
    # dataclasses looks ``exec`` up in its module globals before the builtins
    if _exec_hook is not None:
        vars(dataclasses)["exec"] = _exec_hook
    else:
        vars(dataclasses).pop("exec", None)


#: whether the builder (and so dataclasses) is loaded and has what :func:`keep_code` was given
_handed = False


def _dataclass(cls: type[_T] | None = None, /, **options: bool) -> Any:
    """:func:`dataclasses.dataclass`, the class built by its shape's kept function where it can be."""
    from kernellab import recordbuild  # with dataclasses: a command that builds no class loads neither

    if not _handed:
        _hand_over()

    def wrap(cls: type[_T]) -> type[_T]:
        # without kept code (no command installed classcode's cache: the Python API, pytest, the
        # commands that start workers) a compile per class costs more than the standard decorator
        if recordbuild._FAST and _code_of is not _compiled:
            try:
                return recordbuild._build(cls, options)  # type: ignore[no-any-return]
            except recordbuild._Refused:
                pass
        built: type[_T] = recordbuild.dataclasses.dataclass(**options)(cls)  # type: ignore[call-overload]
        return built

    return wrap if cls is None else wrap(cls)


if TYPE_CHECKING:  # type checkers see the standard decorator, whose rules they know
    from dataclasses import dataclass as dataclass
else:
    dataclass = _dataclass


def __getattr__(name: str) -> Any:
    """The builder's names as this module's, where they lived before :mod:`kernellab.recordbuild`
    (tests read ``records._FAST``, ``records._build``...): importing it loads :mod:`dataclasses`."""
    if name.startswith("_") and not name.startswith("__"):
        from kernellab import recordbuild

        if name in vars(recordbuild):
            return vars(recordbuild)[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Value:
    """The repr, equality and hash of a plain value class, as a dataclass's are, for the classes a
    run makes where building a dataclass cost its start-up more than the class (issue 23).
    ``_fields``: the constructor's parameters in order, which ``__repr__`` writes and ``__eq__`` and
    ``__hash__`` compare (:meth:`_values`). A mutable one sets ``__hash__ = None``, as a dataclass
    does."""

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]]

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, n) for n in self._fields)

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self._fields) + ")"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._values())


class Frozen(Value):
    """Base of a frozen record with value equality, as a frozen dataclass is (its ``__repr__``,
    ``__eq__``, ``__hash__``, frozen ``__setattr__`` and ``replace``), for the few records every run
    builds: a class with its own ``__init__`` (which sets its fields with ``vars(self).update``) costs
    a fraction of a dataclass's making (start-up, issue 23). ``_compared``: the fields ``__eq__`` and
    ``__hash__`` compare (a field left out, as ``field(compare=False)``)."""

    __slots__ = ()
    _compared: ClassVar[tuple[str, ...]]

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, n) for n in self._compared)

    def replace(self: _F, **changes: Any) -> _F:
        """A copy with ``changes``, as :func:`dataclasses.replace` makes one."""
        if unknown := set(changes) - set(self._fields):
            raise TypeError(f"{type(self).__name__} has no field {', '.join(sorted(unknown))}")
        return type(self)(**{n: changes[n] if n in changes else getattr(self, n) for n in self._fields})

    def __setattr__(self, name: str, value: object) -> None:
        from dataclasses import FrozenInstanceError  # the error a frozen dataclass raises (loaded here only)

        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot delete field {name!r}")
