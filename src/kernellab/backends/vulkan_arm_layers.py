"""Arm's ML emulation layer, and Vulkan instances created with it.

Drivers without VK_ARM_tensors / VK_ARM_data_graph (lavapipe, most desktop GPUs) get them from
Arm's ML emulation layer (pip ``ai-ml-emulation-layer-for-vulkan``): two explicit layers, Graph
and Tensor. The Graph layer must sit above (nearer the application than) the Tensor layer, and
the loader's environment-driven ordering is unreliable (Debian 12's loader 1.3.239 orders by
manifest discovery), so the application enables them itself through ``ppEnabledLayerNames`` in
that order (:data:`LAYER_ORDER`). The pip package's manifests name their libraries relatively,
which the loader resolves with ``dlopen``'s search path, fixed at process start; so
:func:`prepare_layers` writes copies with absolute library paths in a private folder, and
:func:`layers_visible` puts that folder in ``VK_ADD_LAYER_PATH`` (and ``VK_LAYER_PATH`` for older
loaders that lack the former) in ``os.environ`` just around instance creation: the loader reads
these variables on every layer scan, so setting them after ``import vulkan`` works.
"""
from __future__ import annotations

import contextlib
import functools
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from kernellab.errors import MissingToolError
from kernellab.native import vk as nvk
from kernellab.native.failure import failure
from kernellab.outputs import write_text
from kernellab.records import dataclass

LAYER_PACKAGE = "ai-ml-emulation-layer-for-vulkan"
GRAPH_LAYER = "VK_LAYER_ML_Graph_Emulation"
TENSOR_LAYER = "VK_LAYER_ML_Tensor_Emulation"
#: ppEnabledLayerNames order: the Graph layer above the Tensor layer
LAYER_ORDER = (GRAPH_LAYER, TENSOR_LAYER)
_MANIFESTS = {GRAPH_LAYER: "VkLayer_Graph.json", TENSOR_LAYER: "VkLayer_Tensor.json"}



@dataclass(frozen=True)
class EmulationLayers:
    """Arm's ML emulation layers, ready to be found by the loader."""

    manifest_dir: Path        # our manifests (absolute library paths)
    deploy_dir: Path          # the pip package's deploy folder
    names: tuple[str, ...] = LAYER_ORDER


def _deploy_dir() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("emulation_layer")
    if spec is None or not spec.submodule_search_locations:
        raise MissingToolError(
            f"VK_ARM_tensors/VK_ARM_data_graph are not offered by this Vulkan driver and Arm's ML "
            f"emulation layer is not installed: pip install {LAYER_PACKAGE} (or pip install 'kernellab[ml]')")
    deploy = Path(next(iter(spec.submodule_search_locations))) / "deploy"
    if not (deploy / "share" / "vulkan" / "explicit_layer.d").is_dir():
        raise MissingToolError(f"Arm's ML emulation layer at {deploy} has no layer manifests: "
                               f"reinstall it with pip install --force-reinstall {LAYER_PACKAGE}")
    return deploy


@functools.lru_cache(maxsize=1)
def prepare_layers() -> EmulationLayers:
    """Copy the layer manifests, with absolute library paths, to a private folder of this process
    (once; removed at exit). Not into the cache folder: the loader loads the library each
    manifest names, reading the folder by its name after kernellab wrote it, so a folder another
    user could write or rename (a shared cache) would have let them choose the code loaded."""
    deploy = _deploy_dir()
    src_dir = deploy / "share" / "vulkan" / "explicit_layer.d"
    lib_dirs = [d for d in (deploy / "lib64", deploy / "lib") if d.is_dir()]
    texts = {}
    for name, fname in _MANIFESTS.items():
        try:
            texts[name] = (src_dir / fname).read_text()
        except OSError:
            raise MissingToolError(f"Arm's ML emulation layer manifest {src_dir / fname} is missing: "
                                   f"reinstall pip {LAYER_PACKAGE}") from None
    manifests = {}
    for name, fname in _MANIFESTS.items():
        manifest = json.loads(texts[name])
        lib = manifest["layer"]["library_path"]
        if not os.path.isabs(lib):
            found = next((d / lib for d in [*lib_dirs, src_dir] if (d / lib).is_file()), None)
            if found is None:
                raise MissingToolError(f"{name}: library {lib} not found under {deploy}: reinstall pip {LAYER_PACKAGE}")
            manifest["layer"]["library_path"] = str(found.resolve())
        manifests[fname] = json.dumps(manifest, indent=4) + "\n"
    import atexit
    import shutil
    import tempfile

    out_dir = Path(tempfile.mkdtemp(prefix="kernellab-layers-"))  # mode 0700: the user's alone
    atexit.register(shutil.rmtree, out_dir, True)
    for fname, text in manifests.items():
        write_text(out_dir / fname, text)
    return EmulationLayers(out_dir, deploy)


