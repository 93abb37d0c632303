"""Hostile AmberScript files: numbers that would allocate without bound, REPEAT bombs, 32-bit
fields past their width, a script that is a FIFO, a pipeline name that is a path. Each is one
line naming the script's line and column, exit 2, before anything is allocated."""
from __future__ import annotations

import os
import shutil
import struct
import zlib
from pathlib import Path

import pytest

from helpers.scenarios import kernellab as cli
from kernellab.errors import InputError
from kernellab.formats.amber.parse import MAX_COMMANDS, load_amber, parse_amber

HEAD = """#!amber
SHADER compute s GLSL
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer A { uint a[]; };
void main() { a[0] = 1u; }
END
BUFFER b DATA_TYPE uint32 SIZE 4 FILL 0
PIPELINE compute p
  ATTACH s
  BIND BUFFER b AS storage DESCRIPTOR_SET 0 BINDING 0
END
"""
LINE = HEAD.count("\n") + 1


def message(text: str, tmp_path: Path) -> str:
    with pytest.raises(InputError) as info:
        parse_amber(text, tmp_path / "x.amber")
    [problem] = info.value.problems
    return f"{problem.where}: {problem.message}"


@pytest.mark.parametrize("statement", [
    "BUFFER big DATA_TYPE uint32 SIZE 1000000000000",
    "BUFFER big DATA_TYPE uint32 SIZE 1000000000000 FILL 7",
    "BUFFER big DATA_TYPE uint32 SIZE 1000000000000 SERIES_FROM 0 INC_BY 1",
    "BUFFER big DATA_TYPE uint8 SIZE 268435457",  # bytes within the limit, values past it
    "IMAGE im FORMAT R8G8B8A8_UNORM DIM_2D WIDTH 2147483648 HEIGHT 2147483648",
    "IMAGE im FORMAT R8G8B8A8_UNORM DIM_3D WIDTH 4096 HEIGHT 4096 DEPTH 4096 FILL 1",
])
def test_a_buffer_or_image_past_the_limit_is_refused_before_it_is_made(statement, tmp_path):
    text = message(HEAD + statement + "\n", tmp_path)
    assert text.startswith(f"line {LINE}, column ")
    assert "past kernellab's limit of 268435456 bytes and 67108864 values" in text


def test_the_limit_counts_every_buffer_of_the_script(tmp_path):
    many = "".join(f"BUFFER b{i} DATA_TYPE uint32 SIZE 16777216\n" for i in range(5))
    assert message(HEAD + many, tmp_path).startswith(f"line {LINE + 3}, column 33: 16777216 elements of uint32")
    # Amber's own benchmarks (one 64 MiB buffer and a small one) stay within it
    parse_amber(HEAD + "BUFFER r DATA_TYPE uint32 SIZE 16777216 FILL 0\n", tmp_path / "x.amber")


def test_a_huge_struct_stride_is_counted_in_bytes(tmp_path):
    text = HEAD + "STRUCT s1 STRIDE 4000000000\nuint32 a\nEND\nBUFFER big DATA_TYPE s1 SIZE 1000\n"
    assert message(text, tmp_path).startswith(f"line {LINE + 3}, column ")


@pytest.mark.parametrize("body, where", [
    ("REPEAT 1000000000\nRUN p 1 1 1\nEND\n", f"line {LINE}, column 8: expected the repeat count (an integer >= 1 and <= 10000)"),
    ("REPEAT 1000\nREPEAT 1000\nREPEAT 1000\nRUN p 1 1 1\nEND\nEND\nEND\n",
     f"line {LINE + 1}, column 1: REPEAT 1000 of 1000 commands gives more than the {MAX_COMMANDS}"),
    ("REPEAT 2\n" + "RUN p 1 1 1\n" * 6000 + "END\n", f"line {LINE}, column 1: REPEAT 2 of 6000 commands gives more than"),
])
def test_repeat_cannot_unroll_without_bound(body, where, tmp_path):
    text = message(HEAD + body, tmp_path)
    assert text.startswith(where), text


