"""GPUVerify's OpenCL test suite through ``verify --prove``: every test, with its header's sizes.

Each ``kernel.cl`` of ``testsuite/OpenCL`` starts ``//pass`` or ``//xfail:CODE`` and a line of
GPUVerify options (``//--local_size=64 --num_groups=64 ...``). Every kernel of the file is proven
at those sizes (unscaled: the proof does not simulate invocations), each test in its own process
under a time limit. The table: expected ``pass`` -> proven / unknown / defect (a false alarm);
expected ``xfail:NOT_ALL_VERIFIED`` -> defect / unknown / proven (**unsound**); other xfail codes
(GPUVerify's own tool errors) are counted apart.

GPUVerify checks array bounds only with ``--check-array-bounds``; without it an out-of-bounds
finding is not part of the test's verdict, so it is left out here (kernellab reports it). With
``--vcgen-opt=/checkArrays:NAMES`` GPUVerify checks (and logs) the accesses of the named arrays
only: the others are left out of the proof's race checks and logs (:func:`restrict_checks`).

    python conformance/gpuverify_prove.py --suite /work/ext/gpuverify/testsuite/OpenCL --jobs 2
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``conformance`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from conformance import boogie_axioms  # noqa: E402
from conformance.boogie_axioms import BoogieError  # noqa: E402
from conformance.gpuverify_suite import option_values, parse_dims, read_test  # noqa: E402

DEFAULT_SUITE = Path("/work/ext/gpuverify/testsuite/OpenCL")
#: GPUVerify switches that change what its annotations mean, as directives put between
#: kernellab's annotation header and the source: ``--only-requires`` ignores every annotation but
#: ``__requires``; ``--no-annotations`` ignores them all; ``--invariants-as-candidates`` makes a
#: loop invariant a candidate, which GPUVerify drops when it does not hold (kernellab drops
#: candidates: docs/verify-prove.md)
_ASSERTING = ("__assert", "__global_assert", "__invariant", "__global_invariant")
_ANNOTATION_SWITCHES = {
    "--only-requires": _ASSERTING,
    "--no-annotations": _ASSERTING + ("__requires", "__assume"),
    "--invariants-as-candidates": ("__invariant", "__global_invariant"),
}


def annotation_prelude(options: dict[str, str]) -> str:
    """The directives that give the annotations the meaning ``options`` give them."""
    names = sorted({n for switch, ns in _ANNOTATION_SWITCHES.items() if switch in options for n in ns})
    return "\n".join(f"#undef {n}\n#define {n}(...) 0" for n in names)


def checked_kinds(options: dict[str, str]) -> set[str]:
    """The finding kinds a test's verdict covers under its GPUVerify switches: bounds only with
    ``--check-array-bounds``; ``--only-divergence`` checks barrier divergence alone;
    ``--only-log`` logs accesses without checking them for races."""
    checked = {"data-race", "barrier-divergence", "assertion"}
    if "--check-array-bounds" in options:
        checked.add("out-of-bounds")
    if "--only-log" in options:
        checked.discard("data-race")
    if "--only-divergence" in options:
        checked = {"barrier-divergence"}
    return checked


def sizes(options: dict[str, str]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    local = parse_dims(options["--local_size"])
    if "--global_size" in options:
        glob = parse_dims(options["--global_size"])
        groups = [g // l for g, l in zip(glob, local)]
    else:
        groups = parse_dims(options["--num_groups"])
    local += [1] * (3 - len(local))
    groups += [1] * (3 - len(groups))
    return tuple(local[:3]), tuple(groups[:3])  # type: ignore[return-value]


def work_dim(options: dict[str, str]) -> int:
    """The launch's number of dimensions: as many as its sizes give (``*`` is one)."""
    return max(len(_dims_or_any(options["--local_size"])),
               len(_dims_or_any(options.get("--global_size") or options["--num_groups"])))


def _dims_or_any(text: str) -> list[int | None]:
    """``64``, ``[64,64]``, ``*`` (any size: None) -> a list of sizes."""
    if text.strip() == "*":
        return [None]
    return list(parse_dims(text))


