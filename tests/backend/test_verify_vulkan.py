"""`kernellab verify S.json` on scenarios whose shaders run on Vulkan (GLSL, SPIR-V, OpenCL C
through clspv): every kind is found on a planted defect and not reported on the clean shader of
the same shape; hazards between dispatches follow the scenario's barriers."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kernellab import tools
from kernellab.cli import main

pytestmark = pytest.mark.skipif(tools.find("glslangValidator") is None, reason="needs glslangValidator")

HEADER = "#version 450\nlayout(local_size_x = 16) in;\n"
DATA = "layout(std430, set = 0, binding = 0) buffer Data { uint data[]; };\n"

# name -> (planted shader, clean shader, kind, race scope or None, line of the defect)
PLANTED: dict[str, tuple[str, str, str, str | None, int]] = {
    "shared-race": (
        HEADER + DATA + "shared uint tile[16];\n"
        "void main() {\n"
        "  uint l = gl_LocalInvocationID.x;\n"
        "  tile[l] = data[gl_GlobalInvocationID.x];\n"
        "  data[gl_GlobalInvocationID.x] = tile[(l + 1u) % 16u];\n"
        "}\n",
        HEADER + DATA + "shared uint tile[16];\n"
        "void main() {\n"
        "  uint l = gl_LocalInvocationID.x;\n"
        "  tile[l] = data[gl_GlobalInvocationID.x];\n"
        "  barrier();\n"
        "  data[gl_GlobalInvocationID.x] = tile[(l + 1u) % 16u];\n"
        "}\n", "data-race", "intra-group", 8),
    "buffer-race-across-workgroups": (
        HEADER + DATA +
        "void main() {\n"
        "  data[gl_LocalInvocationID.x * 4u + gl_WorkGroupID.x / 2u] = gl_GlobalInvocationID.x;\n"
        "}\n",
        HEADER + DATA +
        "void main() {\n"
        "  data[gl_LocalInvocationID.x * 4u + gl_WorkGroupID.x] = gl_GlobalInvocationID.x;\n"
        "}\n", "data-race", "inter-group", 5),
    "barrier-divergence": (
        HEADER + DATA + "shared uint tile[16];\n"
        "void main() {\n"
        "  tile[gl_LocalInvocationID.x] = 1u;\n"
        "  if (gl_LocalInvocationID.x < 8u) barrier();\n"
        "  data[gl_GlobalInvocationID.x] = tile[gl_LocalInvocationID.x];\n"
        "}\n",
        HEADER + DATA + "shared uint tile[16];\n"
        "void main() {\n"
        "  tile[gl_LocalInvocationID.x] = 1u;\n"
        "  if (gl_WorkGroupID.x < 2u) barrier();  // uniform in each workgroup\n"
        "  data[gl_GlobalInvocationID.x] = tile[gl_LocalInvocationID.x];\n"
        "}\n", "barrier-divergence", None, 7),
    "out-of-bounds": (
        HEADER + DATA +
        "void main() {\n"
        "  data[gl_GlobalInvocationID.x + 1u] = 7u;\n"
        "}\n",
        HEADER + DATA +
        "void main() {\n"
        "  data[gl_GlobalInvocationID.x] = 7u;\n"
        "}\n", "out-of-bounds", None, 5),
}


def scenario(folder: Path, shaders: dict[str, str], commands: list[dict[str, Any]], *,
             resources: list[dict[str, Any]] | None = None, size: int = 256) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    res: list[dict[str, Any]] = []
    for uid, text in shaders.items():
        (folder / f"{uid}.comp").write_text(text)
        res.append({"shader": {"uid": uid, "src": f"{uid}.comp", "type": "GLSL"}})
    res += [{"buffer": {"uid": "data", "size": size, "shader_access": "readwrite"}},
            {"buffer": {"uid": "out", "size": size, "shader_access": "readwrite"}}]
    res += resources or []
    path = folder / "s.json"
    path.write_text(json.dumps({"resources": res, "commands": commands}))
    return path


def dispatch(shader: str, groups: int = 4, *, implicit_barrier: bool = True, out: bool = False) -> dict[str, Any]:
    bindings = [{"set": 0, "id": 0, "resource_ref": "data"}]
    if out:
        bindings.append({"set": 0, "id": 1, "resource_ref": "out"})
    return {"dispatch_compute": {"shader_ref": shader, "rangeND": [groups], "bindings": bindings,
                                 "implicit_barrier": implicit_barrier}}


def verify(path: Path, capsys: pytest.CaptureFixture[str], *options: str) -> tuple[int, dict[str, Any]]:
    status = main(["verify", str(path), "--json", *options])
    out = capsys.readouterr().out
    return status, json.loads(out) if out.strip() else {}


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_planted_defect_found_and_clean_version_verified(name: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    planted, clean, kind, scope, line = PLANTED[name]
    status, doc = verify(scenario(tmp_path / "planted", {"k": planted}, [dispatch("k")]), capsys)
    assert status == 1 and doc["verdict"] == "defects" and doc["checker"] == "spirv"
    found = [f for f in doc["findings"] if f["kind"] == kind]
    assert found, doc["findings"]
    f = found[0]
    assert f["severity"] == "defect"
    assert f["location"]["file"] == str((tmp_path / "planted" / "k.comp").resolve())
    places = {(a["location"]["line"], a["source_line"]) for a in f.get("accesses") or [f]}
    assert (line, planted.splitlines()[line - 1].strip()) in places
    assert f["location"]["file"] == str((tmp_path / "planted" / "k.comp").resolve())
    assert f["kernel"] == "k (main)" and f["instantiation"] == 0
    assert all(set(w) == {"global", "local", "group"} for ex in f["work_items"] for w in ex)
    if scope:
        assert f["race"]["scope"] == scope
    if kind != "barrier-divergence":
        assert f["resource"] in ("data", None) and f["index"] is not None
    status, doc = verify(scenario(tmp_path / "clean", {"k": clean}, [dispatch("k")]), capsys)
    assert (status, doc["verdict"], doc["findings"]) == (0, "verified", [])


def test_shared_race_names_the_variable_and_element(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    planted = PLANTED["shared-race"][0]
    _, doc = verify(scenario(tmp_path, {"k": planted}, [dispatch("k")]), capsys)
    (f,) = doc["findings"]
    assert f["variable"] == "tile" and f["resource"] is None and f["address_space"] == "workgroup"
    assert 0 <= f["index"] < 16 and f["race"]["type"] == "read-write"
    assert len(f["accesses"]) == 2 and {a["location"]["line"] for a in f["accesses"]} == {7, 8}


def test_buffer_race_names_uid_and_element(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    planted = PLANTED["buffer-race-across-workgroups"][0]
    _, doc = verify(scenario(tmp_path, {"k": planted}, [dispatch("k")]), capsys)
    (f,) = doc["findings"]
    assert f["resource"] == "data" and f["index"] % 4 in (0, 1) and f["race"]["type"] == "write-write"
    groups = {tuple(w["group"]) for w in f["work_items"][0]}
    assert len(groups) == 2


WRITER = HEADER + DATA + "void main() { data[gl_GlobalInvocationID.x] = gl_GlobalInvocationID.x; }\n"
READER = HEADER + ("layout(std430, set = 0, binding = 0) readonly buffer Data { uint data[]; };\n"
                   "layout(std430, set = 0, binding = 1) buffer Out { uint outv[]; };\n"
                   "void main() { outv[gl_GlobalInvocationID.x] = data[gl_GlobalInvocationID.x] * 2u; }\n")


def _barrier(kind: str, **fields: Any) -> dict[str, Any]:
    base = {"uid": "b", "src_access": "ACCESS_COMPUTE_SHADER_WRITE", "dst_access": "ACCESS_COMPUTE_SHADER_READ",
            "src_stage": ["COMPUTE"], "dst_stage": ["COMPUTE"]}
    return {kind: dict(base, **fields)}


def _two(tmp_path: Path, middle: list[dict[str, Any]], resources: list[dict[str, Any]] | None = None,
         implicit: bool = False) -> Path:
    return scenario(tmp_path, {"w": WRITER, "r": READER},
                    [dispatch("w", implicit_barrier=implicit), *middle, dispatch("r", out=True)], resources=resources)


def test_cross_dispatch_hazard_without_barrier(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, doc = verify(_two(tmp_path, []), capsys)
    assert status == 1
    (f,) = doc["findings"]
    assert f["kind"] == "data-race" and f["race"] == {"type": "read-write", "scope": "inter-dispatch"}
    assert f["resource"] == "data" and f["index"] == 0 and f["count"] == 64
    assert f["examples"][0]["commands"] == [0, 1]
    assert "/commands/0 and /commands/1" in f["detail"] and f["instantiation"] == 1
    # the second dispatch read what the first wrote
    assert [launch["verdict"] for launch in doc["launches"]] == ["verified", "defects"]


def test_hazard_names_both_commands_invocations_and_lines(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    # the reader reads element i + 1, so the invocations of the two sides differ by one
    reader = READER.replace("data[gl_GlobalInvocationID.x] * 2u", "data[(gl_GlobalInvocationID.x + 1u) % 64u]")
    path = scenario(tmp_path, {"w": WRITER, "r": reader}, [dispatch("w", implicit_barrier=False), dispatch("r", out=True)])
    status, doc = verify(path, capsys)
    (f,) = doc["findings"]
    assert status == 1 and f["index"] == 0
    wrote, read = f["accesses"]
    assert wrote["what"] == "command 0 (w (main)) wrote" and read["what"] == "command 1 (r (main)) read"
    assert wrote["location"]["file"].endswith("w.comp") and read["location"]["file"].endswith("r.comp")
    assert wrote["source_line"] == WRITER.splitlines()[wrote["location"]["line"] - 1].strip()
    assert read["source_line"] == reader.splitlines()[read["location"]["line"] - 1].strip()
    # element 0: written by invocation 0 of command 0, read by invocation 63 of command 1
    ex = f["examples"][0]
    assert ex["commands"] == [0, 1] and [e["index"] for e in f["examples"]] == [0, 1, 2]
    assert ex["work_items"] == [{"global": [0, 0, 0], "local": [0, 0, 0], "group": [0, 0, 0]},
                                {"global": [63, 0, 0], "local": [15, 0, 0], "group": [3, 0, 0]}]
    assert [(a["command"], a["access"]) for a in ex["accesses"]] == [(0, "wrote"), (1, "read")]
    assert all(a["location"]["line"] and a["instruction"].startswith(("OpStore", "OpLoad")) for a in ex["accesses"])
    assert f["work_items"][0] == ex["work_items"]
    # the text report: both lines with their commands, the invocations
    assert main(["verify", str(path)]) == 1
    text = capsys.readouterr().out
    assert f"w.comp:{wrote['location']['line']}" in text and "(command 0 (w (main)) wrote)" in text
    assert f"r.comp:{read['location']['line']}" in text and "(command 1 (r (main)) read)" in text
    assert "e.g. global (0, 0, 0) local (0, 0, 0) group (0, 0, 0) vs global (63, 0, 0) local (15, 0, 0) group (3, 0, 0)" \
        in text


@pytest.mark.parametrize("how", ["implicit", "memory_barrier", "buffer_barrier", "mark_boundary"])
def test_no_hazard_when_a_barrier_orders_the_dispatches(how: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    if how == "implicit":
        path = _two(tmp_path, [], implicit=True)
    elif how == "memory_barrier":
        path = _two(tmp_path, [{"dispatch_barrier": {"memory_barrier_refs": ["b"]}}], [_barrier("memory_barrier")])
    elif how == "buffer_barrier":
        path = _two(tmp_path, [{"dispatch_barrier": {"buffer_barrier_refs": ["b"]}}],
                    [_barrier("buffer_barrier", buffer_resource="data", size=256)])
    else:
        path = _two(tmp_path, [{"mark_boundary": {"resources": []}}])
    status, doc = verify(path, capsys)
    assert (status, doc["findings"]) == (0, [])


@pytest.mark.parametrize("barrier, covered", [
    (dict(dst_access="ACCESS_COMPUTE_SHADER_WRITE"), False),  # a read after the barrier is not made visible
    (dict(src_access="ACCESS_COMPUTE_SHADER_READ"), False),  # the writes are not made available
    (dict(src_stage=["GRAPH"]), False),  # the compute stage is not in the first scope
    (dict(src_access="ACCESS_MEMORY_WRITE", dst_access="ACCESS_MEMORY_READ", src_stage=["ALL"]), True),
])
def test_barrier_access_masks_and_stages(barrier: dict[str, Any], covered: bool, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    path = _two(tmp_path, [{"dispatch_barrier": {"memory_barrier_refs": ["b"]}}], [_barrier("memory_barrier", **barrier)])
    status, doc = verify(path, capsys)
    assert status == (0 if covered else 1), doc["findings"]


def test_buffer_barrier_covers_its_range_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _two(tmp_path, [{"dispatch_barrier": {"buffer_barrier_refs": ["b"]}}],
                [_barrier("buffer_barrier", buffer_resource="data", offset=0, size=128)])
    status, doc = verify(path, capsys)
    (f,) = doc["findings"]
    assert status == 1 and f["index"] == 32 and f["count"] == 32


def test_write_after_read_needs_only_an_execution_dependency(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    shaders = {"r": READER, "w": WRITER}
    racy = scenario(tmp_path / "racy", shaders, [dispatch("r", out=True, implicit_barrier=False), dispatch("w")])
    status, doc = verify(racy, capsys)
    assert status == 1 and doc["findings"][0]["message"].startswith("hazard on buffer data")
    ordered = scenario(tmp_path / "ordered", shaders,
                       [dispatch("r", out=True, implicit_barrier=False),
                        {"dispatch_barrier": {"memory_barrier_refs": ["b"]}}, dispatch("w")],
                       resources=[_barrier("memory_barrier", src_access="ACCESS_COMPUTE_SHADER_READ",
                                           dst_access="ACCESS_COMPUTE_SHADER_READ")])
    status, doc = verify(ordered, capsys)
    assert (status, doc["findings"]) == (0, [])


UNINITIALIZED = HEADER + DATA + ("shared uint tile[32];\n"
                                 "void main() {\n"
                                 "  tile[gl_LocalInvocationID.x] = 1u;\n"
                                 "  barrier();\n"
                                 "  data[gl_GlobalInvocationID.x] = tile[gl_LocalInvocationID.x + 16u];\n"
                                 "}\n")


def test_uninitialized_read_is_a_warning_unless_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = scenario(tmp_path / "planted", {"k": UNINITIALIZED}, [dispatch("k")])
    status, doc = verify(path, capsys)
    assert (status, doc["verdict"]) == (0, "verified")  # not tracked unless asked
    status, doc = verify(path, capsys, "--check", "uninitialized")
    assert status == 1 and [f["kind"] for f in doc["findings"]] == ["uninitialized-read"]
    f = doc["findings"][0]
    assert f["variable"] == "tile" and f["location"]["line"] == 8 and f["severity"] == "defect"
    clean = scenario(tmp_path / "clean", {"k": UNINITIALIZED.replace("+ 16u", "")}, [dispatch("k")])
    assert verify(clean, capsys, "--check", "uninitialized")[0] == 0


def test_dispatches_read_what_the_previous_ones_wrote(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the second shader indexes with what the first wrote: out of bounds only if the data flowed
    indexer = HEADER + DATA + "void main() { data[data[gl_GlobalInvocationID.x] + 1u] = 0u; }\n"
    path = scenario(tmp_path, {"w": WRITER, "i": indexer}, [dispatch("w"), dispatch("i")])
    status, doc = verify(path, capsys)
    kinds = {(f["kind"], f["instantiation"]) for f in doc["findings"]}
    assert ("out-of-bounds", 1) in kinds and status == 1


def test_buffer_src_push_and_spec_constants(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shader = ("#version 450\nlayout(local_size_x_id = 0) in;\n" + DATA +
              "layout(std430, set = 0, binding = 1) readonly buffer Offsets { uint offsets[]; };\n"
              "layout(push_constant) uniform P { uint n; } p;\n"
              "void main() { if (gl_GlobalInvocationID.x < p.n) data[gl_GlobalInvocationID.x + offsets[0]] = 1u; }\n")
    for n, (count, start, want) in enumerate([(64, 0, 0), (64, 1, 1), (63, 1, 0)]):
        folder = tmp_path / str(n)
        folder.mkdir()
        np.save(folder / "init.npy", np.full(64, start, np.uint32))
        np.save(folder / "push.npy", np.frombuffer(np.uint32(count).tobytes(), np.uint8))
        res = [{"raw_data": {"uid": "push", "src": "push.npy"}}]
        path = scenario(folder, {"k": shader}, [{"dispatch_compute": {
            "shader_ref": "k", "rangeND": [4], "push_data_ref": "push",
            "bindings": [{"set": 0, "id": 0, "resource_ref": "data"},
                         {"set": 0, "id": 1, "resource_ref": "out"}]}}], resources=res)
        doc = json.loads(path.read_text())
        doc["resources"][0]["shader"]["specialization_constants"] = [{"id": 0, "value": 16}]
        doc["resources"][0]["shader"]["push_constants_size"] = 4
        doc["resources"][2]["buffer"]["src"] = "init.npy"
        path.write_text(json.dumps(doc))
        status, out = verify(path, capsys)
        assert status == want, (count, start, out["findings"])


def test_text_report_names_the_checker_and_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = scenario(tmp_path, {"k": PLANTED["shared-race"][0]}, [dispatch("k")])
    assert main(["verify", str(path)]) == 1
    text = capsys.readouterr().out
    assert "reports of the SPIR-V checker" in text and "Oclgrind" not in text
    assert f"{(tmp_path / 'k.comp').resolve()}:8:" in text and "tile[(l + 1u) % 16u]" in text


def test_past_the_work_limit_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELLAB_VERIFY_MAX_WORK", "1000")
    path = scenario(tmp_path, {"k": WRITER}, [dispatch("k", groups=4096)], size=4096 * 64)
    assert main(["verify", str(path)]) == 2
    err = capsys.readouterr().err
    assert "/commands/0/dispatch_compute" in err and "invocation-instructions" in err


def test_unsupported_instruction_refused_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shader = ("#version 450\n#extension GL_NV_shader_subgroup_partitioned : require\n"
              "layout(local_size_x = 16) in;\n" + DATA +
              "void main() { data[gl_GlobalInvocationID.x] = subgroupPartitionNV(1u).x; }\n")
    path = scenario(tmp_path, {"k": shader}, [dispatch("k")])
    assert main(["verify", str(path)]) == 2
    assert "GroupNonUniformPartitionedNV" in capsys.readouterr().err


NEEDS_CLSPV = pytest.mark.skipif(tools.find("clspv") is None and importlib.util.find_spec("pyclspv") is None,
                                 reason="needs clspv: pip install pyclspv")


def verify_opencl_pair(tmp_path: Path, capsys: pytest.CaptureFixture[str], planted: str, clean: str, *,
                       push: int = 0) -> dict[str, Any]:
    """``verify --vulkan`` of one OpenCL C kernel ``k`` over a 256-byte buffer in 4 workgroups of
    16 (``push`` bytes of zero push constants), planted then clean: the clean one must be
    verified; the planted one's document, which must say defects."""
    docs = {}
    for name, kernel, want in (("planted", planted, 1), ("clean", clean, 0)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "k.cl").write_text(kernel)
        shader: dict[str, Any] = {"uid": "k", "src": "k.cl", "type": "OpenCL-C", "entry": "k",
                                  "specialization_constants": [{"id": 0, "value": 16}, {"id": 1, "value": 1},
                                                               {"id": 2, "value": 1}]}
        resources: list[dict[str, Any]] = [{"shader": shader},
                                           {"buffer": {"uid": "data", "size": 256, "shader_access": "readwrite"}}]
        command: dict[str, Any] = {"shader_ref": "k", "rangeND": [4],
                                   "bindings": [{"set": 0, "id": 0, "resource_ref": "data"}]}
        if push:
            np.save(folder / "push.npy", np.zeros(push, np.uint8))
            shader["push_constants_size"] = push
            resources.append({"raw_data": {"uid": "push", "src": "push.npy"}})
            command["push_data_ref"] = "push"
        (folder / "s.json").write_text(json.dumps({"resources": resources, "commands": [{"dispatch_compute": command}]}))
        status, docs[name] = verify(folder / "s.json", capsys, "--vulkan")
        assert status == want, docs[name]
        assert docs[name]["checker"] == "spirv"
    return docs["planted"]