def test_plain_commands_past_the_limit_are_refused(tmp_path):
    text = message(HEAD + "RUN p 1 1 1\n" * (MAX_COMMANDS + 1), tmp_path)
    assert text == f"line {LINE + MAX_COMMANDS}, column 1: the script gives more than {MAX_COMMANDS} commands"


@pytest.mark.parametrize("old, new, what", [
    ("DESCRIPTOR_SET 0 BINDING 0", "DESCRIPTOR_SET 4294967296 BINDING 0", "a descriptor set"),
    ("DESCRIPTOR_SET 0 BINDING 0", "DESCRIPTOR_SET 0 BINDING 99999999999", "a binding"),
])
def test_32_bit_fields_are_checked_at_the_scripts_line(old, new, what, tmp_path):
    text = message(HEAD.replace(old, new) + "RUN p 1 1 1\n", tmp_path)
    assert text.startswith(f"line {LINE - 2}, column ") and f"expected {what} (an integer >= 0 and <= 4294967295)" \
        in text


def test_work_group_counts_are_32_bit(tmp_path):
    text = message(HEAD + "RUN p 4294967296 1 1\n", tmp_path)
    assert text.startswith(f"line {LINE}, column 7: expected the work-group count in x (an integer >= 1 and <= "
                           "4294967295)")


def test_mip_levels_are_read_as_a_small_number(tmp_path):
    text = message(HEAD + "IMAGE im FORMAT R8G8B8A8_UNORM DIM_2D WIDTH 4 HEIGHT 4 MIP_LEVELS 99999999999999999999\n",
                   tmp_path)
    assert text.startswith(f"line {LINE}, column ") and "(an integer >= 1 and <= 32)" in text


def test_a_buffers_png_is_counted_before_it_is_inflated(tmp_path, monkeypatch):
    from kernellab.formats import png

    # a 4096x4096 header (64 MiB of texels, 2^26 values) after the script's first buffer: no
    # image data follows, since nothing past the header may be read
    header = png.encode(bytes(4), 1, 1)[:33].replace(b"\0\0\0\x01\0\0\0\x01", b"\0\0\x10\0\0\0\x10\0", 1)
    header = header[:29] + struct.pack(">I", zlib.crc32(header[12:29]))
    (tmp_path / "big.png").write_bytes(header)
    monkeypatch.setattr(png, "decode", lambda *a: pytest.fail("decoded before the limit was checked"))
    text = message(HEAD + "BUFFER px FORMAT R8G8B8A8_UINT FILE PNG big.png\n", tmp_path)
    assert text.startswith(f"line {LINE}, column 41: 16777216 elements of R8G8B8A8_UINT")


def test_a_fifo_named_as_the_script_is_refused(tmp_path):
    fifo = tmp_path / "x.amber"
    os.mkfifo(fifo)
    with pytest.raises(InputError) as info:
        load_amber(fifo)
    assert "not a regular file, expected an AmberScript file" in str(info.value)


