"""A cache miss compiles and validates through the glslang and SPIRV-Tools libraries in a forked
child (issue 23): the same module as glslangValidator, byte for byte, and a crash stays in the child."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from kernellab import tools
from kernellab.compile import glslang_lib, spirv_tools_lib

SHADER = b"""#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer A { float a[]; };
void main() { a[gl_GlobalInvocationID.x] *= 2.0; }
"""
#: no #version: compiled as GLSL 460, as Arm's runner does (glslangValidator --glsl-version 460)
VERSIONLESS = b"""layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer A { uint a[]; };
void main() { a[0] = anyInvocation(a[1] == 0u) ? 1u : 2u; }
"""


@pytest.fixture
def glslang() -> None:
    if glslang_lib.libraries() is None:
        pytest.skip("glslang's library is not installed beside glslangValidator")


def _tool_module(tmp_path: Path, source: bytes, *extra: str) -> bytes:
    (tmp_path / "s.comp").write_bytes(source)
    tools.require("glslangValidator", "the reference").run(
        ["-V", "-S", "comp", "--target-env", "vulkan1.2", *extra, "-o", "out.spv", "s.comp"], cwd=tmp_path,
        what="the reference")
    return (tmp_path / "out.spv").read_bytes()


def test_the_library_gives_the_tool_s_module(glslang: None, tmp_path: Path) -> None:
    assert glslang_lib.compile_contained(SHADER, "compute", "vulkan1.2", None) == _tool_module(tmp_path, SHADER)
    assert glslang_lib.compile_contained(VERSIONLESS, "compute", "vulkan1.2", 460) == \
        _tool_module(tmp_path, VERSIONLESS, "--glsl-version", "460")


def test_a_rejected_shader_gives_glslang_s_log(glslang: None) -> None:
    with pytest.raises(glslang_lib.CompileFailed, match="undeclared identifier"):
        glslang_lib.compile_contained(b"#version 450\nvoid main() { x = 1; }\n", "compute", "vulkan1.2", None)


def test_a_crash_ends_the_child_not_the_caller() -> None:
    with pytest.raises(glslang_lib.CompileFailed, match="ended with status"):
        glslang_lib.contained(os.abort)
    assert glslang_lib.contained(lambda: b"still here") == b"still here"


def test_validation_through_the_library(glslang: None) -> None:
    if spirv_tools_lib.library() is None:
        pytest.skip("SPIRV-Tools' library is not installed beside spirv-val")
    module = glslang_lib.compile_contained(SHADER, "compute", "vulkan1.2", None)
    assert spirv_tools_lib.is_valid(module, "vulkan1.2") is True
    assert spirv_tools_lib.is_valid(module[:-8], "vulkan1.2") is False
    assert spirv_tools_lib.is_valid(module, "not-an-environment") is None


def test_a_process_with_other_threads_uses_the_tool(glslang: None) -> None:
    import threading

    assert glslang_lib.supports("vulkan1.2", "compute")
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:  # a fork now could copy a lock another thread holds
        assert not glslang_lib.supports("vulkan1.2", "compute")
        assert spirv_tools_lib.is_valid(b"\x03\x02\x23\x07" + bytes(16), "vulkan1.2") is None
    finally:
        stop.set()
        other.join()


def test_a_suite_worker_compiles_and_validates_without_a_fork(glslang: None, monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    """In a suite worker (its pool reports a crash as the workload's) the library is called in the
    process itself: the same module, the same log for a rejected shader, no child."""
    from kernellab.compile import contained

    expected = _tool_module(tmp_path, SHADER)

    def no_fork() -> int:
        raise AssertionError("forked")

    monkeypatch.setattr(contained, "_process_is_contained", False)
    contained.calls_run_in_this_process()
    monkeypatch.setattr(os, "fork", no_fork)
    assert glslang_lib.compile_contained(SHADER, "compute", "vulkan1.2", None) == expected
    with pytest.raises(glslang_lib.CompileFailed, match="undeclared identifier"):
        glslang_lib.compile_contained(b"#version 450\nvoid main() { x = 1; }\n", "compute", "vulkan1.2", None)
    if spirv_tools_lib.library() is not None:
        assert spirv_tools_lib.is_valid(expected, "vulkan1.2") is True
        assert spirv_tools_lib.is_valid(expected[:-8], "vulkan1.2") is False


def test_the_pool_s_workers_call_the_libraries_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """worker_main marks its process before it opens its session."""
    import kernellab.session
    from kernellab.compile import contained
    from kernellab.suite import worker

    seen = []

    class Session:
        def __init__(self, *args: object, **kwargs: object) -> None:
            seen.append(contained._process_is_contained)

        def close(self) -> None:
            pass

    class Conn:
        def recv(self) -> None:
            return None  # stop at once

    monkeypatch.setattr(contained, "_process_is_contained", False)
    monkeypatch.setattr(kernellab.session, "Session", Session)
    worker.worker_main(Conn(), worker.WorkerConfig(), "probe")
    assert seen == [True]
