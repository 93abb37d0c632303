"""Find and run Arm's ML SDK Scenario Runner, the reference kernellab is compared against.

Arm's ``scenario-runner`` (pip ``ai-ml-sdk-scenario-runner``) refuses to create a Vulkan device
unless the two layers of Arm's ML emulation layer (pip ``ai-ml-emulation-layer-for-vulkan``) are
active, even for plain compute, and in a fixed order: the Graph layer above (nearer the
application than) the Tensor layer. Without the layers device creation fails with
``ErrorExtensionNotPresent``; with the Tensor layer above the Graph layer the Graph layer stops
with "ML Emulation Layer for Vulkan requires extension: VK_ARM_tensors".

The package ships both manifests in one directory and suggests ``VK_LAYER_PATH`` plus
``VK_INSTANCE_LAYERS=Graph:Tensor``. That is not enough with Debian 12's loader (1.3.239): it
orders environment-enabled layers by the order it discovers their manifests, not by
``VK_INSTANCE_LAYERS``, and discovery inside one directory follows ``readdir``, which depends on
the file system. So this module copies each manifest into its own directory (with an absolute
``library_path``) and lists the Graph directory first in ``VK_LAYER_PATH``: discovery order and
``VK_INSTANCE_LAYERS`` then agree, whatever the loader version.

Tests and the benchmark use :func:`find_arm_runner` / :func:`require_arm_runner`; every run goes
through :class:`kernellab.tools.Tool`, so a failure carries a repro command with the environment.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from kernellab import config, tools
from kernellab.errors import MissingToolError
from kernellab.outputs import write_text
from kernellab.records import dataclass

RUNNER_PACKAGE = "ai-ml-sdk-scenario-runner"
LAYER_PACKAGE = "ai-ml-emulation-layer-for-vulkan"
GRAPH_LAYER = "VK_LAYER_ML_Graph_Emulation"
TENSOR_LAYER = "VK_LAYER_ML_Tensor_Emulation"
#: top of the layer stack first: the Graph layer calls down into the Tensor layer
LAYER_ORDER = (GRAPH_LAYER, TENSOR_LAYER)
_MANIFESTS = {GRAPH_LAYER: "VkLayer_Graph.json", TENSOR_LAYER: "VkLayer_Tensor.json"}

#: where Debian/Ubuntu's mesa-vulkan-drivers installs lavapipe's ICD manifest
LAVAPIPE_ICD_GLOB = ("/usr/share/vulkan/icd.d", "lvp_icd*.json")


def _package_dir(module: str) -> Path | None:
    """The folder of an installed package, found without importing it (Arm's modules load .so files)."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _runner_executable() -> Path | None:
    """``scenario-runner`` from KERNELLAB_TOOL_PATH/PATH (a source build), else the pip package's binary."""
    tool = tools.find("scenario-runner")
    if tool is not None:
        return tool.path
    pkg = _package_dir("scenario_runner")
    if pkg is None:
        return None
    exe = pkg / "binaries" / "bin" / "scenario-runner"
    return exe if exe.is_file() and os.access(exe, os.X_OK) else None


def _layer_deploy_dir() -> Path | None:
    pkg = _package_dir("emulation_layer")
    if pkg is None:
        return None
    deploy = pkg / "deploy"
    return deploy if (deploy / "share" / "vulkan" / "explicit_layer.d").is_dir() else None


def _library_dirs(deploy: Path) -> list[Path]:
    return [d for d in (deploy / "lib64", deploy / "lib") if d.is_dir()]


def prepare_layer_dirs(deploy: Path, cache_dir: Path | None = None) -> tuple[Path, ...]:
    """One manifest directory per layer, in :data:`LAYER_ORDER`, with absolute library paths.

    The directories live under kernellab's cache, keyed by the manifests' content and the
    deploy folder, and are written atomically, so concurrent test workers can share them.
    """
    manifest_dir = deploy / "share" / "vulkan" / "explicit_layer.d"
    lib_dirs = _library_dirs(deploy)
    texts = {name: (manifest_dir / fname).read_text() for name, fname in _MANIFESTS.items()}
    key = hashlib.sha256(json.dumps([str(deploy), texts], sort_keys=True).encode()).hexdigest()[:16]
    root = (cache_dir or config.get().cache_dir) / "arm-emulation-layers" / key
    dirs = []
    for index, name in enumerate(LAYER_ORDER):
        manifest = json.loads(texts[name])
        library = manifest["layer"]["library_path"]
        if not os.path.isabs(library):
            candidates = [d / library for d in lib_dirs] + [manifest_dir / library]
            found = next((c for c in candidates if c.is_file()), None)
            if found is None:
                raise MissingToolError(
                    f"{name}: library {library} not found under {deploy} (reinstall pip {LAYER_PACKAGE})")
            manifest["layer"]["library_path"] = str(found.resolve())
        layer_dir = root / f"{index}-{name}"
        target = layer_dir / _MANIFESTS[name]
        text = json.dumps(manifest, indent=4) + "\n"
        if not target.is_file() or target.read_text() != text:
            write_text(target, text)
        dirs.append(layer_dir)
    return tuple(dirs)


def lavapipe_icd() -> Path | None:
    """lavapipe's ICD manifest, to pin a run to the CPU driver (None when it is not installed)."""
    folder, pattern = LAVAPIPE_ICD_GLOB
    found = sorted(Path(folder).glob(pattern))
    return found[0] if found else None


class ArmTool(tools.Tool):
    """``scenario-runner`` as a :class:`kernellab.tools.Tool` whose environment enables the layers
    (a frozen record, as the Tool it extends)."""

    _fields = _compared = ("name", "path", "layer_dirs", "icd")
    layer_dirs: tuple[Path, ...]
    icd: Path | None

    def __init__(self, name: str, path: Path, layer_dirs: tuple[Path, ...] = (), icd: Path | None = None):
        vars(self).update(name=name, path=path, layer_dirs=layer_dirs, icd=icd)

    @property
    def env(self) -> dict[str, str]:
        layer_path = [str(d) for d in self.layer_dirs]
        # A user's own layer folders stay searchable, after ours so ours are discovered first.
        if os.environ.get("VK_LAYER_PATH"):
            layer_path.append(os.environ["VK_LAYER_PATH"])
        env = {
            "VK_LAYER_PATH": os.pathsep.join(layer_path),
            "VK_INSTANCE_LAYERS": os.pathsep.join(LAYER_ORDER),
            "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR") or "/tmp",
        }
        if self.icd is not None:
            env["VK_ICD_FILENAMES"] = str(self.icd)
            env["VK_DRIVER_FILES"] = str(self.icd)
        return env


