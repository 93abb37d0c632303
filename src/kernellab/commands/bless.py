"""``kernellab bless``: run a workload and keep its outputs as the expected ones (golden files)."""
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
                       description="Run a scenario and write each output as a reference .npy file, and the "
                                   "expectations sidecar NAME.expect.json listing them (tolerances already in "
                                   "the sidecar are kept). Refuses to overwrite anything without --force.")
    p.add_argument("file", type=Path, help="the scenario")
    p.add_argument("--expectations", type=Path, metavar="FILE",
                   help="the sidecar (default: NAME.expect.json beside it)")
    p.add_argument("--output-uid", action="append", default=[], metavar="UID", dest="uids",
                   help="bless this output only (repeatable; default: those in the sidecar, else every dst)")
    p.add_argument("--dtype", action="append", default=[], metavar="UID=DTYPE",
                   help="keep buffer UID's bytes as this NumPy dtype (e.g. c=float32); default: the sidecar's, "
                        "else raw bytes")
    p.add_argument("--atol", type=float, help="absolute tolerance for new outputs")
    p.add_argument("--rtol", type=float, help="relative tolerance for new outputs")
    p.add_argument("--ulps", type=int, help="tolerance in ULPs for new outputs")
    p.add_argument("--device", help="device index or name substring")
    p.add_argument("--backend", choices=backend_names(), default="vulkan")
    p.add_argument("--force", action="store_true", help="overwrite an existing sidecar and references")
    p.set_defaults(func=bless)


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
    import numpy as np

    from kernellab.errors import InputError
    from kernellab.formats.paths import safe_name, uid_where
    from kernellab.outputs import OutputSet, write_text
    from kernellab.session import Session
    from kernellab.suite.expectations import (Expectations, OutputExpectation, Tolerance, load_expectations,
                                               references_outside, sidecar_for)

    from kernellab.formats.detect import detect
    if detect(args.file) != "scenario":
        raise UsageError(f"{args.file}: bless runs scenarios; run other formats with `kernellab run` and list "
                         "their output files in a sidecar by hand (see docs/suites.md)")
    sidecar = args.expectations or sidecar_for(args.file)
    old = load_expectations(sidecar) if sidecar.is_file() else None
    if old is not None and not args.force:
        raise UsageError(f"{sidecar} exists: pass --force to overwrite it and its references")
    dtypes = _dtypes(args.dtype)
    tol = Tolerance(atol=args.atol if args.atol is not None else (0.0 if args.rtol is not None else None),
                    rtol=args.rtol if args.rtol is not None else (0.0 if args.atol is not None else None),
                    ulps=args.ulps)
    with Session(args.device, backend=args.backend) as session:
        scenario = session.load(args.file)
        uids = args.uids or (list(old.outputs) if old is not None else
                             [r.uid for r in scenario.resources if getattr(r, "dst_path", None) is not None])
        if not uids:
            raise UsageError(f"{args.file}: no resource has a dst; name the outputs with --output-uid")
        # where each reference goes is settled before anything runs: files choose no place outside
        # the sidecar's folder, and a uid that names a new reference must be a plain file name
        if old is not None and (problems := references_outside(old, uids)):
            raise InputError(problems)
        for uid in uids:
            if old is None or uid not in old.outputs:
                safe_name(uid, args.file, uid_where(scenario, uid))
        outputs = session.run(scenario, outputs=uids)
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
        reference = previous.reference if previous else ref_dir / f"{uid}.npy"
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
    print(f"blessed {len(planned)} outputs of {args.file} into {sidecar}", file=sys.stderr)
    return 0