@contextlib.contextmanager
def layers_visible(layers: EmulationLayers | None = None) -> Iterator[EmulationLayers]:
    """Make the emulation layers visible to the Vulkan loader while the block runs.

    Enumerate layers and create the instance inside the block; the environment is restored
    afterwards (the loader has loaded the layers by then).
    """
    layers = layers or prepare_layers()
    saved = {k: os.environ.get(k) for k in ("VK_ADD_LAYER_PATH", "VK_LAYER_PATH")}
    folder = str(layers.manifest_dir)
    try:
        os.environ["VK_ADD_LAYER_PATH"] = os.pathsep.join(p for p in (folder, saved["VK_ADD_LAYER_PATH"]) if p)
        if saved["VK_LAYER_PATH"] is not None or not _loader_knows(layers):
            # VK_LAYER_PATH replaces the default search (and, when set, disables VK_ADD_LAYER_PATH
            # on some loaders), so our folder goes first in it too
            os.environ["VK_LAYER_PATH"] = os.pathsep.join(p for p in (folder, saved["VK_LAYER_PATH"]) if p)
        yield layers
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _loader_knows(layers: EmulationLayers) -> bool:
    names = available_layers()
    return all(n in names for n in layers.names)


def available_layers() -> set[str]:
    vk = nvk.load()
    return {p.layerName for p in vk.vkEnumerateInstanceLayerProperties()}


def instance_layers(requested: Sequence[str] = ()) -> list[str]:
    """``ppEnabledLayerNames`` with the emulation layers first, Graph above Tensor."""
    return [*LAYER_ORDER, *(n for n in requested if n not in LAYER_ORDER)]


def device_extensions(physical_device: Any) -> set[str]:
    vk = nvk.load()
    return {e.extensionName for e in vk.vkEnumerateDeviceExtensionProperties(physical_device, None)}


def create_instance(*, application: str = "kernellab", api_version: int | None = None,
                    layers: Sequence[str] = (), extensions: Sequence[str] = (),
                    emulation: bool = True) -> tuple[Any, list[str]]:
    """A ``vulkan``-package ``VkInstance`` with the emulation layers enabled (when ``emulation``).

    Returns the instance and the layer names enabled. Raises :class:`MissingToolError` naming the
    pip package when the layers are not installed.
    """
    vk = nvk.load()
    api_version = api_version or vk.VK_MAKE_VERSION(1, 3, 0)
    app = vk.VkApplicationInfo(pApplicationName=application, applicationVersion=1, pEngineName="kernellab",
                               engineVersion=1, apiVersion=api_version)

    def make(enabled: list[str]) -> Any:
        info = vk.VkInstanceCreateInfo(pApplicationInfo=app, ppEnabledLayerNames=enabled or None,
                                       ppEnabledExtensionNames=list(extensions) or None)
        try:
            return vk.vkCreateInstance(info, None)
        except vk.VkError as exc:
            raise failure("vkCreateInstance", nvk.code_name(exc), f"layers {enabled}") from None

    if not emulation:
        return make(list(layers)), list(layers)
    emulated = prepare_layers()
    with layers_visible(emulated):
        known = available_layers()
        missing = [n for n in emulated.names if n not in known]
        if missing:
            raise MissingToolError(f"the Vulkan loader does not find {', '.join(missing)} in "
                                   f"{emulated.manifest_dir}: reinstall pip {LAYER_PACKAGE}")
        enabled = instance_layers(layers)
        return make(enabled), enabled
