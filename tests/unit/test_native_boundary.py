"""The native boundary without a device: the device-selector rule, out-of-memory classification,
wrapped Vulkan calls, guarded OpenCL calls, and clean-up that logs instead of hiding a failure."""
from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from kernellab.errors import BackendError, DeviceOutOfMemoryError, UsageError
from kernellab.native import failure
from kernellab.native.devices import DeviceInfo, choose_device, select, selector_kind

DEVICES = [
    DeviceInfo("opencl", 0, "Oclgrind Simulator (Oclgrind)", "other", api_version="OpenCL 1.2 (Oclgrind 21.10)",
               details={"platform": "Oclgrind"}),
    DeviceInfo("opencl", 1, "pthread-Xeon (Portable Computing Language)", "cpu",
               api_version="OpenCL 3.0 PoCL HSTR", details={"platform": "Portable Computing Language"}),
    DeviceInfo("opencl", 2, "Arc A770 (Intel(R) OpenCL Graphics)", "discrete-gpu", api_version="OpenCL 3.0 NEO",
               details={"platform": "Intel(R) OpenCL Graphics"}),
    DeviceInfo("opencl", 3, "UHD 770 (Intel(R) OpenCL Graphics)", "integrated-gpu", api_version="OpenCL 3.0 NEO",
               details={"platform": "Intel(R) OpenCL Graphics"}),
]


@pytest.mark.parametrize(("wanted", "indices"), [
    (None, [2, 3, 1, 0]),        # best kind first; the simulator ("other") last
    ("", [2, 3, 1, 0]),
    ("1", [1]),                  # an index
    ("gpu", [2, 3]),             # a kind word: every GPU kind
    ("CPU", [1]),
    ("intel", [2, 3]),           # a name or platform substring, best first
    ("pocl", [1]),               # PoCL says its name only in its version string
    ("oclgrind", [0]),           # a simulator is chosen when named
    ("nothing", []),
])
def test_one_rule_selects_devices_best_first(wanted: str | None, indices: list[int]) -> None:
    assert [d.index for d in select(DEVICES, wanted)] == indices


def test_selector_kinds() -> None:
    assert [selector_kind(w) for w in (None, " ", "3", "gpu", "llvmpipe")] == ["any", "any", "index", "kind", "name"]


def test_choose_device_words_its_errors_by_selector() -> None:
    assert choose_device(DEVICES, None).index == 2
    with pytest.raises(UsageError, match=r"--device 7: no device with that index \(have 0, 1, 2, 3\)"):
        choose_device(DEVICES, "7")
    with pytest.raises(UsageError, match="--device 'no-such-gpu': no device name contains it"):
        choose_device(DEVICES, "no-such-gpu")
    with pytest.raises(UsageError, match="no devices found"):
        choose_device([], None)


@pytest.mark.parametrize("code", sorted(failure.OUT_OF_MEMORY))
def test_out_of_memory_is_classified_once_for_both_apis(code: str) -> None:
    err = failure.failure("vkAllocateMemory", code)
    assert isinstance(err, DeviceOutOfMemoryError) and isinstance(err, MemoryError)
    assert str(err) == f"vkAllocateMemory failed: {code}"


def test_other_codes_are_backend_errors() -> None:
    err = failure.failure("clBuildProgram", "CL_BUILD_PROGRAM_FAILURE", "log")
    assert type(err) is BackendError and str(err) == "clBuildProgram failed: CL_BUILD_PROGRAM_FAILURE (log)"


# --- Vulkan -------------------------------------------------------------------------------------

@pytest.fixture
def vulkan():
    from kernellab.native import vk as nvk

    try:
        return nvk.load()
    except Exception as exc:  # noqa: BLE001 - no loader: nothing to check the binding against
        pytest.skip(f"the vulkan binding does not load: {exc}")


def test_vulkan_result_names_come_from_one_table(vulkan) -> None:
    from kernellab.native import vk as nvk

    assert nvk.result_name(vulkan.VK_ERROR_OUT_OF_DEVICE_MEMORY) == "VK_ERROR_OUT_OF_DEVICE_MEMORY"
    assert nvk.result_name(-123456) == "VkResult(-123456)"
    assert nvk.code_name(vulkan.VkErrorDeviceLost()) == "VK_ERROR_DEVICE_LOST"
    with pytest.raises(DeviceOutOfMemoryError, match="vkBindTensorMemoryARM failed: VK_ERROR_OUT_OF_HOST_MEMORY"):
        nvk.check("vkBindTensorMemoryARM", vulkan.VK_ERROR_OUT_OF_HOST_MEMORY)
    nvk.check("vkCreateTensorARM", vulkan.VK_SUCCESS)


