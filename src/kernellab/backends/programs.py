"""What a backend turns into something dispatchable: a program's code, entry point,
specialization constants, push-constant size and descriptor slots (``base.py`` and the optional
features' records in ``feature_specs.py`` build on these)."""
from __future__ import annotations

from kernellab import parsed_options
from kernellab.records import dataclass

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from kernellab.backends.occasional import SubgroupSizing


@dataclass(frozen=True)
class SpecConstant:
    """A specialization constant: its id and value."""
    id: int
    value: int | float | bool

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


@dataclass(frozen=True, order=True)
class BindingSlot:
    """One descriptor a program expects: set, binding number, and the Vulkan descriptor type name
    (``storage-buffer``, ``uniform-buffer``, ``storage-image``, ``sampled-image``, ``tensor``...)."""

    set: int
    id: int
    descriptor: str = "storage-buffer"
    #: descriptors in the binding (an array of buffers in the shader)
    count: int = 1


@dataclass(frozen=True)
class ProgramSpec:
    """Everything a backend needs to turn a compiled kernel into something dispatchable."""

    uid: str
    #: SPIR-V words as bytes for Vulkan; UTF-8 OpenCL C source for OpenCL
    code: bytes
    language: str  # "spirv" | "opencl-c"
    entry: str = "main"
    specialization: tuple[SpecConstant, ...] = ()
    push_constants_size: int = 0
    slots: tuple[BindingSlot, ...] = ()
    #: OpenCL C build options, parsed by the door (compiler_options): never a string
    options: parsed_options.Options = parsed_options.Options()
    #: Vulkan compute: the scenario shader's ``subgroup`` (None: the device sizes subgroups freely)
    subgroup: SubgroupSizing | None = None
