"""The subcommands, one module each; the flags several share are defined here once."""
from __future__ import annotations

import gc
from pathlib import Path
from types import SimpleNamespace

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    import argparse
    from contextlib import AbstractContextManager


#: whether this process ends when its command does (``cli.program`` for the commands it exits
#: from at once): process-wide by nature. A namespace, not a class of its own built on every
#: start (~0.07 M instructions, issue 23)
PROCESS = SimpleNamespace(one_shot=False)


def start_up_done() -> None:
    """The command's imports and its reading of the workload are done. In a process that ends
    with the command, what they made lives to the end: it moves to the collector's oldest
    generation (:func:`gc.freeze`, then :func:`gc.unfreeze`, which hands the frozen objects to that
    generation), so that the next young-generation pass does not walk the tens of thousands of
    objects allocated while the collector was paused (issue 23: about 5 M instructions of a
    ``tiny`` run, measured; freezing them for good measured 2 M worse, its heap left lavapipe's
    allocations to be cleared). They stay collectable. Elsewhere (pytest, the Python API) the
    collector is left as it is."""
    if PROCESS.one_shot:
        gc.freeze()
        gc.unfreeze()


def compile_cache_as_asked(args: argparse.Namespace) -> AbstractContextManager[object]:
    """The compile cache on as the settings have it (off with ``KERNELLAB_NO_CACHE=1``) and off
    with the command's ``--no-cache``, while the command compiles: ``run`` and ``snapshot`` set it
    from their flag alone, which turned the cache back on against the variable (and ``snapshot
    --no-cache`` handed no cache, which is the default one, not none)."""
    from kernellab import config

    return config.override(compile_cache=config.get().compile_cache and not getattr(args, "no_cache", False))


def add_allow_outside(parser: argparse.ArgumentParser) -> None:
    """``--allow-outside PATH``: one flag, one meaning, on every command that reads a workload's
    kernels (cli adds it to each compiling command; the setting is ``config.allow_outside``)."""
    parser.add_argument("--allow-outside", action="append", type=Path, default=[], metavar="PATH",
                        help="let include folders and #include targets lie in PATH too (default: only the "
                             "workload's folder); may be repeated")


def run_target_env() -> tuple[str, str]:
    """The SPIR-V environment ``run`` compiles a scenario's shaders for, and where that comes
    from: the API version of the Vulkan device ``run`` chooses by default (a 1.3 device:
    ``vulkan1.3``). Without a Vulkan device, ``vulkan1.2``. ``listing`` and ``snapshot`` use it
    so that they show the module ``run`` runs."""
    from kernellab.compile.sources import target_env_for_api
    from kernellab.errors import KernellabError

    try:
        from kernellab.backends.registry import backend_class
        from kernellab.native.devices import choose_device

        device = choose_device(backend_class("vulkan").devices(), None)
    except (KernellabError, OSError, ImportError):
        return "vulkan1.2", "no Vulkan device found"
    return target_env_for_api(device.api_version), f"Vulkan {device.api_version} on {device.name}"


def add_target_env(parser: argparse.ArgumentParser) -> None:
    """``--target-env`` of ``listing`` and ``snapshot``: by default the one ``run`` uses."""
    parser.add_argument("--target-env", default=None, metavar="ENV",
                        help="SPIR-V environment to compile and validate for (default: the one `run` uses, "
                             "from the default Vulkan device's API version, e.g. vulkan1.3)")


def resolve_target_env(asked: str | None, command: str) -> str:
    """``--target-env`` as given, or ``run``'s; a note on standard error when the module shown is
    not the one ``run`` would run."""
    import sys

    env, source = run_target_env()
    if asked is None:
        return env
    if asked != env:
        print(f"kernellab {command}: note: compiled for {asked} (--target-env); `run` compiles for {env} "
              f"({source})", file=sys.stderr)
    return asked