def _three(values: list[int | None], dims: int) -> tuple[int | None, int | None, int | None]:
    """A size per dimension: ``*`` (one None) any size in each of the launch's ``dims``, 1 past them."""
    if values == [None]:
        values = [None] * dims
    v = values[:3] + [1] * (3 - len(values))
    return (v[0], v[1], v[2])


def size_space(options: dict[str, str], every: bool = False) -> Any:
    """GPUVerify's unconstrained sizes (``--local_size=*``, ``--num_groups=*``,
    ``--global_size=*``) as what ``--prove-sizes`` takes
    (:class:`~kernellab.verify.prove.sizes.Space`, the OpenCL defaults' limits: GPUVerify
    knows no device); None when every size is given. ``every``: all sizes symbolic, within the
    test's number of dimensions."""
    from kernellab.verify.prove import sizes as prove_sizes

    local = _dims_or_any(options["--local_size"])
    other = _dims_or_any(options.get("--global_size") or options["--num_groups"])
    if None not in local + other and not every:
        return None
    dims = work_dim(options)
    if every:
        return prove_sizes.Space(prove_sizes.OPENCL_DEFAULTS, dims)
    fixed_local = _three(local, dims)
    counted = _three(other, dims)
    if "--global_size" in options:
        return prove_sizes.Space(prove_sizes.OPENCL_DEFAULTS, dims, local=fixed_local, global_=counted)
    return prove_sizes.Space(prove_sizes.OPENCL_DEFAULTS, dims, local=fixed_local, groups=counted)