@dataclass(frozen=True)
class ArmRunner:
    """Arm's Scenario Runner with the emulation layers set up; see the module notes."""

    executable: Path
    deploy_dir: Path
    layer_dirs: tuple[Path, ...]

    def tool(self, *, icd: Path | None = None) -> ArmTool:
        """The runner as a Tool; ``icd`` pins the Vulkan driver (e.g. :func:`lavapipe_icd`)."""
        return ArmTool("scenario-runner", self.executable, layer_dirs=self.layer_dirs, icd=icd)

    def environment(self, *, icd: Path | None = None) -> dict[str, str]:
        """The full environment for a child process (os.environ plus the layer settings)."""
        return {**os.environ, **self.tool(icd=icd).env}

    def command(self, scenario: str | os.PathLike[str], *, output: str | os.PathLike[str] | None = None,
                args: Sequence[str] = ()) -> list[str]:
        argv = [str(self.executable), "--scenario", str(scenario)]
        if output is not None:
            argv += ["--output", str(output)]
        return argv + list(args)

    def run(self, scenario: str | os.PathLike[str], *, output: str | os.PathLike[str] | None = None,
            args: Sequence[str] = (), icd: Path | None = None,
            timeout: float | None = 600) -> subprocess.CompletedProcess[bytes]:
        """Run one scenario; a non-zero exit raises ToolError with the log and a repro command."""
        argv = self.command(scenario, output=output, args=args)[1:]
        return self.tool(icd=icd).run(argv, what=f"Arm scenario-runner on {scenario}", timeout=timeout)

    @property
    def version(self) -> str:
        proc = subprocess.run([str(self.executable), "--version"], capture_output=True, timeout=30)
        try:
            return str(json.loads(proc.stdout)["version"])
        except (ValueError, KeyError, TypeError):
            return proc.stdout.decode(errors="replace").strip() or "unknown"


def find_arm_runner(cache_dir: Path | None = None) -> ArmRunner | None:
    """Arm's runner and emulation layer if both are installed, else None."""
    exe = _runner_executable()
    deploy = _layer_deploy_dir()
    if exe is None or deploy is None:
        return None
    return ArmRunner(exe, deploy, prepare_layer_dirs(deploy, cache_dir))


def require_arm_runner(cache_dir: Path | None = None) -> ArmRunner:
    """Like :func:`find_arm_runner`, but says which pip package is missing."""
    missing = []
    if _runner_executable() is None:
        missing.append(RUNNER_PACKAGE)
    if _layer_deploy_dir() is None:
        missing.append(LAYER_PACKAGE)
    if missing:
        raise MissingToolError(f"Arm's Scenario Runner is not usable: pip install {' '.join(missing)}")
    runner = find_arm_runner(cache_dir)
    assert runner is not None
    return runner


__all__ = ["ArmRunner", "ArmTool", "find_arm_runner", "require_arm_runner", "lavapipe_icd",
           "prepare_layer_dirs", "LAYER_ORDER", "RUNNER_PACKAGE", "LAYER_PACKAGE"]
