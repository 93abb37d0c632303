#!/usr/bin/env python3
"""Where the instructions of one ``kernellab`` command go: each module's import and each named
function, counted by valgrind's callgrind (deterministic, unlike time on a shared machine).

    python benchmarks/startup_instructions.py [--threshold 1.0] [--functions F,F] [--keep DIR] -- run S.json ...

The command runs as ``python -m kernellab ...`` would, in a child whose import system calls a
marker (``os.getppid``) before and after each module executes, and around each function named
with ``--functions`` (``module.function`` or ``module.Class:method``); ``callgrind
--dump-before=getppid`` then writes the count of each stretch between two markers. Prints the
tree of imports and calls whose own count with their children's reaches ``--threshold`` million
instructions (``incl (self) name``), then the totals: the interpreter's own work outside any
marked stretch (start-up, site, the driver's calls from unmarked code, exit), kernellab's
modules' imports and the other modules' imports. The markers cost about 1 %. Bytecode should be
compiled first (``python -m compileall -q src``): a module compiled from source counts its
compile. Needs valgrind.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

#: the child: markers around imports (a meta path finder wrapping each loader) and named functions
HARNESS = r'''
import os, sys
_log = open(os.environ["MARK_LOG"], "w")
_stack = ["<interpreter>"]
_mark = os.getppid
def mark(event):
    _log.write(event + "\n")
    _mark()
class Loader:
    def __init__(self, inner, name): self.inner, self.name = inner, name
    def create_module(self, spec): return self.inner.create_module(spec)
    def exec_module(self, module):
        mark("enter import " + self.name)
        try: self.inner.exec_module(module)
        finally:
            mark("leave")
            wrap(self.name, module)
class Finder:
    def find_spec(self, name, path, target=None):
        for f in sys.meta_path:
            if f is self or not hasattr(f, "find_spec"): continue
            spec = f.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = Loader(spec.loader, name)
                return spec
        return None
WANTED = {}
for item in filter(None, os.environ.get("MARK_FUNCTIONS", "").split(",")):
    mod, _, fn = item.rpartition(".")
    WANTED.setdefault(mod, []).append(fn)
def wrap(modname, module):
    for fn in WANTED.get(modname, ()):
        owner, _, attr = fn.rpartition(":")
        target = getattr(module, owner) if owner else module
        inner = getattr(target, attr)
        def call(*a, _inner=inner, _label=f"call {modname}.{fn}", **k):
            mark("enter " + _label)
            try: return _inner(*a, **k)
            finally: mark("leave")
        setattr(target, attr, call)
class MetaPath(list):
    # a finder the command puts first (kernellab's kept module code) goes after ours, so the
    # modules it serves are marked too
    def insert(self, index, finder):
        list.insert(self, index + 1 if index == 0 and self and isinstance(self[0], Finder) else index, finder)
sys.meta_path = MetaPath([Finder(), *sys.meta_path])
import atexit
atexit.register(lambda: (mark("exit"), _log.flush()))
sys.argv = ["kernellab"] + sys.argv[1:]
from kernellab.cli import program
program()
'''


def _count(path: Path) -> int:
    with open(path) as fh:
        for line in fh:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    return 0


def _tree(events: list[str], counts: list[int], after: int) -> dict:
    """The marked stretches as a tree: name, own count, children, and the count with them."""
    root: dict = {"name": "<interpreter, unmarked code, driver calls from it>", "self": after, "kids": []}
    stack = [root]
    for count, event in zip(counts, events):
        stack[-1]["self"] += count
        if event.startswith("enter "):
            node = {"name": event[6:], "self": 0, "kids": []}
            stack[-1]["kids"].append(node)
            stack.append(node)
        elif event == "leave":
            stack.pop()

    def inclusive(node: dict) -> int:
        node["incl"] = node["self"] + sum(inclusive(k) for k in node["kids"])
        return int(node["incl"])

    inclusive(root)
    return root


def _report(root: dict, threshold: float) -> None:
    def show(node: dict, depth: int) -> None:
        if node["incl"] >= threshold * 1e6:
            print(f"{'  ' * depth}{node['incl'] / 1e6:7.1f} ({node['self'] / 1e6:6.1f})  {node['name']}")
            for kid in node["kids"]:
                show(kid, depth + 1)

    show(root, 0)
    totals = {"kernellab modules' imports": 0, "other modules' imports": 0, "marked functions (own work)": 0}

    def add(node: dict) -> None:
        name = node["name"]
        if name.startswith("import kernellab"):
            totals["kernellab modules' imports"] += node["self"]
        elif name.startswith("import "):
            totals["other modules' imports"] += node["self"]
        elif name.startswith("call "):
            totals["marked functions (own work)"] += node["self"]
        for kid in node["kids"]:
            add(kid)

    add(root)
    print(f"\ntotal {root['incl'] / 1e6:.1f} M instructions; {root['name']}: {root['self'] / 1e6:.1f} M")
    for what, value in totals.items():
        print(f"  {what}: {value / 1e6:.1f} M")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threshold", type=float, default=1.0, help="million instructions a line must reach")
    parser.add_argument("--functions", default="", help="comma-separated functions to mark as well")
    parser.add_argument("--keep", type=Path, help="keep callgrind's files in this folder")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then kernellab's arguments")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give kernellab's arguments after --")
    with tempfile.TemporaryDirectory(prefix="kernellab-instructions-") as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        harness = folder / "harness.py"
        harness.write_text(HARNESS)
        env = {**os.environ, "MARK_LOG": str(folder / "events.txt"), "MARK_FUNCTIONS": args.functions}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        proc = subprocess.run(["valgrind", "--tool=callgrind", "--dump-before=getppid",
                               f"--callgrind-out-file={folder / 'cg.out'}", sys.executable, str(harness), *command],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"the command failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        events = (folder / "events.txt").read_text().splitlines()
        counts = [_count(folder / f"cg.out.{i}") for i in range(1, len(events) + 1)]
        after = _count(folder / "cg.out")
    _report(_tree(events, counts, after), args.threshold)
    return 0


if __name__ == "__main__":
    sys.exit(main())
