"""The frozen records every run makes (records.Frozen: backends/base.py's Capabilities, Limits,
KernelInterface, BackendOptions, ImageBinding and errors.Problem) are plain classes (start-up,
issue 23) that keep what their frozen dataclasses gave callers: the constructor, repr, value
equality and hash, refusal of assignment, copies and pickling, and ``replace`` for a changed copy."""
from __future__ import annotations

import copy
import pickle
from dataclasses import FrozenInstanceError

import pytest

from kernellab.backends.base import (
    VULKAN_LIMIT_NAMES,
    BackendOptions,
    Capabilities,
    ImageBinding,
    KernelInterface,
    Limits,
)
from kernellab.errors import Problem


def test_limits_take_positions_and_keywords_and_compare_without_their_names() -> None:
    lim = Limits(4, 64, subgroup_size=32)
    assert (lim.max_bound_descriptor_sets, lim.max_per_set_descriptors, lim.subgroup_size) == (4, 64, 32)
    assert lim.max_workgroup_size is None and lim.names == VULKAN_LIMIT_NAMES and lim.names is not VULKAN_LIMIT_NAMES
    other = Limits(max_bound_descriptor_sets=4, max_per_set_descriptors=64, subgroup_size=32, names={})
    assert lim == other and hash(lim) == hash(other)  # names are not compared, as the dataclass's field said
    assert lim != Limits(4, 64) and lim != (4, 64)
    assert repr(Limits()).startswith("Limits(max_bound_descriptor_sets=None, max_per_set_descriptors=None, ")
    assert lim.name("max_workgroup_size") == "maxComputeWorkGroupSize"
    with pytest.raises(FrozenInstanceError, match="cannot assign to field 'subgroup_size'"):
        lim.subgroup_size = 8  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        del lim.subgroup_size  # type: ignore[misc]


def test_backend_options_are_values_that_pickle_and_copy() -> None:
    opts = BackendOptions(True, timestamps=True, pipeline_cache_data=b"blob")
    assert (opts.robust_buffer_access, opts.timestamps, opts.pipeline_cache_data, opts.ml) == (True, True, b"blob", False)
    assert repr(BackendOptions()) == ("BackendOptions(robust_buffer_access=False, timestamps=False, "
                                      "pipeline_cache_data=None, fail_on_pipeline_cache_miss=False, "
                                      "debug_markers=False, ml=False, optical_flow=False, graphics=False, "
                                      "custom_border_color=True)")
    assert pickle.loads(pickle.dumps(opts)) == opts and copy.deepcopy(opts) == opts and copy.copy(opts) == opts
    assert {opts: 1}[BackendOptions(True, True, b"blob")] == 1
    assert BackendOptions() != BackendOptions(ml=True)


def test_replace_makes_a_changed_copy_and_refuses_unknown_fields() -> None:
    caps = Capabilities("Vulkan", {"glsl": "vulkan-module"}, images=True)
    off = caps.replace(mapped_buffers=True)
    assert off.mapped_buffers and not caps.mapped_buffers and off.images and off.title == "Vulkan"
    assert caps.replace() == caps and caps.program_form("glsl") == "vulkan-module"
    with pytest.raises(TypeError, match="Capabilities has no field colour"):
        caps.replace(colour=1)
    p = Problem("a.json", "/x", "bad")
    assert p.replace(warning=True) == Problem("a.json", "/x", "bad", warning=True)
    assert str(p.replace(warning=True)) == "a.json: /x: warning: bad"


def test_problems_and_bindings_keep_the_dataclass_repr_and_equality() -> None:
    p = Problem("f", "", "m")
    assert repr(p) == "Problem(file='f', where='', message='m', warning=False)"
    assert p == Problem("f", "", "m") and len({p, Problem("f", "", "m")}) == 1
    assert repr(ImageBinding("img")) == "ImageBinding(image='img', lod=None)"
    assert KernelInterface("i") == KernelInterface("i", (), ()) and KernelInterface("i").parameters == ()
    with pytest.raises(FrozenInstanceError):
        p.message = "other"  # type: ignore[misc]
