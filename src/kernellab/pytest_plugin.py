"""kernellab's pytest plugin (entry point ``pytest11``; loaded wherever kernellab is installed).

- Every ``NAME.expect.json`` pytest walks into becomes a test of its workload (one per device),
  run on a session shared by the whole test run; a failing comparison's message is the mismatch
  report.
- ``--kernellab-device D`` (repeatable) picks the devices: an index or a name substring as for
  ``kernellab run --device``, or ``all``. With several, every workload and every test using the
  fixtures below runs once per device, with the device in its id (as pyopencl's per-device
  parametrization does).
- Fixtures: ``kernellab_session`` (a :class:`kernellab.Session` on the test's device) and
  ``kernellab_device`` (the device's name).
- Mistakes are said once: a ``--kernellab-device`` that names no device is one usage error
  (exit 4) when the run has a kernellab test, a bad sidecar one collection error naming the file
  and the JSON path. A sidecar of a kernel-instantiation file or PySchedCL spec is a skipped test
  (``kernellab run --check`` checks those).

Importing this module costs nothing: numpy and the drivers load when a test first needs them.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SIDECAR_SUFFIX = ".expect.json"  # kept in step with kernellab.suite.expectations (not imported here: cost)
_SESSIONS = pytest.StashKey[dict]()
_DEVICES = pytest.StashKey[list]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kernellab")
    group.addoption("--kernellab-device", action="append", default=None, metavar="DEVICE",
                    help="run kernellab workloads and fixtures on this device (index, name substring or 'all'; "
                         "repeatable: one test per device)")
    group.addoption("--kernellab-backend", default="vulkan", choices=["vulkan", "opencl"],
                    help="the backend of --kernellab-device (default vulkan)")


def _devices(config: pytest.Config) -> list[str | None]:
    """The device selectors the run parametrizes over ([None] = the default device)."""
    if _DEVICES not in config.stash:
        wanted = config.getoption("kernellab_device") or []
        if "all" in wanted:
            from kernellab.backends.registry import backend_class
            from kernellab.errors import KernellabError

            try:
                wanted = [str(d.index) for d in backend_class(config.getoption("kernellab_backend")).devices()]
            except KernellabError as exc:
                raise pytest.UsageError(f"--kernellab-device all: {exc}") from None
        config.stash[_DEVICES] = list(dict.fromkeys(wanted)) or [None]
    return config.stash[_DEVICES]


def _device_id(selector: str | None) -> str:
    return "default" if selector is None else selector


def session_for(config: pytest.Config, selector: str | None) -> Any:
    """One session per device for the whole test run."""
    sessions = config.stash.setdefault(_SESSIONS, {})
    if selector not in sessions:
        from kernellab.session import Session

        sessions[selector] = Session(selector, backend=config.getoption("kernellab_backend"))
    return sessions[selector]


def _uses_kernellab(item: pytest.Item) -> bool:
    if isinstance(item, WorkloadItem):
        return not item.skip
    return bool(
        {"kernellab_session", "kernellab_device"} & set(getattr(item, "fixturenames", ())))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Open the devices now, once, when a collected test needs one: a device that cannot be
    opened is one usage error, not a traceback in every test."""
    from kernellab.errors import KernellabError

    if session.config.option.collectonly or not any(_uses_kernellab(i) for i in session.items):
        return
    for selector in _devices(session.config):
        try:
            session_for(session.config, selector)
        except KernellabError as exc:
            raise pytest.UsageError(f"--kernellab-device {_device_id(selector)}: {exc}") from None


def pytest_unconfigure(config: pytest.Config) -> None:
    for session in config.stash.get(_SESSIONS, {}).values():
        session.close()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.name.endswith(SIDECAR_SUFFIX):
        return ExpectationsFile.from_parent(parent, path=file_path)
    return None


class ExpectationsFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        from kernellab.errors import InputError
        from kernellab.suite.compare import check_references
        from kernellab.suite.discovery import FORMAT_NAMES, SuiteItem, workload_format, workload_id
        from kernellab.suite.expectations import load_expectations

        expectations = load_expectations(self.path)
        if not expectations.workload.is_file():
            raise InputError(f"the workload {expectations.workload} of these expectations does not exist",
                             file=self.path)
        check_references(expectations)
        item = SuiteItem(workload_id(expectations.workload), expectations.workload, self.path)
        fmt = workload_format(expectations.workload)
        devices = _devices(self.config)
        for selector in devices:
            name = expectations.workload.name + (f"[{_device_id(selector)}]" if len(devices) > 1 else "")
            skip = "" if fmt == "scenario" else (f"a {FORMAT_NAMES.get(fmt, fmt)}: check it with "
                                                  f"`kernellab run {item.id} --check`")
            yield WorkloadItem.from_parent(self, name=name, suite_item=item, selector=selector, skip=skip)

    # pytest calls a collector's repr_failure without a style: pytest.Collector narrows Node's signature so
    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]  # as Collector
        from kernellab.errors import KernellabError

        if isinstance(excinfo.value, KernellabError):
            return str(excinfo.value)  # the file and the JSON path say it all; no traceback of ours
        return super().repr_failure(excinfo)


class WorkloadMismatch(AssertionError):
    """The outputs differ from the references (or the workload could not run)."""


class WorkloadItem(pytest.Item):
    def __init__(self, *, suite_item: Any, selector: str | None, skip: str = "", **kwargs: Any):
        super().__init__(**kwargs)
        self.suite_item = suite_item
        self.selector = selector
        self.skip = skip

    def runtest(self) -> None:
        from kernellab.suite.worker import run_item

        if self.skip:
            pytest.skip(self.skip)
        result = run_item(session_for(self.config, self.selector), self.suite_item, "pytest")
        self.user_properties.append(("device", result.device))
        if result.status != "pass":
            raise WorkloadMismatch(f"{result.title}: {self.suite_item.id} on {result.device}\n{result.message}")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, WorkloadMismatch):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"kernellab workload {self.suite_item.id}"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if {"kernellab_session", "kernellab_device"} & set(metafunc.fixturenames):
        devices = _devices(metafunc.config)
        if len(devices) < 2:
            return  # one device: no parameter, no "[device]" in the ids
        metafunc.parametrize("_kernellab_selector", devices, ids=[_device_id(d) for d in devices],
                             scope="session", indirect=True)


@pytest.fixture(scope="session")
def _kernellab_selector(request: pytest.FixtureRequest) -> str | None:
    if hasattr(request, "param"):
        return request.param  # type: ignore[no-any-return]
    return _devices(request.config)[0]


@pytest.fixture
def kernellab_session(request: pytest.FixtureRequest, _kernellab_selector: str | None) -> Any:
    """A :class:`kernellab.Session` on the test's device (shared by the whole test run)."""
    return session_for(request.config, _kernellab_selector)


@pytest.fixture
def kernellab_device(kernellab_session: Any) -> str:
    """The name of the test's device."""
    return str(kernellab_session.device)
