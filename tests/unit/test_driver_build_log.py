"""An OpenCL driver's build log names the user's file and line: NVIDIA's compiler ignores the
``#line`` markers kernellab's inlined text carries and names it ``<kernel>`` (its exact text on
an H100, driver 580, below); the other drivers' names of the text become the kernel's."""
from __future__ import annotations

from kernellab.backends.opencl import _build_log
from kernellab.compile.build_log import driver_log

SAXPY = ('#line 1 "/w/saxpy.cl"\n// saxpy\n__kernel void saxpy(__global float *y, __global const float *x) {\n'
         "  int i = get_global_id(0);\n  float a = 2.0f;\n  y[i] = a * x[i] + y[i] +;\n}\n")
#: saxpy.cl including bad.h, inlined as kernellab hands it to a driver
WITH_HEADER = ('#line 1 "/w/saxpy.cl"\n#line 1 "/w/bad.h"\n// a header\nint broken( {\n#line 2 "/w/saxpy.cl"\n'
               "// saxpy\n__kernel void saxpy(__global float *y, __global const float *x) {\n"
               "  int i = get_global_id(0);\n  float a = 2.0f;\n  y[i] = a * x[i] + y[i];\n}\n")


def test_nvidia_kernel_places_are_the_users_file_and_line() -> None:
    log = ("<kernel>:6:27: error: expected expression\n"
           "  y[i] = a * x[i] + y[i] +;\n"
           "                          ^\n")
    assert driver_log(log, SAXPY, "saxpy").splitlines()[0] == "/w/saxpy.cl:5:27: error: expected expression"


def test_nvidia_places_in_an_included_header_name_the_header() -> None:
    log = ("<kernel>:4:13: error: expected parameter declarator\nint broken( {\n            ^\n"
           "<kernel>:4:13: error: expected ')'\n<kernel>:4:11: note: to match this '('\nint broken( {\n          ^\n"
           "<kernel>:11:2: error: expected function body after function declarator\n}\n ^\n")
    out = driver_log(log, WITH_HEADER, "saxpy").splitlines()
    assert [line for line in out if ": error: " in line or ": note: " in line] == [
        "/w/bad.h:2:13: error: expected parameter declarator", "/w/bad.h:2:13: error: expected ')'",
        "/w/bad.h:2:11: note: to match this '('",
        "/w/saxpy.cl:7:2: error: expected function body after function declarator"]


def test_pyopencl_s_message_on_nvidia() -> None:
    text = ("clBuildProgram failed: BUILD_PROGRAM_FAILURE - clBuildProgram failed: BUILD_PROGRAM_FAILURE - "
            "clBuildProgram failed: BUILD_PROGRAM_FAILURE\n\nBuild on <pyopencl.Device 'NVIDIA H100 80GB HBM3' "
            "on 'NVIDIA CUDA' at 0x5b1c0>:\n\n<kernel>:6:27: error: expected expression\n"
            "  y[i] = a * x[i] + y[i] +;\n                          ^\n\n(options: -cl-kernel-arg-info -I /x)\n"
            "(source saved as /tmp/tmpx.cl)")
    assert _build_log(text, "saxpy", SAXPY).splitlines()[0] == "/w/saxpy.cl:5:27: error: expected expression"


def test_an_old_nvidia_log_without_a_name() -> None:
    assert driver_log(":6:3: error: use of undeclared identifier 'cp'", SAXPY, "saxpy") == \
        "/w/saxpy.cl:5:3: error: use of undeclared identifier 'cp'"


def test_without_markers_nvidia_s_lines_are_the_kernels() -> None:
    assert driver_log("<kernel>:5:27: error: e", "a\nb\n", "saxpy") == "saxpy:5:27: error: e"


def test_drivers_honouring_line_keep_their_lines_under_the_kernels_name() -> None:
    # PoCL, Apple, ARM Mali, Mesa, AMD: their own names of the text, at lines #line already moved
    for given in ("/tmp/pocl_x/tempfile_ab12cd.cl", "<program source>", "<source>", "input.cl",
                  r"C:\Users\u\AppData\Local\Temp\\OCL20648T1.cl", "/tmp/AMD_2175_18/t_2175_20.cl"):
        assert driver_log(f"{given}:5:27: error: e", SAXPY, "saxpy") == "saxpy:5:27: error: e", given
    # a driver that honours the markers names the user's file itself: left as it is
    assert driver_log("error: /w/saxpy.cl:5:27: e", SAXPY, "saxpy") == "error: /w/saxpy.cl:5:27: e"


def test_amd_legacy_edg_places_become_file_and_line() -> None:
    log = '"/w/saxpy.cl", line 5: error:\n          expected an expression\n'
    assert driver_log(log, SAXPY, "saxpy").splitlines()[0] == "/w/saxpy.cl:5: error:"
    assert driver_log('"/tmp/OCLF992.tmp.cl", line 7: error: x', SAXPY, "saxpy") == "saxpy:7: error: x"