# name -> (kernel, its planted and clean INDEX/BARRIER, push constant bytes, the planted race)
OPENCL_PAIRS: dict[str, tuple[str, tuple[str, str], int, dict[str, str] | None]] = {
    "local-race": (
        "__kernel void k(__global uint *data) {\n"
        "  __local uint tile[16];\n"
        "  uint l = get_local_id(0);\n"
        "  tile[l] = data[get_global_id(0)];\n"
        "  BARRIER\n"
        "  data[get_global_id(0)] = tile[(l + 1) % 16];\n"
        "}\n", ("", "barrier(CLK_LOCAL_MEM_FENCE);"), 0, None),
    # GPUVerify's test_structs/store_ptr_element: clspv crashes (SIGSEGV) writing the argument
    # information kernellab asks for (-cl-kernel-arg-info) of such a parameter, so the kernel is
    # compiled without it; the race planted through the struct's pointer is still found
    "struct-parameter-holding-a-pointer": (
        "struct s { __global uint *p; };\n"
        "__kernel void k(__global uint *data, struct s q) {\n"
        "  q.p = data;\n"
        "  q.p[INDEX] = get_global_id(0);\n"
        "}\n", ("get_global_id(0) / 2", "get_global_id(0)"), 8, {"type": "write-write", "scope": "intra-group"}),
}


