"""kernellab's dataclass decorator (records.py, issue 23 start-up): every kernellab dataclass is the
class the standard decorator would make, whether its code is compiled or read back from the cache;
what the fast path does not build goes to the standard decorator; a bad cache costs only time.

Run as a script (``python test_records.py CACHE_DIR``) it imports every kernellab module with each
dataclass built both ways and prints a JSON report: the test runs it twice on one cache folder,
cold (code compiled and kept) and warm (code read back).
"""
from __future__ import annotations

import dataclasses
import inspect
import json
import marshal
import os
import pickle
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from kernellab import classcode, recordbuild, records
from kernellab.classcode import CodeCache

ROOT = Path(__file__).resolve().parents[2]

# --- comparing a class built here with the standard decorator's build of the same class ----------


def raw_copy(cls: type) -> type:
    """The undecorated class again: its namespace, with each field() copied (the decorators name them)."""
    namespace = {}
    for key, value in cls.__dict__.items():
        if key in ("__dict__", "__weakref__"):
            continue
        if isinstance(value, dataclasses.Field):
            value = dataclasses.field(default=value.default, default_factory=value.default_factory, init=value.init,
                                      repr=value.repr, hash=value.hash, compare=value.compare,
                                      metadata=dict(value.metadata) or None, kw_only=value.kw_only)
        namespace[key] = value
    return type(cls)(cls.__name__, cls.__bases__, namespace)


def _function_facts(fn: Any) -> dict[str, Any]:
    try:
        signature = str(inspect.signature(fn))
    except (TypeError, ValueError):
        signature = None
    return {"name": fn.__name__, "qualname": fn.__qualname__, "module": fn.__module__, "doc": fn.__doc__,
            "defaults": fn.__defaults__, "kwdefaults": fn.__kwdefaults__, "annotations": fn.__annotations__,
            "signature": signature, "wrapped": hasattr(fn, "__wrapped__")}


def _same(a: Any, b: Any) -> bool:
    try:
        return a is b or bool(a == b)
    except Exception:  # noqa: BLE001 - an object whose == raises is compared by identity
        return False


#: attributes each class has its own of (a slot's descriptor, abc's registry): compared by kind and name
PER_CLASS = ("member_descriptor", "_abc_data")


def class_differences(fast: type, ref: type) -> list[str]:
    """How ``fast`` differs from ``ref`` as a class: fields, parameters, attributes, methods."""
    out = []
    fast_fields, ref_fields = fast.__dict__["__dataclass_fields__"], ref.__dict__["__dataclass_fields__"]
    if list(fast_fields) != list(ref_fields):
        return [f"fields {list(fast_fields)} != {list(ref_fields)}"]
    for name in fast_fields:
        for attr in ("name", "type", "default", "default_factory", "init", "repr", "hash", "compare", "metadata",
                     "kw_only", "_field_type"):
            if not _same(getattr(fast_fields[name], attr), getattr(ref_fields[name], attr)):
                out.append(f"field {name}.{attr}")
    if repr(fast.__dict__["__dataclass_params__"]) != repr(ref.__dict__["__dataclass_params__"]):
        out.append("params")
    noise = ("__dict__", "__weakref__")
    fast_keys = [k for k in fast.__dict__ if k not in noise]
    if fast_keys != [k for k in ref.__dict__ if k not in noise]:
        out.append(f"attributes {fast_keys} != {[k for k in ref.__dict__ if k not in noise]}")
    for key in fast_keys:
        mine, theirs = fast.__dict__[key], ref.__dict__.get(key)
        if inspect.isfunction(mine) and inspect.isfunction(theirs):
            if _function_facts(mine) != _function_facts(theirs):
                out.append(f"method {key}: {_function_facts(mine)} != {_function_facts(theirs)}")
        elif type(mine).__name__ in PER_CLASS:
            if type(mine) is not type(theirs) or getattr(mine, "__name__", None) != getattr(theirs, "__name__", None):
                out.append(f"attribute {key}: {mine!r} != {theirs!r}")
        elif key not in ("__dataclass_fields__", "__dataclass_params__") and not _same(mine, theirs):
            out.append(f"attribute {key}: {mine!r} != {theirs!r}")
    if str(inspect.signature(fast)) != str(inspect.signature(ref)):
        out.append(f"signature {inspect.signature(fast)} != {inspect.signature(ref)}")
    return out


