"""The conformance converters (conformance/): GPUVerify-style and Oclgrind-style tests written here
become kernel-instantiation launches that kernellab's reader accepts, with the right expectations."""
from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from conformance import common  # noqa: E402
from conformance import gpuverify_suite as gv
from conformance import oclgrind_suite as og

from kernellab.formats import gpuverify  # noqa: E402

RACE = """//xfail:NOT_ALL_VERIFIED
//--local_size=64 --num_groups=64 --no-inline
//kernel.cl:[\\s]+error:[\\s]+possible write-write race on p\\[0]

__kernel void foo(__global int *p, __local float *l, int x) {
  p[0] = get_global_id(0) + x;
}
"""
CLEAN = """//pass
//--local_size=[16,8] --global_size=[64,32]

kernel void bar(global float4 *a) { a[get_global_id(0)] = 1; }
"""
ANNOTATED = """//pass
//--local_size=64 --num_groups=2

__kernel void foo(__global int *p) {
  __requires(p != 0);
  p[get_global_id(0)] = 0;
}
"""
ONLY_DIVERGENCE = """//pass
//--local_size=64 --num_groups=2 --only-divergence

__kernel void foo(__global int *p) { p[0] = 1; }
"""
TOOL_ERROR = """//xfail:CLANG_ERROR
//--local_size=64 --num_groups=2

__kernel void foo( { }
"""
BODILESS = """//pass
//--local_size=64 --num_groups=2

int bar(void);
__kernel void foo(__global int *p) { p[0] = bar(); }
"""
ANY_SIZE = """//pass
//--local_size=1024 --num_groups=*

__kernel void foo(__global int *p) { }
"""
KERNEL_ARGS = """//pass
//--local_size=2 --num_groups=1 --kernel-args=foo,0x00000003

__kernel void foo(__local int *l, short n) { }
"""


def write_suite(root: Path, tests: dict[str, str]) -> Path:
    for name, text in tests.items():
        (root / name).mkdir(parents=True)
        (root / name / "kernel.cl").write_text(text)
    return root


def test_header_is_read(tmp_path):
    suite = write_suite(tmp_path / "s", {"race": RACE})
    t = gv.read_test(suite / "race" / "kernel.cl", suite)
    assert t.id == "race" and t.expectation == "NOT_ALL_VERIFIED" and t.expects_defect
    assert t.options == ["--local_size=64", "--num_groups=64", "--no-inline"]
    assert len(t.regexes) == 1 and gv.expected_kind(t) == "data-race"


def test_bad_first_line_is_an_error(tmp_path):
    (tmp_path / "kernel.cl").write_text("// nothing\n")
    with pytest.raises(ValueError, match="//pass"):
        gv.read_test(tmp_path / "kernel.cl", tmp_path)


@pytest.mark.parametrize("regex, kind", [
    ("kernel.cl:13:5:[\\s]+error:[\\s]+barrier may be reached by non-uniform control flow", "barrier-divergence"),
    ("possible array out-of-bounds access on array L", "out-of-bounds"),
    ("error: possible null pointer access for work item", "out-of-bounds"),
    ("this assertion might not hold", None),
])
def test_kind_from_expected_message(regex, kind):
    t = gv.Test("x", Path("x"), "NOT_ALL_VERIFIED", [], [regex])
    assert gv.expected_kind(t) == kind


def test_sizes_from_num_groups_global_size_and_scaled():
    assert gv.launch_sizes(gv.option_values(["--local_size=64", "--num_groups=64"]))[:2] == ([4096], [64])
    assert gv.launch_sizes(gv.option_values(["--local_size=[16,8]", "--global_size=[64,32]"]))[:2] == \
        ([64, 32], [16, 8])
    assert gv.launch_sizes(gv.option_values(["--local_size=1,10", "--num_groups=2,3"]))[:2] == ([2, 30], [1, 10])
    glob, local, notes = gv.launch_sizes(gv.option_values(["--local_size=2048", "--num_groups=1024"]))
    assert local == [1024] and glob[0] // local[0] >= 2 and glob[0] <= gv.MAX_WORK_ITEMS
    assert len(notes) == 2
    with pytest.raises(ValueError):
        gv.launch_sizes(gv.option_values(["--local_size=1024", "--num_groups=*"]))


