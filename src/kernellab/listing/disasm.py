"""SPIR-V assembly text from the decoder, in the form ``spirv-dis --raw-id`` prints.

It exists so the decoder can be checked word for word against SPIRV-Tools, and so listing
operands print literals exactly as the SPIR-V tools do.
"""
from __future__ import annotations

import math

from kernellab.listing.spirv import Instruction, Module, Operand


def format_float(value: float, width: int, hex_floats: bool = False) -> str:
    """A float literal as spirv-dis prints it: ``max_digits10`` significant digits (9 for 32-bit,
    17 for 64-bit) in C's ``%g`` form; hex for half floats, infinities and NaNs."""
    if hex_floats or math.isinf(value) or math.isnan(value) or width == 16:
        return hex_float(value, width)
    return f"{value:.17g}" if width == 64 else f"{value:.9g}"


def hex_float(value: float, width: int = 32) -> str:
    """C-style hex float (``0x1.8p+1``), with ``inf``/``nan`` spelled as spirv-dis does."""
    if math.isnan(value):
        return "-0x1.8p+128" if math.copysign(1.0, value) < 0 else "0x1.8p+128"
    if math.isinf(value):
        bias = {16: 16, 32: 128, 64: 1024}.get(width, 128)
        return f"{'-' if value < 0 else ''}0x1p+{bias}"
    text = float(value).hex()  # 0x1.8000000000000p+1
    mant, exp = text.split("p")
    if "." in mant:
        mant = mant.rstrip("0").rstrip(".")
    return f"{mant}p{exp if exp.startswith('-') else '+' + exp.lstrip('+')}"


def format_literal(op: Operand, hex_floats: bool = False) -> str:
    if op.float_width:
        return format_float(float(op.value), op.float_width, hex_floats)
    return str(op.value)


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def operand_text(op: Operand) -> str:
    if op.role == "id":
        return f"%{op.value}"
    if op.role == "string":
        return _quote(str(op.value))
    if op.role == "literal":
        return format_literal(op)
    return str(op.value)


def instruction_text(inst: Instruction) -> str:
    parts = []
    if inst.result is not None:
        parts.append(f"%{inst.result} =")
    parts.append(inst.opname)
    if inst.type is not None:
        parts.append(f"%{inst.type}")
    parts.extend(operand_text(o) for o in inst.operands)
    return " ".join(parts)


def disassemble(module: Module) -> str:
    """One line per instruction, as ``spirv-dis --raw-id --no-header --no-indent`` prints them."""
    return "\n".join(instruction_text(i) for i in module.instructions) + "\n"
