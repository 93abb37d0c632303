"""The partition runner's parts run through the one executor (issue 19 point 1): what they time
counts their transfers as well as their kernels, and a run leaves no buffer behind on the
session's backends."""
from __future__ import annotations

import numpy as np
import pytest

from kernellab.backends.base import BackendOptions
from kernellab.backends.registry import backend_class
from kernellab.formats.pyschedcl.spec import load_spec
from kernellab.runtime.host_data import fill_inputs
from kernellab.runtime.partition import Session, choose_targets, execute
from test_pyschedcl_helpers import vecadd_spec


@pytest.fixture(scope="module")
def pocl_session():
    cpu, gpu = choose_targets("pocl")
    with Session(cpu, gpu) as session:
        yield session


def test_one_device_is_one_backend(pocl_session):
    # both lanes of one device share its backend (its context and buffers) ...
    assert pocl_session.lanes["gpu"].backend is pocl_session.lanes["cpu"].backend
    # ... and the two parts of a split get a queue each on it, as on two devices
    assert pocl_session.queues == 2 and pocl_session.description.endswith("(two queues)")


def test_the_parts_on_one_device_are_dispatches_on_two_queues(tmp_path, pocl_session, monkeypatch):
    """PySchedCL runs a part per queue: the parts on one device overlap, not queue in order."""
    kernel = load_spec(vecadd_spec(tmp_path)).resolve({"dataset": 4096})
    host = fill_inputs(kernel, seed=3)
    backend = pocl_session.lanes["gpu"].backend
    launched = []
    real = backend._cl.enqueue_nd_range_kernel

    def spy(queue, *args, **kwargs):
        launched.append(queue)
        return real(queue, *args, **kwargs)

    monkeypatch.setattr(backend._cl, "enqueue_nd_range_kernel", spy)
    result = execute(pocl_session, kernel, host, 5)
    assert len(launched) == 2 and launched[0] != launched[1]
    assert np.array_equal(result.outputs[2], host[0] + host[1])


def test_part_times_count_writes_and_reads(tmp_path, pocl_session):
    kernel = load_spec(vecadd_spec(tmp_path)).resolve({"dataset": 4096})
    host = fill_inputs(kernel, seed=1)
    result = execute(pocl_session, kernel, host, 5)
    gpu, cpu = result.parts
    # the buffers both parts share are written and read once, counted to the first part
    assert [label for label, _, _ in gpu.events].count("write") == 2
    assert {"fill", "kernel", "read"} <= {label for label, _, _ in gpu.events}
    assert [label for label, _, _ in cpu.events] == ["kernel"]
    assert all(end >= start for _, start, end in gpu.events + cpu.events)
    # the makespan spans the first part's transfers, not its kernel alone
    assert result.device_ns >= gpu.span_ns > gpu.kernel_ns > 0
    assert np.array_equal(result.outputs[2], host[0] + host[1])


def test_parts_of_their_own_rows_are_timed_to_their_part(tmp_path, pocl_session):
    # 1000 floats split at 500: not aligned for sub-buffers, so each part writes its own rows
    kernel = load_spec(vecadd_spec(tmp_path, local=False)).resolve({"dataset": 1000})
    host = fill_inputs(kernel, seed=2)
    result = execute(pocl_session, kernel, host, 5, "subbuffer")
    assert not result.subbuffers
    for part in result.parts:
        labels = [label for label, _, _ in part.events]
        assert labels.count("write") == 2 and "kernel" in labels and "read" in labels, (part.role, labels)
    assert np.array_equal(result.outputs[2], host[0] + host[1])


def test_runs_free_their_buffers(tmp_path, pocl_session):
    """A sweep runs a spec many times on one backend: each run frees what it made."""
    kernel = load_spec(vecadd_spec(tmp_path)).resolve({"dataset": 640})
    host = fill_inputs(kernel, seed=3)
    backend = pocl_session.lanes["gpu"].backend
    for p in (10, 8, 3):
        execute(pocl_session, kernel, host, p)
        assert backend._mems == [], p


def test_opencl_backend_times_its_transfers():
    cls = backend_class("opencl")
    with cls.open("Portable Computing Language", BackendOptions(timestamps=True)) as backend:
        buf = backend.alloc_buffer(256, "b")
        backend.write_buffer(buf, bytes(range(256)))
        backend.clear_buffer(buf)
        assert bytes(backend.read_buffer_bytes(buf)) == bytes(256)
        backend.read_buffer_range(buf, 16, 32)
        timings = backend.transfer_timings()
        assert [t.label for t in timings] == ["write:b", "fill:b", "read:b", "read:b"]
        assert all(t.end_ns >= t.start_ns > 0 for t in timings)
        assert backend.transfer_timings() == []
    with cls.open("Portable Computing Language") as backend:  # no timestamps: nothing recorded
        buf = backend.alloc_buffer(16, "b")
        backend.write_buffer(buf, bytes(16))
        assert backend.transfer_timings() == []