def test_left_out_with_a_category(tmp_path):
    suite = write_suite(tmp_path / "s", {"ann": ANNOTATED, "div": ONLY_DIVERGENCE, "tool": TOOL_ERROR,
                                         "body": BODILESS, "any": ANY_SIZE})
    cats = {}
    for name in ("ann", "div", "tool", "body", "any"):
        path = suite / name / "kernel.cl"
        cats[name] = gv.left_out_reason(gv.read_test(path, suite), path.read_text())
    assert cats["ann"][0] == "annotations" and "__requires" in cats["ann"][1]
    assert cats["div"][0] == "options" and "--only-divergence" in cats["div"][1]
    assert cats["tool"][0] == "tool-error"
    assert cats["body"][0] == "symbolic" and "bar" in cats["body"][1]
    assert cats["any"][0] == "sizes"


HINTED = """//pass
//--local_size=16 --num_groups=2

__kernel void foo(__global int *p) {
  for (int i = 0; __invariant(__implies(__enabled(), i >= 0)), i < 4; i++) {
    p[i * get_global_size(0) + get_global_id(0)] = i;
  }
}
"""


def test_proof_hints_are_dropped_for_pass_tests_only(tmp_path):
    suite = write_suite(tmp_path / "s", {"pass": HINTED, "fail": HINTED.replace("//pass", "//xfail:NOT_ALL_VERIFIED")})
    entries = {e.id: e for e in gv.convert(suite, tmp_path / "out")}
    assert entries["fail"].category == "annotations" and "__invariant" in entries["fail"].reason
    assert entries["pass"].launch and "proof hints" in entries["pass"].notes[-1]
    text = (tmp_path / "out" / entries["pass"].launch).parent.joinpath("kernel.cl").read_text()
    assert text.startswith("/*") and "#define __invariant(x) ((void)0)\n" in text and "#line 1\n//pass" in text
    assert gv.strip_hints("a; __invariant(f(x), (y)); b")[0] == "a; ; b"


def test_bodiless_functions_are_prototypes_called_but_never_defined():
    src = ("int bar(void);\nint baz(int x);\nint baz(int x) { return x; }\n"
           "int qux() {\n  return get_global_id(0);\n}\n"
           "__kernel void k(__global int *p) { p[0] = bar() + baz(1) + qux(); }\n")
    assert gv.bodiless_functions(src) == ["bar"]


def test_chosen_sizes_and_scalars_are_noted(tmp_path, monkeypatch):
    suite = write_suite(tmp_path / "s", {"race": RACE})
    monkeypatch.setitem(gv.SIZES, "race", {"--num_groups": "2"})
    monkeypatch.setitem(gv.SCALARS, "race", {"x": -3})
    entry = gv.convert(suite, tmp_path / "out")[0]
    insts, _ = gpuverify.load(tmp_path / "out" / entry.launch)
    assert insts[0].global_size == (128,) and insts[0].kernel_arguments[2].value == "0xFFFFFFFD"
    assert entry.notes == ["--num_groups=64 -> 2 (chosen)", "scalar x = -3 (chosen)"]


def test_convert_writes_launches_kernellab_reads(tmp_path):
    suite = write_suite(tmp_path / "s", {"a/race": RACE, "clean": CLEAN, "ann": ANNOTATED, "args": KERNEL_ARGS})
    out = tmp_path / "out"
    entries = {e.id: e for e in gv.convert(suite, out)}
    assert entries["a/race"].expected == "defects" and entries["a/race"].kind == "data-race"
    assert entries["clean"].expected == "verified" and entries["clean"].kind is None
    assert entries["ann"].launch is None and entries["ann"].category == "annotations"
    manifest = json.loads((out / "manifest.json").read_text())
    assert [t["id"] for t in manifest["tests"]] == sorted(entries)

    insts, _ = gpuverify.load(out / entries["a/race"].launch)
    inst = insts[0]
    assert inst.entry_point == "foo" and inst.global_size == (4096,) and inst.local_size == (64,)
    buf, loc, x = inst.kernel_arguments
    assert buf.address_space == "global" and buf.size >= 4096 * 4
    data = buf.data_path.read_bytes()
    assert len(data) == buf.size and struct.unpack("<3i", data[:12]) == (0, 1, 2)  # distinct values
    assert loc.address_space == "local" and loc.size <= common.DEVICE_LOCAL_MEM and loc.data is None
    assert x.value == "0x1"
    assert inst.kernel_path.read_text() == RACE

    insts, _ = gpuverify.load(out / entries["clean"].launch)
    assert insts[0].entry_point == "bar" and insts[0].global_size == (64, 32)
    assert struct.unpack("<2f", insts[0].kernel_arguments[0].data_path.read_bytes()[4:12]) == (1.0, 2.0)

    insts, _ = gpuverify.load(out / entries["args"].launch)  # --kernel-args gives the scalars
    assert insts[0].kernel_arguments[1].value == "0x3"


