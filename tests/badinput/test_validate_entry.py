"""`kernellab validate` refuses an OpenCL C entry point the source does not define (no device)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.scenarios import kernellab
from kernellab.runtime.kernel_names import defined_kernels

KERNEL = """\
// __kernel void commented(global int *a) {}
#define SCALE 2
__kernel __attribute__((reqd_work_group_size(4, 1, 1))) void twice(__global int *a) {
  a[get_global_id(0)] *= SCALE;
}
kernel void other(global int *a) { a[0] = 1; }
void helper(void) {}
"""


def _instantiation(tmp_path: Path, entry: str, source: str = KERNEL) -> Path:
    (tmp_path / "k.cl").write_text(source)
    path = tmp_path / "k.json"
    path.write_text(json.dumps([{"language": "OpenCL", "kernel_file": "k.cl", "global_size": [4], "local_size": [4],
                                 "entry_point": "twice", "kernel_arguments": [{"type": "array", "size": 16}]},
                                {"language": "OpenCL", "kernel_file": "k.cl", "global_size": [4], "local_size": [4],
                                 "entry_point": entry, "kernel_arguments": [{"type": "array", "size": 16}]}]))
    return path


def _scenario(tmp_path: Path, shader: dict) -> Path:
    (tmp_path / "k.cl").write_text(KERNEL)
    path = tmp_path / "s.json"
    path.write_text(json.dumps({
        "resources": [{"buffer": {"uid": "a", "size": 16, "shader_access": "readwrite"}},
                      {"shader": {"uid": "k", "src": "k.cl", "type": "OpenCL-C", **shader}}],
        "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [4, 1, 1],
                                           "bindings": [{"set": 0, "id": 0, "resource_ref": "a"}]}}]}))
    return path


def test_instantiation_entry_point_not_defined_is_refused(tmp_path: Path) -> None:
    done = kernellab("validate", _instantiation(tmp_path, "helper"))
    assert done.returncode == 2, done.stderr
    assert "/1/entry_point" in done.stderr and "no kernel named 'helper'" in done.stderr
    assert "other, twice" in done.stderr and "Traceback" not in done.stderr


def test_instantiation_entry_points_defined_pass(tmp_path: Path) -> None:
    done = kernellab("validate", _instantiation(tmp_path, "other"))
    assert done.returncode == 0, done.stderr


def test_commented_out_kernel_is_not_a_kernel(tmp_path: Path) -> None:
    done = kernellab("validate", _instantiation(tmp_path, "commented"))
    assert done.returncode == 2 and "/1/entry_point" in done.stderr, done.stderr


def test_scenario_entry_not_defined_is_refused(tmp_path: Path) -> None:
    done = kernellab("validate", _scenario(tmp_path, {"entry": "twise"}))
    assert done.returncode == 2, done.stderr
    assert "/resources/1/shader/entry" in done.stderr and "no kernel named 'twise'" in done.stderr


def test_scenario_entry_defaulting_to_main_is_refused(tmp_path: Path) -> None:
    done = kernellab("validate", _scenario(tmp_path, {}))
    assert done.returncode == 2, done.stderr
    assert "/resources/1/shader" in done.stderr and 'defaults to "main"' in done.stderr


def test_scenario_entry_defined_passes(tmp_path: Path) -> None:
    done = kernellab("validate", _scenario(tmp_path, {"entry": "twice"}))
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("source", [
    "#define NAME twice\n__kernel void NAME(__global int *a) {}\n",
    "#define KERNEL(n) __kernel void n(__global int *a)\nKERNEL(twice) {}\n",
    "#define CAT(a, b) a##b\n__kernel void CAT(tw, ice)(__global int *a) {}\n",
    '#include "more.cl"\n__kernel void other(__global int *a) {}\n',
])
def test_macro_made_kernel_names_are_not_refused(tmp_path: Path, source: str) -> None:
    assert defined_kernels(source) is None
    (tmp_path / "more.cl").write_text("__kernel void missing(__global int *a) {}\n")
    done = kernellab("validate", _instantiation(tmp_path, "missing", source))
    assert "/1/entry_point" not in done.stderr, done.stderr


def test_unequal_work_groups_are_a_note_without_a_device(tmp_path: Path) -> None:
    path = _instantiation(tmp_path, "other")
    doc = json.loads(path.read_text())
    doc[1]["global_size"] = [6]
    path.write_text(json.dumps(doc))
    done = kernellab("validate", path)
    assert done.returncode == 0, done.stderr
    assert "/1/local_size: [4] does not divide global_size [6]" in done.stderr and "OpenCL C 2.0" in done.stderr
