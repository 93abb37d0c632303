"""A SPIR-V module reflected: its interface (``listing/reflect.py``) and what a run needs beyond
it, read from the decoded module.

What a cache miss runs: ``runtime/interface.py`` keeps each reflection by content, so a repeated
run reads the entry back and loads neither this module nor the decoder and its grammar (issue 23).
It returns plain values (no record of ``runtime/interface.py``'s) so that it need not import it.
"""
from __future__ import annotations

from kernellab.backends.base import LocalArgument, UnknownEntryError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from kernellab.listing.spirv import Module
    from kernellab.spirv_format import Interface

    #: the workgroup size's (literal or default, specialization id) terms or None, the ``__local``
    #: arguments, the execution model
    Facts = tuple[tuple[tuple[int, int | None], ...] | None, tuple[LocalArgument, ...], str]


def reflect_uncached(spirv: bytes, entry: str, file: str = "") -> tuple[Interface, Facts]:
    """The interface and facts (:func:`module_facts`) of entry point ``entry``, decoded and
    reflected; :class:`UnknownEntryError` when the module has no such entry point."""
    from kernellab.listing.reflect import reflect
    from kernellab.listing.spirv import decode

    module = decode(spirv, file)
    entries = entry_points(module)
    if entry not in entries:
        raise UnknownEntryError(entry, entries, module=True)
    return reflect(spirv, entry, file, module=module), module_facts(module, entry)


def entry_points(module: Module) -> list[str]:
    """The names of a decoded module's entry points."""
    return [str(i.operands[2].value) for i in module.instructions if i.opname == "OpEntryPoint"]


def module_facts(module: Module, entry: str) -> Facts:
    """What :class:`~kernellab.runtime.interface.ModuleFacts` holds for entry point ``entry`` of a
    decoded module: the workgroup size as (literal or default, specialization id or None) terms,
    the clspv ``__local`` arguments and the execution model."""
    point = next((i for i in module.instructions if i.opname == "OpEntryPoint" and i.operands[2].value == entry),
                 None)
    entry_fn = int(point.operands[1].value) if point is not None else None
    spec_id: dict[int, int] = {}
    builtin_size: int | None = None
    literal = ids = None
    for inst in module.instructions:
        if inst.opname == "OpDecorate" and len(inst.operands) >= 3:
            if inst.operands[1].value == "SpecId":
                spec_id[int(inst.operands[0].value)] = int(inst.operands[2].value)
            elif inst.operands[1].value == "BuiltIn" and inst.operands[2].value == "WorkgroupSize":
                builtin_size = int(inst.operands[0].value)
        elif inst.opname in ("OpExecutionMode", "OpExecutionModeId") and entry_fn is not None \
                and int(inst.operands[0].value) == entry_fn and len(inst.operands) >= 5:
            values = [int(o.value) for o in inst.operands[2:5]]
            if inst.operands[1].value == "LocalSize":
                literal = values
            elif inst.operands[1].value == "LocalSizeId":
                ids = values

    def term(id_: int) -> tuple[int, int | None]:
        inst = module.defs.get(id_)
        value = inst.operands[0].value if inst is not None and inst.operands else 1
        return int(value) if isinstance(value, int) else 1, spec_id.get(id_)

    size = None
    composite = module.defs.get(builtin_size) if builtin_size is not None else None
    if composite is not None and len(composite.operands) == 3:  # the built-in overrides the execution modes
        size = tuple(term(int(o.value)) for o in composite.operands)
    elif ids is not None:
        size = tuple(term(i) for i in ids)
    elif literal is not None:
        size = tuple((v, None) for v in literal)
    model = str(point.operands[0].value) if point is not None else ""
    return size, _clspv_local_arguments(module, entry), model  # type: ignore[return-value]


def _clspv_local_arguments(module: Module, entry: str) -> tuple[LocalArgument, ...]:
    def constant(id_: object) -> int:
        inst = module.defs.get(int(id_))  # type: ignore[call-overload]
        return int(inst.operands[0].value) if inst is not None and inst.operands else -1

    def string(id_: object) -> str:
        return module.strings.get(int(id_), "")  # type: ignore[call-overload]

    kernels: dict[int, str] = {}
    out = []
    for inst in module.instructions:
        if inst.opname != "OpExtInst" or not inst.ext_set.startswith("NonSemantic.ClspvReflection"):
            continue
        ops = [o.value for o in inst.operands[2:]]
        if inst.ext_op == "Kernel" and len(ops) >= 2 and inst.result is not None:
            kernels[inst.result] = string(ops[1])
        elif inst.ext_op == "ArgumentWorkgroup" and len(ops) >= 4 and kernels.get(int(ops[0])) == entry:  # type: ignore[call-overload]
            info = module.defs.get(int(ops[4])) if len(ops) >= 5 else None  # type: ignore[call-overload]
            name = string(info.operands[2].value) if info is not None and len(info.operands) > 2 else ""
            type_name = string(info.operands[3].value) if info is not None and len(info.operands) > 3 else ""
            out.append(LocalArgument(constant(ops[1]), name, constant(ops[2]), constant(ops[3]), type_name))
    return tuple(out)