def test_shared_data_files_are_named_by_content(tmp_path):
    suite = write_suite(tmp_path / "s", {"one": RACE, "two": RACE})
    out = tmp_path / "out"
    gv.convert(suite, out)
    assert len(list((out / "data").iterdir())) == 1


def test_kernel_params():
    name, params = common.kernel_params(
        "/* kernel void not_me(int a) */\n__kernel __attribute__((reqd_work_group_size(64,1,1))) void k(\n"
        "  __global const unsigned int *restrict a, local char2 *b, const float c, struct S s,\n"
        "  __read_only image2d_t img, sampler_t smp, int arr[])\n{ }")
    assert name == "k"
    assert [(p.name, p.kind, p.address_space) for p in params] == [
        ("a", "buffer", "global"), ("b", "local", "local"), ("c", "scalar", "private"),
        ("s", "scalar", "private"), ("img", "image", "private"), ("smp", "sampler", "private"),
        ("arr", "buffer", "global")]
    assert [p.element_size for p in params[:4]] == [4, 2, 4, None]
    with pytest.raises(ValueError):
        common.kernel_params("void f(int x) {}")


@pytest.mark.parametrize("status, stdout, verdict, defects, others", [
    (0, '{"verdict": "verified", "findings": []}', "verified", [], []),
    (1, '{"verdict": "defects", "findings": [{"kind": "data-race"}, {"kind": "uninitialized-read"}]}',
     "defects", ["data-race", "uninitialized-read"], []),
    (1, '{"verdict": "defects", "findings": [{"kind": "data-race", "severity": "defect"},'
        '{"kind": "uninitialized-read", "severity": "warning"}]}', "defects", ["data-race"], ["uninitialized-read"]),
    (0, '{"verdict": "verified", "findings": [{"kind": "uninitialized-read", "severity": "warning"}]}',
     "verified", [], ["uninitialized-read"]),
    (2, "", "error", [], []),
    (1, "not json", "error", [], []),
])
def test_interpret_verify_output(status, stdout, verdict, defects, others):
    o = common.interpret(status, stdout, "k.json: /0: bad\n")
    assert (o.verdict, o.defect_kinds, o.other_kinds) == (verdict, defects, others)


def test_a_launch_that_did_not_run_is_no_verdict():
    # kernellab verify said "verified" with a note when Oclgrind refused the enqueue (4 MiB of
    # __local memory): the suite counted that a TN though nothing was checked
    out = json.dumps({"verdict": "verified", "findings": [], "warnings": [{"kind": "api-error"}],
                      "launches": [{"instantiation": 0, "kernel": "foo", "ran": False,
                                    "error": "clEnqueueNDRangeKernel(foo) failed: CL_OUT_OF_RESOURCES"}]})
    o = common.interpret(0, out, "")
    assert o.verdict == "error" and "did not run" in o.message and "CL_OUT_OF_RESOURCES" in o.message
    ran = json.loads(out)
    ran["launches"][0]["ran"] = True
    assert common.interpret(0, json.dumps(ran), "").verdict == "verified"


def test_more_local_memory_than_the_device_is_left_out(tmp_path):
    text = ("//pass\n//--local_size=1024 --num_groups=1024 --no-inline\n"
            "__kernel void foo(int x) { __local int S[1024*1024]; S[get_local_id(0)] = x; }\n")
    suite = write_suite(tmp_path / "s", {"annotation_tests/ite": text})
    path = suite / "annotation_tests" / "ite" / "kernel.cl"
    category, reason = gv.left_out_reason(gv.read_test(path, suite), path.read_text())
    assert category == "device-limits" and "4 MiB" in reason


