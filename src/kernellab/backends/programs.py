"""What a backend turns into something dispatchable: a program's code, entry point,
specialization constants, push-constant size and descriptor slots (``base.py`` and the optional
features' records in ``feature_specs.py`` build on these). Frozen records, not dataclasses: a run
makes each, and imports no dataclasses (issue 23); ``replace`` makes a changed copy."""
from __future__ import annotations

from kernellab import parsed_options
from kernellab.records import Frozen

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from kernellab.backends.occasional import SubgroupSizing


class SpecConstant(Frozen):
    """A specialization constant: its id and value."""

    _fields = _compared = ("id", "value")
    id: int
    value: int | float | bool

    def __init__(self, id: int, value: int | float | bool):  # noqa: A002 - the field's name
        vars(self).update(id=id, value=value)

    @property
    def kind(self) -> str:
        """'bool', 'int' or 'float': decides the 4-byte encoding handed to the driver."""
        if isinstance(self.value, bool):
            return "bool"
        return "float" if isinstance(self.value, float) else "int"

    def encode(self) -> bytes:
        import struct  # here: a run whose shaders have no specialization constants never packs one

        if self.kind == "float":
            try:
                return struct.pack("=f", self.value)
            except OverflowError:  # beyond float32: infinity, as a C cast (and NumPy) gives
                return struct.pack("=f", float("inf") if self.value > 0 else float("-inf"))
        if self.kind == "bool":
            return struct.pack("=I", 1 if self.value else 0)
        v = int(self.value)
        if v < -2**31:
            raise OverflowError(f"specialization constant {self.id}: {v} is out of bounds for int32")
        return struct.pack("=i", v) if v < 0 else struct.pack("=I", v & 0xFFFFFFFF)


class BindingSlot(Frozen):
    """One descriptor a program expects: set, binding number, and the Vulkan descriptor type name
    (``storage-buffer``, ``uniform-buffer``, ``storage-image``, ``sampled-image``, ``tensor``...).
    Ordered by its fields in turn, as an ``order=True`` dataclass."""

    _fields = _compared = ("set", "id", "descriptor", "count")
    set: int
    id: int
    descriptor: str
    #: descriptors in the binding (an array of buffers in the shader)
    count: int

    def __init__(self, set: int, id: int, descriptor: str = "storage-buffer", count: int = 1):  # noqa: A002
        vars(self).update(set=set, id=id, descriptor=descriptor, count=count)

    def __lt__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() < other._values()  # type: ignore[attr-defined, no-any-return]

    def __le__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() <= other._values()  # type: ignore[attr-defined, no-any-return]

    def __gt__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() > other._values()  # type: ignore[attr-defined, no-any-return]

    def __ge__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() >= other._values()  # type: ignore[attr-defined, no-any-return]


#: a program's options when it has none
_NO_OPTIONS = parsed_options.Options()


class ProgramSpec(Frozen):
    """Everything a backend needs to turn a compiled kernel into something dispatchable."""

    _fields = _compared = ("uid", "code", "language", "entry", "specialization", "push_constants_size", "slots",
                           "options", "subgroup")
    uid: str
    #: SPIR-V words as bytes for Vulkan; UTF-8 OpenCL C source for OpenCL
    code: bytes
    language: str  # "spirv" | "opencl-c"
    entry: str
    specialization: tuple[SpecConstant, ...]
    push_constants_size: int
    slots: tuple[BindingSlot, ...]
    #: OpenCL C build options, parsed by the door (compiler_options): never a string
    options: parsed_options.Options
    #: Vulkan compute: the scenario shader's ``subgroup`` (None: the device sizes subgroups freely)
    subgroup: SubgroupSizing | None

    def __init__(self, uid: str, code: bytes, language: str, entry: str = "main",
                 specialization: tuple[SpecConstant, ...] = (), push_constants_size: int = 0,
                 slots: tuple[BindingSlot, ...] = (), options: parsed_options.Options = _NO_OPTIONS,
                 subgroup: SubgroupSizing | None = None):
        vars(self).update(uid=uid, code=code, language=language, entry=entry, specialization=specialization,
                          push_constants_size=push_constants_size, slots=slots, options=options, subgroup=subgroup)
