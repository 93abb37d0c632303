"""What ``kernellab run`` does for the other workload formats (AmberScript, kernel-instantiation
files, PySchedCL specs) and its rare flags: apart from :mod:`kernellab.commands.run`, so that a
scenario's run loads none of it (start-up, issue 23). ``bless``, ``schedule`` and
``partition-sweep`` take their shared pieces from here."""
from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from kernellab.runtime.runners import FormatRunOptions


def arm_version(**kwargs: Any) -> argparse.Action:
    """``run -v``/``--version``: Arm's runner prints JSON (version, revision, dependencies) and
    exits. argparse's action, made when argparse reads the command line (a plain run reads it
    without argparse, kernellab/commands/options.py)."""
    import argparse

    class ArmVersion(argparse.Action):
        def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                     option_string: str | None = None) -> None:
            import json
            from importlib import metadata

            from kernellab import __version__
            deps = []
            for name in ("numpy", "vulkan", "pyopencl"):
                try:
                    deps.append(f"{name}={metadata.version(name)}")
                except metadata.PackageNotFoundError:
                    continue
            print(json.dumps({"version": __version__, "revision": f"kernellab/v{__version__}",
                              "dependencies": deps}, indent=2))
            parser.exit(0)

    return ArmVersion(**kwargs)


#: the automake/meson status of a skipped test: the device lacks what the file requires
EXIT_SKIPPED = 77


def run_amber_file(path: Path, args: argparse.Namespace) -> int:
    """An AmberScript file: run it and check its EXPECTs (0 all hold, 1 one fails, 77 the device
    lacks a required feature or extension)."""
    from kernellab.commands import compile_cache_as_asked
    from kernellab.session import Session
    from kernellab.suite.amber import run_amber

    with compile_cache_as_asked(args), \
            Session(args.device, backend=args.backend, robust_buffer_access=args.enable_robustness_features) as s:
        outcome = run_amber(s, path)
    if outcome.status == "pass":
        print(f"{path}: pass ({outcome.report})", file=sys.stderr)
        return 0
    if outcome.status == "skip":
        print(f"{path}: skipped: {outcome.report}", file=sys.stderr)
        return EXIT_SKIPPED
    print(f"{path}: fail\n{outcome.report}", file=sys.stderr)
    return 1


def format_options(args: argparse.Namespace, **changes: Any) -> FormatRunOptions:
    """The typed options of a kernel-instantiation or PySchedCL run from its command line
    (``run``'s and ``bless``'s flags; a flag a command lacks keeps its default), with ``changes``."""
    from kernellab.runtime.runners import FormatRunOptions, parse_inputs

    seed = getattr(args, "seed", None)
    variables: dict[str, Any] = {}
    if getattr(args, "set", None):  # only a spec has variables: a kernel-instantiation run skips the parser
        from kernellab.formats.pyschedcl.kernel import parse_assignments
        variables = parse_assignments(args.set)
    options = FormatRunOptions(output=getattr(args, "output", None), device=getattr(args, "device", None),
                               seed=int(seed) if seed is not None else 0, index=getattr(args, "index", None),
                               variables=variables,
                               partition=getattr(args, "partition", None), devices=getattr(args, "devices", None),
                               inputs=parse_inputs(getattr(args, "input", None)),
                               split=getattr(args, "split", None) or "subbuffer",
                               profiling_path=getattr(args, "profiling_dump_path", None))
    return dataclasses.replace(options, **changes)


def supervised_natively(folders: list[Path | None], files: list[Path | None]) -> int | None:
    """For a command that runs OpenCL kernels natively, in the ``kernellab`` program's own process:
    :func:`kernellab.native.launch_guard.supervised`; after a crash, what it staged is swept from
    the output ``folders`` (and below) and the folders of its output ``files``. None: this process
    runs the command."""
    from kernellab.native.build_limit import armed
    from kernellab.native.launch_guard import supervised
    if not armed:
        return None

    def cleanup() -> None:
        from kernellab.outputs import sweep_stale
        for folder in folders:
            if folder is not None:
                sweep_outputs(folder)
        for file in files:
            if file is not None:
                sweep_stale(file.parent)
    return supervised(cleanup=cleanup)


def sweep_outputs(folder: Path) -> None:
    """Remove the staged files a crashed run left under ``folder`` (its process is gone); also for
    the other commands that run OpenCL kernels natively (schedule, partition-sweep)."""
    from kernellab.outputs import sweep_stale
    for n, (root, _, _) in enumerate(os.walk(folder)):
        if n >= 10_000:
            break
        sweep_stale(Path(root))
