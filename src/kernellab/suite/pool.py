"""The local executor: worker processes, each holding one device session for many workloads.

A worker that dies (a driver abort, a segfault) or passes the timeout costs only the workload
it was running: that one is reported as a crash or a timeout, the worker is replaced, and the
suite goes on. Workers are started from a fork server, never forked from a process that may
already hold a Vulkan or OpenCL device.
"""
from __future__ import annotations

import multiprocessing
import signal
import time
from collections import deque
from collections.abc import Callable
from multiprocessing.connection import wait
from typing import Any

from kernellab.records import dataclass
from kernellab.suite.discovery import SuiteItem
from kernellab.suite.results import TestResult
from kernellab.suite.worker import WorkerConfig, worker_main


@dataclass
class _Worker:
    name: str
    process: Any
    conn: Any
    item: SuiteItem | None = None
    started: float = 0.0


def _signal_name(exitcode: int | None) -> str:
    if exitcode is None or exitcode >= 0:
        return f"exit status {exitcode}"
    try:
        return signal.Signals(-exitcode).name
    except ValueError:
        return f"signal {-exitcode}"


class LocalExecutor:
    name = "local"

    def __init__(self, config: WorkerConfig, jobs: int, timeout: float | None = None):
        self.config = config
        self.jobs = max(1, jobs)
        self.timeout = timeout
        self._ctx = multiprocessing.get_context("forkserver")
        self._ctx.set_forkserver_preload(["kernellab.suite.prefork"])
        self._serial = 0
        self._idle: list[_Worker] = []

    def start(self) -> None:
        """Start the workers now (they open their devices while the caller finds the suite)."""
        while len(self._idle) < self.jobs:
            self._idle.append(self._start())

    def close(self) -> None:
        for w in self._idle:
            self._stop(w)
        self._idle.clear()

    def _start(self) -> _Worker:
        self._serial += 1
        name = f"local-{self._serial}"
        parent, child = self._ctx.Pipe()
        process = self._ctx.Process(target=worker_main, args=(child, self.config, name), name=name, daemon=True)
        process.start()
        child.close()
        return _Worker(name, process, parent)

    @staticmethod
    def _stop(worker: _Worker, kill: bool = False) -> None:
        if kill:
            worker.process.kill()
        else:
            try:
                worker.conn.send(None)
            except OSError:
                pass
        worker.process.join(timeout=10)
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join()
        worker.conn.close()

    def run(self, items: list[SuiteItem], on_result: Callable[[TestResult], None],
            rerun: bool = False, stop: Callable[[], bool] = lambda: False) -> list[TestResult]:
        """``stop``: once it says so, no further workload starts (those running finish)."""
        pending = deque(items)
        results: list[TestResult] = []
        wanted = min(self.jobs, len(items))
        workers, spare = self._idle[:wanted], self._idle[wanted:]
        self._idle = []
        for w in spare:
            self._stop(w)
        workers += [self._start() for _ in range(wanted - len(workers))]

        def finish(result: TestResult) -> None:
            results.append(result)
            on_result(result)

        def assign(w: _Worker) -> None:
            if pending and not stop():
                w.item = pending.popleft()
                w.started = time.perf_counter()
                w.conn.send(w.item)
            else:
                w.item = None

        try:
            for w in workers:
                assign(w)
            while any(w.item is not None for w in workers):
                busy = [w for w in workers if w.item is not None]
                wait_for = None
                if self.timeout is not None:
                    now = time.perf_counter()
                    wait_for = max(0.0, min(w.started + self.timeout for w in busy) - now)
                wait([x for w in busy for x in (w.conn, w.process.sentinel)], timeout=wait_for)
                for index, w in enumerate(workers):
                    if w.item is None:
                        continue
                    got = self._received(w)
                    if got is not None:
                        finish(got)
                        assign(w)
                        continue
                    failed = self._failure(w)
                    if failed is None:
                        continue
                    finish(failed)
                    if failed.status == "timeout":
                        self._stop(w, kill=True)
                    w.conn.close()
                    workers[index] = replacement = self._start()
                    assign(replacement)
        finally:
            for w in workers:
                self._stop(w, kill=w.item is not None)
        return results

    @staticmethod
    def _received(w: _Worker) -> TestResult | None:
        """The result busy worker ``w`` has sent, if any yet."""
        try:
            if w.conn.poll():
                got: TestResult = w.conn.recv()
                return got
        except (EOFError, OSError):
            pass
        return None

    def _failure(self, w: _Worker) -> TestResult | None:
        """The crash or timeout of busy worker ``w`` (which must then be replaced), if it met one."""
        assert w.item is not None
        elapsed = time.perf_counter() - w.started
        if not w.process.is_alive():
            w.process.join()
            return TestResult(w.item.id, "crash", elapsed, worker=w.name,
                              message=f"the worker died ({_signal_name(w.process.exitcode)}) "
                                      f"running this workload; it was replaced")
        if self.timeout is not None and elapsed > self.timeout:
            return TestResult(w.item.id, "timeout", elapsed, worker=w.name,
                              message=f"no result after {self.timeout:g} s; the worker was killed "
                                      f"and replaced")
        return None
