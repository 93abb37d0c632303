"""Subgroup operations and matrices in the SPIR-V checker (issue 24): each planted defect with its
clean twin through ``kernellab verify``, and the checker's computed buffers against the device's
(``kernellab run``) for the same GLSL."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kernellab import tools
from kernellab.cli import main
from kernellab.spirvsim import Binding, check_dispatch, glsl_to_spirv
from kernellab.verify.vulkan import DeviceSubgroups, verify_scenario

pytestmark = pytest.mark.skipif(tools.find("glslangValidator") is None, reason="needs glslangValidator")

SUBGROUP_EXT = "".join(f"#extension GL_KHR_shader_subgroup_{e} : require\n" for e in (
    "basic", "vote", "arithmetic", "ballot", "shuffle", "shuffle_relative", "clustered", "quad"))
HEADER = ("#version 450\n" + SUBGROUP_EXT + "layout(local_size_x = LOCAL) in;\n"
          "layout(std430, set = 0, binding = 0) buffer Data { uint data[]; };\n"
          "layout(std430, set = 0, binding = 1) buffer Out { uint outv[]; };\n")


def scenario(folder: Path, text: str, *, local: int = 64, groups: int = 2, size: int = 4096,
             data: np.ndarray | None = None, dumps: bool = False) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "k.comp").write_text(text.replace("LOCAL", str(local)))
    res: list[dict[str, Any]] = [{"shader": {"uid": "k", "src": "k.comp", "type": "GLSL"}}]
    for uid in ("data", "out"):
        buf: dict[str, Any] = {"uid": uid, "size": size, "shader_access": "readwrite"}
        if uid == "data" and data is not None:
            np.save(folder / "data.npy", np.concatenate([data, np.zeros(size // data.itemsize - data.size, data.dtype)]))
            buf["src"] = "data.npy"
        if dumps:
            buf["dst"] = f"{uid}_dump.npy"
        res.append({"buffer": buf})
    bindings = [{"set": 0, "id": 0, "resource_ref": "data"}, {"set": 0, "id": 1, "resource_ref": "out"}]
    path = folder / "s.json"
    path.write_text(json.dumps({"resources": res, "commands": [
        {"dispatch_compute": {"shader_ref": "k", "rangeND": [groups], "bindings": bindings}}]}))
    return path


def verify(path: Path, capsys: pytest.CaptureFixture[str], *options: str) -> tuple[int, dict[str, Any]]:
    status = main(["verify", str(path), "--json", *options])
    out = capsys.readouterr().out
    return status, json.loads(out) if out.strip() else {}


def kinds(doc: dict[str, Any]) -> set[str]:
    return {f["kind"] for f in doc["findings"]}


# ---- planted defects and clean twins --------------------------------------------------------------

REDUCTION = HEADER + """
void main() {
  uint sum = subgroupAdd(data[gl_GlobalInvocationID.x]);
  if (subgroupElect()) outv[INDEX] = sum;
}
"""


def test_subgroup_reduction_clean_and_racy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = np.arange(1024, dtype=np.uint32)
    clean = REDUCTION.replace("INDEX", "gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID")
    status, doc = verify(scenario(tmp_path / "clean", clean, data=data), capsys)
    assert (status, doc["verdict"], doc["findings"]) == (0, "verified", [])
    # every subgroup's elected invocation writes its own sum to one element per workgroup
    racy = REDUCTION.replace("INDEX", "gl_WorkGroupID.x")
    status, doc = verify(scenario(tmp_path / "racy", racy, data=data), capsys)
    assert status == 1 and kinds(doc) == {"data-race"}
    (f,) = doc["findings"]
    assert f["race"] == {"type": "write-write", "scope": "intra-group"} and f["resource"] == "out"
    assert "outv[gl_WorkGroupID.x] = sum" in f["source_line"]


SHUFFLE = HEADER + """
void main() {
  uint i = gl_GlobalInvocationID.x;
  uint v = data[i];
  BODY
}
"""


#: planted subgroup defect -> (kind, count, the clean twin)
SUBGROUP_DEFECTS = {
    # only the even invocations are active, and each reads its odd neighbour
    "if (gl_SubgroupInvocationID % 2 == 0) outv[i] = subgroupShuffleXor(v, 1u);": (
        "subgroup-inactive-read", 64,
        "uint s = subgroupShuffleXor(v, 1u);\n  if (gl_SubgroupInvocationID % 2 == 0) outv[i] = s;"),
    # the last invocation of each of the 16 subgroups of 8 reads past its subgroup
    "outv[i] = subgroupShuffleDown(v, 1u);": (
        "subgroup-inactive-read", 16,
        "uint k = gl_SubgroupInvocationID + 1u < gl_SubgroupSize ? 1u : 0u;\n  outv[i] = subgroupShuffleDown(v, k);"),
    # guarding the store does not help: the read past the subgroup still happens
    "uint s = subgroupShuffleDown(v, 1u);\n  if (gl_SubgroupInvocationID + 1u < gl_SubgroupSize) outv[i] = s;": (
        "subgroup-inactive-read", 16, "outv[i] = subgroupShuffleDown(v, 0u);"),
    # inverse ballot's Value must be the same in the whole subgroup
    "outv[i] = subgroupInverseBallot(uvec4(v)) ? 1u : 0u;": (
        "subgroup-nonuniform", 16, "outv[i] = subgroupInverseBallot(subgroupBallot(v > 3u)) ? 1u : 0u;"),
}


@pytest.mark.parametrize("planted", sorted(SUBGROUP_DEFECTS))
def test_subgroup_defect_and_clean_twin(planted: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kind, count, clean = SUBGROUP_DEFECTS[planted]
    data = np.arange(1024, dtype=np.uint32)
    # the counts are of subgroups of 8 (lavapipe's size; NVIDIA's is 32): the size is given
    status, doc = verify(scenario(tmp_path / "planted", SHUFFLE.replace("BODY", planted), data=data), capsys,
                         "--subgroup-size", "8")
    assert status == 1 and kinds(doc) == {kind}
    (f,) = doc["findings"]
    assert f["severity"] == "defect" and f["count"] == count and "subgroup" in f["source_line"]
    status, doc = verify(scenario(tmp_path / "clean", SHUFFLE.replace("BODY", clean), data=data), capsys,
                         "--subgroup-size", "8")
    assert (status, doc["findings"]) == (0, [])


SIZED = HEADER + """
void main() {
  if (subgroupElect()) outv[0] = gl_SubgroupID;
}
"""


def test_subgroup_size_option_and_all(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    path = scenario(tmp_path, SIZED, local=16, groups=1)
    status, doc = verify(path, capsys)  # the device's size: below 16 (lavapipe's 8), subgroups write different ids
    if DeviceSubgroups().size() < 16:
        assert status == 1 and kinds(doc) == {"data-race"}
    else:  # NVIDIA's 32: the workgroup is one subgroup
        assert (status, doc["findings"]) == (0, [])
    status, doc = verify(path, capsys, "--subgroup-size", "8")
    assert status == 1 and kinds(doc) == {"data-race"}
    status, doc = verify(path, capsys, "--subgroup-size", "16")
    assert (status, doc["findings"]) == (0, [])
    # 'all' checks the sizes the device allows (VK_EXT_subgroup_size_control): one that allows 4 to 16
    monkeypatch.setattr(DeviceSubgroups, "_found", (8, (4, 8, 16)))
    status, doc = verify(path, capsys, "--subgroup-size", "all")
    assert status == 1
    labels = {f["message"].split("]")[0] + "]" for f in doc["findings"]}
    assert labels == {"[subgroup size 4]", "[subgroup size 8]"}
    result = verify_scenario(path, subgroup_size="all")
    assert [l.subgroup_size for l in result.launches] == [8, 4, 16]
    # a device of subgroups of 16 (its only size): the default check is its, and finds nothing
    monkeypatch.setattr(DeviceSubgroups, "_found", (16, (16,)))
    status, doc = verify(path, capsys)
    assert (status, doc["findings"]) == (0, [])
    status, doc = verify(path, capsys, "--subgroup-size", "all")
    assert (status, doc["findings"]) == (0, [])
    with pytest.raises(SystemExit) as exit_:
        main(["verify", str(path), "--subgroup-size", "12"])
    assert exit_.value.code == 2 and "not a power of two" in capsys.readouterr().err


def test_subgroup_size_read_from_the_device(tmp_path: Path) -> None:
    """Without --subgroup-size the size is the one the Vulkan device reports through the backend's
    limits; a scenario with no subgroup instruction never opens the device."""
    from kernellab.backends.registry import backend_class
    from kernellab.native.devices import choose_device
    cls = backend_class("vulkan")
    with cls(choose_device(cls.devices(), None)) as backend:
        size, allowed = backend.limits.subgroup_size, backend.limits.subgroup_size_range
    assert size in (1, 2, 4, 8, 16, 32, 64, 128)
    assert allowed is None or allowed[0] <= size <= allowed[1]
    DeviceSubgroups._found = None
    result = verify_scenario(scenario(tmp_path / "s", SIZED, local=16, groups=1))
    assert [l.subgroup_size for l in result.launches] == [size]
    assert DeviceSubgroups._found is not None and DeviceSubgroups._found[0] == size


def test_subgroup_size_without_a_device(tmp_path: Path) -> None:
    """Where no Vulkan device opens, the size is lavapipe's 8 and 'all' every size drivers report,
    with a warning saying so."""
    import os
    import subprocess
    import sys
    path = scenario(tmp_path, SIZED, local=16, groups=1)
    env = {**os.environ, "VK_ICD_FILENAMES": str(tmp_path / "none.json"), "VK_DRIVER_FILES": str(tmp_path / "none.json")}
    run = subprocess.run([sys.executable, "-m", "kernellab", "verify", str(path), "--json", "--subgroup-size", "all"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 1, run.stderr
    assert "no Vulkan device opened" in run.stderr and "size 8" in run.stderr
    labels = {f["message"].split("]")[0] + "]" for f in json.loads(run.stdout)["findings"]}
    assert labels == {"[subgroup size 4]", "[subgroup size 8]"}


def test_subgroup_barrier_divergence(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    planted = SHUFFLE.replace("BODY", "if (gl_SubgroupInvocationID < 4u) { subgroupBarrier(); }\n  outv[i] = v;")
    status, doc = verify(scenario(tmp_path / "planted", planted), capsys)
    assert status == 1 and kinds(doc) == {"barrier-divergence"}
    clean = SHUFFLE.replace("BODY", "if (gl_SubgroupID < 4u) { subgroupBarrier(); }\n  outv[i] = v;")
    status, doc = verify(scenario(tmp_path / "clean", clean), capsys)
    assert (status, doc["findings"]) == (0, [])


MATRIX = """#version 450
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) buffer Data { LAYOUT mat4 m; vec4 v[]; };
layout(std430, set = 0, binding = 1) buffer Out { vec4 outv[]; };
void main() {
  uint i = gl_GlobalInvocationID.x;
  outv[INDEX] = m * v[i];
}
"""


@pytest.mark.parametrize("layout", ["", "layout(row_major)"])
def test_matrix_transform_clean_and_racy(layout: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shader = MATRIX.replace("LAYOUT", layout)
    status, doc = verify(scenario(tmp_path / "clean", shader.replace("INDEX", "i")), capsys)
    assert (status, doc["findings"]) == (0, [])
    status, doc = verify(scenario(tmp_path / "racy", shader.replace("INDEX", "i / 2u"),
                                  data=np.arange(1024, dtype=np.float32)), capsys)
    assert status == 1 and kinds(doc) == {"data-race"}
    # 128 vec4 of the output are 2048 bytes: past a buffer of 1024 is out of bounds
    status, doc = verify(scenario(tmp_path / "oob", shader.replace("INDEX", "i"), size=1024), capsys)
    assert status == 1 and "out-of-bounds" in kinds(doc)


# ---- the checker's values against the device's -------------------------------------------------

def _lavapipe(path: Path) -> np.ndarray:
    assert main(["run", str(path)]) == 0
    return np.load(path.parent / "out_dump.npy").view(np.uint8)


def _checker(path: Path, local: int, groups: int, data: np.ndarray, size: int, subgroup_size: int = 8) -> bytes:
    spv = glsl_to_spirv(path.parent / "k.comp")
    raw = np.zeros(size, np.uint8)
    raw[:data.nbytes] = data.view(np.uint8)
    r = check_dispatch(spv, "main", (groups, 1, 1), subgroup_size=subgroup_size,
                       bindings={(0, 0): Binding("data", raw.tobytes()), (0, 1): Binding("out", bytes(size))})
    assert r.findings == []
    return r.buffers["out"]


OPS = [
    "subgroupAdd(v)", "subgroupMul(v | 1u)", "subgroupMin(int(v) - 7)", "subgroupMax(v)", "subgroupAnd(v | 8u)",
    "subgroupOr(v)", "subgroupXor(v)", "subgroupInclusiveAdd(v)", "subgroupExclusiveAdd(v)",
    "subgroupExclusiveMin(v)", "subgroupInclusiveXor(v)", "subgroupClusteredAdd(v, 4u)",
    "subgroupClusteredMax(v, 2u)", "uint(subgroupAdd(float(v)))", "uint(subgroupInclusiveMul(float(v % 3u + 1u)))",
    "subgroupShuffle(v, (gl_SubgroupInvocationID * 3u) % gl_SubgroupSize)", "subgroupShuffleXor(v, 5u)",
    "subgroupBroadcast(v, 5u)", "subgroupBroadcastFirst(v)", "subgroupBallot(v > 6u).x",
    "subgroupBallotBitCount(subgroupBallot(v % 2u == 0u))",
    "subgroupBallotInclusiveBitCount(subgroupBallot(v % 3u == 0u))",
    "subgroupBallotExclusiveBitCount(subgroupBallot(v % 3u == 0u))",
    "subgroupBallotFindLSB(subgroupBallot(v > 6u))", "subgroupBallotFindMSB(subgroupBallot(v < 6u))",
    "uint(subgroupBallotBitExtract(subgroupBallot(v > 6u), gl_SubgroupInvocationID ^ 1u))",
    "uint(subgroupInverseBallot(subgroupBallot(v > 4u)))", "uint(subgroupElect())", "uint(subgroupAll(v < 12u))",
    "uint(subgroupAny(v == 3u))", "uint(subgroupAllEqual(v / 16u))", "subgroupQuadBroadcast(v, 2u)",
    "subgroupQuadSwapHorizontal(v)", "subgroupQuadSwapVertical(v)", "subgroupQuadSwapDiagonal(v)",
    "gl_SubgroupEqMask.x + gl_SubgroupLtMask.x * 256u", "gl_SubgroupSize * 1000u + gl_SubgroupInvocationID",
    "gl_SubgroupID * 100u + gl_NumSubgroups",
    # not every invocation active: the operations run over the active ones
    ("v % 3u == 0u", "subgroupAdd(v)"), ("v % 3u == 0u", "subgroupInclusiveAdd(v)"),
    ("v > 5u", "subgroupBallot(true).x"), ("v % 2u == 1u", "uint(subgroupElect())"),
    ("v % 2u == 1u", "subgroupBroadcastFirst(v * 3u)"), ("v % 2u == 1u", "subgroupExclusiveMax(v)"),
]


#: what this lavapipe computes otherwise than the SPIR-V specification: clustered reductions
#: over the whole subgroup (cluster size ignored); checked against NumPy instead
LAVAPIPE_DEVIATES = {"subgroupClusteredAdd(v, 4u)", "subgroupClusteredMax(v, 2u)"}


def _statement(k: int, n: int, op: str | tuple[str, str]) -> str:
    if isinstance(op, tuple):
        return f"  if ({op[0]}) {{ outv[i * {n}u + {k}u] = {op[1]}; }} else {{ outv[i * {n}u + {k}u] = 99u; }}"
    return f"  outv[i * {n}u + {k}u] = {op};"


def test_subgroup_values_match_lavapipe(tmp_path: Path) -> None:
    n = len(OPS)
    body = "\n".join(_statement(k, n, op) for k, op in enumerate(OPS))
    text = HEADER + f"void main() {{\n  uint i = gl_GlobalInvocationID.x;\n  uint v = data[i];\n{body}\n}}\n"
    data = (np.arange(128, dtype=np.uint32) * 7 + 3) % 13
    size = 128 * n * 4
    path = scenario(tmp_path, text, local=64, groups=2, size=size, data=data, dumps=True)
    device = _lavapipe(path)
    # the checker runs subgroups of the device's size (lavapipe's 8, NVIDIA's 32)
    subgroup = int(np.frombuffer(device.tobytes(), np.uint32)[OPS.index("gl_SubgroupSize * 1000u + "
                                                                       "gl_SubgroupInvocationID")]) // 1000
    ours = np.frombuffer(_checker(path, 64, 2, data, size, subgroup), np.uint32).reshape(128, n)
    theirs = np.frombuffer(device.tobytes(), np.uint32).reshape(128, n)
    wrong = []
    for k, op in enumerate(OPS):
        if op in LAVAPIPE_DEVIATES:
            continue
        if not np.array_equal(ours[:, k], theirs[:, k]):
            wrong.append((op, ours[:16, k], theirs[:16, k]))
    assert not wrong, wrong
    # clustered reductions, per the specification: over clusters of 4 (2) consecutive invocations
    v = data.reshape(-1, 4)
    np.testing.assert_array_equal(ours[:, OPS.index("subgroupClusteredAdd(v, 4u)")], np.repeat(v.sum(axis=1), 4))
    v = data.reshape(-1, 2)
    np.testing.assert_array_equal(ours[:, OPS.index("subgroupClusteredMax(v, 2u)")], np.repeat(v.max(axis=1), 2))


def test_matrix_values_match_lavapipe(tmp_path: Path) -> None:
    text = """#version 450
