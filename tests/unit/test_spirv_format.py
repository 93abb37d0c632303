"""One reader of SPIR-V words (``kernellab.spirv_format``): the listing decoder, reflection, the
SPIR-V checker and the graph-module reader frame instructions the same way, in either byte order,
and the magic number has one home."""
from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

from kernellab import spirv_format, tools
from kernellab.errors import InputError
from kernellab.formats.scenario_ml import graph_module_facts
from kernellab.listing import spirv as listing_spirv
from kernellab.runtime import interface as iface
from kernellab.spirvsim import module as checker_module

SRC = Path(__file__).resolve().parents[2] / "src" / "kernellab"
SHADER = """#version 450
layout(local_size_x = 8) in;
layout(set = 0, binding = 1) buffer B { float b[]; };
void main() { b[gl_GlobalInvocationID.x] *= 2.0; }
"""


@pytest.fixture(scope="module")
def spirv(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    tmp = tmp_path_factory.mktemp("format")
    (tmp / "s.comp").write_text(SHADER)
    tools.require("glslangValidator").run(["-V", "-o", str(tmp / "s.spv"), str(tmp / "s.comp")], what="compiling")
    return (tmp / "s.spv").read_bytes()


def big_endian(data: bytes) -> bytes:
    n = len(data) // 4
    return struct.pack(f">{n}I", *struct.unpack(f"<{n}I", data))


def test_the_magic_number_has_one_home() -> None:
    spelled = re.compile(r"0x07230203|\\x03\\x02\\x23\\x07|\\x07\\x23\\x02\\x03", re.IGNORECASE)
    homes = sorted(str(p.relative_to(SRC)) for p in SRC.rglob("*.py") if spelled.search(p.read_text()))
    assert homes == ["spirv_format.py"]


def test_a_big_endian_module_reads_as_the_little_endian_one(spirv: bytes) -> None:
    assert spirv_format.words(big_endian(spirv)) == spirv_format.words(spirv)
    little, big = listing_spirv.decode(spirv), listing_spirv.decode(big_endian(spirv))
    assert [(i.opname, i.result, i.operands) for i in big.instructions] == \
        [(i.opname, i.result, i.operands) for i in little.instructions]
    assert [(i.op, i.words) for i in checker_module.load(big_endian(spirv), "main").insts] == \
        [(i.op, i.words) for i in checker_module.load(spirv, "main").insts]
    assert graph_module_facts(big_endian(spirv)) == graph_module_facts(spirv)


def test_the_listing_and_the_checker_frame_instructions_alike(spirv: bytes) -> None:
    listed = [(i.offset, i.opname) for i in listing_spirv.decode(spirv).instructions]
    checked = [(i.offset, i.op) for i in checker_module.load(spirv, "main").insts]
    assert listed == checked


def test_a_truncated_instruction_is_named_by_its_word_everywhere(spirv: bytes) -> None:
    words = list(struct.unpack(f"<{len(spirv) // 4}I", spirv))
    words[5] = (words[5] & 0xFFFF) | (len(words) << 16)  # the first instruction runs past the end
    broken = struct.pack(f"<{len(words)}I", *words)
    for read in (lambda: listing_spirv.decode(broken, "s.spv"), lambda: checker_module.load(broken, "main",
                                                                                            file="s.spv")):
        with pytest.raises(InputError, match="runs past the end of the module") as err:
            read()
        assert err.value.problems[0].where == "word 5" and err.value.problems[0].file == "s.spv"
    assert graph_module_facts(broken) is None


def test_a_file_that_is_no_module_is_refused_by_its_magic_number() -> None:
    with pytest.raises(InputError, match="magic number 0x6c6c6568, expected 0x07230203"):
        spirv_format.words(b"hello world, not SPIR-V!")
    with pytest.raises(InputError, match="magic number"):
        checker_module.load(b"hello world, not SPIR-V!", "main")
    assert not spirv_format.looks_like_module(spirv_format.MAGIC_BYTES[1], 16)
    assert spirv_format.looks_like_module(spirv_format.MAGIC_BYTES[1], 20)


def test_a_literal_string_stops_after_its_nul_word() -> None:
    words = [*struct.unpack("<3I", b"main\0\0\0\0abcd"), 7]
    assert spirv_format.literal_string(words, 0, 4) == ("main", 2)
    assert spirv_format.literal_string(words, 2, 3) == ("abcd", 3)  # unterminated: the end


def test_reflection_without_a_cache_decodes_the_module_once(spirv: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    decoded = []
    real = listing_spirv.Decoder.decode

    def counted(self: listing_spirv.Decoder) -> listing_spirv.Module:
        decoded.append(self.file)
        return real(self)

    monkeypatch.setattr(listing_spirv.Decoder, "decode", counted)
    interface, _ = iface.reflect_module(spirv, "main", "s.spv", None)
    assert (0, 1) in interface.descriptors and interface.local_size == (8, 1, 1)
    assert decoded == ["s.spv"]
