"""The SPIR-V binary form: its magic number, its words in the module's byte order, the framing of
its instructions (word count and opcode) and its literal strings.

The one reader of SPIR-V words: the listing decoder and reflection (``listing/spirv.py``), the
SPIR-V checker (``spirvsim/module.py``, ``spirvsim/clspv.py``) and the graph-module check of the
scenario reader (``formats/scenario_ml.py``) take their instructions from :func:`instructions`
and interpret the operands on top. It sits low (it needs only ``errors``) so that every layer can
import it; the grammar (names, operand layouts) is the listing's, a layer up.
"""
from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence

from kernellab.errors import InputError

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
