"""GPUVerify's OpenCL launches checked on the Vulkan path (clspv + the SPIR-V checker) against the
OpenCL path (Oclgrind): the table "clspv builds of GPUVerify's launches vs the OpenCL path" of
CONFORMANCE.md (issue 14).

For every launch of ``gpuverify_suite.py`` (``LAUNCHES/manifest.json``):

* the OpenCL path is ``kernellab verify K.json --json`` (taken from ``--opencl-results``, a
  ``results.json`` of ``gpuverify_suite.py run``, when given; else run here);
* the Vulkan path is ``kernellab import K.json -o DIR`` (the launch as a scenario: the same
  buffers, an ``OpenCL-C`` shader, the clspv argument mapping), then
  ``kernellab verify DIR/scenario.json --vulkan --json``.

Each row says both verdicts and, for a Vulkan run that did not check (clspv failed, the checker
refused the module, a timeout), why; for a differing verdict, the memory accesses clspv's module
still has (what its compiler left for the checker to see).

    python conformance/clspv_vs_opencl.py [--launches /work/ext/gpuverify-launches] [--jobs 2]
        [--opencl-results /work/ext/gpuverify-launches/results.json] [--only SUBSTRING]

Writes ``clspv-vs-opencl.json`` and ``.md`` next to the launches (``-partial`` with ``--only``).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``conformance`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from conformance import common  # noqa: E402

DEFAULT_LAUNCHES = Path("/work/ext/gpuverify-launches")
#: OpenCL-path answers kept between runs (JSON lines, next to the launches)
OPENCL_CACHE = "clspv-vs-opencl.opencl.jsonl"
#: the Vulkan path's outcomes that are not a verdict, by what the message says (first match wins)
_NOT_CHECKED = (("spirv-val", ("spirv-val failed",)), ("clspv-failed", ("with clspv", "clspv:")),
                ("refused", ("not supported by the SPIR-V checker", "not checked", "is refused")),
                ("limit", ("past the checker's limit", "the checker's limit")))
VULKAN_COLUMNS = ("defects", "verified", "refused", "spirv-val", "clspv-failed", "limit", "timeout", "import-failed",
                  "error")
OPENCL_ROWS = ("defects", "verified", "error")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("XDG_RUNTIME_DIR", "/tmp")
    return env


def vulkan_path(launch: Path, work: Path, kernellab: Path, timeout: float) -> dict[str, Any]:
    """The launch imported as a scenario and checked by ``kernellab verify --vulkan``."""
    start = time.monotonic()
    imported = subprocess.run([str(kernellab), "import", str(launch), "-o", str(work)], capture_output=True,
                              env=_env(), timeout=timeout)
    if imported.returncode != 0:
        return {"verdict": "import-failed", "message": _first_line(imported.stderr.decode(errors="replace"))}
    scenario = work / "scenario.json"
    # a session of its own, so a timeout also ends the clspv child (clspv loops forever on some kernels)
    proc = subprocess.Popen([str(kernellab), "verify", "--vulkan", "--json", str(scenario)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=_env(), start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {"verdict": "timeout", "message": f"timed out after {timeout:.0f} s",
                "seconds": round(time.monotonic() - start, 2)}
    o = common.interpret(proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"),
                         time.monotonic() - start)
    verdict = o.verdict
    if verdict == "error":
        text = err.decode(errors="replace")
        verdict = next((name for name, marks in _NOT_CHECKED if any(m in text for m in marks)), "error")
        if verdict == "clspv-failed":  # clspv's error and exit status, not the repro command
            status = next((l.rsplit("failed", 1)[-1].strip() for l in text.splitlines() if "with clspv" in l), "")
            error = next((l.strip() for l in text.splitlines() if "error:" in l), "clspv failed")
            o.message = f"{error} {status}".strip()[:300]
    row = {"verdict": verdict, "defect_kinds": o.defect_kinds, "seconds": round(o.seconds, 2), "message": o.message}
    if verdict in ("defects", "verified"):
        doc = json.loads(out)
        row["places"] = sorted({f"{f['kind']}@{(f.get('location') or {}).get('line')}"
                                for f in doc.get("findings", []) if f.get("severity") == "defect"})
    return row


def _first_line(text: str) -> str:
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    return next((l for l in lines if "error" in l.lower()), lines[-1] if lines else "")[:300]


def accesses_left(kernel: Path, entry: str) -> dict[str, int] | str:
    """The memory accesses of ``entry`` in the clspv module ``kernellab verify --vulkan`` checks
    (``-O0 -g``, else clspv's default build when that fails), by storage class and kind
    (``Workgroup:write``...): what the compiler left for the checker to see."""
    from kernellab.compile.pipeline import Compiler, CompileRequest
    from kernellab.spirvsim.module import load
    failed = ""
    for options in ("-O0 -g", "-g"):
        try:
            data = Compiler(CompileRequest(source=kernel, language="opencl-c", entry=entry,
                                           build_options=options)).vulkan_module().data
            module = load(data, entry)
            break
        except Exception as exc:  # a module the checker refuses: the row says so already
            failed = f"({type(exc).__name__} at {options})"
    else:
        return failed
    counts: Counter[str] = Counter()
    for fn in module.functions.values():
        for block in fn.blocks.values():
            for inst in block.insts:
                kind = {"OpLoad": "read", "OpStore": "write"}.get(inst.op) or (
                    "atomic" if inst.op.startswith("OpAtomic") else None)
                if kind is None:
                    continue
                pointer = inst.words[2] if inst.op == "OpLoad" else inst.words[0] if inst.op == "OpStore" \
                    else inst.words[2]
                ptype = module.types.get(module.type_of.get(pointer, -1))
                storage = getattr(ptype, "storage", None) or "?"
                if storage in ("Function", "Private", "Input", "PushConstant"):
                    continue
                counts[f"{storage}:{kind}"] += 1
    return dict(sorted(counts.items()), **({"clspv -O0 failed, default build": 1} if failed else {}))


def opencl_results(path: Path | None, cache: Path | None = None) -> dict[str, dict[str, Any]]:
    """OpenCL-path answers already known: a ``results.json`` of gpuverify_suite.py, then the
    JSON lines this script appended on earlier runs."""
    out: dict[str, dict[str, Any]] = {}
    if path is not None and path.is_file():
        doc = json.loads(path.read_text())
        out.update((r["id"], r) for r in doc.get("tests", []) if r.get("verdict"))
    if cache is not None and cache.is_file():
        for line in cache.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                out.setdefault(r["id"], r)
    return out


def compare(launches: Path, kernellab: Path, opencl: dict[str, dict[str, Any]], only: str | None, timeout: float,
            jobs: int, cache: Path | None = None) -> list[dict[str, Any]]:
    """Both paths on every launch; OpenCL-path answers found in ``opencl`` are not run again, and
    those run here are appended to ``cache`` (JSON lines) as they come, for a re-run."""
    manifest = json.loads((launches / "manifest.json").read_text())
    tests = [dict(e) for e in manifest["tests"] if e.get("launch") and (not only or only in e["id"])]
    scratch = Path(tempfile.mkdtemp(prefix="clspv-vs-opencl-"))
    lock = threading.Lock()

    def one(row: dict[str, Any]) -> dict[str, Any]:
        launch = launches / row["launch"]
        known = opencl.get(row["id"])
        if known is not None:
            ocl = {"verdict": known["verdict"], "defect_kinds": known.get("defect_kinds", [])}
        else:
            o = common.run_verify(launch, kernellab, timeout)
            ocl = {"verdict": o.verdict, "defect_kinds": o.defect_kinds, "message": o.message}
            if cache is not None:
                with lock, cache.open("a") as fh:
                    fh.write(json.dumps({"id": row["id"], **ocl}) + "\n")
        vk = vulkan_path(launch, scratch / common.launch_dir_name(row["id"]), kernellab, timeout)
        out = {"id": row["id"], "expected": row["expected"], "opencl": ocl, "vulkan": vk}
        out["agree"] = (ocl["verdict"] == vk["verdict"]) if vk["verdict"] in ("defects", "verified") \
            and ocl["verdict"] in ("defects", "verified") else None
        if out["agree"] is False:
            entry = json.loads(launch.read_text())[0]["entry_point"]
            out["accesses_left"] = accesses_left(launch.parent / "kernel.cl", entry)
        print(_line(out), flush=True)
        return out

    with ThreadPoolExecutor(max(1, jobs)) as pool:
        return list(pool.map(one, tests))


def _line(r: dict[str, Any]) -> str:
    mark = {True: "same", False: "DIFF", None: "-"}[r["agree"]]
    vk = r["vulkan"]
    return f"{mark:5} {r['id']:60} opencl {r['opencl']['verdict']:9} vulkan {vk['verdict']:13} " \
        f"[{','.join(vk.get('defect_kinds') or [])}] {vk.get('seconds', 0)}s {vk.get('message', '')[:120]}"


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    matrix = {o: {v: sum(r["opencl"]["verdict"] == o and r["vulkan"]["verdict"] == v for r in rows)
                  for v in VULKAN_COLUMNS} for o in OPENCL_ROWS}
    compared = [r for r in rows if r["agree"] is not None]
    return {"launches": len(rows), "compared": len(compared), "agree": sum(bool(r["agree"]) for r in compared),
            "differ": [r["id"] for r in compared if not r["agree"]], "matrix": matrix,
            "vulkan_seconds": round(sum(r["vulkan"].get("seconds", 0) for r in rows), 1)}


def markdown(rows: list[dict[str, Any]], s: dict[str, Any], commit: str) -> str:
    def row(r: dict[str, Any]) -> list[Any]:
        vk = r["vulkan"]
        note = vk.get("message", "") if vk["verdict"] not in ("defects", "verified") else ""
        if r.get("accesses_left") is not None:
            note = f"accesses left in clspv SPIR-V: {r['accesses_left'] or 'none'}"
        return [r["id"], r["expected"], r["opencl"]["verdict"], vk["verdict"], ", ".join(vk.get("defect_kinds") or []),
                {True: "same", False: "differs", None: "-"}[r["agree"]], note]

    parts = [f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, kernellab {commit}: {s['launches']} "
             f"launches, {s['compared']} with a verdict on both paths, {s['agree']} agree; Vulkan-path checking "
             f"{s['vulkan_seconds']} s in all.", "",
             common.md_table(["OpenCL path \\ Vulkan path", *VULKAN_COLUMNS],
                             [[o, *(s["matrix"][o][v] for v in VULKAN_COLUMNS)] for o in OPENCL_ROWS]), "",
             "<details><summary>every launch</summary>", "",
             common.md_table(["test", "GPUVerify", "OpenCL path", "Vulkan path", "defect kinds", "verdicts", "note"],
                             [row(r) for r in rows]), "", "</details>"]
    return "\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="clspv_vs_opencl.py", description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--launches", type=Path, default=DEFAULT_LAUNCHES,
                   help=f"gpuverify_suite.py's launches (default {DEFAULT_LAUNCHES})")
    p.add_argument("--opencl-results", type=Path, help="a results.json of gpuverify_suite.py run (else run here)")
    p.add_argument("--kernellab", type=Path, default=common.DEFAULT_KERNELLAB)
    p.add_argument("--only", help="only tests whose id contains this")
    p.add_argument("--timeout", type=float, default=300, help="seconds per kernellab call (default 300)")
    p.add_argument("--jobs", type=int, default=1, help="launches checked at once (default 1)")
    p.add_argument("--fresh", action="store_true",
                   help=f"run the OpenCL path again on every launch (else answers kept in {OPENCL_CACHE} are reused)")
    args = p.parse_args(argv)
    if not (args.launches / "manifest.json").is_file():
        print(f"clspv_vs_opencl.py: {args.launches}/manifest.json: no launches (run gpuverify_suite.py convert "
              "first, see CONFORMANCE.md)", file=sys.stderr)
        return 2
    cache = None if args.fresh else args.launches / OPENCL_CACHE
    if args.fresh and (args.launches / OPENCL_CACHE).exists():
        (args.launches / OPENCL_CACHE).unlink()
    rows = compare(args.launches, args.kernellab, opencl_results(args.opencl_results, cache), args.only,
                   args.timeout, args.jobs, args.launches / OPENCL_CACHE)
    s = summary(rows)
    commit = common.kernellab_commit()
    stem = "clspv-vs-opencl" + ("-partial" if args.only else "")
    common.write_json(args.launches / f"{stem}.json", {"commit": commit, "summary": s, "tests": rows})
    common.write_atomic(args.launches / f"{stem}.md", markdown(rows, s, commit))
    print(f"\n{s['agree']} of {s['compared']} agree; differ: {', '.join(s['differ']) or 'none'}")
    print(f"results: {args.launches / (stem + '.json')}, {args.launches / (stem + '.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
