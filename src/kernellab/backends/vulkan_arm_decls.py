"""VK_ARM_tensors and VK_ARM_data_graph declared for cffi from the official Vulkan registry.

The ``vulkan`` package (Vulkan 1.3.275) has no ARM tensor or data-graph types. They are generated
here from the registry (pip ``vulkan-object``, which ships ``vk.xml``): every struct, handle, flag
type and function-pointer type the two extensions require, plus the core types they reach, in
dependency order, is written as a C declaration and fed to a cffi :class:`~cffi.FFI` of our own
(:func:`ffi`). The text is cached under kernellab's cache dir, keyed by the registry version, so
the registry is parsed once per install. Enum values (and the 64-bit flag bits, which C cannot
put in an enum) are Python integers: :func:`const`.
"""
from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from kernellab import config
from kernellab.errors import MissingToolError

#: the device extensions kernellab enables for tensors and graphs
EXTENSIONS = ("VK_ARM_tensors", "VK_ARM_data_graph")
#: declared from the registry: only those two (and what they reach): cffi parses the declarations
#: in every process that uses them, and the other data-graph extensions (TOSA instruction set,
#: optical flow) would double that cost for types most scenarios do not use; optical flow's are
#: declared apart, on first use (:mod:`kernellab.backends.vulkan_optical_flow_decls`)
DECLARED_EXTENSIONS = EXTENSIONS
REGISTRY_PACKAGE = "vulkan-object"

_C_BUILTINS = {"void", "char", "float", "double", "int", "size_t", "int8_t", "uint8_t", "int16_t",
               "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t"}


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


class _Declarations:
    """C declarations of registry types, each declared once, after the types it uses."""

    def __init__(self, vk: Any):
        self.vk = vk
        self.basetypes = _basetypes()
        self.prelude: list[str] = []   # typedefs of every struct first, so declaration order is free
        self.decls: list[str] = []
        self.stypes: dict[str, str] = {}
        self.done: set[str] = set()
        self.constants: dict[str, int] = {}
        self.used_constants: set[str] = set()

    def flag_values(self, name: str) -> None:
        bm = self.vk.bitmasks.get(name)
        if bm is not None:
            for f in bm.flags:
                self.constants[f.name] = f.value

    def need(self, type_name: str) -> None:
        """Declare ``type_name`` (and what it uses) unless it is declared or a C builtin."""
        if type_name in self.done or type_name in _C_BUILTINS:
            return
        self.done.add(type_name)
        vk = self.vk
        if type_name in self.basetypes:
            self.decls.append(self.basetypes[type_name])
        elif type_name in vk.handles:
            self.decls.append(f"typedef struct {type_name}_T* {type_name};")
        elif type_name in vk.enums:
            self.enum(type_name)
        elif type_name in vk.bitmasks:
            self.flag_values(type_name)
            self.decls.append(f"typedef {'uint64_t' if vk.bitmasks[type_name].bitWidth == 64 else 'uint32_t'} "
                              f"{type_name};")
        elif type_name in vk.flags:
            fl = vk.flags[type_name]
            self.need(fl.baseFlagsType)
            if fl.bitmaskName:
                self.flag_values(fl.bitmaskName)
            self.decls.append(f"typedef {fl.baseFlagsType} {type_name};")
        elif type_name in vk.funcPointers:
            fp = vk.funcPointers[type_name]
            for p in fp.params:
                self.need(p.type)
            self.decls.append(_strip_api(fp.cFunctionPointer))
        elif type_name in vk.structs:
            self.struct(type_name)
        else:
            alias = _alias_target(vk, type_name)
            if alias is None:
                raise LookupError(f"type {type_name} not found in the Vulkan registry")
            self.need(alias)
            self.decls.append(f"typedef {alias} {type_name};")

    def enum(self, type_name: str) -> None:
        enum = self.vk.enums[type_name]
        for f in enum.fields:
            self.constants[f.name] = f.value
        self.decls.append(f"typedef {'int64_t' if enum.bitWidth == 64 else 'int32_t'} {type_name};")

    def struct(self, type_name: str) -> None:
        st = self.vk.structs[type_name]
        kind = "union" if st.union else "struct"
        self.prelude.append(f"typedef {kind} {type_name} {type_name};")
        if st.sType:
            self.stypes[type_name] = st.sType
        for m in st.members:
            self.need(m.type)
            for dim in m.fixedSizeArray:
                if not dim.isdigit():
                    self.used_constants.add(dim)
        body = "\n".join(_member_decl(m) for m in st.members)
        self.decls.append(f"{kind} {type_name} {{\n{body}\n}};")

    def extension(self, ext_name: str) -> None:
        """Every type, command and value an extension adds."""
        ext = self.vk.extensions[ext_name]
        for group in (ext.structs, ext.handles, ext.flags, ext.bitmasks, ext.enums):
            for item in group:
                self.need(item.name)
        for cmd in ext.commands:
            if cmd.returnType != "void":
                self.need(cmd.returnType)
            for p in cmd.params:
                self.need(p.type)
            self.decls.append(_strip_api(cmd.cFunctionPointer))
        for values in (*ext.enumFields.values(), *ext.flagBits.values()):
            for f in values:
                self.constants[f.name] = f.value

    def text(self, since: tuple[int, int, frozenset[str]] = (0, 0, frozenset())) -> str:
        """The declarations; ``since`` (a :meth:`mark`) leaves out those made before it."""
        n_prelude, n_decls, defined = since
        defines = [f"#define {c} {self.vk.constants[c].value}" for c in sorted(self.used_constants - defined)]
        for c in self.used_constants:
            self.constants[c] = self.vk.constants[c].value
        # cffi rejects a typedef repeated with the same struct twice; keep first of each line
        return "\n".join(dict.fromkeys(defines + self.prelude[n_prelude:] + self.decls[n_decls:])) + "\n"

    def mark(self) -> tuple[int, int, frozenset[str]]:
        """Where the declarations stand now (for :meth:`text`'s ``since``)."""
        return len(self.prelude), len(self.decls), frozenset(self.used_constants)


