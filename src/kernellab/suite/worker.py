"""Running suite items on a session: the one function every executor (local pool, Ray, the
pytest plugin) calls, so their results are identical."""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from kernellab.records import dataclass
from kernellab.suite.discovery import SuiteItem
from kernellab.suite.results import TestResult


@dataclass(frozen=True)
class WorkerConfig:
    device: str | None = None
    backend: str = "vulkan"
    #: record GPU timestamps (for --trace)
    timestamps: bool = False
    #: the suite's private temporary folder (with no cache: ``scratch``), where the worker makes its own
    scratch: str | None = None
    #: the suite's paths as the user typed them: the worker's messages name its files that way
    typed: tuple[str, ...] = ()


def _fault_hook(item: SuiteItem) -> None:
    """Testing aid: ``KERNELLAB_FAULT_ABORT=SUBSTRING`` aborts the worker process (as a driver
    abort would) on workloads whose id contains it; with ``KERNELLAB_FAULT_ONCE_DIR`` only on
    the first attempt of each (a marker file is left there)."""
    needle = os.environ.get("KERNELLAB_FAULT_ABORT")
    if not needle or needle not in item.id:
        return
    once = os.environ.get("KERNELLAB_FAULT_ONCE_DIR")
    if once:
        marker = Path(once) / (item.id.replace("/", "_") + ".aborted")
        if marker.exists():
            return
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text("aborted once\n")
    os.abort()


def run_item(session: Any, item: SuiteItem, worker: str = "") -> TestResult:
    """Run one workload and compare its outputs; never raises for the workload's own faults."""
    from kernellab.errors import KernellabError
    from kernellab.suite.compare import check_outputs
    from kernellab.suite.expectations import load_expectations

    epoch = time.time() - time.perf_counter()
    start = time.perf_counter()
    result = TestResult(item.id, "pass", worker=worker, device=session.device)
    try:
        _fault_hook(item)
        if item.workload.suffix == ".amber":
            return _run_amber_item(session, item, result, start, epoch)
        expectations = load_expectations(item.sidecar)
        run = session.run_workload(item.workload, outputs=expectations.output_names())
        check = check_outputs(expectations, run.outputs)
        compare_end = time.perf_counter()
        result.phases = [(p.name, p.start + epoch, p.end + epoch) for p in run.phases]
        if result.phases and result.phases[0][0] == "parse":  # reading the sidecar is parsing too
            result.phases[0] = ("parse", start + epoch, result.phases[0][2])
        result.phases.append(("compare", result.phases[-1][2] if result.phases else start + epoch, compare_end + epoch))
        result.gpu = [[(t.label, t.start_ns, t.end_ns) for t in submit] for submit in run.gpu_timings]
        if not check.ok:
            result.status = "fail"
            result.message = check.report()
    except KernellabError as exc:
        result.status = "error"
        result.message = str(exc)
        result.bad_input = _refused_input(exc)
    except Exception as exc:  # a bug or a driver error surfacing as a Python exception: this test's
        result.status = "error"
        result.message = f"{type(exc).__name__}: {exc}"
    result.duration_s = time.perf_counter() - start
    return result


def _refused_input(exc: Any) -> bool:  # a KernellabError
    """Whether ``exc`` refuses the workload's own input (what ``kernellab run`` exits 2 for),
    which a re-run would only say again; not a compiler ended by a signal (its memory limit, the
    machine's OOM killer: a crash, which the re-run may not meet), though its caller reports it
    as the source's compile error."""
    failure = getattr(exc, "failure", None)
    return exc.exit_status == 2 and not (failure is not None and failure.returncode < 0)


def _run_amber_item(session: Any, item: SuiteItem, result: TestResult, start: float, epoch: float) -> TestResult:
    """An AmberScript file: its EXPECTs are its expectations (no sidecar)."""
    from kernellab.suite.amber import run_amber

    outcome = run_amber(session, item.workload)
    result.status = outcome.status
    result.message = outcome.report if outcome.status != "pass" else ""
    result.phases = [(p.name, p.start + epoch, p.end + epoch) for p in outcome.phases]
    result.duration_s = time.perf_counter() - start
    return result


def worker_main(conn: Any, config: WorkerConfig, name: str) -> None:
    """A pool worker: one session, items in, results out, until told to stop (None). The device
    is opened before the first item arrives, while the parent is still finding the suite."""
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
    from kernellab.compile.contained import calls_run_in_this_process

    # a compiler's crash ends this worker only, and the pool reports it as that workload's crash:
    # compiles and validations need no child of their own here
    calls_run_in_this_process()
    from kernellab.errors import name_as_typed

    for path in config.typed:  # the parent's folder is this process's too (the fork server's)
        name_as_typed(path)

    if config.scratch is None:
        _serve(conn, config, name)
        return
    from kernellab import scratch

    # the worker's private folders (an AmberScript file's scenarios with no cache) lie in the
    # suite's: removed as the worker exits, or by the suite when its timeout killed the worker
    scratch.adopt(config.scratch)
    try:
        _serve(conn, config, name)
    finally:
        scratch.remove()


def _serve(conn: Any, config: WorkerConfig, name: str) -> None:
    from kernellab.session import Session

    session = None
    failure = ""
    try:
        session = Session(config.device, backend=config.backend, timestamps=config.timestamps)
    except Exception as exc:
        failure = f"cannot open the device: {exc}"
    while True:
        try:
            item = conn.recv()
        except (EOFError, KeyboardInterrupt):
            break
        if item is None:
            break
        if session is None:
            conn.send(TestResult(item.id, "error", message=failure, worker=name))
            continue
        conn.send(run_item(session, item, name))
    if session is not None:
        session.close()
