"""The declarations of kernellab's small Vulkan binding (``kernellab.native.vkbind``), derived
from ``vk.xml``: the functions and structures a run of buffers and compute pipelines needs.

Two generated modules are committed under ``kernellab/native/``: ``_vkbind_ffi.py``, the C
declarations compiled by cffi's out-of-line ABI mode (importing it parses nothing), and
``vkbind_table.py``, the registry facts the binding's Python side needs (constants, each
structure's ``sType``, each command's parameters and what it returns; the long tables as text read a
line at a time, :data:`TEXT_TABLES`). Regenerate both after a
registry update, or after adding a name to :data:`COMMANDS`/:data:`STRUCTS`/:data:`ENUMS`, with
``python -m kernellab.vkregistry.binding`` (needs pip ``vulkan-object`` and ``cffi``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from kernellab.vkregistry import tables

#: the commands of the compute path (instance, device, buffers, memory, descriptors, compute
#: pipelines, pipeline cache, command buffers, barriers, dispatch, buffer copies and fills, fences,
#: timestamps)
COMMANDS: tuple[str, ...] = (
    "vkCreateInstance", "vkDestroyInstance", "vkEnumerateInstanceExtensionProperties", "vkEnumeratePhysicalDevices",
    "vkEnumerateDeviceExtensionProperties", "vkGetPhysicalDeviceProperties", "vkGetPhysicalDeviceProperties2",
    "vkGetPhysicalDeviceFeatures", "vkGetPhysicalDeviceFeatures2", "vkGetPhysicalDeviceMemoryProperties",
    "vkGetPhysicalDeviceQueueFamilyProperties", "vkCreateDevice", "vkDestroyDevice", "vkGetDeviceQueue",
    "vkDeviceWaitIdle", "vkCreateBuffer", "vkDestroyBuffer", "vkGetBufferMemoryRequirements", "vkAllocateMemory",
    "vkFreeMemory", "vkBindBufferMemory", "vkMapMemory", "vkUnmapMemory", "vkCreateDescriptorSetLayout",
    "vkDestroyDescriptorSetLayout", "vkCreateDescriptorPool", "vkDestroyDescriptorPool", "vkAllocateDescriptorSets",
    "vkUpdateDescriptorSets", "vkCreatePipelineLayout", "vkDestroyPipelineLayout", "vkCreateShaderModule",
    "vkDestroyShaderModule", "vkCreateComputePipelines", "vkDestroyPipeline", "vkCreatePipelineCache",
    "vkDestroyPipelineCache", "vkGetPipelineCacheData", "vkCreateCommandPool", "vkDestroyCommandPool",
    "vkAllocateCommandBuffers", "vkFreeCommandBuffers", "vkBeginCommandBuffer", "vkEndCommandBuffer",
    "vkResetCommandBuffer", "vkCmdBindPipeline", "vkCmdBindDescriptorSets", "vkCmdPushConstants", "vkCmdDispatch",
    "vkCmdCopyBuffer", "vkCmdFillBuffer",
    "vkCmdPipelineBarrier", "vkQueueSubmit", "vkCreateFence", "vkDestroyFence", "vkWaitForFences", "vkResetFences",
    "vkCreateQueryPool", "vkDestroyQueryPool", "vkCmdResetQueryPool", "vkCmdWriteTimestamp", "vkGetQueryPoolResults",
)

#: structures reached only through ``pNext`` chains, which the commands' signatures do not name
STRUCTS: tuple[str, ...] = ("VkPhysicalDeviceMaintenance3Properties", "VkPipelineCreationFeedbackCreateInfo",
                            "VkPhysicalDeviceCustomBorderColorFeaturesEXT",
                            # the shader features enabled at device creation (backends/vkcore.py)
                            # and a compute stage's required subgroup size (AmberScript's SUBGROUP)
                            "VkPhysicalDeviceVulkan11Features", "VkPhysicalDeviceVulkan12Features",
                            "VkPhysicalDeviceVulkan13Features", "VkPipelineShaderStageRequiredSubgroupSizeCreateInfo",
                            # the subgroup sizes verify simulates (backends/vulkan_device.py)
                            "VkPhysicalDeviceSubgroupProperties", "VkPhysicalDeviceSubgroupSizeControlProperties")

#: structures only ever passed as NULL: declared opaque (their function pointers are not needed)
OPAQUE: tuple[str, ...] = ("VkAllocationCallbacks",)

#: the enums and bitmasks whose values the compute path names (``vk.VK_...``)
ENUMS: tuple[str, ...] = (
    "VkResult", "VkQueueFlagBits", "VkMemoryPropertyFlagBits", "VkBufferUsageFlagBits",
    "VkSharingMode", "VkDescriptorType", "VkShaderStageFlagBits", "VkPipelineBindPoint", "VkCommandPoolCreateFlagBits",
    "VkCommandBufferLevel", "VkCommandBufferUsageFlagBits", "VkPipelineStageFlagBits", "VkAccessFlagBits",
    "VkQueryType", "VkQueryResultFlagBits", "VkPipelineCreationFeedbackFlagBits", "VkPhysicalDeviceType",
)

#: ``#define``s of ``vulkan_core.h`` that are not enum values
DEFINES = {"VK_TRUE": 1, "VK_FALSE": 0, "VK_QUEUE_FAMILY_IGNORED": 0xFFFFFFFF, "VK_WHOLE_SIZE": 0xFFFFFFFFFFFFFFFF}

#: C types of the registry's base types
BASE_TYPES = {"VkFlags": "uint32_t", "VkFlags64": "uint64_t", "VkBool32": "uint32_t", "VkDeviceSize": "uint64_t",
              "VkDeviceAddress": "uint64_t", "VkSampleMask": "uint32_t"}

FFI_MODULE = "_vkbind_ffi.py"
TABLE_MODULE = "vkbind_table.py"
_GENERATOR = "python -m kernellab.vkregistry.binding"


def _registry() -> Any:
    from vulkan_object import get_vulkan_object  # an optional dependency: only to regenerate

    return get_vulkan_object()


def _closure(reg: Any) -> list[str]:
    """Every structure the commands and :data:`STRUCTS` reach, members first (C needs a
    structure defined before one that embeds it)."""
    order: list[str] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen or name in OPAQUE or name not in reg.structs:
            return
        seen.add(name)
        for m in reg.structs[name].members:
            visit(m.type)
        order.append(name)

    for cmd in COMMANDS:
        for p in reg.commands[cmd].params:
            visit(p.type)
    for s in STRUCTS:
        visit(s)
    return order


def _array_size(reg: Any, dims: list[str]) -> str:
    return "".join(f"[{reg.constants[d].value if d in reg.constants else d}]" for d in dims)


def _declaration(reg: Any, fulltype: str, name: str, dims: list[str]) -> str:
    return f"{fulltype} {name}{_array_size(reg, dims)}"


def _type_names(reg: Any, structs: list[str]) -> set[str]:
    used: set[str] = set()
    for s in structs:
        used.update(m.type for m in reg.structs[s].members)
    for cmd in COMMANDS:
        used.update(p.type for p in reg.commands[cmd].params)
        used.add(reg.commands[cmd].returnType)
    return used


def cdef(reg: Any) -> str:
    """The C declarations: base types, handles, enums as 32-bit integers, structures, functions."""
    structs = _closure(reg)
    used = _type_names(reg, structs)
    lines = [f"typedef {c} {n};" for n, c in BASE_TYPES.items()]
    for name in sorted(used):
        if name in reg.handles:
            lines.append(f"typedef struct {name}_T* {name};")
        elif name in reg.enums or name in reg.bitmasks:
            lines.append(f"typedef int32_t {name};" if name in reg.enums else f"typedef uint32_t {name};")
        elif name in reg.flags:
            lines.append(f"typedef {BASE_TYPES[reg.flags[name].baseFlagsType]} {name};")
    for name in (*OPAQUE, *structs):
        lines.append(f"typedef struct {name} {name};")
    for name in structs:
        members = "".join(f" {_declaration(reg, m.fullType, m.name, m.fixedSizeArray)};"
                          for m in reg.structs[name].members)
        lines.append(f"struct {name} {{{members} }};")
    for cmd in COMMANDS:
        c = reg.commands[cmd]
        params = ", ".join(_declaration(reg, p.fullType, p.name, p.fixedSizeArray) for p in c.params)
        lines.append(f"{c.returnType} {cmd}({params});")
    return "\n".join(lines) + "\n"


def _returned(reg: Any, cmd: str) -> tuple[str, str | None] | None:
    """What a command gives back: None, or (kind, length) of its last parameter, the output:
    ``one`` (a handle or structure), ``list`` (counted by a pointer parameter: the enumerate
    pattern) or ``array`` (of the length another parameter or a member of one gives)."""
    params = reg.commands[cmd].params
    last = params[-1]
    if not last.pointer or last.const or last.type in ("void", "char") or len(params) < 2:
        return None
    if last.length is None:
        return "one", None
    count = next((p for p in params if p.name == last.length), None)
    if count is not None and count.pointer:
        return "list", last.length
    return "array", last.length


def table(reg: Any) -> dict[str, Any]:
    structs = _closure(reg)
    constants: dict[str, int] = dict(DEFINES)
    for enum in ENUMS:
        fields = reg.enums[enum].fields if enum in reg.enums else reg.bitmasks[enum].flags
        for f in fields:
            constants[f.name] = f.value
            for alias in f.aliases:
                constants.setdefault(alias, f.value)
    commands = {}
    for cmd in COMMANDS:
        commands[cmd] = ([p.name for p in reg.commands[cmd].params], reg.commands[cmd].returnType == "VkResult",
                         _returned(reg, cmd))
    # the structure types by value, and only those of the structures declared: the enum has thousands
    stype_values = {f.name: f.value for f in reg.enums["VkStructureType"].fields}
    stypes = {s: stype_values[reg.structs[s].sType] for s in structs if reg.structs[s].sType}
    strings = sorted(s for s in structs if any(m.type == "char" and m.fixedSizeArray for m in reg.structs[s].members))
    counts: dict[str, dict[str, list[str]]] = {}
    for s in structs:
        for m in reg.structs[s].members:
            if m.pointer and m.length and m.length.isidentifier() and m.type != "void":
                counts.setdefault(s, {}).setdefault(m.length, []).append(m.name)
    results = {f.value: f.name for f in reg.enums["VkResult"].fields}
    return {"constants": constants, "results": results, "commands": commands, "stypes": stypes, "strings": strings,
            "counts": counts}


#: the tables written as text, one entry a line: ``kernellab.native.vkbind`` reads a name's line when
#: it is first asked (a run names ~40 of ~500 constants), and a text unmarshals as one string where
#: the dict literals built a thousand objects at import, 1.7 M instructions of every run (issue 23)
TEXT_TABLES = {
    "constants": "NAME VALUE",
    "results": "VALUE NAME (VkResult's names, not their aliases)",
    "commands": "NAME PARAMETERS,... RETURNS_VKRESULT(0/1) OUTPUT(-/one/list/array) OUTPUT_LENGTH(-: none)",
}


def _lines(kind: str, value: Any) -> list[str]:
    """The lines of a text table (see :data:`TEXT_TABLES`)."""
    if kind == "commands":
        return [f"{name} {','.join(params)} {int(returns)} {(out or ('-',))[0]} {(out or ('-', None))[1] or '-'}"
                for name, (params, returns, out) in value.items()]
    return [f"{k} {v}" for k, v in value.items()]


def table_source(reg: Any) -> str:
    import pprint
    t = table(reg)
    head = ("# ruff: noqa: E501\n"  # a command's line holds all its parameters
            f'"""Generated from vk.xml ({tables.REGISTRY_PACKAGE} {tables.registry_version()}) by {_GENERATOR};'
            ' do not edit.\n\nCONSTANTS, RESULTS and COMMANDS are text, one entry a line, each line starting with'
            ' the name\nit is looked up by (kernellab.native.vkbind reads them a name at a time)."""\n')
    body = ""
    for k, v in t.items():
        if k in TEXT_TABLES:
            text = "".join(f"{line}\n" for line in _lines(k, v))
            body += f"#: {TEXT_TABLES[k]}\n{k.upper()} = \"\"\"\n{text}\"\"\"\n"
        else:
            body += f"{k.upper()} = {pprint.pformat(v, width=120, sort_dicts=False)}\n"
    return head + body