def generate_cdef(extensions: Sequence[str] = DECLARED_EXTENSIONS, *, included: Sequence[str] = ()
                  ) -> tuple[str, dict[str, int], dict[str, str]]:
    """C declarations for ``extensions`` and every type they reach, their enum/flag values, sTypes.

    Returns (cdef text, {constant name: value}, {struct name: its VK_STRUCTURE_TYPE_ name}); the
    constants are the extensions' own enum fields and flag bits plus every value of each enum and
    flag-bits type the declarations use. With ``included`` (extensions an FFI this text is added
    to already declares, through ``FFI.include``), the text leaves out what those declare.
    """
    from vulkan_object import get_vulkan_object

    out = _Declarations(get_vulkan_object())
    for ext_name in included:
        out.extension(ext_name)
    since = out.mark()
    for ext_name in extensions:
        out.extension(ext_name)
    text = out.text(since)
    return text, out.constants, out.stypes


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


#: the most of a declarations file read (the ARM extensions' declarations are tens of kilobytes)
MAX_DECLARATIONS_BYTES = 16 << 20


def _cache_file(extensions: Sequence[str], included: Sequence[str]) -> Path:
    names = ",".join(extensions) + (f"+{','.join(included)}" if included else "")
    key = hashlib.sha256(f"{_registry_version()}|{names}|v1".encode()).hexdigest()[:16]
    return config.get().cache_dir / "vulkan-arm" / f"decls-{key}.json"


def cached_declarations(extensions: Sequence[str], included: Sequence[str] = ()
                        ) -> tuple[str, dict[str, int], dict[str, str]]:
    """:func:`generate_cdef`'s answer, from kernellab's cache when the registry version matches."""
    from kernellab.cachedir import read_private
    from kernellab.codesave import write_replacing

    path = _cache_file(extensions, included)
    # the declarations lay out the structures cffi hands the driver: read as kept code is, only
    # from a regular file of the user's own in a private folder (never a FIFO, /dev/zero, or a
    # file another user could have written in a shared cache)
    data = read_private(path, MAX_DECLARATIONS_BYTES)
    if data is not None:
        try:
            doc = json.loads(data)
            return str(doc["cdef"]), {k: int(v) for k, v in doc["constants"].items()}, dict(doc["stypes"])
        except (ValueError, KeyError, TypeError, AttributeError):
            pass  # a damaged cache entry is regenerated below
    cdef, constants, stypes = generate_cdef(extensions, included=included)
    write_replacing(path, json.dumps({"registry": _registry_version(), "cdef": cdef, "constants": constants,
                                      "stypes": stypes}).encode())
    return cdef, constants, stypes


@functools.lru_cache(maxsize=1)
def _declarations() -> tuple[str, dict[str, int], dict[str, str]]:
    return cached_declarations(DECLARED_EXTENSIONS)


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
