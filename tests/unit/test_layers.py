"""The layer order of docs/architecture.md, enforced: no import runs upward, no import cycle.

The order is read from the ```layers block of docs/architecture.md, so the document and the test
cannot drift apart. Every import counts, those inside functions included: an import hidden in a
function to dodge a cycle is still a cycle.
"""
from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "kernellab"
ARCHITECTURE = ROOT / "docs" / "architecture.md"


@dataclass(frozen=True)
class Layers:
    #: top-level part of kernellab ("formats", "errors", "cli", ...) -> its layer number
    rank: Mapping[str, int]
    #: part -> the only parts it may import besides itself (stricter than the layer order)
    only: Mapping[str, frozenset[str]]
    #: (importer, imported part) -> the only modules of that part it may import: the importer is a
    #: part or a module below it ("runtime", "runtime.graph"); several rules for one module add up
    reach: Mapping[tuple[str, str], frozenset[str]] = field(default_factory=dict)

    def allowed_in(self, module: str, part: str) -> frozenset[str] | None:
        """The modules of ``part`` that ``module`` may import (None: any the layer order allows)."""
        name = module.removeprefix("kernellab.")
        rules = [mods for (importer, target), mods in self.reach.items()
                 if target == part and (name == importer or name.startswith(importer + "."))]
        return frozenset().union(*rules) if rules else None


def read_layers(text: str) -> Layers:
    """The ```layers block: 'N part part ...' lines, 'part: may import a b c' restrictions and
    'importer -> part: module module' rules (which modules of a part an importer may import)."""
    block = text.split("```layers", 1)[1].split("```", 1)[0]
    rank: dict[str, int] = {}
    only: dict[str, frozenset[str]] = {}
    reach: dict[tuple[str, str], frozenset[str]] = {}
    for line in block.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if ": may import " in line:
            part, allowed = line.split(": may import ", 1)
            only[part.strip()] = frozenset(allowed.split())
            continue
        if " -> " in line:
            importer, rest = line.split(" -> ", 1)
            target, modules = rest.split(":", 1)
            key = (importer.strip(), target.strip())
            reach[key] = reach.get(key, frozenset()) | frozenset(modules.split())
            continue
        number, *parts = line.split()
        for part in parts:
            rank[part] = int(number)
    return Layers(rank, only, reach)


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(name: str, known: set[str]) -> str | None:
    """The kernellab module an imported name lives in (a name may be a class inside a module)."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in known:
            return candidate
        parts.pop()
    return None


def _imported_names(tree: ast.AST, module: str, is_package: bool) -> Iterable[tuple[str, int]]:
    here = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - node.level + 1]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            yield origin, node.lineno
            for alias in node.names:
                yield f"{origin}.{alias.name}", node.lineno


def import_graph(package: Path = PACKAGE) -> dict[str, dict[str, int]]:
    """module -> {imported kernellab module: line of the first such import}."""
    files = {module_name(p, package): p for p in package.rglob("*.py")}
    known = set(files)
    graph: dict[str, dict[str, int]] = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        edges: dict[str, int] = {}
        for name, line in _imported_names(tree, module, path.name == "__init__.py"):
            target = _resolve(name, known) if name.split(".")[0] == "kernellab" else None
            if target is None or target == module:
                continue
            # a module's own packages are imported before it whatever it says: not an edge (the
            # root package is kept: it is the facade, and the layer check treats it on its own)
            if module.startswith(target + ".") and target != "kernellab":
                continue
            edges.setdefault(target, line)
        graph[module] = edges
    return graph


def part_of(module: str) -> str:
    """kernellab.formats.npy -> formats; kernellab.cli -> cli; kernellab -> kernellab."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def layer_violations(graph: Mapping[str, Mapping[str, int]], layers: Layers) -> list[str]:
    found = []
    for module, edges in sorted(graph.items()):
        source = part_of(module)
        if source == "kernellab":  # the package's facade re-exports lazily from every layer
            continue
        if source not in layers.rank:
            found.append(f"{module}: its part {source!r} has no layer in docs/architecture.md")
            continue
        for target, line in sorted(edges.items()):
            dest = part_of(target)
            if dest == source or dest == "kernellab":
                continue
            if dest not in layers.rank:
                found.append(f"{module}:{line} imports {target}, whose part {dest!r} has no layer")
            elif layers.rank[dest] > layers.rank[source]:
                found.append(f"{module}:{line} imports {target}: layer {layers.rank[source]} ({source}) "
                             f"may not import layer {layers.rank[dest]} ({dest})")
            elif source in layers.only and dest not in layers.only[source]:
                found.append(f"{module}:{line} imports {target}: {source} may import only "
                             f"{', '.join(sorted(layers.only[source]))}")
            elif (allowed := layers.allowed_in(module, dest)) is not None:
                inner = target.split(".", 2)[2] if target.count(".") >= 2 else ""
                if inner and inner.split(".")[0] not in allowed:
                    found.append(f"{module}:{line} imports {target}: {source} may import of {dest} only "
                                 f"{', '.join(sorted(allowed))}")
    return found


def cycles(graph: Mapping[str, Mapping[str, int]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, {}))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, {})))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def _without_facade(graph: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, int]]:
    # `from kernellab import __version__` is not a dependency on every module the facade re-exports
    return {m: {t: n for t, n in e.items() if t != "kernellab"} for m, e in graph.items() if m != "kernellab"}


