"""Which resources share one allocation (runtime/aliasing.py), without a device."""
from __future__ import annotations

from kernellab import model as m
from kernellab.runtime import aliasing


def _scenario(*resources: m.Resource) -> m.Scenario:
    return m.Scenario(list(resources), [])


def test_memory_groups() -> None:
    a = m.Buffer(uid="a", size=128, shader_access="readwrite", memory_group=m.MemoryGroup(id="g"))
    b = m.Buffer(uid="b", size=16, shader_access="readwrite", memory_group=m.MemoryGroup(id="g", offset=64))
    lone = m.Buffer(uid="lone", size=4, shader_access="readwrite")
    img = m.Image(uid="img", format="VK_FORMAT_R8G8B8A8_UNORM", dims=[1, 4, 2, 1], shader_access="readwrite",
                  memory_group=m.MemoryGroup(id="h"))
    groups = aliasing.plan(_scenario(a, img, lone, b))
    assert [g.uids for g in groups] == [["a", "b"], ["img"]]
    assert [mb.offset for mb in groups[0].members] == [0, 64]
    assert groups[0].members[1].where == "/resources/3/buffer/memory_group/offset"
    # no tensor shares the image's group: it needs no tensor-aliasing usage
    assert aliasing.aliased_images(_scenario(a, img, lone, b)) == set()


def test_tensor_in_an_image_memory_group_views_it() -> None:
    img = m.Image(uid="img", format="VK_FORMAT_R8G8B8A8_UINT", dims=[1, 4, 2, 1], shader_access="writeonly",
                  memory_group=m.MemoryGroup(id="m"))
    t = m.Tensor(uid="t", dims=[1, 2, 4, 4], format="VK_FORMAT_R8_UINT", shader_access="readonly",
                 memory_group=m.MemoryGroup(id="m"))
    other = m.Tensor(uid="o", dims=[4], format="VK_FORMAT_R32_SINT", shader_access="readonly",
                     memory_group=m.MemoryGroup(id="m", offset=256))
    sc = _scenario(img, t, other)
    assert [g.uids for g in aliasing.plan(sc)] == [["img", "t", "o"]]
    assert aliasing.aliased_images(sc) == {"img"}
    assert aliasing.alias_target_of(t, sc) is img
    assert aliasing.alias_target_of(other, sc) is None