def placeholder_sizes(space: Any) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Concrete sizes inside ``space`` to compile and lay out a launch with (the proof replaces
    them by its variables): each fixed one, 1 for the others."""
    local = tuple(x or 1 for x in space.local)
    groups = tuple(g if g is not None else (t // l if t is not None else 1)
                   for g, t, l in zip(space.groups, space.global_, local))
    return local, groups  # type: ignore[return-value]


def boogie_file_axioms(path: Path, options: dict[str, str]) -> list[Any]:
    """The axioms of the test's ``--boogie-file`` about its uninterpreted functions (none without
    one); :class:`BoogieError` where the file says more than ``boogie_axioms`` reads."""
    import z3

    from kernellab.verify.prove import stubs

    name = options.get("--boogie-file")
    if not name:
        return []
    found = stubs.find(path.read_text(errors="replace"))
    functions = {}
    for k, s in enumerate(found):
        widths = [stubs.c_width(p) for p in s.params] + [stubs.c_width(s.ret)]
        if s.uninterpreted and None not in widths:
            functions[s.name] = z3.Function(stubs.uf_name(k), *[z3.BitVecSort(w) for w in widths])
    axioms_file = Path(name.replace("${KERNEL_DIR}", str(path.parent)))
    return boogie_axioms.read(axioms_file.read_text(), functions)


def kernel_args(options: dict[str, str]) -> dict[str, list[bytes | None]]:
    """``--kernel-args=kernel,0x...,...``: the values GPUVerify fixes for the kernel's non-array
    parameters, in their order (``*``: unconstrained, None), by kernel."""
    out: dict[str, list[bytes | None]] = {}
    text = options.get("--kernel-args")
    if text:
        name, *values = text.split(",")
        out[name] = [None if v == "*" else int(v, 16).to_bytes(max(4, (len(v) - 2 + 1) // 2), "little")
                     for v in values]
    return out


def checked_arrays(options: list[str]) -> set[str] | None:
    """The arrays ``--vcgen-opt=/checkArrays:A,B`` restricts GPUVerify's race checks (and access
    logs) to, by name; None without it (every array is checked)."""
    for opt in options:
        key, _, value = opt.partition("=")
        if key == "--vcgen-opt" and value.startswith("/checkArrays:"):
            return {n for n in value.partition(":")[2].split(",") if n}
    return None


def parameter_names(source: str, kernel: str) -> list[str]:
    """The names of ``kernel``'s parameters in ``source``, in their order (empty where the
    signature is not found)."""
    import re
    m = re.search(rf"\b{re.escape(kernel)}\s*\(([^)]*)\)\s*\{{", source)
    if m is None:
        return []
    return [re.findall(r"\w+", p)[-1] for p in m.group(1).split(",") if re.findall(r"\w+", p)]


def restrict_checks(launch: Any, kernel: Any, params: list[str], names: set[str] | None) -> None:
    """Leave the arrays ``names`` does not list out of ``launch``'s race checks and logs: each
    ``__global`` argument by its name (``params``: the kernel's parameter names); ``__local``
    memory (arguments, or arrays declared in the kernel, which clspv keeps unnamed) only where no
    name listed is a ``__local`` argument or a name other than an argument's (it may be one of
    them)."""
    if names is None:
        return
    if len(params) <= max(kernel.arguments, default=-1):
        raise ValueError("the kernel's parameter names were not found for /checkArrays")
    args = {params[k]: a for k, a in kernel.arguments.items()}
    launch.unchecked_buffers = {(a.set, a.binding) for n, a in args.items()
                                if a.kind in ("ArgumentStorageBuffer", "ArgumentUniform") and n not in names}
    launch.unchecked_local = not any(n not in args or args[n].kind == "ArgumentWorkgroup" for n in names)


#: clspv's kinds of a kernel argument that is an array (a pointer), which ``--kernel-args`` skips
_ARRAY_KINDS = ("ArgumentStorageBuffer", "ArgumentUniform", "ArgumentWorkgroup")


#: why a kernel whose counterexamples all lie in summarised loops is unknown (files.py's words)
ABSTRACT_ONLY = ("invariant not found: the counterexamples lie in loops summarised by inferred invariants "
                 "and no replayed launch reproduced them")


def prove_test(path: Path, timeout: float, every_size: bool = False) -> dict[str, Any]:
    """One test, in this process: every kernel's verdict and findings. ``every_size``: all sizes
    symbolic (``--prove-sizes``), not only those the header leaves unconstrained (``*``)."""
    from kernellab.verify.prove import engine, opencl

    test = read_test(path, path.parent.parent)
    opts = option_values(test.options)
    out: dict[str, Any] = {"expectation": test.expectation, "kernels": {}}
    try:
        space = size_space(opts, every_size)
        local, groups = sizes(opts) if space is None or every_size else placeholder_sizes(space)
    except (KeyError, ValueError) as exc:
        out["error"] = f"sizes: {exc}"
        return out
    gsize = tuple(l * g for l, g in zip(local, groups))
    clang = " ".join(v for k, v in ((o.partition("=")[0], o.partition("=")[2]) for o in test.options)
                     if k == "--clang-opt")
    from kernellab.spirvsim.module import Unsupported
    prelude = annotation_prelude(opts)
    try:
        # the suites' kernels include headers of the folder above (`#include "../common.h"`)
        spirv, ir = opencl.compile_kept(path, clang, prelude=prelude, global_offset=True,
                                        roots=(path.parent.parent.resolve(),))
    except Unsupported as exc:
        out["kernels"]["*"] = {"verdict": "unknown", "reason": f"unsupported construct: {exc.problems[0].message}"}
        return out
    except Exception as exc:  # a compile error is the test's outcome
        out["error"] = f"compile: {str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}"
        return out
    try:
        axioms = boogie_file_axioms(path, opts)
    except BoogieError as exc:
        out["kernels"]["*"] = {"verdict": "unknown", "reason": f"--boogie-file: {exc}"}
        return out
    fixed = kernel_args(opts)
    offset = tuple(parse_dims(opts["--global_offset"]) + [0, 0]) [:3] if "--global_offset" in opts else (0, 0, 0)
    for name in opencl.kernel_names(spirv):
        try:
            compiled = opencl.load_kernel(spirv, path, name, local, [], work_dim=work_dim(opts),
                                          global_offset=offset)  # type: ignore[arg-type]
            args = [opencl.ArgumentSpec("scalar", f"arg{k}") for k in range(max(compiled.kernel.arguments, default=-1) + 1)]
            scalars = [k for k, a in sorted(compiled.kernel.arguments.items()) if a.kind not in _ARRAY_KINDS]
            for k, value in zip(scalars, fixed.get(name, [])):
                args[k].value = value
            launch = opencl.launch(compiled, gsize, local, args, offset,  # type: ignore[arg-type]
                                   symbolic_sizes=space is not None)
            if space is not None:
                launch.size_space = space
            launch.intra_group_only = "--only-intra-group" in opts
            restrict_checks(launch, compiled.kernel, parameter_names(path.read_text(errors="replace"), name),
                            checked_arrays(test.options))
            launch.axioms = axioms
            o = opencl.guarded(engine.prove(compiled.module, launch, timeout=timeout), ir, compiled.module, name)
        except Exception as exc:
            out["kernels"][name] = {"verdict": "unknown", "reason": f"unsupported: {str(exc).strip()[:200]}"}
            continue
        verdict, reason = o.verdict, o.reason
        if o.findings and all(f.abstract for f in o.findings):
            # found only in loops summarised by invariants: `verify --prove` calls it unknown unless a
            # replayed launch reproduces it (none is run here)
            verdict, reason = "unknown", ABSTRACT_ONLY
        out["kernels"][name] = {"verdict": verdict, "reason": reason, "seconds": round(o.seconds, 3),
                                "kinds": sorted({f.kind for f in o.findings})}
    return out


def outcome(r: dict[str, Any], options: list[str]) -> str:
    """proven / defect / unknown / error for the whole test."""
    if "error" in r:
        return "error"
    checked = checked_kinds(option_values(options))
    verdicts = []
    for k in r["kernels"].values():
        if k["verdict"] == "defect" and not set(k.get("kinds", ())) & checked:
            verdicts.append("proven")  # found only what GPUVerify does not check here
        else:
            verdicts.append(k["verdict"])
    if not verdicts:
        return "error"
    if "defect" in verdicts:
        return "defect"
    return "unknown" if "unknown" in verdicts else "proven"


def classify(expectation: str, got: str) -> str:
    if expectation == "pass":
        return {"proven": "pass: proven", "unknown": "pass: unknown", "defect": "pass: defect (false alarm)",
                "error": "pass: error"}[got]
    if expectation == "NOT_ALL_VERIFIED":
        return {"defect": "xfail: defect", "unknown": "xfail: unknown", "proven": "xfail: proven (UNSOUND)",
                "error": "xfail: error"}[got]
    return f"xfail:{expectation} (tool error expected): {got}"


def run_one(path: Path, timeout: float, every_size: bool = False) -> dict[str, Any]:
    """One test in a child process under a watchdog (the engine's limit plus start-up)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--one", str(path), "--timeout", str(timeout),
           *(["--prove-sizes"] if every_size else [])]
    start = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout * 4 + 60, env=os.environ)
        r = json.loads(p.stdout.strip().splitlines()[-1]) if p.stdout.strip() else {
            "error": f"crashed: {p.stderr.strip()[-300:]}"}
    except subprocess.TimeoutExpired:
        r = {"kernels": {"*": {"verdict": "unknown", "reason": "watchdog time limit"}}}
    r["wall"] = round(time.monotonic() - start, 3)
    return r


