"""Reading AmberScript's compute subset (Amber's docs/amber_script.md) into :class:`AmberScript`.

Every problem names the file, the line and the column. Constructs outside the compute subset
(graphics pipelines, draws) are refused with :class:`Unsupported`, which names
the construct, so a corpus run can tell "refused" from "bad input".
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from kernellab.errors import InputError, Problem
from kernellab.formats.amber import files, images
from kernellab.formats.amber.script import AmberScript, Binding, Buffer, Command, Copy, Expect, Pipeline, Run, Shader
from kernellab.formats.amber.structs import Member, Struct, struct_element
from kernellab.formats.amber.tokens import Token, tokenize_line
from kernellab.formats.amber.types import Element, TypeError_, element

SHADER_FORMATS = ("GLSL", "SPIRV-ASM", "SPIRV-HEX", "OPENCL-C", "HLSL")
COMPARATORS = ("EQ", "NE", "LT", "LE", "GT", "GE")
BUFFER_COMPARATORS = ("EQ_BUFFER", "RMSE_BUFFER", "EQ_HISTOGRAM_EMD_BUFFER")
BIND_KINDS = ("storage", "uniform", "storage_dynamic", "uniform_dynamic", "uniform_texel_buffer",
              "storage_texel_buffer", "push_constant")
#: what kernellab refuses (the construct, and why), each naming its line
GRAPHICS = "graphics pipelines are not supported (kernellab runs AmberScript's compute subset)"
#: the most bytes all of a script's buffers and images may hold, and the most values they may be
#: given (the reader holds each as a Python number): checked before anything is allocated
MAX_SCRIPT_BYTES = 256 << 20
MAX_SCRIPT_VALUES = 1 << 26
#: the most commands a script may give once REPEATs are unrolled (Amber's own tests give < 1,000)
MAX_COMMANDS = 10_000
#: the most buffers one BIND BUFFER_ARRAY may name: a descriptor array far larger than any device's
#: maxPerStageDescriptorStorageBuffers, yet small enough that the scenario is written at once
MAX_BUFFER_ARRAY = 4096
#: the largest number a 32-bit Vulkan field (a set, a binding, a work-group count, an extent) takes
U32 = (1 << 32) - 1
_INT = re.compile(r"^[+-]?(0[xX][0-9a-fA-F]+|\d+)$")


class Unsupported(InputError):
    """A construct of AmberScript that kernellab does not run; ``construct`` names it."""

    def __init__(self, path: Path, token: Token, construct: str, message: str):
        super().__init__([_problem(path, token, message)])
        self.construct = construct


def _problem(path: Path, token: Token, message: str) -> Problem:
    return Problem(str(path), f"line {token.line}, column {token.column}", message)


class _Lines:
    """The file's lines, tokenized on demand; shader and data blocks are read raw."""

    def __init__(self, path: Path, text: str):
        self.path = path
        self.lines = text.splitlines()
        self.index = 0

    def next_tokens(self) -> list[Token] | None:
        while self.index < len(self.lines):
            self.index += 1
            tokens = tokenize_line(self.lines[self.index - 1], self.index)
            # a trailing backslash continues the statement on the next line
            while tokens and tokens[-1].text == "\\" and self.index < len(self.lines):
                self.index += 1
                tokens = tokens[:-1] + tokenize_line(self.lines[self.index - 1], self.index)
            if tokens:
                return tokens
        return None

    def raw_until_end(self, opener: Token) -> str:
        """The lines up to a line that is ``END`` (the shader's text)."""
        body: list[str] = []
        while self.index < len(self.lines):
            line = self.lines[self.index]
            self.index += 1
            if line.strip() == "END":
                return "\n".join(body) + "\n"
            body.append(line)
        raise self.error(opener, f"{opener.text} block has no END")

    def tokens_until_end(self, opener: Token) -> Iterator[Token]:
        while True:
            tokens = self.next_tokens()
            if tokens is None:
                raise self.error(opener, f"{opener.text} block has no END")
            for t in tokens:
                if t.text == "END":
                    return
                yield t

    def error(self, token: Token, message: str) -> InputError:
        return InputError([_problem(self.path, token, message)])

    def refuse(self, token: Token, construct: str, message: str) -> Unsupported:
        return Unsupported(self.path, token, construct, message)


