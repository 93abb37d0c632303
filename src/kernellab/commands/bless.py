"""``kernellab bless``: run a workload and keep its outputs as the expected ones (golden files).

Scenarios bless resource uids with a ``dst``; kernel-instantiation files and PySchedCL specs
are run into a temporary folder and bless the files the run writes there (``arg2.npy``,
``arg0.bin``), named as ``run --check`` finds them under ``--output``."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from kernellab.backends.registry import names as backend_names
from kernellab.errors import UsageError


def register(sub: Any) -> None:
    p = sub.add_parser("bless", help="run a workload and write its outputs as the references of its expectations",
                       description="Run a workload and write each output as a reference .npy file, and the "
                                   "expectations sidecar NAME.expect.json listing them (tolerances already in "
                                   "the sidecar are kept). Scenarios: outputs are resource uids with a dst; "
                                   "kernel-instantiation files and PySchedCL specs: the files the run writes "
                                   "(arg<N>.bin, arg<pos>.npy). Refuses to overwrite anything without --force.")
    p.add_argument("file", type=Path, help="the workload: a scenario, a kernel-instantiation file or a PySchedCL spec")
    p.add_argument("--expectations", type=Path, metavar="FILE",
                   help="the sidecar (default: NAME.expect.json beside it)")
    p.add_argument("--output-uid", action="append", default=[], metavar="UID", dest="uids",
                   help="bless this output only (repeatable; default: those in the sidecar, else every dst "
                        "or every file the run writes)")
    p.add_argument("--dtype", action="append", default=[], metavar="UID=DTYPE",
                   help="keep buffer UID's bytes as this NumPy dtype (e.g. c=float32); default: the sidecar's, "
                        "else raw bytes")
    p.add_argument("--atol", type=float, help="absolute tolerance for new outputs")
    p.add_argument("--rtol", type=float, help="relative tolerance for new outputs")
    p.add_argument("--ulps", type=int, help="tolerance in ULPs for new outputs")
    p.add_argument("--device", help="device index or name substring")
    p.add_argument("--backend", choices=backend_names(), default="vulkan",
                   help="scenarios: run on Vulkan (default) or OpenCL devices (OpenCL-C shaders only)")
    p.add_argument("--force", action="store_true", help="overwrite an existing sidecar and references")
    p.add_argument("--index", type=int, help="kernel-instantiation files: run only instantiation N (default: all)")
    from kernellab.commands.options import add_spec_arguments
    add_spec_arguments(p)  # PySchedCL specs: --set, --partition, --devices, --seed, --input, --split
    p.set_defaults(func=bless)


def _unknown_name(flag: str, name: str, known: list[str], what: str) -> UsageError:
    import difflib

    close = difflib.get_close_matches(name, known, n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    listed = ", ".join(known) if known else "none"
    return UsageError(f"{flag}: {name!r} is not {what} (they are: {listed}){hint}")


def _check_dtype_names(dtypes: dict[str, str], uids: list[str], file: Path) -> None:
    """A ``--dtype`` for an output not blessed would be dropped without a word: refused instead."""
    for uid in dtypes:
        if uid not in uids:
            raise _unknown_name(f"--dtype {uid}={dtypes[uid]}", uid, uids, f"an output blessed from {file}")


def _dtypes(pairs: list[str]) -> dict[str, str]:
    import numpy as np

    out = {}
    for pair in pairs:
        uid, sep, dtype = pair.partition("=")
        if not sep or not uid:
            raise UsageError(f"--dtype {pair!r}: expected UID=DTYPE such as c=float32")
        try:
            out[uid] = np.dtype(dtype).name
        except TypeError:
            raise UsageError(f"--dtype {pair!r}: {dtype!r} is not a NumPy dtype") from None
    return out


def bless(args: argparse.Namespace) -> int:
    from kernellab.formats.detect import detect
    from kernellab.suite.expectations import load_expectations, sidecar_for

    fmt = detect(args.file)
    if fmt == "amber":
        from kernellab.errors import InputError

        raise InputError("an AmberScript file holds its own expectations (its EXPECT commands), which "
                         "`kernellab run` and `kernellab test` check: there is no reference to bless", file=args.file)
    sidecar = args.expectations or sidecar_for(args.file)
    old = load_expectations(sidecar) if sidecar.is_file() else None
    if old is not None and not args.force:
        raise UsageError(f"{sidecar} exists: pass --force to overwrite it and its references")
    dtypes = _dtypes(args.dtype)
    if fmt == "scenario":
        uids, outputs = _run_scenario(args, old, dtypes)
    else:
        uids, outputs = _run_files(args, fmt, old, dtypes)
    return _write(args, sidecar, old, dtypes, uids, outputs)


def _run_scenario(args: argparse.Namespace, old: Any, dtypes: dict[str, str]) -> tuple[list[str], dict[str, Any]]:
    from kernellab.errors import InputError
    from kernellab.formats.paths import safe_name, uid_where
    from kernellab.session import Session
    from kernellab.suite.expectations import references_outside

    with Session(args.device, backend=args.backend) as session:
        scenario = session.load(args.file)
        uids = args.uids or (list(old.outputs) if old is not None else
                             [r.uid for r in scenario.resources if getattr(r, "dst_path", None) is not None])
        if not uids:
            raise UsageError(f"{args.file}: no resource has a dst; name the outputs with --output-uid")
        for uid in args.uids:
            if uid not in scenario.by_uid:
                outputs = [r.uid for r in scenario.resources if getattr(r, "dst_path", None) is not None]
                raise _unknown_name("--output-uid", uid, outputs or [r.uid for r in scenario.resources],
                                    f"a resource of {args.file}")
        _check_dtype_names(dtypes, uids, args.file)
        # where each reference goes is settled before anything runs: files choose no place outside
        # the sidecar's folder, and a uid that names a new reference must be a plain file name
        if old is not None and (problems := references_outside(old, uids)):
            raise InputError(problems)
        for uid in uids:
            if old is None or uid not in old.outputs:
                safe_name(uid, args.file, uid_where(scenario, uid))
        return uids, session.run(scenario, outputs=uids)


def _run_files(args: argparse.Namespace, fmt: str, old: Any, dtypes: dict[str, str]) -> tuple[list[str], dict[str, Any]]:
    """Run a kernel-instantiation file or a PySchedCL spec into a temporary folder and read the
    files it writes there (by their path in the folder, as ``run --check`` names them)."""
    import tempfile

    from kernellab.commands.run_extras import format_options
    from kernellab.errors import InputError
    from kernellab.runtime.runners import run_format
    from kernellab.suite.checking import read_output
    from kernellab.suite.expectations import references_outside

    if args.uids and old is not None and (problems := references_outside(old, args.uids)):
        raise InputError(problems)
    with tempfile.TemporaryDirectory(prefix="kernellab-bless-") as tmp:
        folder = Path(tmp)
        status = run_format(fmt, args.file, format_options(args, output=folder, profiling_path=None))
        if status:
            raise UsageError(f"{args.file}: the run failed (exit {status}); nothing blessed")
        written = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
        uids = args.uids or (list(old.outputs) if old is not None else written)
        for uid in uids:
            if uid not in written:
                raise _unknown_name("--output-uid" if args.uids else f"{old.sidecar}: /outputs", uid, written,
                                    f"a file the run of {args.file} writes")
        _check_dtype_names(dtypes, uids, args.file)
        if old is not None and (problems := references_outside(old, uids)):
            raise InputError(problems)
        return uids, {uid: read_output(folder / uid) for uid in uids}


def _reference_name(uid: str) -> str:
    """``c`` -> ``c.npy``; a written file ``arg0.bin`` -> ``arg0.npy``, ``1/arg0.bin`` -> ``1.arg0.npy``."""
    path = Path(uid)
    stem = path.stem if path.suffix in (".bin", ".npy") else path.name
    return ".".join([*path.parent.parts, stem]) + ".npy"


def _write(args: argparse.Namespace, sidecar: Path, old: Any, dtypes: dict[str, str], uids: list[str],
           outputs: dict[str, Any]) -> int:
    import numpy as np

    from kernellab.outputs import OutputSet, write_text
    from kernellab.suite.expectations import Expectations, OutputExpectation, Tolerance
    from kernellab.suite.wording import plural

    tol = Tolerance(atol=args.atol if args.atol is not None else (0.0 if args.rtol is not None else None),
                    rtol=args.rtol if args.rtol is not None else (0.0 if args.atol is not None else None),
                    ulps=args.ulps)
    stem = args.file.name[:-5] if args.file.name.endswith(".json") else args.file.name
    ref_dir = sidecar.parent / f"{stem}.expected"
    expectations = Expectations(sidecar, args.file, description=old.description if old else "")
    planned: list[tuple[Path, np.ndarray]] = []
    for uid in uids:
        previous = old.outputs.get(uid) if old is not None else None
        dtype = dtypes.get(uid) or (previous.dtype if previous else None)
        array = outputs[uid]
        if dtype is not None:
            raw = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
            if raw.nbytes % np.dtype(dtype).itemsize:
                raise UsageError(f"--dtype {uid}={dtype}: {raw.nbytes} bytes are not a whole number of {dtype}")
            array = raw.view(dtype)
        reference = previous.reference if previous else ref_dir / _reference_name(uid)
        planned.append((reference, array))
        expectations.outputs[uid] = OutputExpectation(uid, reference, previous.tolerance if previous else tol, dtype)
    existing = [str(ref) for ref, _ in planned if ref.exists()]
    if existing and not args.force:
        raise UsageError(f"references exist ({', '.join(existing)}): pass --force to overwrite them")
    with OutputSet(sidecar.parent) as files:
        for ref, array in planned:
            files.npy(ref, array)
        files.commit()
    write_text(sidecar, json.dumps(expectations.to_json(), indent=2) + "\n")
    print(f"blessed {plural(len(planned), 'output')} of {args.file} into {sidecar}", file=sys.stderr)
    return 0
