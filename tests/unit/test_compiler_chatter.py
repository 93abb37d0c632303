"""The compiler chatter redirection of OpenCL builds (``native.cl.build``, PoCL's clang writing
"1 error generated." to fd 2) when builds overlap in threads (``partition-sweep``'s parts, a
snapshot's ``build_async``): fd 2 is the process's again once the last build ends."""
from __future__ import annotations

import os
import threading
import time

import pytest

from kernellab import compiler_options
from kernellab.native import cl


class _Chatty:
    """A driver program whose build writes to fd 2, as PoCL's compiler does, for ``seconds``."""

    def __init__(self, seconds: float, text: bytes, fails: bool = False):
        self.seconds, self.text, self.fails = seconds, text, fails

    def build(self, options: str) -> _Chatty:
        time.sleep(self.seconds)
        os.write(2, self.text)
        if self.fails:
            raise RuntimeError("the driver's own failure")
        return self


def test_overlapping_builds_leave_fd_2_the_process_s(capfd: pytest.CaptureFixture[str]) -> None:
    before = os.readlink("/proc/self/fd/2")
    first = threading.Thread(target=cl.build, args=(_Chatty(0.4, b"first built\n"), compiler_options.Options()),
                             kwargs={"what": "a.cl:a"})
    second = threading.Thread(target=cl.build, args=(_Chatty(0.8, b"second built\n"), compiler_options.Options()),
                              kwargs={"what": "b.cl:b"})
    first.start()
    time.sleep(0.1)  # the second starts while the first redirects fd 2, and ends after it
    second.start()
    first.join()
    second.join()
    os.write(2, b"kernellab's message after the builds\n")
    assert os.readlink("/proc/self/fd/2") == before
    err = capfd.readouterr().err
    assert "kernellab's message after the builds" in err
    assert "first built" in err and "second built" in err  # both succeeded: their chatter passed on
    assert cl._stderr_fd == 2


def test_the_chatter_of_a_failed_build_is_dropped(capfd: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(RuntimeError):
        cl.build(_Chatty(0, b"1 error generated.\n", fails=True), compiler_options.Options(), what="k.cl:k")
    os.write(2, b"after\n")
    err = capfd.readouterr().err
    assert "error generated" not in err and "after" in err
