"""A crash report names the launch of the thread that made it: two schedule lanes run parts at
once, each in a thread holding its own part's name (native/launch_guard.py)."""
from __future__ import annotations

import mmap
import threading
from collections.abc import Iterator

import pytest

from kernellab.native import launch_guard


@pytest.fixture
def page() -> Iterator[mmap.mmap]:
    shared = mmap.mmap(-1, 4096)
    launch_guard._page.append(shared)
    try:
        yield shared
    finally:
        launch_guard._page.remove(shared)


def _in_thread(steps: list[tuple[str, threading.Event, threading.Event]]) -> threading.Thread:
    """A thread that, for each step, waits for its go event, does the step and sets its done event."""
    def work() -> None:
        with launch_guard.held("the cpu part of kernel B"):
            for action, go, done in steps:
                if action != "enter":
                    go.wait(10)
                if action == "dispatch":
                    launch_guard.naming("the dispatch of B")
                done.set()
                if action == "leave":
                    return
    return threading.Thread(target=work)


def test_each_thread_names_its_own_part(page: mmap.mmap) -> None:
    entered, go_leave, left = threading.Event(), threading.Event(), threading.Event()
    other = _in_thread([("enter", threading.Event(), entered), ("leave", go_leave, left)])
    with launch_guard.held("the gpu part of kernel A"):
        other.start()
        entered.wait(10)  # the other lane entered its block after this one
        launch_guard.naming("the dispatch of A")
        named = launch_guard._named(page)
        # this thread's launch carries this thread's part, not the lane that entered last
        assert "the gpu part of kernel A" in named
        assert named == "the gpu part of kernel A or the cpu part of kernel B"  # both lanes run now
        go_leave.set()
        left.wait(10)
        other.join(10)
        launch_guard.naming("the dispatch of A")
        assert launch_guard._named(page) == "the gpu part of kernel A"  # the other lane is done


def test_a_lane_leaving_first_does_not_take_the_others_name(page: mmap.mmap) -> None:
    go_dispatch, dispatched = threading.Event(), threading.Event()
    entered = threading.Event()
    other = _in_thread([("enter", threading.Event(), entered), ("dispatch", go_dispatch, dispatched)])
    with launch_guard.held("the gpu part of kernel A"):
        other.start()
        entered.wait(10)
    # this lane is done; the other one dispatches: its own name alone
    go_dispatch.set()
    dispatched.wait(10)
    assert launch_guard._named(page) == "the cpu part of kernel B"
    other.join(10)


def test_outside_a_block_the_launch_is_named_as_given(page: mmap.mmap) -> None:
    launch_guard.naming("launch 0 (k) of k.json")
    assert launch_guard._named(page) == "launch 0 (k) of k.json"
    with launch_guard.held("launch 1 (k) of k.json"):
        launch_guard.naming("the dispatch of k")
        assert launch_guard._named(page) == "launch 1 (k) of k.json"
    assert launch_guard._named(page) == "launch 1 (k) of k.json"  # kept for a crash after it