def test_a_constant_buffer_larger_than_the_devices_constant_memory_is_left_out(tmp_path):
    """arraycopy, simplebinomialoptions: Oclgrind refuses 4 MiB of __constant memory (64 KiB)."""
    text = ("//pass\n//--local_size=16 --num_groups=64 --no-inline\n"
            "__kernel void arrayCopy(__local float* dst, __constant float* src) { dst[0] = src[0]; }\n")
    suite = write_suite(tmp_path / "s", {"arraycopy": text, "clean": CLEAN})
    entries = {e.id: e for e in gv.convert(suite, tmp_path / "out")}
    assert entries["arraycopy"].launch is None and entries["arraycopy"].category == "device-limits"
    assert entries["arraycopy"].reason.startswith("__constant src: 1 x 4 MiB")
    assert "64 KiB" in entries["arraycopy"].reason and "CL_OUT_OF_RESOURCES" in entries["arraycopy"].reason
    assert entries["clean"].launch is not None  # __global buffers keep their size


def test_confusion_matrix_counts():
    rows = [{"id": "a", "launch": "a", "expected": "verified", "outcome": gv.classify("verified", "defects")},
            {"id": "b", "launch": "b", "expected": "defects", "outcome": gv.classify("defects", "defects"),
             "kind_right": False},
            {"id": "c", "launch": "c", "expected": "defects", "outcome": gv.classify("defects", "error")},
            {"id": "d", "launch": None, "expected": "verified", "category": "annotations"}]
    s = gv.summary(rows)
    assert s["matrix"] == {"pass": {"verified": 0, "defects": 1, "error": 0},
                           "xfail": {"verified": 0, "defects": 1, "error": 1}}
    assert s["kind"] == {"stated": 1, "right": 0} and s["left_out"] == {"annotations": 1}


# --- Oclgrind -----------------------------------------------------------------------------------

SIM = """# a comment
# ARGS: --build-options -cl-std=CL2.0
race.cl
race
4 1 1
2 1 1

<size=16 range=0:1:3 ro>
<size=8 int fill=-1 dump>
<size=12 float>
42
3 18
<size=32>
<size=2 hex char>
0x7f 0x01
"""
KERNEL = """typedef struct { float a, b, c; } S;
kernel void race(global const int *in, global int *out, S s, local int *tmp, char2 c)
{ out[0] = in[get_global_id(0)]; }
"""
REF = """ERROR Read-write data race at global memory address 0x1000000000000
ERROR Uninitialized value

EXACT Argument 'out': 8 bytes
"""


def test_sim_file_is_read():
    sim = og.read_sim(SIM)
    assert (sim.kernel_file, sim.kernel, sim.global_size, sim.local_size) == ("race.cl", "race", [4, 1, 1], [2, 1, 1])
    assert sim.driver_args == ["--build-options", "-cl-std=CL2.0"]
    assert [a.size for a in sim.args] == [16, 8, 12, 32, 2]
    assert sim.args[0].read_only and sim.args[2].values == ["42", "3", "18"] and sim.args[4].hex


def test_sim_argument_bytes():
    sim = og.read_sim(SIM)
    assert og.arg_bytes(sim.args[0], "int") == struct.pack("<4i", 0, 1, 2, 3)
    assert og.arg_bytes(sim.args[1], "int") == struct.pack("<2i", -1, -1)
    assert og.arg_bytes(sim.args[2], "float") == struct.pack("<3f", 42, 3, 18)
    assert og.arg_bytes(sim.args[4], "char") == bytes([0x7F, 0x01])
    with pytest.raises(ValueError, match="expected 3"):
        og.arg_bytes(og.SimArg(size=12, values=["1"]), "int")
    with pytest.raises(ValueError):
        og.read_sim("k.cl\nk\n1 1\n")


def test_expected_kinds_and_verdict():
    assert og.expected_kinds(REF) == ["data-race", "uninitialized-read"]
    assert og.expected_kinds("ERROR Work-group divergence detected (async copy)\n") == ["barrier-divergence"]
    assert og.expected_kinds("ERROR Invalid read from write-only buffer\n") == ["read-from-write-only"]
    assert og.expected_kinds("EXACT out[0] = 1\n") == []


