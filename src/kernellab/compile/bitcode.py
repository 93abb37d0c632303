"""Which LLVM wrote a bitcode file: the producer string of its identification block.

An ``llvm-dis`` reads bitcode from its own LLVM version and older ones, never newer ones, so the
text form of a device's bitcode (PoCL embeds what its own LLVM made) needs an ``llvm-dis`` at
least as new as the producer. LLVM (3.8 and later) writes an IDENTIFICATION_BLOCK first, whose
STRING record is e.g. ``LLVM15.0.6`` (``APPLE_1_...`` for Apple's); this reads just that record
with a minimal reader of LLVM's bitstream container (LLVM's "LLVM Bitcode File Format" document).
"""
from __future__ import annotations

import re

BITCODE_MAGIC = b"BC\xc0\xde"
_WRAPPER_MAGIC = 0x0B17C0DE
_IDENTIFICATION_BLOCK = 13
_STRING_RECORD = 1
_CHAR6 = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._"
# abbreviation operand encodings
_FIXED, _VBR, _ARRAY, _CHAR6_ENC, _BLOB = 1, 2, 3, 4, 5


class _Malformed(Exception):
    pass


class _Bits:
    """Reads a bitstream: fields little-endian, least significant bit first."""

    def __init__(self, data: bytes, start: int = 0):
        self.data = data
        self.pos = start * 8

    def fixed(self, width: int) -> int:
        if width == 0:
            return 0
        end = self.pos + width
        if end > len(self.data) * 8:
            raise _Malformed("past the end")
        first, last = self.pos // 8, (end + 7) // 8
        value = int.from_bytes(self.data[first:last], "little") >> (self.pos % 8)
        self.pos = end
        return value & ((1 << width) - 1)

    def vbr(self, width: int) -> int:
        value, shift = 0, 0
        high = 1 << (width - 1)
        while True:
            chunk = self.fixed(width)
            value |= (chunk & (high - 1)) << shift
            if not chunk & high:
                return value
            shift += width - 1
            if shift > 64:
                raise _Malformed("VBR too long")

    def align32(self) -> None:
        self.pos = (self.pos + 31) // 32 * 32


def _bitcode_start(data: bytes) -> int:
    if len(data) >= 20 and int.from_bytes(data[:4], "little") == _WRAPPER_MAGIC:
        return int.from_bytes(data[8:12], "little")
    return 0


def producer(data: bytes) -> str | None:
    """The producer string of LLVM bitcode (``LLVM15.0.6``), or None when it has none or is not
    bitcode."""
    start = _bitcode_start(data)
    if data[start:start + 4] != BITCODE_MAGIC:
        return None
    bits = _Bits(data, start + 4)
    try:
        # top level: abbreviation width 2; blocks follow each other
        while bits.pos + 32 <= len(data) * 8:
            if bits.fixed(2) != 1:  # only ENTER_SUBBLOCK is expected at the top level
                return None
            block_id, width = bits.vbr(8), bits.vbr(4)
            bits.align32()
            words = bits.fixed(32)
            if block_id != _IDENTIFICATION_BLOCK:
                bits.pos += words * 32
                continue
            return _identification_string(bits, width)
    except _Malformed:
        return None
    return None


def _identification_string(bits: _Bits, width: int) -> str | None:
    abbrevs: list[list[tuple[int, int]]] = []  # each operand: (encoding or 0 for a literal, value)
    while True:
        abbrev_id = bits.fixed(width)
        if abbrev_id == 0:  # END_BLOCK
            return None
        if abbrev_id == 1:
            raise _Malformed("no nested blocks in the identification block")
        if abbrev_id == 2:  # DEFINE_ABBREV
            ops: list[tuple[int, int]] = []
            for _ in range(bits.vbr(5)):
                if bits.fixed(1):
                    ops.append((0, bits.vbr(8)))
                else:
                    enc = bits.fixed(3)
                    ops.append((enc, bits.vbr(5) if enc in (_FIXED, _VBR) else 0))
            abbrevs.append(ops)
            continue
        if abbrev_id == 3:  # UNABBREV_RECORD
            code, count = bits.vbr(6), bits.vbr(6)
            fields = [bits.vbr(6) for _ in range(count)]
        else:
            if abbrev_id - 4 >= len(abbrevs):
                raise _Malformed("undefined abbreviation")
            values = _abbreviated(bits, abbrevs[abbrev_id - 4])
            code, fields = values[0], values[1:]
        if code == _STRING_RECORD:
            return "".join(chr(f) for f in fields if 0 <= f < 0x110000)


def _abbreviated(bits: _Bits, ops: list[tuple[int, int]]) -> list[int]:
    values: list[int] = []
    i = 0
    while i < len(ops):
        enc, value = ops[i]
        if enc == _ARRAY:
            element = ops[i + 1] if i + 1 < len(ops) else (_FIXED, 8)
            values += [_scalar(bits, *element) for _ in range(bits.vbr(6))]
            i += 2
            continue
        if enc == _BLOB:
            size = bits.vbr(6)
            bits.align32()
            values += [bits.fixed(8) for _ in range(size)]
            bits.align32()
        else:
            values.append(_scalar(bits, enc, value))
        i += 1
    return values


def _scalar(bits: _Bits, enc: int, value: int) -> int:
    if enc == 0:
        return value
    if enc == _FIXED:
        return bits.fixed(value)
    if enc == _VBR:
        return bits.vbr(value)
    if enc == _CHAR6_ENC:
        return ord(_CHAR6[bits.fixed(6)])
    raise _Malformed(f"operand encoding {enc}")


def llvm_major(data: bytes) -> int | None:
    """The major version of the LLVM that wrote ``data`` (``LLVM15.0.6`` -> 15), if it says."""
    text = producer(data)
    m = re.match(r"LLVM(\d+)\.", text or "")
    return int(m.group(1)) if m else None
