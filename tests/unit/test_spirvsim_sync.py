"""Vulkan synchronization between dispatches as the specification defines it
(kernellab.spirvsim.sync): execution dependencies cover all earlier work in their stages, memory
dependencies their resource and access scopes, availability and visibility chain across
barriers; read-after-write, write-after-write and write-after-read each need their own rule."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from kernellab.spirvsim import Dependency, dispatch_hazards
from kernellab.spirvsim.dispatch import DispatchResult, Footprint
from kernellab.spirvsim.sync import ALL, COMPUTE, GRAPH, full

SIZE = 64
R, W = frozenset({"read"}), frozenset({"write"})


def run(**access: str) -> DispatchResult:
    """A dispatch that reads ("r"), writes ("w") or both ("rw") whole buffers by uid."""
    prints = {uid: Footprint(uid, 0, np.full(SIZE, "r" in how), np.full(SIZE, "w" in how), unit=4)
              for uid, how in access.items()}
    return DispatchResult([], {}, prints, 0, 0.0, (1, 1, 1))


def barrier(at: int, buffer: str | None = None, src: frozenset[str] = W, dst: frozenset[str] = R,
            src_stages: int = COMPUTE, dst_stages: int = COMPUTE, **more: object) -> Dependency:
    return Dependency(at, f"barrier at {at}", src_stages, dst_stages, src, dst, buffer=buffer, **more)  # type: ignore[arg-type]


def hazards(runs: Sequence[tuple[int, DispatchResult]], deps: Sequence[Dependency]) -> list[tuple[str, int, int, str]]:
    out = []
    for f in dispatch_hazards(runs, deps):
        hazard = f.examples[0]["hazard"]
        assert f"({hazard})" in f.message
        out.append((hazard, *f.examples[0]["commands"], f.resource))
    return out


def test_ping_pong_with_a_barrier_on_the_buffer_just_written_is_ordered() -> None:
    # heat_frames: a -> b, barrier(b), b -> a, barrier(a), ... then a frame boundary
    runs, deps, ci = [], [], 0
    for step in range(6):
        src, dst = ("a", "b") if step % 2 == 0 else ("b", "a")
        runs.append((ci, run(**{src: "r", dst: "w"})))
        deps.append(barrier(ci + 1, dst))
        ci += 2
    deps.append(full(ci, "mark_boundary"))
    runs.append((ci + 1, run(a="r", b="w")))
    assert hazards(runs, deps) == []


@pytest.mark.parametrize("first, second, hazard", [
    (dict(x="r"), dict(x="w"), "write-after-read"),
    (dict(x="w"), dict(x="r"), "read-after-write"),
    (dict(x="w"), dict(x="w"), "write-after-write"),
])
def test_execution_only_barrier_on_another_buffer(first: dict[str, str], second: dict[str, str], hazard: str) -> None:
    runs = [(0, run(**first, y="w")), (2, run(**second))]
    # nothing between: every kind is a hazard
    assert hazards(runs, []) == [(hazard, 0, 2, "x")]
    # a barrier on y: an execution dependency for x, no memory dependency
    other = hazards(runs, [barrier(1, "y")])
    assert other == ([] if hazard == "write-after-read" else [(hazard, 0, 2, "x")])
    # the same barrier on x: a memory dependency too
    assert hazards(runs, [barrier(1, "x")]) == []


def test_missing_dependency_is_named() -> None:
    runs = [(0, run(x="w", y="w")), (2, run(x="r"))]
    (f,) = dispatch_hazards(runs, [barrier(1, "y")])
    assert "only an execution dependency" in f.message and "barrier at 1" in f.message
    (f,) = dispatch_hazards(runs, [])
    assert "no execution dependency orders command 2 after command 0" in f.message
    (f,) = dispatch_hazards(runs, [barrier(1, None, src=W, dst=W)])
    assert "made available but not visible to the read" in f.message


@pytest.mark.parametrize("last", ["r", "w"])
def test_a_dependency_chain_keeps_an_earlier_write_ordered(last: str) -> None:
    # A writes x, barrier(x), B writes y, barrier(y), C reads or writes x: barrier(x)'s second
    # scope holds C, so the write stays available and visible; barrier(y) adds nothing for x
    runs = [(0, run(x="w")), (2, run(y="w")), (4, run(x=last))]
    assert hazards(runs, [barrier(1, "x"), barrier(3, "y")]) == []
    assert hazards(runs, [barrier(1, "y"), barrier(3, "y")]) == [
        ("read-after-write" if last == "r" else "write-after-write", 0, 4, "x")]


def test_availability_and_visibility_from_two_barriers_chain() -> None:
    runs = [(0, run(x="w")), (3, run(x="r"))]
    available_only = barrier(1, "x", src=W, dst=frozenset())
    visible_only = barrier(2, None, src=frozenset(), dst=R)
    assert hazards(runs, [available_only, visible_only]) == []
    # visibility before availability makes nothing visible
    assert hazards(runs, [barrier(1, None, src=frozenset(), dst=R), barrier(2, "x", src=W, dst=frozenset())]) == [
        ("read-after-write", 0, 3, "x")]
    # a buffer barrier's visibility covers its own buffer only
    assert hazards(runs, [available_only, barrier(2, "y", src=frozenset(), dst=R)]) == [
        ("read-after-write", 0, 3, "x")]


def test_stages_chain_through_a_stage_without_work() -> None:
    runs = [(0, run(x="w")), (3, run(x="r"))]
    to_graph = barrier(1, None, dst_stages=GRAPH)
    from_graph = barrier(2, None, src=frozenset(), src_stages=GRAPH)
    assert hazards(runs, [to_graph, from_graph]) == []
    # compute not in either scope: no execution dependency at all
    assert hazards(runs, [barrier(1, None, src_stages=GRAPH, dst_stages=GRAPH)]) == [("read-after-write", 0, 3, "x")]
    assert hazards(runs, [barrier(1, None, src_stages=ALL, dst_stages=ALL)]) == []


def test_global_memory_barrier_covers_every_buffer() -> None:
    runs = [(0, run(x="w", y="w", z="r")), (2, run(x="r", y="w", z="w"))]
    assert hazards(runs, [barrier(1, None)]) == []
    assert sorted(hazards(runs, [barrier(1, "x")])) == [("write-after-write", 0, 2, "y")]


@pytest.mark.parametrize("src, dst, second, ordered", [
    (R, R, "r", False),   # the write is not in the first access scope: not made available
    (R, R, "w", False),
    (W, W, "r", False),   # made available, visible to writes only
    (W, W, "w", True),
    (W, R, "w", True),    # write-after-write needs the write available, not visible (Appendix B)
    (frozenset({"read", "write"}), R, "r", True),
])
def test_access_masks_that_do_not_cover_the_access(src: frozenset[str], dst: frozenset[str], second: str,
                                                   ordered: bool) -> None:
    runs = [(0, run(x="w")), (2, run(x=second))]
    assert (hazards(runs, [barrier(1, None, src=src, dst=dst)]) == []) is ordered


def test_read_then_write_needs_only_execution_whatever_the_masks() -> None:
    runs = [(0, run(x="r")), (2, run(x="w"))]
    assert hazards(runs, [barrier(1, None, src=R, dst=R)]) == []
    assert hazards(runs, [barrier(1, "y", src=R, dst=R)]) == []
    # an image or tensor barrier is an execution dependency as well
    assert hazards(runs, [barrier(1, None, memory=False)]) == []


def test_buffer_barrier_covers_its_range_only() -> None:
    runs = [(0, run(x="w")), (2, run(x="r"))]
    (f,) = dispatch_hazards(runs, [barrier(1, "x", offset=0, size=32)])
    assert f.count == 32 and f.examples[0]["byte_offset"] == 32


def test_implicit_barrier_and_frame_boundary_order_everything() -> None:
    runs = [(0, run(x="w", y="r")), (2, run(x="w", y="w")), (4, run(x="r"))]
    assert hazards(runs, [full(0, "implicit"), full(3, "mark_boundary")]) == []
    # the implicit barrier of the second dispatch is recorded after it, not before
    assert hazards(runs, [full(2, "implicit")]) == [("write-after-write", 0, 2, "x"), ("write-after-read", 0, 2, "y")]


def test_barriers_of_one_command_do_not_chain_with_each_other() -> None:
    runs = [(0, run(x="w")), (3, run(x="r"))]
    available_only = barrier(1, "x", src=W, dst=frozenset(), dst_stages=GRAPH)
    visible_only = barrier(1, None, src=frozenset(), dst=R, src_stages=GRAPH)
    # one vkCmdPipelineBarrier2 with both: neither follows the other
    assert hazards(runs, [available_only, visible_only]) == [("read-after-write", 0, 3, "x")]
    # two commands: the second follows the first
    assert hazards(runs, [available_only, Dependency(**{**visible_only.__dict__, "at": 2})]) == []
