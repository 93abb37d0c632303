"""Every compute-only AmberScript file of Google's Amber (``tests/cases``) and the Vulkan CTS
(``external/vulkancts/data/vulkan/amber``) through ``kernellab test``, tabulated per folder:
pass / fail / skipped for features / refused (the construct) / error, with a negative control
per passing file (its first ``EXPECT ... IDX ... EQ`` with the first value changed must fail).

    .venv/bin/python conformance/amber_corpus.py --amber /work/ext/amber \\
        --cts /work/ext/vk-gl-cts --out /tmp/amber-conformance

The corpora stay outside the repository; the mutants are written under ``--out``.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make ``conformance`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from conformance.common import DEFAULT_KERNELLAB, md_table, write_atomic  # noqa: E402

_GRAPHICS = re.compile(r"^\s*(PIPELINE\s+graphics|SHADER\s+(vertex|fragment|geometry|tessellation\w*|multi))\b",
                       re.MULTILINE)
_COMPUTE = re.compile(r"^\s*PIPELINE\s+compute\b", re.MULTILINE)
_PROBE = re.compile(r"^(\s*EXPECT\s+\S+\s+IDX\s+\d+\s+(?:TOLERANCE\s+(?:[-+.\deE]+%?\s+){1,4})?EQ\s+)(\S+)",
                    re.MULTILINE)
#: a pixel probe (EQ_RGB/EQ_RGBA: values 0-255) and its first value
_PIXEL = re.compile(r"^(\s*EXPECT\s+\S+\s+IDX\s+\d+\s+\d+\s+(?:SIZE\s+\d+\s+\d+\s+)?"
                    r"(?:TOLERANCE\s+(?:[-+.\deE]+%?\s+){1,4})?EQ_RGBA?\s+)(\S+)", re.MULTILINE)
_REFUSED = re.compile(r"(line \d+, column \d+: )?(.*?(?:not supported|is not allowed in a file).*)")


def corpus_files(amber: Path | None, cts: Path | None) -> list[Path]:
    files: list[Path] = []
    if amber is not None:
        files += sorted((amber / "tests" / "cases").glob("*.amber"))
    if cts is not None:
        files += sorted((cts / "external" / "vulkancts" / "data" / "vulkan" / "amber").rglob("*.amber"))
    return files


def compute_only(path: Path) -> bool:
    text = path.read_text(errors="replace")
    return bool(_COMPUTE.search(text)) and not _GRAPHICS.search(text)


_FILE_REF = re.compile(r"\bFILE\s+(?:TEXT\s+|BINARY\s+|PNG\s+)?([^\s#]+)")
_EQ_BUFFER = re.compile(r"^\s*EXPECT\s+(\S+)\s+EQ_BUFFER\s+(\S+)", re.MULTILINE)


def _first_value(text: str, buffer: str) -> re.Match[str] | None:
    """The first value a buffer's (or an image's) DATA (or FILL) gives."""
    head = re.search(r"^\s*(?:BUFFER|IMAGE)\s+" + re.escape(buffer) + r"\s+(DATA_TYPE|FORMAT)\s+\S+[^\n]*?"
                     r"\b(?:DATA|FILL|SERIES_FROM)\s+(?:#[^\n]*\n|\s)*", text, re.MULTILINE)
    if head is None:
        return None
    return re.compile(r"(\S+)").match(text, head.end())


def _statement(text: str, buffer: str) -> re.Match[str] | None:
    """A buffer's BUFFER (or an image's IMAGE) statement, with its DATA block when it has one."""
    line = re.compile(r"^[ \t]*(?:BUFFER|IMAGE)[ \t]+" + re.escape(buffer) + r"[ \t][^\n]*", re.MULTILINE).search(text)
    if line is None or not re.search(r"\bDATA\b", line.group(0)) or re.search(r"\bEND\b", line.group(0)):
        return line
    return re.compile(r"^[ \t]*(?:BUFFER|IMAGE)[ \t]+" + re.escape(buffer) + r"[ \t].*?^[ \t]*END\b",
                      re.MULTILINE | re.DOTALL).search(text)


def _changed(value: str) -> str | None:
    try:
        return str(int(value, 0) + 1)
    except ValueError:
        try:
            f = float(value)
        except ValueError:
            return None
        return repr(f + 1.5 + 2 * abs(f))


def mutate(text: str) -> str | None:
    """The file with one expectation made false, or None: its first EQ probe's first value
    changed beyond any tolerance; else its first pixel probe's red value moved by half the range;
    else its first EQ_BUFFER compared with a copy of the other buffer whose first value differs
    (the buffer itself may be an input of the shader)."""
    m = _PROBE.search(text)
    if m is not None:
        new = _changed(m.group(2))
        return None if new is None else text[:m.start(2)] + new + text[m.end(2):]
    px = _PIXEL.search(text)
    if px is not None:
        try:
            red = float(px.group(2))
        except ValueError:
            return None
        new = str(int(red + 128 if red < 128 else red - 128))
        return text[:px.start(2)] + new + text[px.end(2):]
    eq = _EQ_BUFFER.search(text)
    if eq is None:
        return None
    stmt = _statement(text, eq.group(2))
    if stmt is None:
        return None
    copy = re.sub(r"(BUFFER|IMAGE)[ \t]+" + re.escape(eq.group(2)), r"\1 kl_control", stmt.group(0).strip(), count=1)
    value = _first_value(copy, "kl_control")
    new = _changed(value.group(1)) if value else None
    if value is None or new is None:
        return None
    copy = copy[:value.start(1)] + new + copy[value.end(1):]
    expect = text[eq.start():eq.end()].rsplit(eq.group(2), 1)[0] + "kl_control"
    return text[:eq.start()] + "\n" + copy + "\n" + expect.lstrip("\n") + text[eq.end():]


def run_test(files: list[Path], kernellab: Path, jobs: int, timeout: int) -> dict[str, dict[str, object]]:
    """``kernellab test --json`` over ``files``: the result object per absolute path."""
    results: dict[str, dict[str, object]] = {}
    for start in range(0, len(files), 200):
        chunk = files[start:start + 200]
        proc = subprocess.run([str(kernellab), "test", "--jobs", str(jobs), "--json", "--no-rerun", "--progress",
                               "off", "--timeout", str(timeout), *map(str, chunk)],
                              capture_output=True, text=True, cwd="/")
        for line in proc.stdout.splitlines():
            doc = json.loads(line)
            results["/" + doc["id"].lstrip("/")] = doc
        if not proc.stdout.strip():
            sys.stderr.write(proc.stderr[-2000:])
    return results


def verdict(doc: dict[str, object] | None) -> tuple[str, str]:
    """(pass | fail | skip | refused | error | crash | timeout, detail)."""
    if doc is None:
        return "error", "no result"
    status, message = str(doc["status"]), str(doc.get("message", ""))
    first = message.splitlines()[0] if message else ""
    if status == "error":
        m = _REFUSED.search(first)
        if m and ("not supported" in first or "not allowed in a file" in first):
            return "refused", re.sub(r"^\S+: ", "", m.group(2))
    return status, first


def folder_of(path: Path, amber: Path | None, cts: Path | None) -> str:
    for root, name in ((amber, "amber"), (cts, "vk-gl-cts")):
        if root is not None and path.is_relative_to(root):
            return f"{name}/{path.parent.relative_to(root)}"
    return str(path.parent)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--amber", type=Path, help="a clone of google/amber")
    p.add_argument("--cts", type=Path, help="a clone of KhronosGroup/VK-GL-CTS")
    p.add_argument("--out", type=Path, required=True, help="folder for the mutants and results.json")
    p.add_argument("--kernellab", type=Path, default=DEFAULT_KERNELLAB)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--timeout", type=int, default=120)
    args = p.parse_args(argv)
    amber = args.amber.resolve() if args.amber else None
    cts = args.cts.resolve() if args.cts else None
    every = corpus_files(amber, cts)
    files = [f for f in every if compute_only(f)]
    t0 = time.perf_counter()
    results = run_test(files, args.kernellab, args.jobs, args.timeout)
    seconds = time.perf_counter() - t0
    verdicts = {f: verdict(results.get(str(f))) for f in files}
    # negative controls: each passing file with one expectation changed must fail
    mutants: dict[Path, Path] = {}
    for f, (v, _) in verdicts.items():
        if v != "pass":
            continue
        text = mutate(f.read_text(errors="replace"))
        if text is None:
            continue
        target = args.out / "mutants" / folder_of(f, amber, cts) / f.name
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, text)
        for name in _FILE_REF.findall(text):  # the data and shader files it reads, beside it
            if (f.parent / name).is_file() and not (target.parent / name).exists():
                (target.parent / name).write_bytes((f.parent / name).read_bytes())
        mutants[f] = target.resolve()
    mutant_results = run_test(list(mutants.values()), args.kernellab, args.jobs, args.timeout)
    control = {f: verdict(mutant_results.get(str(m)))[0] for f, m in mutants.items()}
    per_folder: dict[str, Counter[str]] = defaultdict(Counter)
    refused: Counter[str] = Counter()
    rows = []
    for f in files:
        v, detail = verdicts[f]
        folder = folder_of(f, amber, cts)
        per_folder[folder][v] += 1
        if f in control:
            per_folder[folder]["control-" + ("ok" if control[f] == "fail" else "BAD")] += 1
        if v == "refused":
            refused[re.sub(r"^line \d+, column \d+: ", "", re.sub(r"'[^']*'", "'…'", detail))[:100]] += 1
        rows.append({"file": str(f), "folder": folder, "verdict": v, "detail": detail,
                     "control": control.get(f, "")})
    kinds = ["pass", "fail", "skip", "refused", "error", "crash", "timeout", "control-ok", "control-BAD"]
    table = md_table(["folder", *kinds], [[folder, *(c.get(k, 0) for k in kinds)]
                                         for folder, c in sorted(per_folder.items())])
    total = Counter(v for v, _ in verdicts.values())
    summary = (f"{len(every)} AmberScript files, {len(files)} compute-only; " +
               ", ".join(f"{total.get(k, 0)} {k}" for k in kinds[:7]) +
               f"; negative controls: {sum(1 for c in control.values() if c == 'fail')} of {len(control)} fail "
               f"as they must; {seconds:.1f} s for the corpus through kernellab test --jobs {args.jobs}")
    refused_md = md_table(["refused construct", "files"], refused.most_common())
    args.out.mkdir(parents=True, exist_ok=True)
    write_atomic(args.out / "results.json", json.dumps({"summary": summary, "files": rows}, indent=1))
    print(summary + "\n\n" + table + "\n\n" + refused_md)
    others = [r for r in rows if r["verdict"] in ("fail", "error", "crash", "timeout")]
    if others:
        print("\n" + md_table(["file", "verdict", "detail"],
                              [[r["file"].split("/amber/")[-1], r["verdict"], str(r["detail"])[:140]]
                               for r in others]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