def run_in_worker(path: Path, timeout: float, every_size: bool = False) -> dict[str, Any]:
    """One test in a long-lived worker process (the imports paid once per worker; the engine's
    own deadline bounds each proof)."""
    start = time.monotonic()
    try:
        r = prove_test(path, timeout, every_size)
    except Exception as exc:  # a crash of one test is its result
        r = {"error": f"crashed: {type(exc).__name__}: {exc}"[:300]}
    r["wall"] = round(time.monotonic() - start, 3)
    return r


#: tests whose expected verdict rests on a reading of OpenCL C that kernellab does not share, and
#: why (docs/verify-prove.md, "Where kernellab and GPUVerify differ"); not counted as unsound
_BENIGN = ("a race between accesses writing (or reading and writing) the same value: GPUVerify tolerates it, "
           "the OpenCL memory model makes any two conflicting unordered accesses, one not atomic, a data race "
           "with undefined behaviour (OpenCL 3.0 API specification, 3.3.7 'Memory Ordering Rules')")
_WARP = ("--warp-sync assumes the work-items of a warp run in lockstep; OpenCL C has no warps: work-items of a "
         "work-group are ordered only by barriers, so these accesses race (OpenCL 3.0 API specification, 3.3.7)")
_FLAGS = ("work-items of one work-group reach a barrier with different flags; OpenCL C requires them to be the "
          "same ('The values of flags and scope must be the same for all work-items in the work-group', OpenCL "
          "C 3.0, 'Synchronization Functions'): barrier divergence, as Oclgrind replays it (the proof switches "
          "over the values the flags can take, docs/verify-prove.md)")
