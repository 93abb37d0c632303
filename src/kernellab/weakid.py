"""Values kept for objects as long as each object lives, without :mod:`weakref` (issue 23).

``weakref``'s module builds its dictionaries, ``finalize`` and ``WeakSet`` at import, about 2 M
instructions of a ``kernellab run`` whose only uses were a ``WeakKeyDictionary`` (the Vulkan
binding's structures -> what they point to) and a ``WeakSet`` (the output sets not yet committed).
:class:`WeakIdMap` does both with the interpreter's own weak reference type.
"""
from __future__ import annotations

from _weakref import ref

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any


class WeakIdMap:
    """object -> value while the object lives; the object is held weakly, and entries are by
    identity, not equality (two cffi structures at one address are two objects, each keeping what
    it points to)."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[int, tuple[ref[Any], Any]] = {}

    def put(self, obj: object, value: Any = None) -> None:
        entries = self._entries
        key = id(obj)

        def forget(_: object) -> None:  # called as obj is freed, before its id can be reused
            entries.pop(key, None)

        # a replaced entry's reference is freed with it, and a freed reference calls nothing
        entries[key] = (ref(obj, forget), value)

    def pop(self, obj: object) -> None:
        self._entries.pop(id(obj), None)

    def objects(self) -> list[Any]:
        """The objects alive now."""
        return [obj for reference, _ in list(self._entries.values()) if (obj := reference()) is not None]

    def __len__(self) -> int:
        return len(self._entries)