def test_a_fifo_script_exits_2_on_the_command_line(tmp_path):
    os.mkfifo(tmp_path / "x.amber")
    proc = cli("run", "x.amber", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "x.amber: not a regular file, expected an AmberScript file" in proc.stderr


def test_a_refused_size_exits_2_on_the_command_line(tmp_path):
    (tmp_path / "x.amber").write_text(HEAD + "BUFFER big DATA_TYPE uint32 SIZE 1000000000000 FILL 0\nRUN p 1 1 1\n")
    proc = cli("run", "x.amber", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"x.amber: line {LINE}, column 34: 1000000000000 elements of uint32")


@pytest.mark.skipif(shutil.which("glslangValidator") is None, reason="needs glslang and clspv")
def test_a_pipeline_name_never_becomes_a_path(tmp_path):
    """clspv's blocks of by-value arguments and push data are files named by the pipeline's
    index: a name holding '/' and '..' reaches no path."""
    source = (Path(__file__).resolve().parents[1] / "amber" / "opencl_layout_options.amber").read_text()
    evil = "../../../../PWNED"
    script = (source.replace("PIPELINE compute p\n", f"PIPELINE compute {evil}\n")
              .replace("FROM p\n", f"FROM {evil}\n").replace("RUN p ", f"RUN {evil} "))
    folder = tmp_path / "a" / "b"
    folder.mkdir(parents=True)
    (folder / "x.amber").write_text(script)
    proc = cli("run", "x.amber", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    assert "pass (2 EXPECTs hold)" in proc.stdout + proc.stderr


HLSL = """#!amber
SHADER compute s HLSL
[numthreads(1,1,1)] void main(){{}}
{line}
END
BUFFER b DATA_TYPE uint32 SIZE 4
PIPELINE compute p
  ATTACH s ENTRY_POINT {entry}
END
RUN p 1 1 1
"""


@pytest.mark.parametrize("line, entry, message", [
    ('#include "../../../../etc/passwd"', "main",
     """line 2 of the HLSL shader: '#include "../../../../etc/passwd"': an AmberScript HLSL shader cannot include"""),
    ('  # /* c */ include "/dev/zero"', "main", "line 2 of the HLSL shader: '#   include \"/dev/zero\"'"),
    ("#if __has_include(\"/etc/passwd\")\n#endif", "main", "line 2 of the HLSL shader: '#if __has_include"),
    ("", "-Dfoo", "HLSL entry point '-Dfoo' is not an identifier"),
])
def test_an_hlsl_shader_reaches_no_file_through_glslang(line, entry, message, tmp_path, monkeypatch):
    """glslang's HLSL front end would follow an #include from its temporary folder (it read
    /etc/passwd): the directive is refused at the shader's line before glslang runs."""
    from kernellab import tools

    monkeypatch.setattr(tools, "require", lambda *a: pytest.fail("a tool ran"))
    from kernellab.compile.amber import prepare

    (tmp_path / "x.amber").write_text(HLSL.format(line=line, entry=entry))
    with pytest.raises(InputError) as info:
        prepare(tmp_path / "x.amber", tmp_path / "out")
    [problem] = info.value.problems
    assert (problem.file, problem.where) == (str(tmp_path / "x.amber"), "line 2")
    assert problem.message.startswith(message), problem.message


def test_a_paeth_png_decodes_in_bounded_time(tmp_path):
    """A 2896x2896 image of Paeth rows (a few KB of zlib) took a Python step per byte, 40 s;
    a step per diagonal of pixels takes a few seconds."""
    import time

    from kernellab.formats import png

    side = 2896
    data = png.SIGNATURE + b"".join(
        struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        for kind, body in ((b"IHDR", struct.pack(">IIBBBBB", side, side, 8, 6, 0, 0, 0)),
                           (b"IDAT", zlib.compress((b"\x04" + b"\x01" * (side * 4)) * side, 9)), (b"IEND", b"")))
    start = time.monotonic()
    texels = png.decode(data, tmp_path / "p.png", side, side)
    assert time.monotonic() - start < 25
    assert texels[-4:] == bytes([(side * 2 - 1) & 0xFF] * 4)  # Paeth of ones: each pixel is its left one + 1


@pytest.mark.skipif(shutil.which("glslangValidator") is None, reason="needs glslang and clspv")
def test_import_into_a_relative_folder_compiles_its_own_kernels(tmp_path):
    """`import -o DIR` with a relative DIR refused the kernel clspv compiles from DIR as outside
    the workload's folder."""
    shutil.copy(Path(__file__).resolve().parents[1] / "amber" / "opencl_layout_options.amber", tmp_path / "x.amber")
    proc = cli("import", "x.amber", "-o", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "x.json").is_file()