def test_no_import_runs_against_the_layer_order() -> None:
    layers = read_layers(ARCHITECTURE.read_text(encoding="utf-8"))
    problems = layer_violations(import_graph(), layers)
    assert not problems, "imports against docs/architecture.md's layer order:\n" + "\n".join(problems)


def test_no_import_cycles() -> None:
    found = cycles(_without_facade(import_graph()))
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


# the checker itself must be able to fail

SAMPLE = """
```layers
2 commands
1 formats runtime backends   # same layer, different parts
0 errors model
formats: may import errors model
runtime -> backends: base registry
runtime.special -> backends: opencl   # one module allowed more
```
"""


def test_the_checker_reports_an_upward_import() -> None:
    graph = {"kernellab.errors": {"kernellab.commands.run": 3}, "kernellab.commands.run": {"kernellab.errors": 1}}
    problems = layer_violations(graph, read_layers(SAMPLE))
    assert problems == ["kernellab.errors:3 imports kernellab.commands.run: layer 0 (errors) may not import "
                        "layer 2 (commands)"]


def test_the_checker_reports_a_restricted_import_and_an_unknown_part() -> None:
    graph = {"kernellab.formats.a": {"kernellab.runtime.x": 7}, "kernellab.extra": {}}
    problems = layer_violations(graph, read_layers(SAMPLE))
    assert problems == ["kernellab.extra: its part 'extra' has no layer in docs/architecture.md",
                        "kernellab.formats.a:7 imports kernellab.runtime.x: formats may import only errors, model"]


def test_the_checker_reports_a_cycle_through_a_function_level_import(tmp_path: Path) -> None:
    pkg = tmp_path / "kernellab"
    (pkg / "runtime").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "runtime" / "__init__.py").write_text("")
    (pkg / "runtime" / "a.py").write_text("from kernellab.runtime import b\n")
    (pkg / "runtime" / "b.py").write_text("def f():\n    from kernellab.runtime.a import thing\n")
    graph = import_graph(pkg)
    assert graph["kernellab.runtime.b"] == {"kernellab.runtime.a": 2}
    assert cycles(_without_facade(graph)) == [["kernellab.runtime.a", "kernellab.runtime.b"]]


def test_the_checker_reports_a_runtime_import_of_a_concrete_backend() -> None:
    graph = {"kernellab.runtime.ml": {"kernellab.backends.base": 3, "kernellab.backends.vulkan_tensor": 9,
                                      "kernellab.backends": 2, "kernellab.model": 1},
             "kernellab.runtime.special": {"kernellab.backends.opencl": 4, "kernellab.backends.vulkan": 5},
             "kernellab.backends.vulkan": {"kernellab.backends.base": 1},
             "kernellab.commands.run": {"kernellab.backends.vulkan": 7}}
    problems = layer_violations(graph, read_layers(SAMPLE))
    assert problems == [
        "kernellab.runtime.ml:9 imports kernellab.backends.vulkan_tensor: runtime may import of backends only "
        "base, registry",
        "kernellab.runtime.special:5 imports kernellab.backends.vulkan: runtime may import of backends only "
        "base, opencl, registry"]


def test_the_runtime_imports_only_the_backend_contract() -> None:
    """The rule is in docs/architecture.md's block, and the runtime's ML modules keep it."""
    layers = read_layers(ARCHITECTURE.read_text(encoding="utf-8"))
    allowed = layers.allowed_in("kernellab.runtime.ml", "backends")
    assert allowed is not None and "base" in allowed and not any(a.startswith("vulkan") for a in allowed)
    graph = import_graph()
    for module in ("kernellab.runtime.ml", "kernellab.runtime.graph", "kernellab.runtime.optical_flow",
                   "kernellab.runtime.aliasing", "kernellab.runtime.executor"):
        concrete = [t for t in graph[module] if t.startswith("kernellab.backends.vulkan") or t == "kernellab.backends.opencl"]
        assert not concrete, f"{module} imports {concrete}"


#: what the runtime may import of the backends: the contract (base, with its program records and the
#: optional features' records), the registry and the OpenCL ABI (argument packing, no driver)
BACKEND_CONTRACT = frozenset({"base", "programs", "feature_specs", "registry", "opencl_abi"})


def test_no_runtime_module_may_import_a_concrete_backend() -> None:
    """No exception for any runtime module: the block grants none a concrete backend module, and
    none imports one (the kernel-instantiation and PySchedCL runners included)."""
    layers = read_layers(ARCHITECTURE.read_text(encoding="utf-8"))
    graph = import_graph()
    concrete = {m.removeprefix("kernellab.backends.") for m in graph
                if m.startswith("kernellab.backends.")} - BACKEND_CONTRACT
    assert {"opencl", "vulkan", "null"} <= concrete
    runtime = [m for m in graph if part_of(m) == "runtime"]
    assert "kernellab.runtime.instantiation" in runtime and "kernellab.runtime.partition" in runtime
    for module in runtime:
        allowed = layers.allowed_in(module, "backends")
        assert allowed is not None and allowed <= BACKEND_CONTRACT, f"{module} may import {allowed}"
        imported = [t for t in graph[module] if t.removeprefix("kernellab.backends.") in concrete]
        assert not imported, f"{module} imports {imported}"
