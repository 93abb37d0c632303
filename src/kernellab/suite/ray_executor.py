"""The Ray executor: the same suite on a Ray cluster (``pip install kernellab[ray]``).

Each Ray actor holds one device session and takes batches of workloads; results go through
:func:`kernellab.suite.worker.run_item` exactly as in the local pool, so reports and baselines
are identical. Scheduling and transport are Ray's. An actor that dies fails the items of its
batch as crashes and is replaced; ``timeout`` bounds a batch (its unfinished items time out).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kernellab.errors import MissingToolError
from kernellab.suite.discovery import SuiteItem
from kernellab.suite.results import TestResult
from kernellab.suite.worker import WorkerConfig


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise MissingToolError("--executor ray needs Ray: pip install 'kernellab[ray]'") from None
    return ray


def _actor_class(ray: Any) -> Any:
    class SuiteActor:
        def __init__(self, config: WorkerConfig):
            import os
            os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
            self.config = config
            self.session: Any = None
            self.name = f"ray-{os.getpid()}"
            if config.scratch is not None:  # on this machine: inside the suite's folder, which it removes
                from kernellab import scratch

                scratch.adopt(config.scratch)

        def run_batch(self, items: list[SuiteItem]) -> list[TestResult]:
            from kernellab.session import Session
            from kernellab.suite.worker import run_item

            if self.session is None:
                try:
                    self.session = Session(self.config.device, backend=self.config.backend,
                                           timestamps=self.config.timestamps)
                except Exception as exc:
                    return [TestResult(i.id, "error", message=f"cannot open the device: {exc}", worker=self.name)
                            for i in items]
            return [run_item(self.session, item, self.name) for item in items]

    return ray.remote(num_cpus=1)(SuiteActor)


class RayExecutor:
    name = "ray"

    def __init__(self, config: WorkerConfig, address: str | None = None, jobs: int | None = None,
                 batch_size: int = 8, timeout: float | None = None):
        self.config = config
        self.address = address
        self.jobs = jobs
        self.batch_size = max(1, batch_size)
        self.timeout = timeout

    def _connect(self, ray: Any) -> int:
        if not ray.is_initialized():
            if self.address:
                ray.init(address=self.address, log_to_driver=False)
            else:
                ray.init(num_cpus=self.jobs, include_dashboard=False, log_to_driver=False)
        cpus = int(ray.cluster_resources().get("CPU", 1))
        return max(1, min(self.jobs or cpus, cpus))

    def run(self, items: list[SuiteItem], on_result: Callable[[TestResult], None],
            rerun: bool = False, stop: Callable[[], bool] = lambda: False) -> list[TestResult]:
        """``rerun``: batches of one, so a crash names its own workload; ``stop``: once it says
        so, no further batch starts."""
        ray = _ray()
        from ray.exceptions import GetTimeoutError, RayActorError

        actors_wanted = self._connect(ray)
        Actor = _actor_class(ray)
        size = 1 if rerun else self.batch_size
        batches = [items[i:i + size] for i in range(0, len(items), size)]
        batches.reverse()
        results: list[TestResult] = []
        in_flight: dict[Any, tuple[Any, list[SuiteItem], float]] = {}

        def finish(batch_results: list[TestResult]) -> None:
            for r in batch_results:
                results.append(r)
                on_result(r)

        def submit(actor: Any) -> None:
            if batches and not stop():
                batch = batches.pop()
                in_flight[actor.run_batch.remote(batch)] = (actor, batch, time.perf_counter())

        for _ in range(min(actors_wanted, len(batches))):
            submit(Actor.remote(self.config))
        while in_flight:
            wait_for = None
            if self.timeout is not None:
                deadline = min(t + self.timeout * len(b) for _, b, t in in_flight.values())
                wait_for = max(0.0, deadline - time.perf_counter())
            done, _ = ray.wait(list(in_flight), num_returns=1, timeout=wait_for)
            now = time.perf_counter()
            for ref in done:
                actor, batch, _started = in_flight.pop(ref)
                try:
                    finish(ray.get(ref))
                    submit(actor)
                except RayActorError as exc:
                    why = f"the Ray worker died running this batch ({exc.__class__.__name__}); it was replaced"
                    finish([TestResult(i.id, "crash", message=why, worker="ray") for i in batch])
                    submit(Actor.remote(self.config))
            for ref, (actor, batch, started) in list(in_flight.items()):
                if self.timeout is not None and now - started > self.timeout * len(batch):
                    in_flight.pop(ref)
                    ray.kill(actor)
                    try:
                        ray.get(ref, timeout=0)
                    except (GetTimeoutError, RayActorError, Exception):
                        pass
                    finish([TestResult(i.id, "timeout", now - started, worker="ray",
                                       message=f"its batch gave no result after {self.timeout * len(batch):g} s; "
                                               f"the Ray worker was killed and replaced") for i in batch])
                    submit(Actor.remote(self.config))
        return results