class _Words:
    """The tokens of one statement, consumed left to right."""

    def __init__(self, src: _Lines, tokens: list[Token]):
        self.src = src
        self.tokens = tokens
        self.i = 0

    @property
    def done(self) -> bool:
        return self.i >= len(self.tokens)

    def peek(self) -> str:
        return self.tokens[self.i].text if not self.done else ""

    def last(self) -> Token:
        return self.tokens[min(self.i, len(self.tokens)) - 1]

    def take(self, what: str) -> Token:
        if self.done:
            end = self.tokens[-1]
            raise self.src.error(Token("", end.line, end.column + len(end.text) + 1), f"expected {what}")
        self.i += 1
        return self.tokens[self.i - 1]

    def keyword(self, *words: str) -> Token:
        t = self.take(" or ".join(words))
        if t.text not in words:
            raise self.src.error(t, f"expected {' or '.join(words)}, got {t.text!r}")
        return t

    def integer(self, what: str, minimum: int = 0, maximum: int = (1 << 64) - 1) -> int:
        t = self.take(what)
        if not _INT.match(t.text) or not minimum <= int(t.text, 0) <= maximum:
            raise self.src.error(t, f"expected {what} (an integer >= {minimum} and <= {maximum}), got {t.text!r}")
        return int(t.text, 0)

    def kernel_argument(self) -> str | int:
        """``KERNEL ARG_NAME name`` or ``KERNEL ARG_NUMBER n``: the OpenCL C argument's name or number."""
        self.keyword("KERNEL")
        how = self.keyword("ARG_NAME", "ARG_NUMBER")
        return self.take("an argument").text if how.text == "ARG_NAME" else self.integer("an argument number")

    def finish(self) -> None:
        if not self.done:
            t = self.tokens[self.i]
            raise self.src.error(t, f"unexpected {t.text!r} at the end of the statement")


def number(src: _Lines, t: Token, dtype: str) -> int | float:
    """A value of a component of type ``dtype``; negative integers of unsigned types wrap."""
    text = t.text
    if dtype.startswith("float"):
        try:
            if re.match(r"^[+-]?0[xX]", text) and not _INT.match(text):
                return float.fromhex(text)
            return float(text)
        except ValueError:
            raise src.error(t, f"expected a {dtype} value, got {text!r}") from None
    if not _INT.match(text):
        try:  # Amber reads a number such as 0.0 into an integer type too (truncating it)
            value = int(float(text))
        except (ValueError, OverflowError):
            raise src.error(t, f"expected an integer ({dtype}), got {text!r}") from None
    else:
        value = int(text, 0)
    bits = int(re.sub(r"\D", "", dtype))
    if not -(1 << (bits - 1)) <= value < (1 << bits):
        raise src.error(t, f"{text} does not fit {dtype}")
    if dtype.startswith("uint"):
        value &= (1 << bits) - 1
    elif value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def expect_value(src: _Lines, t: Token) -> int | float:
    if _INT.match(t.text):
        return int(t.text, 0)
    try:
        return float(t.text)
    except ValueError:
        raise src.error(t, f"expected a number, got {t.text!r}") from None


