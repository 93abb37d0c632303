"""Functions an OpenCL C source declares without a body, made into calls the engine reads
(docs/verify-prove.md, "Functions without a body").

clspv cannot compile a call of a declared function that has no body (it crashes), and GPUVerify's
suite uses two kinds: GPUVerify's *uninterpreted functions* (``DECLARE_UF_BINARY(A, unsigned,
unsigned, unsigned);``: a function of its arguments alone, about which nothing else is known) and
plain prototypes (``int bar(void);``: GPUVerify lets the call return anything). Each gets a body
appended after the source that calls a marker function (``__kl_stub(K)``, recognised by the
constant its body adds, :data:`STUB_MAGIC`) and keeps its parameters used, so that clspv keeps
the call and its arguments. The engine never runs the body: a call of an uninterpreted function is
a z3 function of the arguments (same arguments, same result, in both invocations); a call of a
plain prototype is a fresh value each time. ``K`` numbers the function and says which kind
(:func:`stub_number`). A function with a pointer parameter or result is refused (it could touch
memory through it): by the engine where the prototype shows it, by the access guard
(:func:`pointer_stubs`, over clang's IR) where a typedef hides it.
"""
from __future__ import annotations

import re

from kernellab.records import dataclass

#: the constant the marker function's body adds (the annotations' are 0x4b4c0001...)
STUB_MAGIC = 0x4B4C0100

#: put before the source (after the annotation header): GPUVerify's ``DECLARE_UF_*`` as
#: prototypes, and the marker function
HEADER = f"""\
#define DECLARE_UF_UNARY(NAME, P1, RET) RET NAME(P1)
#define DECLARE_UF_BINARY(NAME, P1, P2, RET) RET NAME(P1, P2)
#define DECLARE_UF_TERNARY(NAME, P1, P2, P3, RET) RET NAME(P1, P2, P3)
__attribute__((noinline)) int __kl_stub(int k) {{ return k + {STUB_MAGIC:#x}; }}
"""

_UF = re.compile(r"\bDECLARE_UF_(?:UNARY|BINARY|TERNARY)\s*\(([^;]*)\)\s*;")
#: a prototype on one line: return type, name, parameters
_PROTOTYPE = re.compile(r"^[ \t]*((?:[A-Za-z_]\w*[ \t\*]+)+?)([A-Za-z_]\w*)[ \t]*\(([^()]*)\)[ \t]*;[ \t]*(?://.*)?$", re.M)
#: words that start a statement, not a declaration
_STATEMENTS = {"return", "else", "goto", "case", "do", "typedef", "__kernel", "kernel", "#define"}


@dataclass
class Stub:
    name: str
    ret: str
    params: list[str]
    uninterpreted: bool


#: what a stub's call is: any value, a function of its arguments, or refused (a pointer passed or
#: returned: the function could touch memory through it)
FRESH, UNINTERPRETED, REFUSED = 0, 1, 2


def stub_number(index: int, kind: int) -> int:
    """The marker's argument for the ``index``-th stub of ``kind``."""
    return 4 * index + kind


def stub_kind(stub: Stub) -> int:
    if any("*" in t or "[" in t for t in stub.params + [stub.ret]):
        return REFUSED
    return UNINTERPRETED if stub.uninterpreted else FRESH


_DEFINE = re.compile(r"^define [^@\n]*@([\w.$]+)\((.*)\)[^\n]*\{$", re.M)
#: an OpenCL ``sampler_t`` in clang's IR: a pointer type only in name (images.py models samplers)
_SAMPLER = re.compile(r"%opencl\.sampler_t addrspace\(\d+\)\*")


def pointer_stubs(ir: str) -> list[str]:
    """The stubs in clang's ``-O0`` IR of the annotated text that take or return a pointer (a
    typedef hides one from :func:`stub_kind`; clspv drops an unused parameter, so the engine would
    not see it): a proof cannot stand on them."""
    out = []
    for m in _DEFINE.finditer(ir):
        end = ir.find("\n}", m.end())
        if "@__kl_stub(" in ir[m.end():end] and m.group(1) != "__kl_stub":
            head = m.group(0)[:m.group(0).index("@")]
            params = _SAMPLER.sub("sampler", m.group(2))  # a sampler is a value: no memory behind it
            if "ptr" in params or "*" in params or "ptr" in head or "*" in head:
                out.append(m.group(1))
    return out


def find(text: str) -> list[Stub]:
    """The functions ``text`` declares and never defines: GPUVerify's uninterpreted functions
    and plain prototypes."""
    text = re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S))
    out: dict[str, Stub] = {}
    for m in _UF.finditer(text):
        parts = [p.strip() for p in m.group(1).split(",")]
        if len(parts) >= 2:
            out[parts[0]] = Stub(parts[0], parts[-1], parts[1:-1], True)
    for m in _PROTOTYPE.finditer(text):
        ret, name, params = m.group(1).strip(), m.group(2), m.group(3).strip()
        if name in out or ret.split()[0] in _STATEMENTS or "DECLARE_UF" in name:
            continue
        out[name] = Stub(name, ret, [] if params in ("", "void") else [p.strip() for p in params.split(",")], False)
    return [s for s in out.values() if not _defined(text, s.name)]


def _defined(text: str, name: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\s*\([^;{{}}]*\)\s*(?:__attribute__\s*\(\(.*?\)\)\s*)*\{{", text) is not None


def bodies(stubs: list[Stub]) -> str:
    """The definitions appended after the source."""
    out = []
    for k, s in enumerate(stubs):
        number = stub_number(k, stub_kind(s))
        if stub_kind(s) == UNINTERPRETED:  # parameter types only: name them, and use them so that clspv keeps them
            names = [f"__kl_a{i}" for i in range(len(s.params))]
            params = ", ".join(f"{t} {n}" for t, n in zip(s.params, names)) or "void"
            used = "".join(f" + ({n})" for n in names)
            out.append(f"__attribute__((noinline)) {s.ret} {s.name}({params}) "
                       f"{{ return ({s.ret})(__kl_stub({number}){used}); }}")
        else:
            params = ", ".join(s.params) or "void"
            # the engine never runs the body: its value is any (`*&` keeps clang's uninitialised-use
            # check, which stops a proof, off this read)
            body = "" if s.ret == "void" else f" {s.ret} __kl_r; return *&__kl_r;"
            out.append(f"__attribute__((noinline)) {s.ret} {s.name}({params}) {{ __kl_stub({number});{body} }}")
    return "\n".join(out)


#: bits of OpenCL C's integer types (an uninterpreted function's parameters and result)
_WIDTHS = {"char": 8, "uchar": 8, "short": 16, "ushort": 16, "int": 32, "uint": 32, "long": 64, "ulong": 64,
           "unsigned": 32, "signed": 32, "bool": 1, "size_t": 64, "float": 32, "double": 64, "half": 16}


def c_width(ctype: str) -> int | None:
    """The bits of a scalar OpenCL C type (``unsigned char``: 8), None for any other."""
    words = [w for w in ctype.replace("const", " ").split() if w not in ("signed",)] or ["int"]
    if words[0] == "unsigned":
        words = words[1:] or ["int"]
    if words[-1] == "int" and len(words) > 1:  # short int, long int
        words = words[:-1]
    return _WIDTHS.get(words[0]) if len(words) == 1 else None


def uf_name(index: int) -> str:
    """The z3 name of the ``index``-th stub's function (the engine's, for a scalar result)."""
    return f"kl_uf{index}"
