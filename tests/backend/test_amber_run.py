"""AmberScript files run on lavapipe: `kernellab run` exit statuses, `kernellab test` on .amber files."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FILES = Path(__file__).resolve().parent.parent / "amber"
CASES = sorted(FILES.glob("*.amber"))


def cli(*args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kernellab", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "XDG_RUNTIME_DIR": "/tmp"}, timeout=300)


def one_buffer_script(glsl: str, data_type: str, size: int, expect: str) -> str:
    """A script running one GLSL compute shader once over one storage buffer ``b`` (binding 0),
    zero-filled, then checking its first elements."""
    return f"""#!amber
SHADER compute s GLSL TARGET_ENV spv1.3
{glsl}END
BUFFER b DATA_TYPE {data_type} SIZE {size} FILL 0
PIPELINE compute p
  ATTACH s
  BIND BUFFER b AS storage DESCRIPTOR_SET 0 BINDING 0
END
RUN p 1 1 1
EXPECT b IDX 0 EQ {expect}
"""


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_each_feature_file_passes_and_a_changed_expectation_fails(case, tmp_path):
    ok = cli("run", case, cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    text = case.read_text()
    last = text.rstrip().splitlines()[-1]
    assert last.startswith("EXPECT")
    # the negative control: the last EXPECT made false must fail, naming its line
    if "EQ_BUFFER want" in last:
        bad = last.replace("EQ_BUFFER want", "EQ_BUFFER in")
    elif "RMSE_BUFFER" in last:
        bad = last.replace("TOLERANCE 0.01", "TOLERANCE 0.00001")
    else:
        words = last.split()
        words[-1] = str(int(words[-1]) + 1) if words[-1].lstrip("-").isdigit() else str(float(words[-1]) + 9)
        bad = " ".join(words)
    for data in FILES.iterdir():  # the files a BUFFER ... FILE reads, beside the script
        if data.suffix != ".amber":
            (tmp_path / data.name).write_bytes(data.read_bytes())
    (tmp_path / case.name).write_text(text.replace(last, bad))
    failed = cli("run", tmp_path / case.name, cwd=tmp_path)
    line = len(text.rstrip().splitlines())
    assert failed.returncode == 1, failed.stderr
    assert f"{case.name}:{line}: {bad}" in failed.stderr


def test_a_missing_feature_is_a_skip_with_77(tmp_path):
    text = (FILES / "glsl_storage.amber").read_text()
    (tmp_path / "t.amber").write_text("DEVICE_EXTENSION VK_KHRX_no_such_extension\n" + text)
    r = cli("run", tmp_path / "t.amber", cwd=tmp_path)
    assert r.returncode == 77, r.stderr
    assert "DEVICE_EXTENSION VK_KHRX_no_such_extension (line 1)" in r.stderr


def test_bad_input_and_graphics_exit_2_naming_the_place(tmp_path):
    (tmp_path / "g.amber").write_text("#!amber\nPIPELINE graphics g\nEND\n")
    r = cli("run", tmp_path / "g.amber", cwd=tmp_path)
    assert r.returncode == 2 and "g.amber: line 2, column 10: graphics pipelines are not supported" in r.stderr
    (tmp_path / "b.amber").write_text("BUFFER b DATA_TYPE uint32 SIZE x\n")
    r = cli("run", tmp_path / "b.amber", cwd=tmp_path)
    assert r.returncode == 2 and "b.amber: line 1, column 32:" in r.stderr


def test_a_shader_that_does_not_compile_is_named_at_its_line_of_the_script(tmp_path):
    """`run` and `test` name the script and the line (glslang's line 3 is the script's line 5
    here), not kernellab's generated files; exit 2 for `run`, an error outcome for `test`."""
    glsl = "#version 430\nlayout(local_size_x=1) in;\nvoid main() { bogus(); }\n"
    (tmp_path / "bad.amber").write_text(one_buffer_script(glsl, "uint32", 4, "0"))
    r = cli("run", "bad.amber", "--output", "o", cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith("bad.amber: line 5: SHADER s (GLSL): 'bogus' : no matching overloaded function"), r.stderr
    assert "shader0.comp" not in r.stderr and "/amber/" not in r.stderr, r.stderr
    r = cli("test", "bad.amber", "--json", "--progress", "off", cwd=tmp_path)
    [result] = [json.loads(line) for line in r.stdout.splitlines()]
    assert result["message"].startswith("bad.amber: line 5: SHADER s (GLSL): 'bogus'"), result


def test_kernellab_test_takes_amber_files_and_folders(tmp_path):
    r = cli("test", FILES, "--jobs", "2", "--json", "--progress", "off", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    results = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(results) == len(CASES) and {d["status"] for d in results} == {"pass"}
    text = (FILES / "push_constant.amber").read_text()
    (tmp_path / "bad.amber").write_text(text.replace("EQ 7 10 13 16", "EQ 7 10 13 17"))
    (tmp_path / "skip.amber").write_text("DEVICE_FEATURE NoSuchFeatures.noSuchFeature\n" + text)
    r = cli("test", tmp_path / "bad.amber", tmp_path / "skip.amber", "--json", "--progress", "off", cwd=tmp_path)
    assert r.returncode == 1
    by_id = {d["id"]: d for d in map(json.loads, r.stdout.splitlines())}
    assert by_id["bad.amber"]["status"] == "fail" and "bad.amber:21: EXPECT out IDX 0 EQ 7 10 13 17" in by_id["bad.amber"]["message"]
    assert by_id["skip.amber"]["outcome"] == "skip"


def test_import_writes_scenarios_that_kernellab_test_runs_to_the_same_verdict(tmp_path):
    out = tmp_path / "imported"
    r = cli("import", FILES / "checkpoints.amber", "-o", out, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.glob("*.expect.json")) == ["checkpoints.checkpoint2.expect.json",
                                                                 "checkpoints.expect.json"]
    assert cli("test", out, "--progress", "off", cwd=tmp_path).returncode == 0
    assert cli("run", out / "checkpoints.json", "--check", cwd=tmp_path).returncode == 0
    sidecar = out / "checkpoints.checkpoint2.expect.json"
    sidecar.write_text(sidecar.read_text().replace("0.25", "0.3"))
    r = cli("test", out, "--progress", "off", "--no-rerun", cwd=tmp_path)
    assert r.returncode == 1 and "checkpoints.amber:22: EXPECT v IDX 0 EQ 2.0 1.0 0.5 0.3" in r.stderr


def test_a_shader_needing_an_extension_the_device_lacks_is_a_skip_naming_it(tmp_path):
    """The CTS's subgroup_uniform_control_flow files declare no DEVICE_EXTENSION: the requirement
    comes from the shader's SPIR-V (OpExtension), looked up in the registry's table."""
    from kernellab.backends.vulkan_supported import supported

    (tmp_path / "u.amber").write_text(one_buffer_script("""#version 450
#extension GL_EXT_subgroup_uniform_control_flow : enable
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer B { uint v[]; };
void main() [[subgroup_uniform_control_flow]] { v[0] = 5u; }
""", "uint32", 1, "5"))
    r = cli("run", tmp_path / "u.amber", cwd=tmp_path)
    if "VK_KHR_shader_subgroup_uniform_control_flow" in supported(0).extensions:
        assert r.returncode == 0, r.stderr
    else:
        assert r.returncode == 77, r.stderr
        assert ("pipeline.p: SPIR-V extension SPV_KHR_subgroup_uniform_control_flow "
                "(needs VK_KHR_shader_subgroup_uniform_control_flow)") in r.stderr


def test_subgroup_required_size_is_honoured_and_one_the_device_lacks_is_a_skip(tmp_path):
    from kernellab.backends.vulkan_supported import supported

    have = supported(0)
    size = have.limits["maxSubgroupSize"]
    text = """#!amber
SHADER compute s GLSL TARGET_ENV spv1.3
#version 450
#extension GL_KHR_shader_subgroup_basic : enable
layout(local_size_x = 128) in;
layout(set = 0, binding = 0) buffer B { uint v[]; };
void main() { v[gl_GlobalInvocationID.x] = gl_SubgroupSize; }
END
BUFFER out DATA_TYPE uint32 SIZE 128 FILL 0
PIPELINE compute p
  ATTACH s
  SUBGROUP s
    REQUIRED_SIZE @N@
  END
  BIND BUFFER out AS storage DESCRIPTOR_SET 0 BINDING 0
END
RUN p 1 1 1
EXPECT out IDX 508 EQ @N@
"""
    (tmp_path / "r.amber").write_text(text.replace("@N@", str(size)))
    r = cli("run", tmp_path / "r.amber", cwd=tmp_path)
    if have.feature("subgroupSizeControl") and have.limits["requiredSubgroupSizeStages"] & 0x20:
        assert r.returncode == 0, r.stderr
    else:
        assert r.returncode == 77, r.stderr
    (tmp_path / "big.amber").write_text(text.replace("@N@", str(size * 2)))
    r = cli("run", tmp_path / "big.amber", cwd=tmp_path)
    assert r.returncode == 77, r.stderr
    assert "(SUBGROUP of pipeline p, line 12)" in r.stderr


def test_the_subgroup_sizing_becomes_the_compute_stage_flags_and_required_size():
    from kernellab.backends.base import ProgramSpec, SubgroupSizing
    from kernellab.backends.vulkan import subgroup_stage_info
    from kernellab.native import vk as nvk

    vk = nvk.load()
    spec = ProgramSpec("p", b"", "spirv")
    assert subgroup_stage_info(vk, spec) == (0, None)
    flags, info = subgroup_stage_info(vk, ProgramSpec("p", b"", "spirv", subgroup=SubgroupSizing(16, True, False)))
    assert flags == 0x2 and info.requiredSubgroupSize == 16
    flags, info = subgroup_stage_info(vk, ProgramSpec("p", b"", "spirv", subgroup=SubgroupSizing(0, False, True)))
    assert flags == 0x1 and info is None


def test_shader_features_the_device_has_are_enabled_so_the_validation_layer_is_quiet(tmp_path):
    """An int8 storage buffer needs shaderInt8 and storageBuffer8BitAccess enabled at device
    creation (before, the validation layer reported VUID-RuntimeSpirv-storageBuffer8BitAccess-06328)."""
    from kernellab.backends.vulkan_supported import supported

    if not Path("/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json").exists():
        pytest.skip("the Khronos validation layer is not installed")
    if not (supported(0).feature("shaderInt8") and supported(0).feature("storageBuffer8BitAccess")):
        pytest.skip("the device has no 8-bit storage")
    (tmp_path / "i8.amber").write_text(one_buffer_script("""#version 450
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
layout(local_size_x = 4) in;
layout(set = 0, binding = 0) buffer B { int8_t v[]; };
void main() { v[gl_GlobalInvocationID.x] = int8_t(gl_GlobalInvocationID.x + 1u); }
""", "int8", 4, "1 2 3 4"))
    r = subprocess.run([sys.executable, "-m", "kernellab", "run", "--no-cache", tmp_path / "i8.amber"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=300,
                       env={**os.environ, "XDG_RUNTIME_DIR": "/tmp", "VK_INSTANCE_LAYERS": "VK_LAYER_KHRONOS_validation"})
    assert r.returncode == 0, r.stderr
    assert "VUID" not in r.stdout + r.stderr


def test_a_device_feature_the_device_has_runs(tmp_path):
    """DEVICE_FEATURE is looked up on the device the run opened (through either Vulkan binding)."""
    from kernellab.backends.vulkan_supported import supported

    text = (FILES / "glsl_storage.amber").read_text()
    (tmp_path / "t.amber").write_text("DEVICE_FEATURE Storage16BitFeatures.storageBuffer16BitAccess\n" + text)
    r = cli("run", tmp_path / "t.amber", cwd=tmp_path)
    assert r.returncode == (0 if supported(0).feature("storageBuffer16BitAccess") else 77), r.stderr


def test_an_amber_file_on_the_opencl_backend_is_refused_by_name_not_a_crash(tmp_path):
    # Amber's pipelines are Vulkan's: the OpenCL backend's device index once picked a Vulkan
    # physical device that did not exist (IndexError, an internal error)
    (tmp_path / "c.amber").write_text(one_buffer_script(
        "#version 430\nlayout(local_size_x=1) in;\nlayout(binding=0) buffer B { uint b[]; };\n"
        "void main() { b[0] = 7u; }\n", "uint32", 4, "7"))
    for args in (("run", "c.amber", "--backend", "opencl", "--output", "o"), ("test", "c.amber", "--backend", "opencl")):
        p = cli(*args, cwd=tmp_path)
        assert "internal error" not in p.stderr and "Traceback" not in p.stderr, p.stderr
        assert "c.amber: an AmberScript file runs on a Vulkan device, not on the opencl backend" in p.stderr
        assert p.returncode == (2 if args[0] == "run" else 1), p.stderr


@pytest.mark.parametrize("command", ["run", "test"])
def test_a_refusal_of_the_scenario_made_from_a_script_names_the_scripts_line(command, tmp_path):
    """The device's refusal of a dispatch (more work-groups than it allows) names the RUN line of
    the script, not the scenario kernellab wrote in its cache (JSON path /commands/0/...)."""
    text = one_buffer_script("#version 430\nlayout(local_size_x = 1) in;\n"
                             "layout(set = 0, binding = 0) buffer B { uint d[]; } b;\nvoid main() { b.d[0] = 1u; }\n",
                             "uint32", 4, "1")
    (tmp_path / "big.amber").write_text(text.replace("RUN p 1 1 1", "RUN p 4294967295 1 1"))
    out = cli(command, "big.amber", cwd=tmp_path)
    assert out.returncode == (2 if command == "run" else 1), out.stderr
    # the RUN is line 13: the shader's 4 lines are lines 3 to 6
    assert "big.amber: line 13: 4294967295 workgroups along x; the device allows at most" in out.stderr, out.stderr
    assert "cache" not in out.stderr and "big.json" not in out.stderr and "/commands/" not in out.stderr, out.stderr


def test_the_verdict_counts_its_expects_in_words(tmp_path):
    """One EXPECT "holds" (it said "1 EXPECT hold"), several "hold"."""
    glsl = "#version 450\nlayout(set = 0, binding = 0) buffer B { uint d[]; };\nvoid main() { d[0] = 7u; }\n"
    (tmp_path / "one.amber").write_text(one_buffer_script(glsl, "uint32", 4, "7"))
    (tmp_path / "two.amber").write_text(one_buffer_script(glsl, "uint32", 4, "7") + "EXPECT b IDX 4 EQ 0\n")
    one, two = (cli("run", f"{n}.amber", cwd=tmp_path) for n in ("one", "two"))
    assert "one.amber: pass (1 EXPECT holds)\n" in one.stdout + one.stderr, one.stdout + one.stderr
    assert "two.amber: pass (2 EXPECTs hold)\n" in two.stdout + two.stderr, two.stdout + two.stderr
