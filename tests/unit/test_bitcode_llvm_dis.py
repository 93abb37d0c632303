"""Which LLVM wrote a bitcode file, and the ``llvm-dis`` that can read it (issue 11: PoCL's LLVM may
be newer than the ``llvm-dis`` on PATH)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers.fake_tools import write_script
from kernellab import config, tools
from kernellab.compile import bitcode
from kernellab.errors import MissingToolError


class BitWriter:
    """Just enough of LLVM's bitstream writer to make an identification block."""

    def __init__(self) -> None:
        self.bits: list[int] = []

    def fixed(self, value: int, width: int) -> None:
        self.bits += [(value >> i) & 1 for i in range(width)]

    def vbr(self, value: int, width: int) -> None:
        high = 1 << (width - 1)
        while value >= high:
            self.fixed((value & (high - 1)) | high, width)
            value >>= width - 1
        self.fixed(value, width)

    def align32(self) -> None:
        while len(self.bits) % 32:
            self.bits.append(0)

    def data(self) -> bytes:
        self.align32()
        return bytes(sum(self.bits[i + k] << k for k in range(8)) for i in range(0, len(self.bits), 8))


def identification_bitcode(producer: str, *, abbreviated: bool, skipped_block_first: bool = False) -> bytes:
    w = BitWriter()
    w.fixed(0x42, 8), w.fixed(0x43, 8), w.fixed(0xC0, 8), w.fixed(0xDE, 8)
    if skipped_block_first:  # a block of another kind before it: skipped by its length
        w.fixed(1, 2), w.vbr(8, 8), w.vbr(3, 4)
        w.align32()
        w.fixed(1, 32)
        w.fixed(0, 32)  # its one word: END_BLOCK and padding
    w.fixed(1, 2), w.vbr(13, 8), w.vbr(5, 4)  # ENTER_SUBBLOCK identification, abbreviation width 5
    w.align32()
    w.fixed(0, 32)  # length in words (not needed by the reader)
    if abbreviated:
        # DEFINE_ABBREV [literal 1, array of char6], then the record with abbreviation id 4
        w.fixed(2, 5), w.vbr(3, 5)
        w.fixed(1, 1), w.vbr(1, 8)
        w.fixed(0, 1), w.fixed(3, 3)
        w.fixed(0, 1), w.fixed(4, 3)
        w.fixed(4, 5), w.vbr(len(producer), 6)
        for ch in producer:
            w.fixed("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._".index(ch), 6)
    else:
        w.fixed(3, 5), w.vbr(1, 6), w.vbr(len(producer), 6)  # UNABBREV_RECORD code 1
        for ch in producer:
            w.vbr(ord(ch), 6)
    w.fixed(0, 5)  # END_BLOCK
    return w.data()


@pytest.mark.parametrize("abbreviated", [False, True], ids=["unabbreviated", "char6-array"])
def test_the_producer_is_read_from_the_identification_block(abbreviated: bool) -> None:
    data = identification_bitcode("LLVM17.0.6", abbreviated=abbreviated, skipped_block_first=True)
    assert bitcode.producer(data) == "LLVM17.0.6" and bitcode.llvm_major(data) == 17


def test_not_bitcode_or_no_identification_gives_none() -> None:
    assert bitcode.producer(b"\x7fELF" + bytes(40)) is None
    assert bitcode.producer(b"BC\xc0\xde" + bytes(3)) is None
    assert bitcode.llvm_major(identification_bitcode("APPLE_1_1500", abbreviated=False)) is None


@pytest.mark.skipif(tools.find("clang") is None, reason="needs clang (Debian clang-14)")
def test_clangs_own_bitcode_names_its_version(tmp_path: Path) -> None:
    (tmp_path / "k.cl").write_text("__kernel void k(__global int* a) { a[0] = 1; }\n")
    clang = tools.require("clang")
    clang.run(["-c", "-emit-llvm", "-target", "spir64", "-x", "cl", tmp_path / "k.cl", "-o", tmp_path / "k.bc"],
              what="compiling")
    major = tools.llvm_major(clang)
    assert major is not None and bitcode.llvm_major((tmp_path / "k.bc").read_bytes()) == major


@pytest.fixture()
def llvm_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH holding only fake LLVMs: llvm-dis-13, llvm-dis-16, and a plain llvm-dis of LLVM 9."""
    folder = tmp_path / "llvm"
    folder.mkdir()
    for name, version in (("llvm-dis-13", "13.0.1"), ("llvm-dis-16", "16.0.6"), ("llvm-dis", "9.0.0")):
        write_script(folder / name, f'echo "LLVM version {version}"\n')
    monkeypatch.setenv("PATH", str(folder))
    tools._found.clear()
    with config.override(cache_dir=tmp_path / "cache", tool_path=()):
        yield folder
    tools._found.clear()


def test_llvm_dis_is_chosen_to_match_the_bitcode(llvm_bin: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tools, "_prefix_dirs", lambda: [])
    assert sorted(tools.llvm_versions("llvm-dis")) == [9, 13, 16]
    assert tools.require_llvm("llvm-dis", 13).path == llvm_bin / "llvm-dis-13"
    assert tools.require_llvm("llvm-dis", 14).path == llvm_bin / "llvm-dis-16"  # the nearest newer one
    assert tools.require_llvm("llvm-dis", 8).path == llvm_bin / "llvm-dis"
    with pytest.raises(MissingToolError, match=r"written by LLVM 17, which llvm-dis 9, llvm-dis 13, llvm-dis 16 "
                                               r"cannot read.*apt-get install llvm-17"):
        tools.require_llvm("llvm-dis", 17)


def test_a_user_override_is_taken_as_is(llvm_bin: Path, tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    write_script(mine / "llvm-dis", 'echo "LLVM version 3.0"\n')
    with config.override(tool_path=(str(mine),)):
        assert tools.require_llvm("llvm-dis", 17).path == mine / "llvm-dis"


def test_version_answers_are_kept_between_processes(tmp_path: Path) -> None:
    counter = tmp_path / "asked"
    fake = write_script(tmp_path / "tool", f'echo x >> "{counter}"; echo "tool 1.2.3"\n')
    store = tmp_path / "cache" / "tool-versions.json"
    assert tools._VersionStore(store).text(tools.Tool("tool", fake)) == "tool 1.2.3"
    assert tools._VersionStore(store).text(tools.Tool("tool", fake)) == "tool 1.2.3"  # a new process's store
    assert counter.read_text().count("x") == 1
    os.utime(fake, ns=(1, 1))  # a changed binary is asked again
    assert tools._VersionStore(store).text(tools.Tool("tool", fake)) == "tool 1.2.3"
    assert counter.read_text().count("x") == 2