def ffi_source(reg: Any, workdir: Path) -> str:
    """The cffi out-of-line ABI module of :func:`cdef` (cffi writes it; its text is returned)."""
    import cffi  # only to regenerate: cffi's parser (pycparser) is not needed to import the result

    ffi = cffi.FFI()
    ffi.cdef(cdef(reg))
    ffi.set_source("kernellab.native._vkbind_ffi", None)
    out = workdir / FFI_MODULE
    ffi.emit_python_code(str(out))
    return "# ruff: noqa\n" + out.read_text()  # cffi's encoded type tables are one long line each


def native_dir() -> Path:
    return Path(__file__).resolve().parent.parent / "native"


def generate(out_dir: Path | None = None) -> list[Path]:
    """Write both modules into ``out_dir`` (default: ``kernellab/native``)."""
    import tempfile

    out_dir = out_dir or native_dir()
    reg = _registry()
    with tempfile.TemporaryDirectory() as tmp:
        ffi_text = ffi_source(reg, Path(tmp))
    written = []
    for name, text in ((FFI_MODULE, ffi_text), (TABLE_MODULE, table_source(reg))):
        path = out_dir / name
        tables.write_staged(path, text)
        written.append(path)
    return written


if __name__ == "__main__":
    tables.regenerate_main("kernellab.vkregistry.binding", __doc__, generate)
