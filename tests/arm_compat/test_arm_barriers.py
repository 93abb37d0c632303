"""Explicit barriers between dependent dispatches when ``implicit_barrier`` is false.

Arm 0.11's runner reads barrier access and stage values in lower case ("compute_shader_write",
"compute"), requires ``offset`` on a buffer barrier and all three ``*_barrier_refs`` lists on
``dispatch_barrier``, and calls the command ``pipeline_barrier`` (``dispatch_barrier`` still
works, with a deprecation warning). These scenarios are written the way Arm's runner accepts
them, so both runners must run them unchanged.
"""
from __future__ import annotations

import numpy as np
import pytest

from arm_compat.arm_compat_helpers import Case, buffer, dispatch, shader

SIZE = 256

STEP_GLSL = """#version 450
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) readonly buffer Src { int8_t src[]; };
layout(set = 0, binding = 1) writeonly buffer Dst { int8_t dst[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    dst[i] = src[i] * int8_t(3) + int8_t(1);
}
"""


def _step(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return (x * np.int8(3) + np.int8(1)).astype(np.int8)


def _two_steps(case: Case, rng: np.random.Generator, barrier_resources: list[dict], barrier_command: dict | None,
               implicit: bool) -> np.ndarray:
    data = case.save("input.npy", rng.integers(-128, 127, SIZE, dtype=np.int8, endpoint=True))
    case.glsl_to_spirv(STEP_GLSL, "step.spv")
    extra = {} if implicit else {"implicit_barrier": False}
    commands = [dispatch("step", [SIZE, 1, 1], [(0, 0, "input"), (0, 1, "middle")], **extra)]
    if barrier_command is not None:
        commands.append(barrier_command)
    commands.append(dispatch("step", [SIZE, 1, 1], [(0, 0, "middle"), (0, 1, "output")], **extra))
    case.scenario(
        [shader("step", "step.spv"),
         # "format" is not in the spec but appears in Arm's own barrier scenarios: a warning, not an error.
         buffer("input", SIZE, "readonly", src="input.npy", format="VK_FORMAT_R8_SINT"),
         buffer("middle", SIZE, "readwrite", format="VK_FORMAT_R8_SINT"),
         buffer("output", SIZE, "writeonly", dst="output.npy", format="VK_FORMAT_R8_SINT"),
         *barrier_resources],
        commands)
    return _step(_step(data))


def _buffer_barrier(stages: bool, **overrides: object) -> dict:
    barrier = {"uid": "middle_written", "buffer_resource": "middle", "size": SIZE, "offset": 0,
               "src_access": "compute_shader_write", "dst_access": "compute_shader_read"}
    if stages:
        barrier.update(src_stage=["compute"], dst_stage=["compute"])
    barrier.update(overrides)
    return {"buffer_barrier": barrier}


def _barrier_command(name: str = "dispatch_barrier", *, buffers: list[str] = (), memories: list[str] = ()) -> dict:
    return {name: {"image_barrier_refs": [], "memory_barrier_refs": list(memories),
                   "buffer_barrier_refs": list(buffers)}}


@pytest.mark.parametrize("stages", [True, False], ids=["explicit_stages", "default_stages"])
def test_buffer_barrier_without_implicit_barrier(case: Case, rng: np.random.Generator, stages: bool) -> None:
    expected = _two_steps(case, rng, [_buffer_barrier(stages)], _barrier_command(buffers=["middle_written"]),
                          implicit=False)
    case.run_both({"output.npy": expected})


def test_implicit_barrier_alone(case: Case, rng: np.random.Generator) -> None:
    expected = _two_steps(case, rng, [], None, implicit=True)
    case.run_both({"output.npy": expected})


def test_implicit_barrier_plus_unused_barrier_resource(case: Case, rng: np.random.Generator) -> None:
    # A barrier resource no command refers to is legal and changes nothing.
    expected = _two_steps(case, rng, [_buffer_barrier(True)], None, implicit=True)
    case.run_both({"output.npy": expected})


def test_memory_barrier_all_stages(case: Case, rng: np.random.Generator) -> None:
    memory = {"memory_barrier": {"uid": "everything", "src_access": "memory_write", "dst_access": "memory_read",
                                 "src_stage": ["all"], "dst_stage": ["all"]}}
    expected = _two_steps(case, rng, [memory], _barrier_command(memories=["everything"]), implicit=False)
    case.run_both({"output.npy": expected})


def test_buffer_barriers_over_two_halves(case: Case, rng: np.random.Generator) -> None:
    halves = [_buffer_barrier(True, uid="low", size=SIZE // 2, offset=0),
              _buffer_barrier(True, uid="high", size=SIZE // 2, offset=SIZE // 2)]
    expected = _two_steps(case, rng, halves, _barrier_command(buffers=["low", "high"]), implicit=False)
    case.run_both({"output.npy": expected})


def test_pipeline_barrier_command_name(case: Case, rng: np.random.Generator) -> None:
    # Arm 0.11's current name for dispatch_barrier.
    memory = {"memory_barrier": {"uid": "shader_writes", "src_access": "compute_shader_write",
                                 "dst_access": "compute_shader_read"}}
    expected = _two_steps(case, rng, [memory, _buffer_barrier(True)],
                          _barrier_command("pipeline_barrier", buffers=["middle_written"], memories=["shader_writes"]),
                          implicit=False)
    case.run_both({"output.npy": expected})
