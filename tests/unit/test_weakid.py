"""WeakIdMap keeps a value while its object lives, by identity, and forgets it when the object
is freed (issue 23: the binding's structures and the live output sets without weakref)."""
from __future__ import annotations

from kernellab.weakid import WeakIdMap


class Thing:
    def __eq__(self, other: object) -> bool:  # all equal, like two cffi structures at one address
        return isinstance(other, Thing)

    def __hash__(self) -> int:
        return 0


def test_values_live_as_long_as_their_objects() -> None:
    kept = WeakIdMap()
    a, b = Thing(), Thing()
    kept.put(a, ["a's"])
    kept.put(b, ["b's"])  # equal to a, yet its own entry
    assert len(kept) == 2 and set(map(id, kept.objects())) == {id(a), id(b)}
    del a
    assert len(kept) == 1 and kept.objects() == [b]
    kept.put(b, ["again"])  # replaced: the old reference calls nothing when b goes
    kept.pop(b)
    assert len(kept) == 0 and kept.objects() == []
    kept.put(b)
    del b
    assert len(kept) == 0

