"""The SPIR-V binary form: its magic number, its words in the module's byte order, the framing of
its instructions (word count and opcode) and its literal strings.

The one reader of SPIR-V words: the listing decoder and reflection (``listing/spirv.py``), the
SPIR-V checker (``spirvsim/module.py``, ``spirvsim/clspv.py``) and the graph-module check of the
scenario reader (``formats/scenario_ml.py``) take their instructions from :func:`instructions`
and interpret the operands on top. It sits low (it needs only ``errors``) so that every layer can
import it; the grammar (names, operand layouts) is the listing's, a layer up.

It also holds the records of what an entry point expects from the outside (:class:`Descriptor`,
:class:`Interface`), which ``listing/reflect.py`` fills from a module: a run whose reflection is
cached reads them from here without loading the listing (issue 23).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from kernellab.errors import InputError
from kernellab.records import Value

#: the first word of every SPIR-V module
MAGIC = 0x07230203
#: the module's first four bytes, little- then big-endian
MAGIC_BYTES = (MAGIC.to_bytes(4, "little"), MAGIC.to_bytes(4, "big"))
#: magic, version, generator, bound, schema: the instructions start after them
HEADER_WORDS = 5


def looks_like_module(head: bytes, size: int) -> bool:
    """Whether a file of ``size`` bytes starting with ``head`` can be a SPIR-V module: the magic
    number in either byte order and a whole number of words, at least a header's."""
    return size >= 4 * HEADER_WORDS and size % 4 == 0 and head[:4] in MAGIC_BYTES


def words(data: bytes | bytearray | memoryview | Iterable[int], file: str = "") -> tuple[int, ...]:
    """The module's words in host order (a big-endian module is swapped); words given as numbers
    are taken as they are. A short module or a wrong magic number raises :class:`InputError`."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        out = tuple(int(w) for w in data)
        if len(out) < HEADER_WORDS:
            raise InputError.at(file, "", f"not a SPIR-V module: {len(out)} words is not a whole header of "
                                          f"{HEADER_WORDS} words")
        if out[0] != MAGIC:
            raise InputError.at(file, "word 0", f"not a SPIR-V module: magic number 0x{out[0]:08x}, "
                                                f"expected 0x{MAGIC:08x}")
        return out
    raw = bytes(data)
    if len(raw) < 4 * HEADER_WORDS or len(raw) % 4:
        raise InputError.at(file, "", f"not a SPIR-V module: {len(raw)} bytes is not a whole header of "
                                      f"{HEADER_WORDS} words")
    head = raw[:4]
    if head == MAGIC_BYTES[0]:
        order = "<"
    elif head == MAGIC_BYTES[1]:
        order = ">"
    else:
        raise InputError.at(file, "word 0", f"not a SPIR-V module: magic number 0x{int.from_bytes(head, 'little'):08x}"
                                            f", expected 0x{MAGIC:08x}")
    import struct  # here: the scenario reader imports this module for its magic number alone

    return struct.unpack(f"{order}{len(raw) // 4}I", raw)


def instructions(module_words: Sequence[int], file: str = "") -> Iterator[tuple[int, int, int]]:
    """``(offset, word count, opcode)`` of each instruction after the header, in order; the
    operands are ``module_words[offset + 1:offset + count]``. An instruction whose word count is
    zero or runs past the end raises :class:`InputError` naming its word offset."""
    pos, n = HEADER_WORDS, len(module_words)
    while pos < n:
        first = module_words[pos]
        count = first >> 16
        if count == 0 or pos + count > n:
            raise InputError.at(file, f"word {pos}", f"instruction word count {count} runs past the end of the module")
        yield pos, count, first & 0xFFFF
        pos += count


def literal_string(module_words: Sequence[int], start: int, end: int) -> tuple[str, int]:
    """The nul-terminated UTF-8 literal string from word ``start`` (before ``end``), and the index
    of the word after it; the index is ``end`` and the last word has no nul byte when the string
    is unterminated (the caller decides whether that is an error)."""
    i = start
    while i < end:
        i += 1
        if (module_words[i - 1] >> 24) == 0:
            break
    raw = b"".join(module_words[k].to_bytes(4, "little") for k in range(start, i))
    return raw.split(b"\0", 1)[0].decode("utf-8", errors="replace"), i


class Descriptor(Value):
    """A descriptor an entry point uses: its set, binding and type. (Values of plain classes, here
    and below: a run reflects its shaders into them, and each dataclass cost its start-up more to
    build than the class, issue 23.)"""

    __slots__ = ("binding", "count", "element", "min_size", "name", "set", "stride", "type", "writes")
    _fields = ("set", "binding", "type", "name", "count", "min_size", "stride", "writes", "element")

    def __init__(self, set: int, binding: int, type: str, name: str, count: int = 1, min_size: int = 0,
                 stride: int = 0, writes: bool = True, element: str = ""):
        self.set = set
        self.binding = binding
        #: VK_DESCRIPTOR_TYPE_* without the prefix: STORAGE_BUFFER, UNIFORM_BUFFER, STORAGE_IMAGE, ...
        self.type = type
        self.name = name
        #: array size (1 for a single descriptor; 0 for a runtime array of descriptors)
        self.count = count
        #: buffers: the smallest range that holds the block (its runtime array with no elements)
        self.min_size = min_size
        #: buffers: bytes per element of the trailing runtime array (0 when there is none)
        self.stride = stride
        self.writes = writes
        #: buffers: the NumPy type code ("f4", "u4", "i8", ...) of every scalar the block holds, when
        #: they are all of one type ("" for a block mixing types): what its data should be made of
        self.element = element


class Interface(Value):
    """What an entry point expects: descriptors, push constants and specialization ids."""

    __slots__ = ("descriptors", "entry", "local_size", "push_constant_size", "spec_ids", "workgroup_memory")
    _fields = ("entry", "descriptors", "push_constant_size", "spec_ids", "local_size", "workgroup_memory")

    def __init__(self, entry: str, descriptors: dict[tuple[int, int], Descriptor] | None = None,
                 push_constant_size: int = 0, spec_ids: frozenset[int] = frozenset(),
                 local_size: tuple[int, int, int] | None = None, workgroup_memory: int = 0):
        self.entry = entry
        self.descriptors: dict[tuple[int, int], Descriptor] = {} if descriptors is None else descriptors
        self.push_constant_size = push_constant_size
        self.spec_ids = spec_ids
        #: LocalSize literals, or None where the size is an id (LocalSizeId / the WorkgroupSize builtin)
        self.local_size = local_size
        #: bytes of the Workgroup (GLSL ``shared``, OpenCL C ``__local``) variables the entry point
        #: reaches, laid out packed (arrays sized by specialization constants at their defaults):
        #: what a dispatch asks of ``maxComputeSharedMemorySize``
        self.workgroup_memory = workgroup_memory

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass was
