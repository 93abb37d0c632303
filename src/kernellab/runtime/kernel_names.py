"""The kernel functions an OpenCL C source defines, read from its text without a compiler.

``validate`` has no device, so it cannot build the program to learn its kernels; reading the
``__kernel``/``kernel`` declarations is enough to refuse an entry point the source plainly lacks.
Where the preprocessor could make a kernel the text does not show (an ``#include``, a macro in a
kernel's name, a macro that writes ``kernel`` or pastes tokens), the answer is "unknown".
"""
from __future__ import annotations

import re

_COMMENTS_AND_STRINGS = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
_ATTRIBUTE = re.compile(r"\b__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)")
_KERNEL = re.compile(r"\b(?:__kernel|kernel)\b([^;{}()]*?)\b([A-Za-z_]\w*)\s*\(")
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(.*)$", re.M)
_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include\b", re.M)


def defined_kernels(source: str) -> set[str] | None:
    """The names of the kernels ``source`` defines, or None when the preprocessor could add or
    rename one (then nothing can be refused without building)."""
    text = _COMMENTS_AND_STRINGS.sub(" ", source.replace("\\\n", " "))
    if _INCLUDE.search(text):
        return None
    macros = {}
    for name, body in _DEFINE.findall(text):
        macros[name] = body
        if "##" in body or re.search(r"\b(?:__kernel|kernel)\b", body):
            return None  # a macro that declares kernels or makes names
    text = _DEFINE.sub(" ", text)
    names = set()
    for m in _KERNEL.finditer(_ATTRIBUTE.sub(" ", text)):
        words = set(re.findall(r"[A-Za-z_]\w*", m.group(1))) | {m.group(2)}
        if words & set(macros):
            return None  # a macro in the declaration could be the name
        names.add(m.group(2))
    return names


def undefined_entry(source: str, entry: str) -> str | None:
    """Why ``entry`` is not a kernel of ``source`` (None when it is, or when that cannot be told)."""
    names = defined_kernels(source)
    if names is None or entry in names:
        return None
    return (f"the source defines no kernel named {entry!r} (its kernels: "
            + (", ".join(sorted(names)) or "none") + ")")
