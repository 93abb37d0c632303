"""The reflected interface is cached by content: a repeated run decodes nothing (no SPIR-V grammar
to load), and what the cache gives back is what reflection gives."""
from __future__ import annotations

from pathlib import Path

import pytest

from kernellab import tools
from kernellab.backends.base import UnknownEntryError
from kernellab.compile.cache import ArtifactCache
from kernellab.runtime import interface as iface

SHADER = """#version 450
layout(local_size_x_id = 0, local_size_y = 2) in;
layout(constant_id = 5) const int K = 2;
layout(set = 1, binding = 3) readonly buffer A { vec4 head; float a[]; };
layout(set = 0, binding = 0) uniform U { vec4 s; } u;
layout(push_constant) uniform Push { uint n; } pc;
layout(set = 0, binding = 1) writeonly buffer C { float c[]; };
void main() { uint i = gl_GlobalInvocationID.x; if (i < pc.n) c[i] = a[i] * K + u.s.x + head.y; }
"""


@pytest.fixture(scope="module")
def spirv(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    tmp = tmp_path_factory.mktemp("iface")
    (tmp / "s.comp").write_text(SHADER)
    tools.require("glslangValidator").run(["-V", "--target-env", "vulkan1.3", "-o", str(tmp / "s.spv"),
                                           str(tmp / "s.comp")], what="compiling")
    return (tmp / "s.spv").read_bytes()


def test_a_cached_reflection_is_the_reflection_and_decodes_nothing(spirv: bytes, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    cache = ArtifactCache(tmp_path)
    fresh = iface.reflect_module(spirv, "main", "s.spv", cache)
    interface, facts = fresh
    assert sorted(interface.descriptors) == [(0, 0), (0, 1), (1, 3)]
    assert interface.descriptors[(0, 0)].type == "UNIFORM_BUFFER" and interface.push_constant_size == 4
    # vulkan1.3 writes the size with LocalSizeId: x is specialization constant 0, y the literal 2
    assert facts.local_size({0: 32}) == (32, 2, 1) and facts.local_size({}) == (1, 2, 1)

    def no_decoding(*args: object, **kw: object) -> None:
        raise AssertionError("decoded although the cache holds the interface")

    monkeypatch.setattr("kernellab.listing.spirv.decode", no_decoding)
    assert iface.reflect_module(spirv, "main", "s.spv", cache) == fresh
    with pytest.raises(AssertionError):  # another module is not in the cache
        iface.reflect_module(spirv + bytes(4), "main", "s.spv", cache)


def test_an_unknown_entry_point_is_not_cached(spirv: bytes, tmp_path: Path) -> None:
    cache = ArtifactCache(tmp_path)
    for _ in range(2):
        with pytest.raises(UnknownEntryError, match="the module has no entry point 'go' \\(it has: main\\)"):
            iface.reflect_module(spirv, "go", "s.spv", cache)
    assert not list(tmp_path.rglob("*.interface.json"))


def test_the_reflecting_code_keys_by_its_files_stamps() -> None:
    """The code part of the key is the reflecting files' sizes and change times (no hashing of
    their text on each run): an edit, which changes them, never meets an old entry."""
    stamp = iface._code_digest.__wrapped__().decode()
    for source in (Path(iface.__file__), Path(iface.__file__).with_name("reflection.py"),
                   Path(iface.__file__).parents[1] / "listing" / "reflect.py"):
        st = source.stat()
        assert f"|{st.st_size}|{st.st_mtime_ns}|" in stamp and str(source.name) in stamp
