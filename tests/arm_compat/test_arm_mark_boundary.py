"""``mark_boundary`` ends a frame: the commands so far are submitted and waited for.

Arm 0.11 reads ``resources`` (required) and ignores ``frame_id`` with a deprecation warning; its
current name for the command is ``frame_boundary``. Arm's ``--capture-frame`` flag starts a
RenderDoc capture and writes no files, so kernellab's ``--capture-frames DIR`` has no Arm
counterpart: it is checked against NumPy only.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from arm_compat.arm_compat_helpers import Case, as_typed, buffer, dispatch, mark_boundary, shader

N = 10

SUM_GLSL = """#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) readonly buffer Lhs { float lhs[]; };
layout(set = 0, binding = 1) readonly buffer Rhs { float rhs[]; };
layout(set = 1, binding = 2) writeonly buffer Sum { float total[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    total[i] = lhs[i] + rhs[i];
}
"""


def _inputs(case: Case, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    lhs = case.save("lhs.npy", rng.uniform(-100, 100, N).astype(np.float32))
    rhs = case.save("rhs.npy", rng.uniform(-100, 100, N).astype(np.float32))
    return lhs, rhs


def _resources(extra: list[dict] = ()) -> list[dict]:
    return [shader("sum", "sum.spv"),
            buffer("lhs", 40, "readonly", src="lhs.npy"),
            buffer("rhs", 40, "readonly", src="rhs.npy"),
            buffer("once", 40, dst="once.npy"),
            buffer("twice", 40, dst="twice.npy"), *extra]


FIRST = dispatch("sum", [N], [(0, 0, "lhs"), (0, 1, "rhs"), (1, 2, "once")])
SECOND = dispatch("sum", [N], [(0, 0, "once"), (0, 1, "rhs"), (1, 2, "twice")])


def test_boundary_between_dependent_dispatches(case: Case, rng: np.random.Generator) -> None:
    lhs, rhs = _inputs(case, rng)
    case.glsl_to_spirv(SUM_GLSL, "sum.spv")
    case.scenario(_resources(), [FIRST, mark_boundary(["lhs", "rhs"]), SECOND])
    case.run_both({"once.npy": lhs + rhs, "twice.npy": lhs + rhs + rhs})


def test_boundary_after_last_dispatch(case: Case, rng: np.random.Generator) -> None:
    lhs, rhs = _inputs(case, rng)
    case.glsl_to_spirv(SUM_GLSL, "sum.spv")
    case.scenario(_resources(), [FIRST, SECOND, mark_boundary(["once", "twice"])])
    case.run_both({"once.npy": lhs + rhs, "twice.npy": lhs + rhs + rhs})


def test_frame_boundary_name_and_deprecated_frame_id(case: Case, rng: np.random.Generator) -> None:
    lhs, rhs = _inputs(case, rng)
    case.glsl_to_spirv(SUM_GLSL, "sum.spv")
    case.scenario(_resources(), [FIRST, {"frame_boundary": {"resources": ["once"], "frame_id": 5}}, SECOND,
                                 mark_boundary(["twice"], frame_id=6)])
    case.run_both({"once.npy": lhs + rhs, "twice.npy": lhs + rhs + rhs})


def test_boundary_only_scenario_passes_buffers_through(case: Case, rng: np.random.Generator) -> None:
    # No shader, no dispatch: a buffer's dst is its src's bytes (a float32 file comes back as
    # int8 bytes), and a buffer with no src comes back as zeros.
    lhs, _ = _inputs(case, rng)
    wide = case.save("wide.npy", rng.uniform(-1, 1, (2, 3)).astype(np.float64))
    case.scenario([buffer("lhs", 40, "readonly", src="lhs.npy", dst="lhs_copy.npy"),
                   buffer("wide", 48, "readonly", src="wide.npy", dst="wide_copy.npy"),
                   buffer("blank", 12, "writeonly", dst="blank.npy")],
                  [mark_boundary(["lhs", "wide"])])
    case.run_both({"lhs_copy.npy": lhs, "wide_copy.npy": wide.reshape(-1), "blank.npy": np.zeros(3, np.int32)})


def test_boundary_only_scenario_without_outputs(case: Case, rng: np.random.Generator) -> None:
    _inputs(case, rng)
    case.scenario([buffer("lhs", 40, "readonly", src="lhs.npy"), buffer("rhs", 40, "readonly", src="rhs.npy")],
                  [mark_boundary(["lhs", "rhs"])])
    case.run_both(no_outputs=True)


INCREMENT_GLSL = """#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer Counter { float counter[]; };
void main() { counter[gl_GlobalInvocationID.x] += 1.0; }
"""


@pytest.fixture
def capture_dir(tmp_path: Path) -> Path:
    return tmp_path / "frames"


def test_frames_captured_at_each_boundary(case: Case, capture_dir: Path) -> None:
    start = case.save("counter.npy", np.arange(N, dtype=np.float32))
    case.glsl_to_spirv(INCREMENT_GLSL, "inc.spv")
    step = dispatch("inc", [N], [(0, 0, "counter")])
    case.scenario([shader("inc", "inc.spv"), buffer("counter", 40, src="counter.npy", dst="counter_out.npy"),
                   buffer("untouched", 8, "readonly")],
                  [step, mark_boundary(["counter"]), step, step, mark_boundary(["counter", "untouched"]), step])
    case.run_both({"counter_out.npy": start + 4}, kernellab_args=["--capture-frames", str(capture_dir)])
    captured = sorted(p.name for p in capture_dir.iterdir())
    assert captured == ["counter.frame0.npy", "counter.frame1.npy", "untouched.frame1.npy"], captured
    np.testing.assert_array_equal(as_typed(capture_dir / "counter.frame0.npy", np.float32), start + 1)
    np.testing.assert_array_equal(as_typed(capture_dir / "counter.frame1.npy", np.float32), start + 3)
    np.testing.assert_array_equal(as_typed(capture_dir / "untouched.frame1.npy", np.int32), np.zeros(2, np.int32))
