"""GLSL without a ``#version`` line compiles as Arm's Scenario Runner compiles it: as GLSL 460
(Arm's test suite writes its compute shaders that way; glslang's own default, ES 100, has no
compute shaders)."""
from __future__ import annotations

from pathlib import Path

import pytest

from kernellab import config
from kernellab.cli import main
from kernellab.compile.glsl_stages import ARM_DEFAULT_VERSION, has_version_line
from kernellab.compile.pipeline import Compiler, CompileRequest
from kernellab.errors import CompileError

BODY = ("layout(local_size_x = 4) in;\n"
        "layout(set = 0, binding = 0) buffer B { float x[]; } b;\n"
        # anyInvocation() is GLSL 4.60's: it compiles only if the default is 460
        "void main() { b.x[gl_GlobalInvocationID.x] = anyInvocation(true) ? 1.0 : 0.0; }\n")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory):
    with config.override(cache_dir=tmp_path_factory.mktemp("cache")):
        yield


def test_a_version_line_is_recognised() -> None:
    assert has_version_line(b"// header\n  #  version 450\nvoid main() {}\n")
    assert not has_version_line(BODY.encode())
    assert ARM_DEFAULT_VERSION == "460"


def test_a_shader_without_version_compiles_as_glsl_460(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "s.comp").write_text(BODY)
    assert main(["snapshot", str(tmp_path / "s.comp"), "--stage", "spirv", "--format", "text"]) == 0
    assert "OpSource GLSL 460" in capsys.readouterr().out
    assert main(["snapshot", str(tmp_path / "s.comp"), "--stage", "preprocessed"]) == 0
    assert "anyInvocation" in capsys.readouterr().out


def test_the_files_own_version_wins(tmp_path: Path) -> None:
    (tmp_path / "s.comp").write_text("#version 450\n" + BODY)
    with pytest.raises(CompileError, match="anyInvocation"):
        Compiler(CompileRequest(tmp_path / "s.comp", "glsl")).vulkan_module()


def test_features_460_lacks_are_refused_as_arm_refuses_them(tmp_path: Path) -> None:
    # Arm's runner: "'64-bit literal' : not supported for this version or the enabled extensions"
    (tmp_path / "s.comp").write_text("layout(local_size_x = 1) in;\nvoid main() { uint64_t q = 3ul; }\n")
    with pytest.raises(CompileError):
        Compiler(CompileRequest(tmp_path / "s.comp", "glsl")).vulkan_module()