def write_oclgrind_suite(root: Path) -> Path:
    (root / "data-race").mkdir(parents=True)
    (root / "data-race" / "race.sim").write_text(SIM)
    (root / "data-race" / "race.cl").write_text(KERNEL)
    (root / "data-race" / "race.ref").write_text(REF)
    (root / "misc").mkdir()
    (root / "misc" / "nul.sim").write_text("nul.cl\nnul\n1 1 1\n1 1 1\n<null>\n")
    (root / "misc" / "nul.cl").write_text("kernel void nul(global int *p) { }\n")
    (root / "misc" / "nul.ref").write_text("")
    (root / "TESTS").write_text("data-race/race\nmisc/nul\n")
    return root


def test_oclgrind_convert(tmp_path):
    suite = write_oclgrind_suite(tmp_path / "kernels")
    out = tmp_path / "out"
    entries = {e.id: e for e in og.convert(suite, out)}
    race, nul = entries["data-race/race"], entries["misc/nul"]
    assert race.expected == "defects" and race.expected_kinds == ["data-race", "uninitialized-read"]
    assert nul.launch is None and nul.category == "null-buffer" and nul.expected == "verified"
    insts, _ = gpuverify.load(out / race.launch)
    inst = insts[0]
    assert inst.global_size == (4, 1, 1) and inst.local_size == (2, 1, 1) and inst.compiler_flags == "-cl-std=CL2.0"
    a_in, a_out, s, tmp, c = inst.kernel_arguments
    assert a_in.flags == ("CL_MEM_READ_ONLY",) and a_in.data_path.read_bytes() == struct.pack("<4i", 0, 1, 2, 3)
    assert a_out.data_path.read_bytes() == struct.pack("<2i", -1, -1)
    assert int(s.value, 16).to_bytes(12, "little") == struct.pack("<3f", 42, 3, 18)
    assert tmp.address_space == "local" and tmp.size == 32
    assert c.value == "0x17F"


def test_oclgrind_arguments_must_match_parameters(tmp_path):
    suite = write_oclgrind_suite(tmp_path / "kernels")
    (suite / "data-race" / "race.cl").write_text("kernel void race(global int *out) { }\n")
    entry = og.convert(suite, tmp_path / "out")[0]
    assert entry.launch is None and entry.category == "unreadable" and "5 arguments for 1" in entry.reason


FAKE_KERNELLAB = """#!{python}
import json, sys
files = [a for a in sys.argv[2:] if a.endswith(".json")]
if "--timeout" not in sys.argv or sys.argv[sys.argv.index("--timeout") + 1] != "60":  # the suite's limit is verify's
    print("no --timeout 60", file=sys.stderr)
    sys.exit(2)
if any("bad" in f for f in files):
    print(f"{{files[0]}}: /0: bad input", file=sys.stderr)
    sys.exit(2)
def one(f):
    race = "race" in f
    return {{"verdict": "defects" if race else "verified", "file": f,
            "findings": [{{"kind": "data-race", "severity": "defect"}}] if race else
                        [{{"kind": "uninitialized-read", "severity": "warning"}}]}}
doc = one(files[0]) if len(files) == 1 else {{"verdict": "?", "files": [one(f) for f in files]}}
print(json.dumps(doc))
sys.exit(1 if any("race" in f for f in files) else 0)
"""


def test_verify_all_one_call_per_launch_or_batched(tmp_path):
    fake = tmp_path / "kernellab"
    fake.write_text(FAKE_KERNELLAB.format(python=sys.executable))
    fake.chmod(0o755)
    paths = [tmp_path / n for n in ("race.json", "clean.json", "bad.json")]
    for batch in (1, 3):
        got = dict(common.verify_all(paths, fake, timeout=60, batch=batch))
        assert [got[p].verdict for p in paths] == ["defects", "verified", "error"]
        assert got[paths[0]].defect_kinds == ["data-race"]
        assert got[paths[1]].other_kinds == ["uninitialized-read"]
        assert "bad input" in got[paths[2]].message


def test_command_line_convert_and_missing_suite(tmp_path, capsys):
    suite = write_suite(tmp_path / "s", {"race": RACE, "ann": ANNOTATED})
    assert gv.main(["convert", "--suite", str(suite), "--out", str(tmp_path / "out")]) == 0
    assert "2 tests: 1 launches, 1 left out" in capsys.readouterr().out
    assert og.main(["convert", "--suite", str(tmp_path / "nowhere"), "--out", str(tmp_path / "o2")]) == 2
    assert "no such folder" in capsys.readouterr().err