layout(local_size_x = 16) in;
layout(std430, set = 0, binding = 0) buffer Data { mat4 a; layout(row_major) mat4 b; mat2x3 c; vec4 v[16]; };
layout(std430, set = 0, binding = 1) buffer Out { vec4 outv[]; };
void main() {
  uint i = gl_GlobalInvocationID.x;
  vec4 x = v[i];
  outv[i * 8u + 0u] = a * x;
  outv[i * 8u + 1u] = x * b;
  outv[i * 8u + 2u] = (a * b) * x + transpose(a)[1] * 0.5;
  outv[i * 8u + 3u] = outerProduct(x, x.wzyx)[2] + (a * 2.0)[3];
  outv[i * 8u + 4u] = vec4(c * x.xy, determinant(mat2(a[0].xy, a[1].xy)));
  outv[i * 8u + 5u] = inverse(mat4(2.0) + mat4(x, x.yzwx, x.zwxy, x.wxyz) * 0.125) * x;
  outv[i * 8u + 6u] = vec4(determinant(mat3(b)), a[int(i) % 4][int(i) / 4], b[2][1], c[1][2]);
  int e;
  float m = frexp(x.z + 1.0, e);
  outv[i * 8u + 7u] = vec4(ldexp(x.x, 3), fma(x.y, x.z, x.w), float(packHalf2x16(x.xy) & 0xffffu), m + float(e));
}
"""
    rng = np.random.default_rng(3)
    head = rng.integers(-4, 5, 16 + 16 + 8).astype(np.float32)  # a (16), b (16), c: 2 columns of vec3 padded to 16
    data = np.concatenate([head, rng.integers(-3, 4, 64).astype(np.float32)])
    size = 16 * 8 * 16
    path = scenario(tmp_path, text, local=16, groups=1, size=max(size, data.nbytes), data=data, dumps=True)
    device = np.frombuffer(_lavapipe(path).tobytes(), np.float32)[:size // 4]
    ours = np.frombuffer(_checker(path, 16, 1, data, max(size, data.nbytes)), np.float32)[:size // 4]
    np.testing.assert_allclose(ours, device, rtol=1e-5, atol=1e-5)


# ---- buffer device addresses ---------------------------------------------------------------------

REFERENCE = """#version 450
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x = 64) in;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Floats { float v[]; };
layout(push_constant) uniform PC { Floats src; uint64_t dst; } pc;
void main() {
  uint i = gl_GlobalInvocationID.x;
  Floats dst = Floats(pc.dst);
  dst.v[INDEX] = pc.src.v[i] * 2.0;
}
"""


def reference_scenario(folder: Path, index: str, src: int, dst: int) -> Path:
    """128 invocations copy doubled floats from the buffer at address ``src`` to the one at
    ``dst``; the addresses reach the shader in its push constants."""
    from kernellab.spirvsim.pointers import address_of
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "k.comp").write_text(REFERENCE.replace("INDEX", index))
    np.save(folder / "data.npy", np.arange(128, dtype=np.float32))
    np.save(folder / "pc.npy", np.asarray([address_of(src), address_of(dst)], np.uint64))
    doc = {"resources": [{"shader": {"uid": "k", "src": "k.comp", "type": "GLSL", "push_constants_size": 16}},
                         {"buffer": {"uid": "data", "size": 512, "shader_access": "readwrite", "src": "data.npy"}},
                         {"buffer": {"uid": "out", "size": 512, "shader_access": "readwrite"}},
                         {"raw_data": {"uid": "pc", "src": "pc.npy"}}],
           "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [2], "bindings": [],
                                              "push_data_ref": "pc"}}]}
    path = folder / "s.json"
    path.write_text(json.dumps(doc))
    return path


def test_buffer_reference_in_and_out_of_bounds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, doc = verify(reference_scenario(tmp_path / "clean", "i", 0, 1), capsys)
    assert (status, doc["findings"]) == (0, [])
    status, doc = verify(reference_scenario(tmp_path / "oob", "i + 1u", 0, 1), capsys)
    assert status == 1 and kinds(doc) == {"out-of-bounds"}
    (f,) = doc["findings"]
    assert f["resource"] == "out" and f["count"] == 1 and f["index"] == 128
    # an address inside no buffer: the third buffer's, and the scenario has two
    status, doc = verify(reference_scenario(tmp_path / "nowhere", "i", 0, 2), capsys)
    assert status == 1 and kinds(doc) == {"out-of-bounds"}
    assert doc["findings"][0]["count"] == 128 and "no buffer" in doc["findings"][0]["message"]
    # through an address, races are found in the buffer it points into
    status, doc = verify(reference_scenario(tmp_path / "racy", "i / 2u", 0, 1), capsys)
    assert status == 1 and kinds(doc) == {"data-race"} and doc["findings"][0]["resource"] == "out"
    # reading and writing one buffer through two addresses of it races too
    status, doc = verify(reference_scenario(tmp_path / "self", "127u - i", 0, 0), capsys)
    assert status == 1 and kinds(doc) == {"data-race"} and doc["findings"][0]["resource"] == "data"


def test_buffer_reference_values(tmp_path: Path) -> None:
    from kernellab.spirvsim.pointers import address_of
    spv = glsl_to_spirv(REFERENCE.replace("INDEX", "i"))
    data = np.arange(128, dtype=np.float32)
    pc = np.asarray([address_of(1), address_of(0)], np.uint64).tobytes()
    r = check_dispatch(spv, "main", (2, 1, 1), push_constants=pc,
                       addressable=[(address_of(0), Binding("out", bytes(512))),
                                    (address_of(1), Binding("data", data.tobytes()))])
    assert r.findings == []
    np.testing.assert_array_equal(np.frombuffer(r.buffers["out"], np.float32), data * 2)


# ---- several subgroups per workgroup: subgroup barriers order one subgroup's accesses -------------

SUBGROUP_PHASES = HEADER + """
shared uint s[LOCAL];
void main() {
  uint l = gl_LocalInvocationID.x;
  uint i = gl_GlobalInvocationID.x;
  s[l] = data[i];
  outv[i] = data[i] + 1u;
  BARRIER;
  uint mate = READ;
  data[i] = s[mate] + outv[gl_WorkGroupID.x * LOCAL + mate];
}
"""
#: the invocation each one reads after the barrier: the next one of its own subgroup, or the one a
#: subgroup further on (another subgroup of the workgroup when there are several)
SAME_SUBGROUP = "gl_SubgroupID * gl_SubgroupSize + (gl_SubgroupInvocationID + 1u) % gl_SubgroupSize"
NEXT_SUBGROUP = "(l + gl_SubgroupSize) % LOCAL"


@pytest.mark.parametrize("barrier", ["subgroupBarrier()",
                                     "subgroupMemoryBarrierShared(); subgroupMemoryBarrierBuffer(); subgroupBarrier()"])
def test_subgroup_barrier_orders_its_subgroup_only(barrier: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """With 8 subgroups of 8 in a workgroup of 64, a subgroup barrier orders the accesses of one
    subgroup (shared memory and buffers): reading a neighbour of the same subgroup after it is no
    race, reading one of another subgroup is."""
    text = SUBGROUP_PHASES.replace("BARRIER", barrier)
    data = np.arange(1024, dtype=np.uint32)
    clean = scenario(tmp_path / "clean", text.replace("READ", SAME_SUBGROUP), data=data)
    status, doc = verify(clean, capsys, "--subgroup-size", "8")
    assert (status, doc["findings"]) == (0, [])
    planted = scenario(tmp_path / "planted", text.replace("READ", NEXT_SUBGROUP), data=data)
    status, doc = verify(planted, capsys, "--subgroup-size", "8")
    assert status == 1 and kinds(doc) == {"data-race"}
    assert {f["address_space"] for f in doc["findings"]} == {"workgroup", "storage-buffer"}
    assert all(f["race"]["scope"] == "intra-group" for f in doc["findings"])
    # one subgroup per workgroup: the subgroup barrier is a workgroup barrier
    status, doc = verify(planted, capsys, "--subgroup-size", "64")
    assert (status, doc["findings"]) == (0, [])


def test_subgroup_memory_barrier_names_the_memory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A Subgroup-scope control barrier without memory semantics orders nothing; one with
    WorkgroupMemory semantics before it orders shared memory, not buffers."""
    data = np.arange(1024, dtype=np.uint32)
    text = SUBGROUP_PHASES.replace("READ", SAME_SUBGROUP)
    only_shared = text.replace("BARRIER", "subgroupMemoryBarrierShared(); controlBarrier(gl_ScopeSubgroup, "
                               "gl_ScopeSubgroup, 0, 0)").replace("#version 450\n", "#version 450\n"
                               "#extension GL_KHR_memory_scope_semantics : require\n")
    status, doc = verify(scenario(tmp_path / "shared", only_shared, data=data), capsys, "--subgroup-size", "8")
    assert status == 1 and {f["address_space"] for f in doc["findings"]} == {"storage-buffer"}