SPEC_CONFLICTS = {
    "reducedstrengthnonloopbug": "the kernel is empty; the race is in a function no kernel calls, which "
                                 "no launch runs (OpenCL C 1.2 s3.2: a launch executes the kernel's body)",
    "async_work_group_copy/fail/test14": "expects a race between a copy and reads of its destination after the "
                                         "wait that waited for it; the wait completes the copy for the work-group "
                                         "(OpenCL C 3.0, 'Async Copies': wait_group_events waits for the copy to "
                                         "complete), as kernellab's dynamic verify reads it (docs/verify.md)",
    **{t: _BENIGN for t in (
        "benign_race_tests/pass/readafterwrite", "benign_race_tests/pass/writeafterread",
        "benign_race_tests/pass/writeinloop",
        "benign_race_tests/pass/writetiddiv64", "benign_race_tests/pass/writewritearray",
        "benign_race_tests/pass/writezero", "multidimarrays/test5", "vectortests/test_paren",
        "inter_group_and_barrier_flag_tests/pass/local_id_benign_write_write",
        "pointertests/test_copy_between_memory_spaces", "pointertests/test_copy_between_memory_spaces2",
        "annotation_tests/test_ptr_offset")},
    **{t: _WARP for t in ("warpsync/2d", "warpsync/intragroup_scan", "warpsync/shuffle", "warpsync/scan_warp")},
    **{t: _FLAGS for t in ("inter_group_and_barrier_flag_tests/pass/read_then_write",
                           "inter_group_and_barrier_flag_tests/pass/write_then_read")},
    "barrier_invariants/no_access_check": "the binary barrier invariant states A[0] == 0 at a barrier where "
                                          "work-item 0 has just written A[0] = 1, so it is false in every launch; "
                                          "GPUVerify passes it only with --no-barrier-access-checks, which turns "
                                          "off the check that sees it (with it on, the same kernel is "
                                          "barrier_invariants/jeroen_bug, expected to fail)",
    "k-induction/alldifferent-k-too-small": "expected to fail because GPUVerify's k-induction at depth 2 without "
                                            "invariant inference (--no-infer) is too weak to show it; the kernel "
                                            "is correct for every launch: a, b, c are pairwise different on entry "
                                            "(__requires) and each iteration only rotates them, so a != b holds "
                                            "after the loop (k-induction/alldifferent, the same kernel at depth 3, "
                                            "is //pass)",
    "asymmetric_asserts/fail": "the kernel of asymmetric_asserts/pass run with GPUVerify's --asymmetric-asserts, "
                               "which stops assuming the other invocation's assertions: the failure is of that "
                               "encoding; no launch makes i negative (i counts up from 0 while i < x - tid)",
}


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", type=Path, default=DEFAULT_SUITE)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--only", help="tests whose id contains this")
    ap.add_argument("--json", type=Path, help="write every test's result here")
    ap.add_argument("--log", type=Path, help="append each test's result to this JSON-lines file as it ends; "
                                             "tests already in it are not run again (a resumed run)")
    ap.add_argument("--one", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--prove-sizes", action="store_true",
                    help="every test's work-group size and count symbolic (verify --prove-sizes, the OpenCL "
                         "defaults' limits), not only those its header leaves unconstrained (*)")
    ap.add_argument("--workers", action="store_true",
                    help="prove in --jobs long-lived worker processes (faster; a hung proof is not killed) "
                         "instead of one process per test")
    return ap.parse_args(argv)


def _logged(log: Path | None) -> dict[str, dict[str, Any]]:
    """The results of a resumed run's log, by test path."""
    done: dict[str, dict[str, Any]] = {}
    if log and log.exists():
        for line in log.read_text().splitlines():
            if line.strip():
                item = json.loads(line)
                done[item["path"]] = item["result"]
    return done


