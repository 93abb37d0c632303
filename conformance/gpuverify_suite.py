"""GPUVerify's OpenCL test suite as concrete launches, checked with ``kernellab verify``.

Each test of ``testsuite/OpenCL`` is a ``kernel.cl`` whose first lines say what GPUVerify must
answer (``//pass`` or ``//xfail:CODE``), with which options (``//--local_size=64 --num_groups=64``)
and, for failures, regular expressions its output must match. ``convert`` turns every test whose
verdict a single launch can show into a kernel-instantiation file with the header's sizes and
chosen argument data; the others are left out with a category and a reason. ``run`` verifies each
launch and compares: ``//pass`` expects ``verified``, ``//xfail:NOT_ALL_VERIFIED`` expects
``defects`` (and the kind, where the expected message names it).

    python conformance/gpuverify_suite.py run --suite /work/ext/gpuverify/testsuite/OpenCL
"""
from __future__ import annotations

import math
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``conformance`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from conformance import common  # noqa: E402

DEFAULT_SUITE = Path("/work/ext/gpuverify/testsuite/OpenCL")
DEFAULT_OUT = Path("/work/ext/gpuverify-launches")

#: Oclgrind simulates every work-item: launches larger than this are scaled down (groups first)
MAX_WORK_ITEMS = 16384
#: bytes of every __global/__constant buffer per work-item: GPUVerify's arrays have no bounds, so
#: buffers are sized far beyond any index the tests compute from the ids
BUFFER_BYTES_PER_ITEM = 256
MIN_BUFFER_BYTES = 4 << 20  # e.g. p[get_global_size(0) * i + gid] for i < 100 of float8
#: Oclgrind's CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE: the __constant buffers of a launch together
#: must fit, or it refuses the enqueue (CL_OUT_OF_RESOURCES)
DEVICE_CONSTANT_MEM = 65536
#: the value of every scalar argument the test does not give (--kernel-args) or override
DEFAULT_SCALAR = 1

#: GPUVerify's specification language: a test using it is about the specification, not only the kernel
_ANNOTATION = re.compile(r"\b(__(?!attribute__\b|attribute\b|kernel\b|global\b|local\b|constant\b|private\b"
                         r"|restrict\b|read_only\b|write_only\b|read_write\b)[A-Za-z_]\w*)")
#: GPUVerify's proof hints: a kernel it verifies with them is correct without them, so a launch of a
#: ``//pass`` test may drop them (nothing else of the specification language)
PROOF_HINTS = ("__invariant", "__global_invariant", "__function_wide_invariant", "__candidate_invariant",
               "__candidate_global_invariant", "__function_wide_candidate_invariant")
HINT_PREAMBLE = ("/* kernellab conformance: GPUVerify's invariants are proof hints, dropped for a launch */\n"
                 + "".join(f"#define {h}(x) ((void)0)\n" for h in PROOF_HINTS) + "#line 1\n")


def strip_hints(text: str) -> tuple[str, bool]:
    """``text`` without the proof-hint calls (arguments included), and whether there were any."""
    out, i, found = [], 0, False
    pattern = re.compile(r"\b(" + "|".join(PROOF_HINTS) + r")\s*\(")
    while (m := pattern.search(text, i)) is not None:
        depth, j = 1, m.end()
        while depth and j < len(text):
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            j += 1
        out.append(text[i:m.start()])
        i, found = j, True
    out.append(text[i:])
    return "".join(out), found


#: options that change what GPUVerify checks or assumes, so its verdict is not the launch's
_OPTION_REASONS = {
    "--only-divergence": "checks barrier divergence only (races in the kernel are not part of the verdict)",
    "--only-intra-group": "checks races within a work-group only (inter-group races are not part of the verdict)",
    "--no-barrier-access-checks": "does not check accesses around barriers",
    "--warp-sync": "assumes CUDA warp-synchronous execution, which OpenCL does not give",
    "--boogie-file": "adds Boogie axioms about the kernel's functions",
    "--only-log": "only logs accesses, no verdict",
    "--asymmetric-asserts": "changes how assertions are checked",
    "--only-requires": "checks preconditions only",
    "--no-annotations": "ignores the kernel's annotations",
    "--no-benign-tolerance": "counts benign write-write races (same value) as races, a GPUVerify switch",
    "--adversarial-abstraction": "abstracts shared memory contents: a defect found may need values no launch has",
    "--equality-abstraction": "tracks only whether values are equal: a race that writes back the value read "
                              "(or already there) is benign to GPUVerify, a race to a launch's detector",
}

#: tests whose verdict a single launch cannot show although nothing in the header says so
#: (found by reading the kernel); each with its category and reason
LEFT_OUT: dict[str, tuple[str, str]] = {
    "test_mod_invariants/local_direct": ("device-limits", "writes 1024 x 256 ints through a __local pointer: "
                                                          "1 MiB, more __local memory than Oclgrind's 32 KiB"),
    "localmultidimarraydecl": ("device-limits", "declares 400 KB of __local memory (Oclgrind has 32 KiB)"),
    "annotation_tests/ite": ("device-limits", "declares 4 MiB of __local memory (Oclgrind has 32 KiB): "
                                              "Oclgrind refuses the enqueue, so does kernellab before it"),
    "multidimarrays/test3": ("device-limits", "declares 3.8 MB of __local memory (Oclgrind has 32 KiB)"),
    "multidimarrays/test4": ("device-limits", "declares 1 MiB of __local memory (Oclgrind has 32 KiB) and "
                                              "work-groups of 64x64x64"),
    "array_bounds_tests/array_in_array": ("symbolic", "indexes with uninitialized __local memory: the "
                                                      "defect needs an index of 64 or more there, which "
                                                      "no launch's data can put"),
    "async_work_group_copy/fail/test14": ("spec-conflict", "expects a race between a copy and reads of its "
                                          "destination after the wait_group_events that waited for it, with no "
                                          "barrier; in OpenCL C the wait completes the work-group's copy for every "
                                          "work-item (the OpenCL CTS reads copied data right after the wait), and "
                                          "Oclgrind's own tests say so (see docs/verify.md)"),
    "async_work_group_copy/fail/test3": ("does-not-compile", "adds 1 to an event_t, which Clang rejects "
                                                             "(GPUVerify's front end accepts it)"),
    "test_structs/store_ptr_array_element": ("does-not-compile", "a struct holding pointers as a kernel "
                                                                 "argument, which OpenCL C forbids"),
    "nonterminating": ("symbolic", "an endless loop: GPUVerify proves the (vacuous) absence of races, a launch "
                                   "never ends"),
    "reducedstrengthnonloopbug": ("symbolic", "the kernel does nothing; the xfail records a false alarm of "
                                              "GPUVerify's invariant inference on a function it never calls"),
}

#: header sizes replaced for a test (option -> value) where the header's need more __local memory
#: than the device has or more simulated work than a run can take; the kernel's verdict does not
#: depend on the size
SIZES: dict[str, dict[str, str]] = {
    # data[10 * local_size + lid] through a __local pointer: 40 KiB at 1024, 10 KiB at 256
    "induction_variable": {"--local_size": "256"},
    "reducedstrength_generalised": {"--local_size": "256"},
    # p[i * local_size + lid] for i < 100 through a __local pointer: 400 KiB at 1024, 6.4 KiB at 16
    "annotation_tests/test_candidate_global_invariant": {"--local_size": "16"},
    # every work-item loops get_global_id(0) times: 134 million iterations at 16384 work-items
    "sourcelocation_tests/needs_source_location_ensures": {"--num_groups": "2", "--local_size": "64"},
    # Oclgrind prints one message per work-item (a misaligned atomic; a barrier reached with other
    # fence flags) and stops after 1000 (OCLGRIND_MAX_ERRORS): at 1024 work-items a group the race,
    # reported when the group ends, comes after the cap (kernellab then says the report was cut)
    "atomics/displaced": {"--local_size": "256"},
    "inter_group_and_barrier_flag_tests/fail/bad_write_then_read": {"--local_size": "256", "--num_groups": "2"},
}

#: scalar values chosen for a test (argument name -> value) where the default does not exercise it
SCALARS: dict[str, dict[str, int]] = {
    # the race is between p[0] and p[x]: only x == 0 shows it
    "report_global_id/test1": {"x": 0},
    "report_global_id/test2": {"x": 0},
    # with x + 100 < 102 the work-items with local id >= 5 loop for ever
    "break_test": {"x": 2},
    # A[tid] races with atomic_inc(A + 12) only when c == 0 (else the counter is in B)
    "atomics/pointers": {"c": 0},
    # the null pointer (or, in _equal, the race on A[0]) comes only with i == 0
    **{f"null_pointers/{t}": {"i": 0} for t in ("null_pointer_assignment", "null_pointer_assignment_equal",
                                               "null_pointer_assignment_function",
                                               "null_pointer_use_in_function",
                                               "null_pointer_use_in_function_inline")},
}

#: buffers filled with one value (argument name -> value) where distinct values do not show the verdict
FILLS: dict[str, dict[str, int]] = {
    # L[G[i]] with L of 64 elements: only an index of 64 or more shows the out-of-bounds access
    "array_bounds_tests/array_in_array_param": {"G": 64},
    # two copies of my_p and my_q (2 * p and 2 * q) collide on p: with p and q holding the same
    # values the two copies would write equal values, which no race detector calls a race
    "async_work_group_copy/fail/test5": {"q": 1000},
}

#: the defect's kind for xfail tests whose expected output does not name it (read from the kernel)
KINDS: dict[str, str] = {
    **{f"async_work_group_copy/fail/test{n}": "data-race" for n in (1, 2, 3, 4, 5, 10, 13, 14)},
    **{f"async_work_group_copy/fail/test{n}": "barrier-divergence" for n in (7, 9, 11, 12)},
    **{f"async_work_group_copy/fail/test{n}": "out-of-bounds" for n in (15, 16, 17, 18)},  # null pointers
    "atomics/forloop": "data-race",
    "atomics/refined_atomic_abstraction/bad_local_counters": "data-race",
    "atomics/refined_atomic_abstraction/predication": "data-race",
    "barrier_intervals/test2": "barrier-divergence",
    "imagetests/fail2dimagecopy": "data-race",
    "inter_group_and_barrier_flag_tests/fail/bad_write_then_read": "data-race",
    "misc/fail/miscfail1": "data-race",
    "misc/fail/miscfail3": "data-race",
    "misc/fail/miscfail9": "data-race",
    "report_global_id/test1": "data-race",
    "report_global_id/test2": "data-race",
    "shared_int": "data-race",
    "sourcelocation_tests/race_with_loop": "data-race",
}

_PROTOTYPE = re.compile(r"^[ \t]*(?!return\b|else\b|case\b|goto\b)(?:[A-Za-z_]\w*[ \t*]+)+([A-Za-z_]\w*)"
                        r"\s*\([^;{}]*\)\s*"
                        r"(?:__attribute__\s*\(\(.*?\)\)\s*)?;", re.M)


def bodiless_functions(source: str) -> list[str]:
    """Functions the kernel declares and calls but never defines (GPUVerify treats their results
    as any value; a launch cannot even link them)."""
    text = common.strip_comments(source)
    names = []
    for m in _PROTOTYPE.finditer(text):
        name = m.group(1)
        defined = re.search(r"\b" + name + r"\s*\([^;{}]*\)\s*(?:__attribute__\s*\(\(.*?\)\)\s*)?\{", text)
        called = len(re.findall(r"\b" + name + r"\s*\(", text)) > 1
        if not defined and called and name not in names:
            names.append(name)
    return names


@dataclass
class Test:
    """One test as its header states it."""
    id: str
    path: Path
    expectation: str  # "pass", or the xfail code ("NOT_ALL_VERIFIED", "CLANG_ERROR", ...)
    options: list[str]
    regexes: list[str]

    @property
    def expects_defect(self) -> bool:
        return self.expectation == "NOT_ALL_VERIFIED"


@dataclass
class Entry:
    """A test's line in the manifest: a launch to run, or the reason it is left out."""
    id: str
    expected: str  # "verified" / "defects" / "-" (tool error)
    kind: str | None = None
    launch: str | None = None
    category: str | None = None  # set when left out
    reason: str = ""
    notes: list[str] = field(default_factory=list)


def read_test(path: Path, suite: Path) -> Test:
    lines = path.read_text(errors="replace").splitlines()
    first = lines[0].strip() if lines else ""
    m = re.match(r"^//(pass|xfail:([A-Z_]+))", first, re.I)
    if not m:
        raise ValueError(f"{path}:1: expected //pass or //xfail:CODE, got {first!r}")
    expectation = "pass" if m.group(1).lower() == "pass" else m.group(2).upper()
    options = lines[1][2:].split() if len(lines) > 1 and lines[1].startswith("//") else []
    regexes = []
    for line in lines[2:]:
        if not (line.startswith("//") and len(line) > 2):
            break
        regexes.append(line[2:])
    test_id = str(path.parent.relative_to(suite))
    return Test(test_id, path, expectation, options, regexes)


def expected_kind(test: Test) -> str | None:
    """The kind of defect GPUVerify's expected message names (or the table's), if any."""
    if test.id in KINDS:
        return KINDS[test.id]
    text = " ".join(test.regexes).lower()
    if "race" in text:
        return "data-race"
    if "non-uniform control flow" in text or "barrier divergence" in text:
        return "barrier-divergence"
    if "out-of-bounds" in text or "null pointer" in text:
        return "out-of-bounds"
    return None


def option_values(options: list[str]) -> dict[str, str]:
    out = {}
    for opt in options:
        key, _, value = opt.partition("=")
        out[key] = value
    return out


def parse_dims(text: str) -> list[int]:
    """``64``, ``[64,64]``, ``1,10`` -> a list of sizes; ``*`` (any size) -> ValueError."""
    parts = [p for p in text.strip("[]").split(",") if p]
    if not parts or any(not p.strip().isdigit() for p in parts):
        raise ValueError(f"not a concrete size: {text!r}")
    return [int(p) for p in parts]


def launch_sizes(options: dict[str, str]) -> tuple[list[int], list[int], list[str]]:
    """Global and local sizes from the header, scaled to what Oclgrind can simulate; notes say how."""
    local = parse_dims(options["--local_size"])
    if "--global_size" in options:
        glob = parse_dims(options["--global_size"])
        if len(glob) != len(local) or any(g % l for g, l in zip(glob, local)):
            raise ValueError(f"global size {glob} is not a multiple of local size {local}")
        groups = [g // l for g, l in zip(glob, local)]
    else:
        groups = parse_dims(options["--num_groups"])
    dims = max(len(local), len(groups))
    local = local + [1] * (dims - len(local))
    groups = groups + [1] * (dims - len(groups))
    notes = []
    orig_local, orig_groups = list(local), list(groups)
    while math.prod(local) > common.DEVICE_MAX_WORK_GROUP:
        i = local.index(max(local))
        local[i] //= 2
    while math.prod(local) * math.prod(groups) > MAX_WORK_ITEMS:
        # halve the most numerous groups, keeping two where there were two or more so races
        # between work-groups can still happen
        wide = [i for i, g in enumerate(groups) if g > 2]
        if not wide:
            break
        i = max(wide, key=lambda j: groups[j])
        groups[i] = max(2, groups[i] // 2)
    if local != orig_local:
        notes.append(f"local size {orig_local} -> {local} (device maximum {common.DEVICE_MAX_WORK_GROUP})")
    if groups != orig_groups:
        notes.append(f"groups {orig_groups} -> {groups} (at most {MAX_WORK_ITEMS} work-items)")
    return [l * g for l, g in zip(local, groups)], local, notes


def left_out_reason(test: Test, source: str) -> tuple[str, str] | None:
    """(category, reason) when a launch cannot show the test's verdict, else None."""
    if test.expectation not in ("pass", "NOT_ALL_VERIFIED"):
        return ("tool-error", f"expects GPUVerify to stop with {test.expectation}, not a verdict on the kernel")
    if test.id in LEFT_OUT:
        return LEFT_OUT[test.id]
    text = common.strip_comments(source)
    if test.expectation == "pass":
        text, _ = strip_hints(text)
    names = sorted(set(_ANNOTATION.findall(text)))
    if names:
        return ("annotations", "uses GPUVerify's specification language: " + ", ".join(names[:6]) +
                (" ..." if len(names) > 6 else ""))
    bodiless = bodiless_functions(source)
    if bodiless:
        return ("symbolic", "calls " + ", ".join(bodiless) + " without a body: GPUVerify takes any result "
                "(and the launch cannot link it)")
    opts = option_values(test.options)
    for opt, why in _OPTION_REASONS.items():
        if opt in opts:
            return ("options", f"{opt}: {why}")
    try:
        launch_sizes(opts)
    except (KeyError, ValueError) as exc:
        return ("sizes", f"no concrete launch size in the header ({exc})")
    return None


def _check_constant_memory(params: list[common.Param], buffer_bytes: int) -> None:
    """Refuse (``device-limits``) __constant buffers of ``buffer_bytes`` each that together exceed
    the device's constant memory: GPUVerify's arrays have no bounds, so the suite sizes buffers far
    beyond any index, which a __constant one cannot be."""
    constant = [p for p in params if p.kind == "buffer" and p.address_space == "constant"]
    if constant and len(constant) * buffer_bytes > DEVICE_CONSTANT_MEM:
        raise common.LeftOut("device-limits", f"{', '.join(f'__constant {p.name}' for p in constant)}: "
                             f"{len(constant)} x {buffer_bytes >> 20} MiB (the suite's size for an unbounded array) "
                             f"is more __constant memory than Oclgrind's {DEVICE_CONSTANT_MEM >> 10} KiB "
                             "(CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE): it refuses the enqueue (CL_OUT_OF_RESOURCES)")


def make_launch(test: Test, source: str) -> tuple[common.Launch, list[str]]:
    opts = option_values(test.options)
    chosen_sizes = SIZES.get(test.id, {})
    glob, local, notes = launch_sizes({**opts, **chosen_sizes})
    notes = [f"{k}={opts.get(k)} -> {v} (chosen)" for k, v in chosen_sizes.items()] + notes
    items = math.prod(glob)
    given: list[int] = []
    kernel_name = None
    if "--kernel-args" in opts:  # --kernel-args=NAME,V1,V2...: the scalars, in order
        kernel_name, *vals = opts["--kernel-args"].split(",")
        given = [int(v, 0) for v in vals]
    name, params = common.kernel_params(source, kernel_name)
    chosen = SCALARS.get(test.id, {})
    fills = FILLS.get(test.id, {})
    buffer_bytes = max(MIN_BUFFER_BYTES, items * BUFFER_BYTES_PER_ITEM)
    _check_constant_memory(params, buffer_bytes)
    n_local = sum(p.kind == "local" for p in params)
    local_bytes = (common.DEVICE_LOCAL_MEM // 2 // max(1, n_local)) // 16 * 16
    args: list[dict[str, Any]] = []
    data: dict[int, bytes] = {}
    scalar_no = 0
    for n, p in enumerate(params):
        if p.kind == "buffer":
            args.append({"type": "array", "size": buffer_bytes, "address_space": p.address_space})
            if p.name in fills:
                data[n] = common.fill(p, buffer_bytes, fills[p.name])
            else:
                data[n] = common.iota(p, buffer_bytes)
        elif p.kind == "local":
            args.append({"type": "array", "size": local_bytes, "address_space": "local"})
        elif p.kind == "scalar":
            size = p.element_size or 4
            if p.name in chosen:
                value = chosen[p.name]
            elif scalar_no < len(given):
                value = given[scalar_no]
            else:
                value = DEFAULT_SCALAR
            scalar_no += 1
            if p.element_size is None:  # a struct by value: all zero bytes, sized by the compiler
                args.append({"type": "scalar", "value": "0x0"})
            elif "float" in p.type_name or "double" in p.type_name or "half" in p.type_name:
                import struct
                fmt = {8: "<d", 2: "<e"}.get(size, "<f")
                raw = struct.pack(fmt, float(value))
                args.append({"type": "scalar", "value": f"0x{int.from_bytes(raw, 'little'):X}"})
            else:
                args.append({"type": "scalar", "value": common.scalar_hex(value, size)})
        elif p.kind == "image":
            dims = {"image1d_t": 1, "image2d_t": 2, "image3d_t": 3}.get(p.type_name.split()[-1], 4)
            if dims > len(glob):
                raise common.LeftOut("images", f"argument {n} ({p.type_name} {p.name}): the format has no image "
                                               f"description and kernellab takes an image's shape from the "
                                               f"launch, which has {len(glob)} dimension(s)")
            args.append({"type": "image"})
        else:
            args.append({"type": "sampler"})
    flags = " ".join(o.partition("=")[2] for o in test.options if o.startswith("--clang-opt=")
                     and o.partition("=")[2].startswith(("-D", "-I", "-cl-")))
    offset = parse_dims(opts["--global_offset"]) if "--global_offset" in opts else None
    if offset:
        offset = offset + [0] * (len(glob) - len(offset))
    notes += [f"scalar {k} = {v} (chosen)" for k, v in chosen.items()]
    notes += [f"buffer {k} filled with {v} (chosen)" for k, v in fills.items()]
    if test.expectation == "pass" and strip_hints(common.strip_comments(source))[1]:
        source = HINT_PREAMBLE + source
        notes.append("GPUVerify invariants defined away (proof hints)")
    launch = common.Launch(test.id, source, name, glob, local, args, data, flags, offset)
    return launch, notes


def convert(suite: Path, out: Path) -> list[Entry]:
    """Write a launch per test that has one and ``out/manifest.json`` listing every test."""
    entries = []
    for path in sorted(suite.rglob("kernel.cl")):
        test = read_test(path, suite)
        source = path.read_text(errors="replace")
        expected = {"pass": "verified", "NOT_ALL_VERIFIED": "defects"}.get(test.expectation, "-")
        entry = Entry(test.id, expected, expected_kind(test) if expected == "defects" else None)
        why = left_out_reason(test, source)
        if why is None:
            try:
                launch, entry.notes = make_launch(test, source)
                entry.launch = str(common.write_launch(out, launch).relative_to(out))
            except common.LeftOut as exc:
                why = (exc.category, exc.reason)
            except ValueError as exc:
                why = ("signature", f"cannot read the kernel's parameters: {exc}")
        if why is not None:
            entry.category, entry.reason = why
        entries.append(entry)
    common.write_json(out / "manifest.json", {"suite": str(suite), "tests": [asdict(e) for e in entries]})
    return entries


# --- running and reporting -------------------------------------------------------------------

def classify(expected: str, verdict: str) -> str:
    """true/false positive/negative, with a defect as the positive class; ``error`` when not run."""
    if verdict == "error":
        return "error"
    return {("defects", "defects"): "TP", ("verified", "verified"): "TN",
            ("verified", "defects"): "FP", ("defects", "verified"): "FN"}[(expected, verdict)]


def run(out: Path, kernellab: Path = common.DEFAULT_KERNELLAB, only: str | None = None, timeout: float = 600,
        batch: int = 1, jobs: int = 1) -> list[dict[str, Any]]:
    def record(row: dict[str, Any], o: common.Outcome) -> None:
        row["outcome"] = classify(row["expected"], o.verdict)
        if row["kind"] and o.verdict == "defects":
            row["kind_right"] = row["kind"] in o.defect_kinds
        print(_line(row), flush=True)
    return common.run_manifest(out, record, kernellab, only, timeout, batch, jobs)


def _line(r: dict[str, Any]) -> str:
    kinds = ",".join(r.get("defect_kinds") or []) or "-"
    want = r["expected"] + (f" ({r['kind']})" if r.get("kind") else "")
    return f"{r.get('outcome', '-'):5} {r['id']:60} want {want:30} got {r.get('verdict')} [{kinds}] " \
        f"{r.get('seconds', 0):.1f}s" \
        + (f"  {r['message']}" if r.get("message") else "")


def summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    ran = [r for r in results if r.get("launch") and r.get("outcome")]
    count = {k: sum(r["outcome"] == k for r in ran) for k in ("TP", "TN", "FP", "FN", "error")}
    kinded = [r for r in ran if "kind_right" in r]
    left: dict[str, int] = {}
    for r in results:
        if r.get("category"):
            left[r["category"]] = left.get(r["category"], 0) + 1
    return {"tests": len(results), "launched": len(ran), "matrix": {
        "pass": {"verified": count["TN"], "defects": count["FP"],
                 "error": sum(r["outcome"] == "error" and r["expected"] == "verified" for r in ran)},
        "xfail": {"verified": count["FN"], "defects": count["TP"],
                  "error": sum(r["outcome"] == "error" and r["expected"] == "defects" for r in ran)}},
        "kind": {"stated": len(kinded), "right": sum(r["kind_right"] for r in kinded)},
        "left_out": dict(sorted(left.items())),
        "seconds": round(sum(r.get("seconds", 0) for r in ran), 1)}


def markdown(results: list[dict[str, Any]], s: dict[str, Any], commit: str) -> str:
    """The results as Markdown: the matrix, kinds, left-out counts, the disagreements, then every
    test and every left-out test (folded)."""
    m = s["matrix"]
    ran = [r for r in results if r.get("outcome")]

    def row(r: dict[str, Any]) -> list[Any]:
        return [r["id"], r["expected"] + (f" ({r['kind']})" if r.get("kind") else ""), r["verdict"],
                ", ".join(r["defect_kinds"]) or "-", ", ".join(r.get("other_kinds") or []) or "-", r["outcome"],
                "; ".join(filter(None, [r.get("message", "")] + r.get("notes", [])))]

    header = ["test", "expected", "verdict", "defect kinds", "warnings", "outcome", "note"]
    wrong_kind = [r for r in ran if r.get("kind_right") is False]
    parts = [f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, kernellab {commit}: "
             f"{s['tests']} tests, {s['launched']} launched, {sum(s['left_out'].values())} left out; "
             f"verify time {s['seconds']} s.", "",
             common.md_table(["GPUVerify expects", "verified", "defects", "not run (error)"],
                             [["pass", m["pass"]["verified"], m["pass"]["defects"], m["pass"]["error"]],
                              ["xfail", m["xfail"]["verified"], m["xfail"]["defects"], m["xfail"]["error"]]]),
             "", f"Kind right on {s['kind']['right']} of the {s['kind']['stated']} defects found whose kind the "
             "test states.", "",
             common.md_table(["left out", "tests"], sorted(s["left_out"].items())), "",
             "False alarms, missed defects, wrong kinds and launches that did not run:", "",
             common.md_table(header, [row(r) for r in ran if r["outcome"] in ("FP", "FN", "error")
                                      or r in wrong_kind]), "",
             "<details><summary>Every launched test</summary>", "",
             common.md_table(header, [row(r) for r in ran]), "", "</details>", "",
             "<details><summary>Every left-out test with its reason</summary>", "",
             common.md_table(["test", "expected", "category", "reason"],
                             [[r["id"], r["expected"], r["category"], r["reason"]]
                              for r in results if r.get("category")]), "", "</details>"]
    return "\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = common.convert_from_cli(argv, "gpuverify_suite.py", __doc__ or "", DEFAULT_SUITE, DEFAULT_OUT, convert)
    if isinstance(args, int):
        return args
    results = run(args.out, args.kernellab, args.only, args.timeout, args.batch, args.jobs)
    s = summary(results)
    commit = common.kernellab_commit()
    where = common.write_results(args.out, bool(args.only), {"commit": commit, "summary": s, "tests": results},
                                 markdown(results, s, commit))
    m = s["matrix"]
    print(f"\n{'':8}{'verified':>10}{'defects':>10}{'error':>8}")
    for row in ("pass", "xfail"):
        print(f"{row:8}{m[row]['verified']:>10}{m[row]['defects']:>10}{m[row]['error']:>8}")
    print(f"kind right: {s['kind']['right']}/{s['kind']['stated']}; left out: {s['left_out']}")
    print(where)
    return 0


if __name__ == "__main__":
    sys.exit(main())