def _attempt(action: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "ok", action()
    except Exception as exc:  # noqa: BLE001 - the outcome of either build, compared below
        return "raised", f"{type(exc).__name__}: {exc}"


def _arguments(cls: type, value: Callable[[int], Any]) -> list[Any]:
    return [value(i) for i, f in enumerate(dataclasses.fields(cls))
            if f.init and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]


def _shown(obj: Any) -> str:
    """repr without object addresses (a class whose repr is object's)."""
    return re.sub(r" at 0x[0-9a-f]+", "", repr(obj))


SAMPLES: list[Callable[[int], Any]] = [lambda i: i + 1, lambda i: f"v{i}", lambda i: (i,), lambda i: None]


def instance_differences(fast: type, ref: type) -> list[str]:
    """How instances of ``fast`` behave differently from those of ``ref``: construction, repr, ==,
    order, hash, frozen assignment, asdict/astuple/replace, pickling."""
    for value in SAMPLES:
        made_ref = _attempt(lambda value=value: ref(*_arguments(ref, value)))
        made_fast = _attempt(lambda value=value: fast(*_arguments(fast, value)))
        if made_fast[0] != made_ref[0] or (made_ref[0] == "raised" and made_fast[1] != made_ref[1]):
            return [f"construction {made_fast} != {made_ref}"]
        if made_ref[0] == "ok":
            break
    else:
        return []  # no sample value builds either: construction compared above
    x, y = made_fast[1], made_ref[1]
    x2, y2 = fast(*_arguments(fast, value)), ref(*_arguments(ref, value))
    checks: dict[str, tuple[Callable[[Any, Any], Any], ...]] = {
        "repr": (lambda a, b: _shown(a),),
        "eq": (lambda a, b: a == b, lambda a, b: a != b),
        "order": (lambda a, b: a < b, lambda a, b: a <= b, lambda a, b: a > b, lambda a, b: a >= b),
        "hash": (lambda a, b: hash(a) == hash(b),),
        "asdict": (lambda a, b: repr(dataclasses.asdict(a)), lambda a, b: repr(dataclasses.astuple(a))),
        "replace": (lambda a, b: _shown(dataclasses.replace(a)),),
        "frozen": (lambda a, b: setattr(a, dataclasses.fields(a)[0].name, 0) if dataclasses.fields(a) else None,
                   lambda a, b: delattr(a, dataclasses.fields(a)[0].name) if dataclasses.fields(a) else None),
    }
    out = []
    for what, tests in checks.items():
        for test in tests:
            got, want = _attempt(lambda test=test: test(x, x2)), _attempt(lambda test=test: test(y, y2))
            if not _same(got, want):
                out.append(f"{what}: {got} != {want}")
    if fast.__hash__ is not None and ref.__hash__ is not None:
        same_hash = _attempt(lambda: hash(fast(*_arguments(fast, value))) == hash(ref(*_arguments(ref, value))))
        if same_hash[0] == "ok" and not same_hash[1]:
            out.append("hash differs from the standard build's")
    pickled = _attempt(lambda: pickle.loads(pickle.dumps(fast(*_arguments(fast, value)))))
    if pickled[0] == "ok" and _shown(pickled[1]) != _shown(x2):
        out.append(f"pickled {pickled[1]!r} != {x2!r}")
    return out


def checking_decorator(report: dict[str, Any]) -> Callable[..., Any]:
    """records.dataclass, each class also built by the standard decorator from a copy and compared."""
    real = records._dataclass

    def dataclass(cls: Any = None, /, **options: Any) -> Any:
        def wrap(cls: type) -> type:
            name = f"{cls.__module__}.{cls.__qualname__}"
            ref_raw = raw_copy(cls)
            fast = _attempt(lambda: real(**options)(cls))
            ref = _attempt(lambda: dataclasses.dataclass(**options)(ref_raw))
            if fast != ref and (fast[0] != ref[0] or fast[0] == "raised"):
                report["differences"][name] = [f"decorating: {fast} != {ref}"]
            if fast[0] == "raised":
                raise TypeError(fast[1])
            differences = class_differences(fast[1], ref[1]) + instance_differences(fast[1], ref[1])
            if differences:
                report["differences"][name] = differences
            report["classes"] += 1
            return fast[1]  # type: ignore[no-any-return]

        return wrap if cls is None else wrap(cls)

    return dataclass


def check_every_module(cache_dir: Path) -> dict[str, Any]:
    """Import every kernellab module with each dataclass built both ways (the script's work)."""
    import importlib
    import pkgutil

    import kernellab

    cache = CodeCache(cache_dir / "records.marshal")
    records.keep_code(cache.code)
    report: dict[str, Any] = {"classes": 0, "differences": {}, "refused": [], "skipped": {}}
    real_build = recordbuild._build

    def counting_build(cls: type, options: dict[str, bool]) -> type:
        try:
            return real_build(cls, options)
        except recordbuild._Refused:
            report["refused"].append(f"{cls.__module__}.{cls.__qualname__}")
            raise

    recordbuild._build = counting_build
    records.dataclass = checking_decorator(report)
    for info in pkgutil.walk_packages(kernellab.__path__, "kernellab."):
        if info.name in sys.modules or info.name.endswith("__main__"):  # __main__ runs the program
            continue
        try:
            importlib.import_module(info.name)
        except Exception as exc:  # noqa: BLE001 - a module needing what this machine lacks is reported
            report["skipped"][info.name] = f"{type(exc).__name__}: {exc}"[:200]
    report["compiled"] = cache.added
    cache.save()
    return report


# --- the tests --------------------------------------------------------------------------------


def _checked(cache_dir: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "KERNELLAB_NO_CACHE": "1"}
    proc = subprocess.run([sys.executable, __file__, str(cache_dir)], capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.skipif(not records._FAST, reason="the fast path is off on this interpreter version")
def test_every_kernellab_dataclass_is_what_the_standard_decorator_makes(tmp_path: Path) -> None:
    cold = _checked(tmp_path)
    assert cold["differences"] == {}
    assert cold["classes"] > 200 and cold["compiled"] > 100, cold  # the classes were built here, not skipped
    assert len(cold["refused"]) < 10, cold["refused"]  # the standard decorator's share stays small
    warm = _checked(tmp_path)
    assert warm["differences"] == {}
    assert warm["classes"] == cold["classes"] and warm["compiled"] == 0  # every class from kept code


def _fast(cls: type, **options: bool) -> type:
    built = records._build(cls, options)
    assert built is not None
    return built


@pytest.mark.skipif(not records._FAST, reason="the fast path is off on this interpreter version")
@pytest.mark.parametrize("options", [{}, {"frozen": True}, {"eq": False}, {"frozen": True, "order": True},
                                     {"slots": True}, {"frozen": True, "slots": True}, {"repr": False},
                                     {"init": False}, {"match_args": False}])
def test_sample_classes_match_in_every_option(options: dict[str, bool]) -> None:
    def make() -> type:
        class Sample:
            """A sample."""
            name: str
            size: int = 4
            shape: tuple[int, ...] = ()
            items: list[int] = dataclasses.field(default_factory=list, compare=False)
            hidden: int = dataclasses.field(default=7, repr=False, init=False)
            weight: float = dataclasses.field(default=0.5, hash=False)
            tag: str = dataclasses.field(default="t", hash=True, compare=False)
            self: str = "me"
        return Sample

    plain = make()
    fast, ref = _fast(plain, **options), dataclasses.dataclass(**options)(make())
    assert class_differences(fast, ref) == []
    if options.get("init", True):
        assert instance_differences(fast, ref) == []


#: module level, so pickle finds them
_Frozen = records.dataclass(frozen=True)(type("_Frozen", (), {"__annotations__": {"a": "int", "b": "str"}, "b": "x", "__doc__": "d",
                                      "__module__": __name__, "__qualname__": "_Frozen"}))
_Slotted = records.dataclass(frozen=True, slots=True)(
    type("_Slotted", (), {"__annotations__": {"a": "int"}, "__doc__": "d", "__module__": __name__,
                          "__qualname__": "_Slotted"}))


@pytest.mark.skipif(not records._FAST, reason="the fast path is off on this interpreter version")
def test_instances_pickle_as_the_standard_ones() -> None:
    for obj in (_Frozen(1), _Frozen(2, "y"), _Slotted(3)):
        again = pickle.loads(pickle.dumps(obj))
        assert again == obj and hash(again) == hash(obj) and repr(again) == repr(obj)
    assert "__dict__" not in dir(_Slotted(1)) and _Slotted.__slots__ == ("a",)


@pytest.mark.skipif(not records._FAST, reason="the fast path is off on this interpreter version")
def test_inheritance_post_init_and_a_recursive_repr() -> None:
    def base() -> type:
        class Base:
            """b"""
            a: int
            b: int = 2
        return Base

    def child(parent: type) -> type:
        class Child(parent):  # type: ignore[valid-type,misc]
            """c"""
            c: list[Any] = dataclasses.field(default_factory=list)
            b: int = 5

            def __post_init__(self) -> None:
                self.seen = self.a + self.b
        return Child

    fast_base, ref_base = _fast(base()), dataclasses.dataclass(base())
    fast, ref = _fast(child(fast_base)), dataclasses.dataclass(child(ref_base))
    assert class_differences(fast, ref) == [] and instance_differences(fast, ref) == []
    loop = fast(1)
    loop.c.append(loop)
    assert loop.seen == 6 and repr(loop) == "test_inheritance_post_init_and_a_recursive_repr.<locals>.child." \
                                            "<locals>.Child(a=1, b=5, c=[...])"


@pytest.fixture
def kept(tmp_path: Path) -> Iterator[CodeCache]:
    """records.dataclass with a code cache in place, as a command has it."""
    cache = CodeCache(tmp_path / "kept.marshal")
    records.keep_code(cache.code)
    try:
        yield cache
    finally:
        records.keep_code(None)


def _refused(cls: type, **options: Any) -> bool:
    try:
        records._build(cls, options)
    except records._Refused:
        return True
    return False


def test_what_the_fast_path_does_not_build_goes_to_the_standard_decorator(kept: CodeCache) -> None:
    def with_classvar() -> type:
        class C:
            """c"""
            kind: ClassVar[str] = "k"
            a: int = 0
        return C

    assert _refused(with_classvar())
    assert _refused(type("K", (), {"__annotations__": {"a": "int"}, "__doc__": "d"}), kw_only=True)
    # a field named as an attribute every class has from type (its default would be type's)
    assert _refused(type("M", (), {"__annotations__": {"mro": "int"}, "__doc__": "d"}))
    built = records.dataclass(with_classvar())
    assert [f.name for f in dataclasses.fields(built)] == ["a"] and built.kind == "k"
    assert kept.added == 0  # built by the standard decorator, nothing kept


def test_without_kept_code_the_standard_decorator_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(cls: type, options: dict[str, bool]) -> type:
        raise AssertionError("built by records without kept code")

    monkeypatch.setattr(records, "_build", fail)
    built = records.dataclass(frozen=True)(type("P", (), {"__annotations__": {"a": "int"}, "__doc__": "d"}))
    assert built(1) == built(1) and hash(built(1)) == hash(built(1))


@pytest.mark.parametrize("namespace, message", [
    ({"__annotations__": {"a": "list"}, "a": []}, "mutable default"),
    ({"__annotations__": {"a": "int", "b": "int"}, "a": 1}, "non-default argument 'b' follows default argument"),
    ({"__annotations__": {}, "a": dataclasses.field(default=1)}, "'a' is a field but has no type annotation"),
    ({"__annotations__": {"a": "int"}, "__setattr__": lambda self, n, v: None}, "Cannot overwrite attribute __setattr__"),
])
def test_a_class_the_standard_decorator_refuses_gets_its_error(namespace: dict[str, Any], message: str,
                                                               kept: CodeCache) -> None:
    assert _refused(type("Bad", (), {**namespace, "__doc__": "d"}), frozen=True)
    with pytest.raises((TypeError, ValueError), match=message):
        records.dataclass(frozen=True)(type("Bad", (), {**namespace, "__doc__": "d"}))


def test_a_corrupt_or_unwritable_cache_costs_only_the_compile(tmp_path: Path) -> None:
    def point() -> type:
        return type("P", (), {"__annotations__": {"a": "int"}, "__doc__": "d"})

    corrupt = tmp_path / "corrupt.marshal"
    corrupt.write_bytes(b"\x00not marshal")
    (tmp_path / "file").write_text("a file where the cache folder should be")
    for file in (corrupt, tmp_path / "file" / "python" / "codes.marshal"):
        cache = CodeCache(file)
        records.keep_code(cache.code)
        try:
            fast = _fast(point(), frozen=True)
            assert fast(1) == fast(1) and repr(fast(1)) == "P(a=1)" and cache.added == 1
            cache.save()  # the unwritable folder: gives up quietly
            # an entry whose bytes are not code is compiled again, not run
            cache.blobs[next(iter(cache.blobs))] = b"junk"
            assert _fast(point(), frozen=True)(2).a == 2 and cache.added in (1, 2)
            assert marshal.loads(cache.blobs[next(iter(cache.blobs))]) is not None
        finally:
            records.keep_code(None)


def test_a_changed_field_is_another_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kept code is keyed by the class's shape: a field added, renamed, or given a default or
    other flags makes another key, so no class runs code written for another shape; so does a
    change to the builder itself (recordbuild.py)."""
    cache = CodeCache(tmp_path / "k.marshal")
    records.keep_code(cache.code)
    try:
        shapes = [{"a": "int"}, {"a": "int", "b": "int"}, {"b": "int"}]
        for annotations in shapes:
            built = _fast(type("S", (), {"__annotations__": annotations, "__doc__": "d"}))
            assert list(built.__dataclass_fields__) == list(annotations)
        built = _fast(type("S", (), {"__annotations__": {"a": "int"}, "a": 3, "__doc__": "d"}))
        assert built() == built(3)
        built = _fast(type("S", (), {"__annotations__": {"a": "int"}, "a": dataclasses.field(default=3, compare=False),
                                     "__doc__": "d"}))
        assert built(1) == built(2)
        assert cache.added == 5 and len(cache.blobs) == 5
        _fast(type("S", (), {"__annotations__": {"a": "int"}, "__doc__": "d"}))
        assert cache.added == 5  # the same shape again: its kept code
        monkeypatch.setattr(recordbuild, "_VERSION", "records:another-writer")
        _fast(type("S", (), {"__annotations__": {"a": "int"}, "__doc__": "d"}))
        assert cache.added == 6  # the builder changed: its texts are keyed apart
    finally:
        records.keep_code(None)


def test_installing_the_cache_hands_it_to_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("KERNELLAB_NO_CACHE", raising=False)
    classcode.uninstall()
    installed = classcode.install("records-test")
    try:
        assert installed is not None and records._code_of == installed.code
    finally:
        classcode.uninstall()
    assert records._code_of is records._compiled


if __name__ == "__main__":
    print(json.dumps(check_every_module(Path(sys.argv[1]))))


def test_every_module_takes_its_decorator_from_records() -> None:
    # a module importing the standard decorator builds its classes at the standard cost on every
    # run (helpers' new modules did, until this test)
    import re

    import kernellab

    root = Path(kernellab.__file__).parent
    direct = [str(p.relative_to(root)) for p in root.rglob("*.py") if p.name != "records.py"
              and re.search(r"^from dataclasses import [^\n]*\bdataclass\b", p.read_text(), re.M)]
    assert direct == []


@pytest.mark.parametrize("annotation", ["int", "_x1", "Path", "  int", "a.b", "a . b", "x[y]", "1a", "int | None",
                                        "typing.ClassVar[int]", "é", "a\u00b7b", "\u2118x", ""])
def test_an_annotations_leading_names_are_the_standard_patterns(annotation: str) -> None:
    found = dataclasses._MODULE_IDENTIFIER_RE.match(annotation)  # type: ignore[attr-defined]
    assert records._leading(annotation) == (found.groups() if found else (None, None))


@pytest.mark.skipif(not records._FAST, reason="the fast path is off on this interpreter version")
def test_a_post_init_is_found_where_the_standard_decorator_finds_it() -> None:
    """In the class itself, or (as hasattr finds it) on a metaclass: then the standard __init__
    calls it and the instance, which does not see it, fails the same way."""

    class Meta(type):
        def __post_init__(cls) -> None:
            raise AssertionError("not called on an instance")

    def own() -> type:
        class Own:
            """o"""
            a: int

            def __post_init__(self) -> None:
                self.seen = self.a * 2

        return Own

    def from_meta() -> type:
        class FromMeta(metaclass=Meta):
            """m"""
            a: int
        return FromMeta

    for make in (own, from_meta):
        fast, ref = _fast(make()), dataclasses.dataclass(make())
        assert class_differences(fast, ref) == [] and instance_differences(fast, ref) == []
    assert _fast(own())(3).seen == 6
    with pytest.raises(AttributeError, match="__post_init__"):
        _fast(from_meta())(1)