class Parser:
    def __init__(self, path: Path, text: str):
        self.src = _Lines(path, text)
        self.script = AmberScript(path)
        self.virtual_files: dict[str, str] = {}
        #: the script line each virtual file's text starts at
        self.virtual_lines: dict[str, int] = {}
        self.structs: dict[str, Struct] = {}
        self.held_bytes = 0
        self.held_values = 0

    def reserve(self, where: Token, count: int, elem: Element) -> None:
        """Count ``count`` elements of ``elem`` against the script's limits before they are made."""
        self.held_bytes += count * elem.size
        self.held_values += count * len(elem.components)
        if self.held_bytes > MAX_SCRIPT_BYTES or self.held_values > MAX_SCRIPT_VALUES:
            raise self.src.error(where, f"{count} elements of {elem.name} ({count * elem.size} bytes) take the "
                                        f"script's buffers and images past kernellab's limit of {MAX_SCRIPT_BYTES} "
                                        f"bytes and {MAX_SCRIPT_VALUES} values")

    def parse(self) -> AmberScript:
        while True:
            tokens = self.src.next_tokens()
            if tokens is None:
                return self.script
            self.statement(tokens, self.script.commands)
            if len(self.script.commands) > MAX_COMMANDS:
                raise self.src.error(tokens[0], f"the script gives more than {MAX_COMMANDS} commands")

    # --- statements ----------------------------------------------------------------------------
    def statement(self, tokens: list[Token], commands: list[Command]) -> None:
        w = _Words(self.src, tokens)
        head = w.take("a statement")
        word = head.text
        handler = {
            "SHADER": self.shader, "BUFFER": self.buffer, "PIPELINE": self.pipeline,
            "DERIVE_PIPELINE": self.derive_pipeline, "DEVICE_FEATURE": self.requirement,
            "DEVICE_EXTENSION": self.requirement, "INSTANCE_EXTENSION": self.requirement,
            "DEVICE_PROPERTY": self.requirement, "SET": self.set_engine_data, "VIRTUAL_FILE": self.virtual_file,
            "IMAGE": lambda h, w: images.parse_image(self, h, w, number),
            "SAMPLER": lambda h, w: images.parse_sampler(self, h, w),
        }.get(word)
        if handler is not None:
            handler(head, w)
            return
        if word in ("RUN", "EXPECT", "COPY", "REPEAT", "DEBUG"):
            getattr(self, word.lower())(head, w, commands)
            return
        if word in ("CLEAR", "CLEAR_COLOR", "CLEAR_DEPTH", "CLEAR_STENCIL"):
            raise self.src.refuse(head, word, GRAPHICS + f": {word} clears a framebuffer")
        if word == "STRUCT":
            self.struct(head, w)
            return
        raise self.src.error(head, f"unknown statement {word!r}")

    def shader(self, head: Token, w: _Words) -> None:
        stage = w.take("a shader stage")
        if stage.text != "compute":
            raise self.src.refuse(stage, f"SHADER {stage.text}", GRAPHICS + f": SHADER {stage.text}")
        name = w.take("the shader's name")
        fmt = w.keyword(*SHADER_FORMATS, "SPIRV-BIN")
        target_env = ""
        source = None
        text_file, text_line = str(self.src.path), head.line + 1
        while not w.done:
            t = w.keyword("TARGET_ENV", "VIRTUAL_FILE", "FILE")
            if t.text == "TARGET_ENV":
                target_env = w.take("a target environment").text
            else:
                ref = w.take("a file name")
                source = self.virtual_files.get(ref.text) if t.text == "VIRTUAL_FILE" else None
                if source is None:
                    source = self.shader_file(ref, binary=fmt.text == "SPIRV-BIN")
                if ref.text in self.virtual_lines:
                    text_line = self.virtual_lines[ref.text]
                else:
                    text_file, text_line = str(self.src.path.parent / ref.text), int(fmt.text != "SPIRV-BIN")
        if name.text in self.script.shaders:
            raise self.src.error(name, f"shader {name.text!r} is already defined")
        if source is None:
            if fmt.text == "SPIRV-BIN":
                raise self.src.error(fmt, "a SPIRV-BIN shader is read from a FILE")
            source = self.src.raw_until_end(head)
        # a SPIR-V binary is kept as the SPIRV-HEX text of its bytes
        kind = "SPIRV-HEX" if fmt.text == "SPIRV-BIN" else fmt.text
        self.script.shaders[name.text] = Shader(name.text, kind, source, head.line, target_env, text_file, text_line)

    def shader_file(self, ref: Token, binary: bool) -> str:
        """A shader's text (a binary: its bytes in hexadecimal) from a virtual file, else from a
        file beside the script, as Amber looks them up."""
        if ref.text in self.virtual_files:
            return self.virtual_files[ref.text]
        data = files.read_beside(self.src, ref)
        return data.hex(" ") if binary else data.decode("utf-8", errors="replace")

    def struct(self, head: Token, w: _Words) -> None:
        """``STRUCT name [STRIDE n]``, then ``type member [OFFSET o]`` lines, ``END``."""
        name = w.take("the struct's name")
        if name.text in self.structs:
            raise self.src.error(name, f"STRUCT {name.text!r} is already defined")
        s = Struct(name.text, head.line)
        if not w.done:
            w.keyword("STRIDE")
            s.stride = w.integer("the stride in bytes", 1)
        w.finish()
        for line, type_token in self.statements(head, "STRUCT", "a member's type"):
            if type_token.text == name.text:
                raise self.src.error(type_token, "a STRUCT cannot hold itself")
            if type_token.text not in self.structs:
                try:
                    element(type_token.text)
                except TypeError_ as exc:
                    raise self.src.error(type_token, f"{exc} for a STRUCT member") from None
            member = line.take("the member's name")
            if any(m.name == member.text for m in s.members):
                raise self.src.error(member, f"STRUCT {name.text} already has a member {member.text!r}")
            m = Member(type_token.text, member.text, member.line, member.column)
            while not line.done:
                key = line.keyword("OFFSET", "ARRAY_STRIDE", "MATRIX_STRIDE")
                if key.text == "ARRAY_STRIDE":  # Amber's own rule; kernellab has no array members
                    raise self.src.error(key, "ARRAY_STRIDE only valid on array members")
                if key.text == "MATRIX_STRIDE":
                    m.matrix_stride = line.integer("the member's matrix stride in bytes", 1)
                    try:
                        element(type_token.text, False, m.matrix_stride)
                    except TypeError_ as exc:
                        raise self.src.error(key, str(exc)) from None
                else:
                    m.offset = line.integer("the member's offset in bytes")
            s.members.append(m)
        if not s.members:
            raise self.src.error(head, f"STRUCT {name.text} has no members")
        try:  # a bad OFFSET or STRIDE is named here (a std140 buffer's at its BUFFER)
            struct_element(name.text, False, {**self.structs, name.text: s})
        except TypeError_ as exc:
            raise self.src.error(head, str(exc)) from None
        self.structs[name.text] = s

    def virtual_file(self, head: Token, w: _Words) -> None:
        name = w.take("a file name")
        w.finish()
        self.virtual_files[name.text] = self.src.raw_until_end(head)
        self.virtual_lines[name.text] = head.line + 1

    def buffer(self, head: Token, w: _Words) -> None:
        name = w.take("the buffer's name")
        if name.text in self.script.buffers:
            raise self.src.error(name, f"buffer {name.text!r} is already defined")
        kind = w.keyword("DATA_TYPE", "FORMAT")
        type_token = w.take("a data type")
        std140 = False
        if w.peek() in ("STD140", "STD430"):
            std140 = w.take("a layout").text == "STD140"
        try:
            elem = struct_element(type_token.text, std140, self.structs) if type_token.text in self.structs \
                else element(type_token.text, std140)
        except TypeError_ as exc:
            raise self.src.error(type_token, str(exc)) from None
        values: list[int | float] = []
        init = w.take("SIZE or DATA") if not w.done else None
        if init is None:
            raise self.src.error(type_token, "expected SIZE or DATA after the type")
        if init.text == "DATA":
            dtypes = [d for _, d in elem.components]
            for t in self.data_tokens(init, w):
                values.append(number(self.src, t, dtypes[len(values) % len(dtypes)]))
            if len(values) % len(dtypes):
                raise self.src.error(init, f"DATA holds {len(values)} values, not a whole number of "
                                           f"{type_token.text} elements ({len(dtypes)} values each)")
            self.reserve(init, len(values) // len(dtypes), elem)
        elif init.text == "SIZE":
            count = w.integer("the element count")
            self.reserve(w.last(), count, elem)
            values = self.size_initializer(w, elem, count)
        elif init.text == "FILE":
            values = self.file_initializer(w, elem, None)
        elif init.text in ("WIDTH", "HEIGHT", "MIP_LEVELS", "SAMPLES"):
            raise self.src.refuse(init, f"BUFFER {init.text}", f"BUFFER ... {init.text} is not supported by "
                                                               "kernellab's AmberScript reader yet")
        else:
            raise self.src.error(init, f"expected SIZE or DATA, got {init.text!r}")
        del kind
        self.script.buffers[name.text] = Buffer(name.text, elem, values, head.line)

    def data_tokens(self, opener: Token, w: _Words) -> Iterator[Token]:
        """The values of a DATA block: the rest of the line, then lines, up to END."""
        while not w.done:
            t = w.take("a value")
            if t.text == "END":
                w.finish()
                return
            yield t
        yield from self.src.tokens_until_end(opener)

    def size_initializer(self, w: _Words, elem: Element, count: int) -> list[int | float]:
        dtypes = [d for _, d in elem.components]
        total = count * len(dtypes)
        if w.done:
            return [0] * total
        how = w.keyword("FILL", "SERIES_FROM", "FILE")
        if how.text == "FILE":
            return self.file_initializer(w, elem, count)
        first_token = w.take("a value")
        first = number(self.src, first_token, dtypes[0])
        if how.text == "FILL":
            w.finish()
            return [number(self.src, first_token, d) for d in dtypes] * count
        w.keyword("INC_BY")
        step_token = w.take("the increment")
        step = number(self.src, step_token, dtypes[0])
        w.finish()
        if len(dtypes) != 1:
            raise self.src.error(how, "SERIES_FROM needs a scalar data type")
        values = [first + step * i for i in range(total)]
        return [number(self.src, Token(repr(v), how.line, how.column), dtypes[0]) if dtypes[0].startswith("float")
                else _wrap(int(v), dtypes[0]) for v in values]

    def file_initializer(self, w: _Words, elem: Element, count: int | None) -> list[int | float]:
        """``FILE [BINARY|TEXT|PNG] name``: the buffer's first ``count`` elements (None: as many as
        the file holds) from a file beside the script (BINARY: its bytes in the buffer's layout;
        TEXT: values as DATA writes them; PNG, Amber's default: its RGBA8 texels, rows top to bottom)."""
        kind = w.keyword("BINARY", "TEXT", "PNG") if w.peek() in ("BINARY", "TEXT", "PNG") else None
        how = kind.text if kind is not None else "PNG"
        name = w.take("a file name")
        w.finish()
        png = how == "PNG"
        if png and not re.match(r"R8G8B8A8_", elem.name):
            raise self.src.error(kind or name, f"a PNG holds 8-bit RGBA texels: the buffer's FORMAT must be an "
                                               f"R8G8B8A8 one, not {elem.name}")
        data = files.read_beside(self.src, name)
        dtypes = [d for _, d in elem.components]
        limit = count * len(dtypes) if count is not None else None
        if png:
            if count is None:  # before the PNG is inflated
                width, height = files.png_size(self.src, name, data)
                self.reserve(name, width * height, elem)
            values = files.values_of_bytes(elem, files.png_texels(self.src, name, data)[2])
        elif how == "BINARY":
            if count is None:
                self.reserve(name, len(data) // elem.size, elem)
            values = files.values_of_bytes(elem, data if count is None else data[:count * elem.size])
        else:
            values = files.text_values(self.src, name, data, dtypes, limit if limit is not None else len(data), number)
            if limit is None and len(values) % len(dtypes):
                raise self.src.error(name, f"{name.text} holds {len(values)} values, not a whole number of "
                                           f"{elem.name} elements ({len(dtypes)} values each)")
            if count is None:  # (SIZE was counted when it was read)
                self.reserve(name, len(values) // len(dtypes), elem)
        values = values[:limit] if limit is not None else values
        return values + [0] * ((limit or 0) - len(values))

    def pipeline(self, head: Token, w: _Words) -> None:
        kind = w.take("compute or graphics")
        if kind.text != "compute":
            raise self.src.refuse(kind, "PIPELINE graphics", GRAPHICS + f": PIPELINE {kind.text}")
        name = w.take("the pipeline's name")
        w.finish()
        if name.text in self.script.pipelines:
            raise self.src.error(name, f"pipeline {name.text!r} is already defined")
        p = Pipeline(name.text, head.line)
        self.pipeline_body(head, p)
        self.script.pipelines[name.text] = p

    def derive_pipeline(self, head: Token, w: _Words) -> None:
        import copy

        name = w.take("the new pipeline's name")
        w.keyword("FROM")
        parent = w.take("the pipeline derived from")
        w.finish()
        if parent.text not in self.script.pipelines:
            raise self.src.error(parent, f"no pipeline {parent.text!r} is defined")
        p = copy.deepcopy(self.script.pipelines[parent.text])
        p.name, p.line = name.text, head.line
        self.pipeline_body(head, p)
        self.script.pipelines[name.text] = p

    def statements(self, head: Token, block: str, what: str) -> Iterator[tuple[_Words, Token]]:
        """The statements of a block up to its ``END`` line: each one's words and first word."""
        while True:
            tokens = self.src.next_tokens()
            if tokens is None:
                raise self.src.error(head, f"{block} block has no END")
            w = _Words(self.src, tokens)
            first = w.take(what)
            if first.text == "END":
                w.finish()
                return
            yield w, first

    def pipeline_body(self, head: Token, p: Pipeline) -> None:
        for w, t in self.statements(head, "PIPELINE", "a pipeline statement"):
            if t.text == "ATTACH":
                self.attach(w, p)
            elif t.text == "BIND":
                self.bind(t, w, p)
            elif t.text == "SET":
                self.set_kernel_arg(t, w, p)
            elif t.text == "COMPILE_OPTIONS":
                self.compile_options(t, w, p)
            elif t.text == "SUBGROUP":
                self.subgroup(t, w, p)
            elif t.text == "SHADER_OPTIMIZATION":
                self.shader_optimization(t, w, p)
            elif t.text in ("POLYGON_MODE", "FRAMEBUFFER_SIZE", "VERTEX_DATA",
                            "INDEX_DATA", "BLEND", "DEPTH", "STENCIL", "VIEWPORT", "PATCH_CONTROL_POINTS"):
                raise self.src.refuse(t, t.text, f"{t.text} in a pipeline is not supported by kernellab's "
                                                 "AmberScript reader yet")
            else:
                raise self.src.error(t, f"unknown pipeline statement {t.text!r}")
        if not p.shader:
            raise self.src.error(head, f"pipeline {p.name!r} attaches no shader")

    def compile_options(self, head: Token, w: _Words, p: Pipeline) -> None:
        """``COMPILE_OPTIONS shader`` ... ``END``: clspv's argument-layout options (a fixed table,
        whose layout kernellab reads back from clspv's reflection) apart, the rest must be build
        options a file may give (compiler_options' OpenCL C allow-list); a refused one names its line."""
        from kernellab import compiler_options as co

        w.take("the shader's name")
        w.finish()
        words = list(self.src.tokens_until_end(head))
        rest = [t for t in words if t.text not in co.CLSPV_LAYOUT_OPTIONS]
        text = " ".join(t.text for t in rest)
        refusals = co.check("OpenCL-C", text, self.src.path.parent, (self.src.path.parent,))
        if refusals:
            where = next((t for t in rest if t.text == refusals[0].option), head)
            raise self.src.error(where, str(refusals[0]))
        p.compile_options = text
        p.clspv_layout = co.clspv_layout_options([t.text for t in words if t.text in co.CLSPV_LAYOUT_OPTIONS])

    def shader_optimization(self, head: Token, w: _Words, p: Pipeline) -> None:
        """``SHADER_OPTIMIZATION shader`` ... ``END``: spirv-opt passes, one word each, each from
        the fixed table of ``compiler_options`` (a refused one names its line and column)."""
        from kernellab.compiler_options import OptionsRefused, optimizer_passes

        name = w.take("the shader's name")
        w.finish()
        if name.text != p.shader:
            raise self.src.error(name, f"SHADER_OPTIMIZATION names {name.text!r}, not the attached shader "
                                       f"{p.shader!r}")
        words = list(self.src.tokens_until_end(head))
        for t in words:
            try:
                optimizer_passes([t.text])
            except OptionsRefused as exc:
                raise self.src.error(t, str(exc.refusals[0])) from None
        p.optimizations = optimizer_passes([t.text for t in words])

    def subgroup(self, head: Token, w: _Words, p: Pipeline) -> None:
        """``SUBGROUP shader`` ... ``END``: FULLY_POPULATED, VARYING_SIZE (on/off), REQUIRED_SIZE n."""
        name = w.take("the shader's name")
        w.finish()
        if name.text != p.shader:
            raise self.src.error(name, f"SUBGROUP names {name.text!r}, not the attached shader {p.shader!r}")
        size: int | str = 0
        full, varying = False, False
        words = _Words(self.src, list(self.src.tokens_until_end(head)))
        while not words.done:
            key = words.keyword("FULLY_POPULATED", "VARYING_SIZE", "REQUIRED_SIZE")
            if key.text == "REQUIRED_SIZE":
                if words.peek() in ("MIN", "MAX"):  # the device's bound, read when the pipeline is made
                    size = words.take("MIN or MAX").text
                    continue
                size = words.integer("the subgroup size", 1)
                if size & (size - 1):
                    raise self.src.error(words.last(), f"REQUIRED_SIZE {size} is not a power of two")
            else:
                on = words.keyword("on", "off").text == "on"
                full, varying = (on, varying) if key.text == "FULLY_POPULATED" else (full, on)
        p.subgroup = (size, full, varying, head.line)

    def attach(self, w: _Words, p: Pipeline) -> None:
        name = w.take("a shader's name")
        if name.text not in self.script.shaders:
            raise self.src.error(name, f"no shader {name.text!r} is defined")
        p.shader = name.text
        while not w.done:
            t = w.keyword("ENTRY_POINT", "SPECIALIZE", "TYPE")
            if t.text == "ENTRY_POINT":
                p.entry = w.take("an entry point").text
            elif t.text == "TYPE":
                stage = w.take("a stage")
                if stage.text != "compute":
                    raise self.src.refuse(stage, "graphics", GRAPHICS)
            else:
                sid = w.integer("a specialization id")
                type_token, elem = self.typed(w)
                if len(elem.components) != 1:
                    raise self.src.error(type_token, "SPECIALIZE takes a scalar type")
                value = number(self.src, w.take("a value"), elem.components[0][1])
                p.specializations.append((sid, value))

    def typed(self, w: _Words) -> tuple[Token, Element]:
        """``AS type``: the type's token and layout."""
        w.keyword("AS")
        type_token = w.take("a type")
        try:
            return type_token, element(type_token.text)
        except TypeError_ as exc:
            raise self.src.error(type_token, str(exc)) from None

    def bound_buffers(self, w: _Words, array: bool) -> list[Token]:
        """The buffer a BIND BUFFER names, or the buffers of a BIND BUFFER_ARRAY (up to AS)."""
        names = [w.take("a buffer's name")]
        while array and w.peek() not in ("AS", ""):
            names.append(w.take("a buffer's name"))
            if len(names) > MAX_BUFFER_ARRAY:  # said at once, not after writing a scenario of them all
                raise self.src.error(names[-1], f"a BUFFER_ARRAY of more than {MAX_BUFFER_ARRAY} buffers "
                                                "(kernellab's limit; a device allows far fewer descriptors)")
        for buf in names:
            if buf.text not in self.script.buffers:
                raise self.src.error(buf, f"no buffer {buf.text!r} is defined")
        return names

    def bind(self, head: Token, w: _Words, p: Pipeline) -> None:
        what = w.take("BUFFER")
        if what.text == "SAMPLER":
            images.parse_bind_sampler(self, head, w, p)
            return
        if what.text not in ("BUFFER", "BUFFER_ARRAY"):
            raise self.src.refuse(what, f"BIND {what.text}", f"BIND {what.text} is not supported by kernellab's "
                                                             "AmberScript reader yet")
        names = self.bound_buffers(w, array=what.text == "BUFFER_ARRAY")
        buf = names[0]
        if w.peek() == "KERNEL" and what.text == "BUFFER":
            arg = w.kernel_argument()
            w.finish()
            p.bind_argument(Binding(buf.text, "kernel", 0, -1, head.line, arg))
            return
        w.keyword("AS")
        kind = w.take("a descriptor type")
        if kind.text in images.IMAGE_BIND_KINDS and what.text == "BUFFER":
            images.parse_bind_image(self, head, w, p, buf, kind)
            return
        if kind.text not in BIND_KINDS:
            raise self.src.refuse(kind, f"BIND AS {kind.text}", f"binding as {kind.text} is not supported by "
                                                                "kernellab's AmberScript reader yet")
        if kind.text == "push_constant" and len(names) > 1:
            raise self.src.error(kind, "a push_constant buffer is one buffer")
        for name in names:
            if kind.text.endswith("_texel_buffer"):
                images.check_texel_buffer(self.src, self.script.buffers[name.text], name)
            elif self.script.buffers[name.text].image is not None:
                raise self.src.error(name, f"{name.text!r} is an IMAGE: bind it as storage_image, sampled_image "
                                           f"or combined_image_sampler, not {kind.text}")
        dset, binding, ranges = self.descriptor_options(w, kind, len(names))
        if ranges["OFFSET"][0] < 0:
            raise self.src.error(kind, f"BIND {what.text} ... AS {kind.text} needs OFFSET (the dynamic offset)")
        p.bindings = [b for b in p.bindings if b.kind == "kernel" or (b.set, b.binding) != (dset, binding)]
        for i, name in enumerate(names):
            p.bindings.append(Binding(name.text, kind.text, dset, binding, head.line,
                                      dynamic_offset=ranges["OFFSET"][i],
                                      descriptor_offset=ranges["DESCRIPTOR_OFFSET"][i],
                                      descriptor_range=ranges["DESCRIPTOR_RANGE"][i], array_element=i))

    def descriptor_options(self, w: _Words, kind: Token, n: int) -> tuple[int, int, dict[str, list[int]]]:
        """Amber's order: DESCRIPTOR_SET s BINDING b [OFFSET o...] [DESCRIPTOR_OFFSET o...]
        [DESCRIPTOR_RANGE r...], one value per buffer of a BUFFER_ARRAY: (set, binding, the lists;
        OFFSET -1 where a dynamic descriptor has none, DESCRIPTOR_RANGE -1 for the rest)."""
        dset, binding = 0, -1
        dynamic = kind.text.endswith("_dynamic")
        ranges = {"OFFSET": [-1 if dynamic else 0] * n, "DESCRIPTOR_OFFSET": [0] * n, "DESCRIPTOR_RANGE": [-1] * n}
        while not w.done:
            t = w.keyword("DESCRIPTOR_SET", "BINDING", *(("OFFSET",) if dynamic else ()), "DESCRIPTOR_OFFSET",
                          "DESCRIPTOR_RANGE")
            if t.text == "DESCRIPTOR_SET":
                dset = w.integer("a descriptor set", 0, U32)
            elif t.text == "BINDING":
                binding = w.integer("a binding", 0, U32)
            elif kind.text == "push_constant":
                raise self.src.error(t, f"{t.text} does not apply to a push_constant buffer")
            else:
                for i in range(n):
                    what_value = f"{t.text}'s bytes" + (f" for buffer {i + 1} of {n}" if n > 1 else "")
                    if t.text == "DESCRIPTOR_RANGE" and w.peek() == "-1":  # Amber's VK_WHOLE_SIZE
                        w.take("-1")
                    else:
                        ranges[t.text][i] = w.integer(what_value, 1 if t.text == "DESCRIPTOR_RANGE" else 0)
        if kind.text != "push_constant" and binding < 0:
            raise self.src.error(kind, "BIND BUFFER needs BINDING")
        return dset, binding, ranges

    def set_kernel_arg(self, head: Token, w: _Words, p: Pipeline) -> None:
        arg = w.kernel_argument()
        _, elem = self.typed(w)
        dtypes = [d for _, d in elem.components]
        values = [number(self.src, w.take("a value"), d) for d in dtypes]
        w.finish()
        p.kernel_args.append((arg, elem, values, head.line))

    def requirement(self, head: Token, w: _Words) -> None:
        name = w.take("a name")
        w.finish()
        target = {"DEVICE_FEATURE": self.script.features, "DEVICE_EXTENSION": self.script.extensions,
                  "INSTANCE_EXTENSION": self.script.instance_extensions,
                  "DEVICE_PROPERTY": self.script.properties}[head.text]
        target.append((name.text, head.line))

    def set_engine_data(self, head: Token, w: _Words) -> None:
        what = w.keyword("ENGINE_DATA")
        key = w.keyword("fence_timeout_ms")
        w.integer("milliseconds")
        w.finish()
        del what, key

    # --- commands ------------------------------------------------------------------------------
    def debug(self, head: Token, w: _Words, commands: list[Command]) -> None:
        """``DEBUG pipeline X Y Z`` ... ``END`` (Amber's shader-debugger test, removed from Amber
        in 2022): the dispatch runs as RUN; each ``THREAD`` block in it is an expectation of a
        driver's shader debugger, which the file then needs (a skip, naming its line)."""
        self.run(head, w, commands)
        depth = 1
        while depth:
            tokens = self.src.next_tokens()
            if tokens is None:
                raise self.src.error(head, "DEBUG block has no END")
            first = tokens[0].text
            if first == "THREAD" or (first == "EXPECT" and len(tokens) > 1 and tokens[1].text == "CALLSTACK"):
                depth += 1
                if first == "THREAD":
                    self.script.debugger_threads.append(tokens[0].line)
            elif first == "END":
                depth -= 1

    def run(self, head: Token, w: _Words, commands: list[Command]) -> None:
        if w.peek() == "TIMED_EXECUTION":
            w.take("TIMED_EXECUTION")
        name = w.take("a pipeline's name")
        if name.text not in self.script.pipelines:
            raise self.src.error(name, f"no compute pipeline {name.text!r} is defined")
        if w.peek().startswith("DRAW") or w.peek() == "DRAW_RECT":
            raise self.src.refuse(w.take("DRAW"), "DRAW", GRAPHICS + ": a draw command")
        groups = (w.integer("the work-group count in x", 1, U32), w.integer("the work-group count in y", 1, U32),
                  w.integer("the work-group count in z", 1, U32))
        w.finish()
        commands.append(Run(name.text, groups, head.line))

    def copy(self, head: Token, w: _Words, commands: list[Command]) -> None:
        a = w.take("the source buffer")
        w.keyword("TO")
        b = w.take("the target buffer")
        w.finish()
        for t in (a, b):
            if t.text not in self.script.buffers:
                raise self.src.error(t, f"no buffer {t.text!r} is defined")
        commands.append(Copy(a.text, b.text, head.line))

    def repeat(self, head: Token, w: _Words, commands: list[Command]) -> None:
        count = w.integer("the repeat count", 1, MAX_COMMANDS)
        w.finish()
        body: list[Command] = []
        while True:
            tokens = self.src.next_tokens()
            if tokens is None:
                raise self.src.error(head, "REPEAT block has no END")
            if tokens[0].text == "END" and len(tokens) == 1:
                break
            self.statement(tokens, body)
        if len(commands) + count * len(body) > MAX_COMMANDS:
            raise self.src.error(head, f"REPEAT {count} of {len(body)} commands gives more than the "
                                       f"{MAX_COMMANDS} commands a script may give")
        for _ in range(count):
            commands.extend(body)

    def expect(self, head: Token, w: _Words, commands: list[Command]) -> None:
        buf = w.take("a buffer's name")
        if buf.text not in self.script.buffers:
            raise self.src.error(buf, f"no buffer {buf.text!r} is defined")
        text = " ".join(t.text for t in w.tokens)
        if w.peek() in BUFFER_COMPARATORS:
            cmp = w.take("a comparator")
            other = w.take("the buffer compared with")
            if other.text not in self.script.buffers:
                raise self.src.error(other, f"no buffer {other.text!r} is defined")
            e = Expect(buf.text, cmp.text, head.line, head.column, text, other=other.text)
            if cmp.text != "EQ_BUFFER":
                w.keyword("TOLERANCE")
                e.tolerances.append((float(expect_value(self.src, w.take("the tolerance"))), False))
            w.finish()
            commands.append(e)
            return
        w.keyword("IDX")
        offset = w.integer("the byte offset")
        if _INT.match(w.peek()):
            commands.append(images.parse_pixel_probe(self, head, w, buf, offset, text))
            return
        e = Expect(buf.text, "EQ", head.line, head.column, text, offset=offset)
        if w.peek() == "TOLERANCE":
            w.take("TOLERANCE")
            while w.peek() not in COMPARATORS and not w.done:
                t = w.take("a tolerance")
                percent = t.text.endswith("%")
                value = expect_value(self.src, Token(t.text.rstrip("%"), t.line, t.column))
                e.tolerances.append((float(value), percent))
            if not 1 <= len(e.tolerances) <= 4:
                raise self.src.error(head, "TOLERANCE takes 1 to 4 values")
        cmp = w.keyword(*COMPARATORS)
        e.comparator = cmp.text
        if e.tolerances and cmp.text != "EQ":
            raise self.src.error(cmp, "TOLERANCE applies only to EQ")
        while not w.done:
            e.values.append(expect_value(self.src, w.take("a value")))
        if not e.values:
            raise self.src.error(cmp, f"{cmp.text} needs at least one value")
        commands.append(e)


def _wrap(value: int, dtype: str) -> int:
    bits = int(re.sub(r"\D", "", dtype))
    value &= (1 << bits) - 1
    if not dtype.startswith("uint") and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def parse_amber(text: str, path: str | Path) -> AmberScript:
    """Parse an AmberScript file's text; raises :class:`~kernellab.errors.InputError` naming the
    line and column (:class:`Unsupported` for constructs outside the compute subset)."""
    return Parser(Path(path), text).parse()


def load_amber(path: str | Path) -> AmberScript:
    from kernellab.errors import FileSystemError
    from kernellab.formats.jsonfile import read_text_input

    path = Path(path)
    try:  # a FIFO or /dev/zero named *.amber is refused, not waited on or read without end
        text = read_text_input(path, "an AmberScript file", files.MAX_FILE_BYTES)
    except OSError as exc:
        raise FileSystemError(f"{path}: {exc.strerror or exc}") from None
    return parse_amber(text, path)