def run_tests(tests: list[Path], a: argparse.Namespace) -> list[dict[str, Any]]:
    """Every test's result, in the order of ``tests``, ``a.jobs`` at a time."""
    from concurrent.futures import ProcessPoolExecutor
    done = _logged(a.log)
    workers = ProcessPoolExecutor(max(1, a.jobs)) if a.workers else None

    def one(t: Path) -> dict[str, Any]:
        if str(t) in done:
            return done[str(t)]
        if workers is not None:
            try:
                r = workers.submit(run_in_worker, t, a.timeout, a.prove_sizes).result(timeout=a.timeout * 4 + 60)
            except Exception as exc:  # the watchdog, or a worker that died
                r = {"kernels": {"*": {"verdict": "unknown", "reason": f"watchdog: {type(exc).__name__}"}}}
        else:
            r = run_one(t, a.timeout, a.prove_sizes)
        if a.log:
            with a.log.open("a") as fh:
                fh.write(json.dumps({"path": str(t), "result": r}) + "\n")
        return r

    with ThreadPoolExecutor(max(1, a.jobs)) as pool:
        results = list(pool.map(one, tests))
    if workers is not None:
        workers.shutdown(cancel_futures=True)
    return results


def row(test: Any, r: dict[str, Any]) -> dict[str, Any]:
    """One test's line of the table."""
    got = outcome(r, test.options)
    reasons = sorted({k.get("reason") or "" for k in r.get("kernels", {}).values() if k["verdict"] == "unknown"})
    cls = classify(test.expectation, got)
    if test.id in SPEC_CONFLICTS and cls.endswith("(UNSOUND)"):
        cls = "xfail: proven (spec-conflict)"
    elif test.id in SPEC_CONFLICTS and test.expectation == "pass" and (
            got in ("defect", "error") or (got == "unknown" and SPEC_CONFLICTS[test.id] == _FLAGS)):
        cls = f"pass: {got} (spec-conflict)"
    return {"id": test.id, "expected": test.expectation, "got": got, "class": cls, "reasons": reasons,
            "error": r.get("error"), "wall": r.get("wall"), "kernels": r.get("kernels", {})}


def report(rows: list[dict[str, Any]]) -> list[str]:
    """The table, the share of ``//pass`` tests proven, and the unsound tests (printed); returns
    the unsound tests' ids."""
    table = Counter(r["class"] for r in rows)
    print("| outcome | tests |\n|---|---|")
    for k, n in sorted(table.items()):
        print(f"| {k} | {n} |")
    passes = [r for r in rows if r["expected"] == "pass"]
    proven = sum(r["got"] == "proven" for r in passes)
    print(f"\npass proven: {proven}/{len(passes)} ({100 * proven / max(1, len(passes)):.1f}%)")
    conflicts = sum(r["class"].endswith("(spec-conflict)") for r in passes)
    print(f"pass spec-conflicts (verdicts that follow the OpenCL specification, SPEC_CONFLICTS): {conflicts}")
    unsound = [r["id"] for r in rows if r["class"].endswith("(UNSOUND)")]
    print(f"unsound: {len(unsound)} {unsound}")
    why = Counter(_reason_class(x) for r in rows if r["got"] == "unknown" for x in r["reasons"])
    print("\n| unknown reason | tests |\n|---|---|")
    for k, n in why.most_common():
        print(f"| {k} | {n} |")
    return unsound


def main(argv: list[str] | None = None) -> int:
    a = _arguments(argv)
    if a.one:
        print(json.dumps(prove_test(a.one, a.timeout, a.prove_sizes)))
        return 0
    tests = sorted(a.suite.rglob("kernel.cl"))
    if a.only:
        tests = [t for t in tests if a.only in str(t.parent.relative_to(a.suite))]
    results = run_tests(tests, a)
    rows = [row(read_test(t, a.suite), r) for t, r in zip(tests, results)]
    unsound = report(rows)
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))
    return 1 if unsound else 0


def _reason_class(reason: str) -> str:
    """A reason without its particulars (line numbers, source text), for counting."""
    import re
    reason = re.sub(r"\(.*\)$", "", reason).strip()
    reason = re.sub(r"line \d+", "line N", reason)
    reason = re.sub(r"\d+", "N", reason)
    return reason[:110]


if __name__ == "__main__":
    sys.exit(main())