@NEEDS_CLSPV
@pytest.mark.parametrize("name", sorted(OPENCL_PAIRS))
def test_opencl_c_on_vulkan_through_clspv(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kernel, (planted, clean), push, race = OPENCL_PAIRS[name]
    mark = "BARRIER" if "BARRIER" in kernel else "INDEX"
    doc = verify_opencl_pair(tmp_path, capsys, kernel.replace(mark, planted), kernel.replace(mark, clean), push=push)
    f = doc["findings"][0]
    assert f["kind"] == "data-race"
    if race is not None:
        assert f["race"] == race


def test_several_scenarios_in_one_call_and_index(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    racy = scenario(tmp_path / "racy", {"k": PLANTED["shared-race"][0]}, [dispatch("k")])
    clean = scenario(tmp_path / "clean", {"k": PLANTED["shared-race"][1]}, [dispatch("k")])
    status = main(["verify", str(clean), str(racy), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert status == 1 and doc["verdict"] == "defects"
    assert [f["verdict"] for f in doc["files"]] == ["verified", "defects"]
    assert [f["file"] for f in doc["files"]] == [str(clean), str(racy)]
    two = scenario(tmp_path / "two", {"k": PLANTED["shared-race"][1], "r": PLANTED["shared-race"][0]},
                   [dispatch("k"), dispatch("r")])
    assert verify(two, capsys, "--index", "0")[0] == 0  # dispatch 0 is clean; dispatch 1 still ran
    status, doc = verify(two, capsys, "--index", "1")
    assert status == 1 and {f["instantiation"] for f in doc["findings"]} == {1}


def test_spirv_shader_checked_as_given(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kernellab.spirvsim import glsl_to_spirv
    for name, source, want in (("racy", PLANTED["shared-race"][0], 1), ("clean", PLANTED["shared-race"][1], 0)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "k.spv").write_bytes(glsl_to_spirv(source, debug="-g"))
        (folder / "s.json").write_text(json.dumps({
            "resources": [{"shader": {"uid": "k", "src": "k.spv", "type": "SPIR-V"}},
                          {"buffer": {"uid": "data", "size": 256, "shader_access": "readwrite"}}],
            "commands": [dispatch("k")]}))
        status, doc = verify(folder / "s.json", capsys)
        assert status == want and doc["checker"] == "spirv"
        if want:
            (f,) = doc["findings"]
            assert f["kind"] == "data-race" and f["variable"] == "tile" and f["location"]["line"] in (7, 8)


def test_aliased_buffers_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = scenario(tmp_path, {"k": WRITER}, [dispatch("k")])
    doc = json.loads(path.read_text())
    for r in doc["resources"][1:3]:
        r["buffer"]["memory_group"] = {"id": "shared"}
    path.write_text(json.dumps(doc))
    assert main(["verify", str(path)]) == 2
    err = capsys.readouterr().err
    assert "/commands/0/dispatch_compute/bindings/0" in err and "memory_group" in err


def test_a_scenario_is_loaded_once_and_each_shader_decoded_once(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from kernellab.formats import scenario as scenario_format
    from kernellab.spirvsim import dispatch as spirvsim_dispatch
    from kernellab.spirvsim import module as spirvsim_module
    calls = {"load_scenario": 0, "decode": 0}

    def counting(name: str, real: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return real(*args, **kwargs)
        return call
    monkeypatch.setattr(scenario_format, "load_scenario", counting("load_scenario", scenario_format.load_scenario))
    decode = counting("decode", spirvsim_module.load)
    monkeypatch.setattr(spirvsim_module, "load", decode)
    monkeypatch.setattr(spirvsim_dispatch, "load", decode)
    # three dispatches of two shaders: the first runs twice
    path = scenario(tmp_path, {"k": WRITER, "j": PLANTED["shared-race"][1]},
                    [dispatch("k"), dispatch("j"), dispatch("k")])
    status, doc = verify(path, capsys)
    assert status == 0 and [l["kernel"] for l in doc["launches"]] == ["k (main)", "j (main)", "k (main)"]
    assert calls == {"load_scenario": 1, "decode": 2}


def test_a_float_division_by_zero_is_the_shaders_result_not_a_warning(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], recwarn: pytest.WarningsRecorder) -> None:
    """IEEE gives inf and NaN; NumPy's RuntimeWarnings about them reached the user's terminal
    (Amber's opencl_read_and_write_image3d_rgba32i)."""
    shader = (HEADER + DATA + "void main() {\n"
              "  uint i = gl_GlobalInvocationID.x;\n"
              "  data[i] = floatBitsToUint(1.0 / float(data[i]) + sqrt(-1.0 - float(data[i])));\n"
              "}\n")
    status, doc = verify(scenario(tmp_path, {"k": shader}, [dispatch("k")]), capsys)
    assert status == 0 and doc["verdict"] == "verified", doc
    assert [str(w.message) for w in recwarn if issubclass(w.category, RuntimeWarning)] == []