def test_every_vulkan_call_through_the_api_is_checked(vulkan) -> None:
    from kernellab.native import vk as nvk

    def vkAllocateMemory(*args: object) -> None:
        raise vulkan.VkErrorOutOfDeviceMemory()

    def vkQueueSubmit(*args: object) -> None:
        raise vulkan.VkErrorDeviceLost()

    fake = SimpleNamespace(vkAllocateMemory=vkAllocateMemory, vkQueueSubmit=vkQueueSubmit, VK_TRUE=1,
                           VkError=vulkan.VkError, VkException=vulkan.VkException)
    api = nvk.Api(fake)
    assert api.VK_TRUE == 1  # other names are the binding's own
    with pytest.raises(BackendError, match="^vkQueueSubmit failed: VK_ERROR_DEVICE_LOST$"):
        api.vkQueueSubmit()
    # a block may name its call more tellingly; the code and the classification stay
    with pytest.raises(DeviceOutOfMemoryError, match=r"^vkAllocateMemory\(weights, 64 bytes\) failed: "
                                                     "VK_ERROR_OUT_OF_DEVICE_MEMORY$"):
        with nvk.checked("vkAllocateMemory(weights, 64 bytes)"):
            api.vkAllocateMemory()


def test_checked_renames_binding_errors_and_lets_others_through(vulkan) -> None:
    """``checked`` (a class since issue 23: no contextlib on a run) names its call in a binding's
    error raised straight from the package, and leaves any other exception as it was."""
    from kernellab.native import vk as nvk

    with pytest.raises(BackendError, match="^vkCreateFence failed: VK_ERROR_DEVICE_LOST$") as info:
        with nvk.checked("vkCreateFence"):
            raise vulkan.VkErrorDeviceLost()
    assert info.value.__suppress_context__
    with pytest.raises(KeyError, match="kept"):
        with nvk.checked("vkCreateFence"):
            raise KeyError("kept")
    with nvk.checked("vkCreateFence"):
        pass


def test_vulkan_clean_up_logs_a_failed_release_and_goes_on(vulkan, caplog: pytest.LogCaptureFixture) -> None:
    from kernellab.native import vk as nvk

    def lost(*args: object) -> None:
        raise vulkan.VkErrorDeviceLost()

    released = []
    with caplog.at_level(logging.WARNING, logger="kernellab.native"):
        nvk.release("vkDeviceWaitIdle", lost, None)
        nvk.release("vkDestroyBuffer(a)", lambda *a: released.append(a), 1, 2)
    assert released == [(1, 2)]
    assert "clean-up call vkDeviceWaitIdle failed: VK_ERROR_DEVICE_LOST" in caplog.text


# --- OpenCL -------------------------------------------------------------------------------------

@pytest.fixture
def pyopencl():
    return pytest.importorskip("pyopencl")


def _cl_error(cl, kind: str, code: int, routine: str):
    return getattr(cl, kind)(cl._cl._ErrorRecord("failed", code, routine))


def test_guarded_opencl_calls_name_the_call_and_status(pyopencl) -> None:
    from kernellab.native import cl as ncl

    def alloc() -> None:
        raise _cl_error(pyopencl, "MemoryError", -4, "clCreateBuffer")

    def bad() -> None:
        raise _cl_error(pyopencl, "LogicError", -30, "clSetKernelArg")

    with pytest.raises(DeviceOutOfMemoryError, match=r"^clCreateBuffer\(a\) failed: CL_MEM_OBJECT_ALLOCATION_FAILURE"):
        ncl.guarded("clCreateBuffer(a)", alloc)
    with pytest.raises(BackendError, match=r"^clSetKernelArg\(k, 0\) failed: CL_INVALID_VALUE"):
        ncl.guarded("clSetKernelArg(k, 0)", bad)
    assert ncl.guarded("clFinish", lambda: 7) == 7
    assert ncl.status_name(-9999) == "CL error -9999"


def test_opencl_clean_up_logs_a_failed_release(pyopencl, caplog: pytest.LogCaptureFixture) -> None:
    from kernellab.native import cl as ncl

    def fail() -> None:
        raise _cl_error(pyopencl, "RuntimeError", -36, "clFinish")

    with caplog.at_level(logging.WARNING, logger="kernellab.native"):
        ncl.release("clFinish", fail)
    assert "clean-up call clFinish failed: CL_INVALID_COMMAND_QUEUE" in caplog.text


def test_a_failed_build_keeps_its_log(pyopencl) -> None:
    from kernellab.compiler_options import own
    from kernellab.native import cl as ncl

    class Program:
        def build(self, options: str) -> None:
            raise _cl_error(pyopencl, "RuntimeError", -11, "clBuildProgram")

    with pytest.raises(ncl.BuildFailure) as info:
        ncl.build(Program(), own("-Werror"), what="k.cl")
    assert info.value.code == "CL_BUILD_PROGRAM_FAILURE" and "clBuildProgram" in info.value.log