def test_subgroup_phase_keeps_the_other_subgroups_reader(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Three readers of one word in one workgroup phase, two of them in subgroup 0: after
    subgroup 0's barrier a write by subgroup 0 still races with subgroup 1's read (the shadow
    keeps the reader of the other subgroup, not the second of the same one)."""
    body = """
shared uint s[1];
void main() {
  uint l = gl_LocalInvocationID.x;
  if (l == 0u) s[0] = 7u;
  barrier();
  uint t = 0u;
  if (l == 0u) t = s[0];
  if (l == 8u) t += s[0];
  if (l == 1u) t += s[0];
  subgroupBarrier();
  if (l == WRITER) s[0] = 5u;
  outv[l] = t;
}
"""
    status, doc = verify(scenario(tmp_path / "planted", HEADER + body.replace("WRITER", "2u"), local=16, groups=1),
                         capsys, "--subgroup-size", "8")
    assert status == 1 and kinds(doc) == {"data-race"}
    (f,) = doc["findings"]
    assert {tuple(w["local"])[0] for w in f["examples"][0]["work_items"]} == {2, 8}
    status, doc = verify(scenario(tmp_path / "clean", HEADER + body.replace("WRITER", "2u").replace(
        "if (l == 8u) t += s[0];", ""), local=16, groups=1), capsys, "--subgroup-size", "8")
    assert (status, doc["findings"]) == (0, [])


# ---- release/acquire through atomics (the Vulkan memory model) ------------------------------------

MESSAGE_PASSING = """#version 450
#extension GL_KHR_memory_scope_semantics : require
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) buffer Data { uint data[]; };
layout(std430, set = 0, binding = 1) buffer Out { uint outv[]; };
void main() {
  uint i = gl_GlobalInvocationID.x;
  uint n = gl_NumWorkGroups.x * 64u;
  uint j = (i + 64u) % n;  // an invocation of the next workgroup
  data[i] = i + 1u;
  SEND
  RECEIVE
}
"""
ATOMIC_SEND = "atomicStore(outv[i], 1u, gl_ScopeDevice, gl_StorageSemanticsBuffer, SEM);"
ATOMIC_RECEIVE = ("if (atomicLoad(outv[j], gl_ScopeDevice, gl_StorageSemanticsBuffer, SEM) == 1u) "
                  "outv[n + i] = data[j];")
FENCE_SEND = "memoryBarrierBuffer(); atomicStore(outv[i], 1u, gl_ScopeDevice, 0, gl_SemanticsRelaxed);"
FENCE_RECEIVE = ("if (atomicLoad(outv[j], gl_ScopeDevice, 0, gl_SemanticsRelaxed) == 1u) "
                 "{ FENCE outv[n + i] = data[j]; }")
MESSAGES = {
    # a release store read by an acquire load orders the payload
    "release-acquire": (ATOMIC_SEND.replace("SEM", "gl_SemanticsRelease"),
                        ATOMIC_RECEIVE.replace("SEM", "gl_SemanticsAcquire"), True),
    "relaxed-store": (ATOMIC_SEND.replace("gl_StorageSemanticsBuffer, SEM", "0, gl_SemanticsRelaxed"),
                      ATOMIC_RECEIVE.replace("SEM", "gl_SemanticsAcquire"), False),
    "relaxed-load": (ATOMIC_SEND.replace("SEM", "gl_SemanticsRelease"),
                     ATOMIC_RECEIVE.replace("gl_StorageSemanticsBuffer, SEM", "0, gl_SemanticsRelaxed"), False),
    # fences around relaxed atomics synchronise as well
    "fences": (FENCE_SEND, FENCE_RECEIVE.replace("FENCE", "memoryBarrierBuffer();"), True),
    "no-acquire-fence": (FENCE_SEND, FENCE_RECEIVE.replace("FENCE", ""), False),
    # a Workgroup-scope release does not reach another workgroup
    "workgroup-scope": (ATOMIC_SEND.replace("SEM", "gl_SemanticsRelease").replace("gl_ScopeDevice", "gl_ScopeWorkgroup"),
                        ATOMIC_RECEIVE.replace("SEM", "gl_SemanticsAcquire").replace("gl_ScopeDevice",
                                                                                     "gl_ScopeWorkgroup"), False),
}


@pytest.mark.parametrize("case", sorted(MESSAGES))
def test_message_passing_through_atomics(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The payload written before a release and read after the acquire that reads it is ordered;
    with relaxed semantics (or a scope that does not hold both invocations) it is a data race."""
    send, receive, ordered = MESSAGES[case]
    text = MESSAGE_PASSING.replace("SEND", send).replace("RECEIVE", receive)
    status, doc = verify(scenario(tmp_path, text, local=64, groups=4), capsys)
    if ordered:
        assert (status, doc["findings"]) == (0, [])
    else:
        assert status == 1 and kinds(doc) == {"data-race"}
        (f,) = doc["findings"]
        assert f["resource"] == "data" and f["race"]["scope"] == "inter-group"
