"""``kernellab import FILE -o DIR``: a kernel-instantiation file, a PySchedCL kernel spec or an
AmberScript file as equivalent scenarios; DIR gets every file or none."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser("import", help="convert a kernel-instantiation file (GPUVerify JSON), a PySchedCL "
                                      "kernel spec or an AmberScript file into scenarios",
                       description="Write DIR/scenario.json with an OpenCL C shader, buffers (.npy) and a "
                                   "dispatch per instantiation; `kernellab run DIR/scenario.json` then writes "
                                   "the data `kernellab run K.json --output OUT` writes (as .npy files). An "
                                   "AmberScript file T.amber becomes DIR/T.json with its expectations (one "
                                   "scenario per checkpoint), which `kernellab test DIR` checks.")
    p.add_argument("file", type=Path, help="kernel-instantiation JSON, PySchedCL kernel spec or AmberScript file")
    p.add_argument("-o", "--output", type=Path, required=True,
                   help="folder for the scenario(s) and their files")
    p.add_argument("--index", type=int, help="import only instantiation N (default: all)")
    p.add_argument("--seed", type=int, default=0, help="seed for unconstrained arguments (default 0)")
    p.add_argument("--device", help="OpenCL device used to read the kernel's parameters (default: the best)")
    p.add_argument("--set", action="append", default=None, metavar="NAME=VALUE",
                   help="kernel specs: a variable of the spec's expressions, e.g. --set dataset=4096 (repeatable)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kernellab.formats.detect import detect
    from kernellab.outputs import usable_output_folder
    from kernellab.staged_folders import staged_folder, staged_path

    fmt = detect(args.file)
    usable_output_folder(args.output)
    folder = Path(args.output)
    # the whole output is written beside DIR and moved in only when every step succeeded: a
    # kernel that fails to compile, or a bad buffer after good ones, leaves DIR as it was
    with staged_folder(folder) as stage:
        if fmt == "amber":
            written, notices = _import_amber(args.file, stage)
        elif fmt == "pyschedcl":
            from kernellab.convert.pyschedcl_scenario import import_spec
            from kernellab.formats.pyschedcl.kernel import parse_assignments
            written, notices = [import_spec(args.file, stage, variables=parse_assignments(args.set),
                                            seed=args.seed)], []
        else:
            from kernellab.convert.gpuverify_scenario import import_instantiations
            written = [import_instantiations(args.file, stage, index=args.index, seed=args.seed, device=args.device,
                                             report=lambda s: print(s, file=sys.stderr))]
            notices = []
    for path in written:
        placed = staged_path(path, stage, folder)
        print(placed.resolve() if fmt == "amber" else placed)  # as each importer named its files
    for notice in notices:
        print(notice, file=sys.stderr)
    return 0


def _import_amber(path: Path, folder: Path) -> tuple[list[Path], list[str]]:
    """An AmberScript file as scenario files in ``folder``, each checkpoint's EXPECTs in the
    sidecar beside its scenario, so `kernellab test FOLDER` gives `kernellab run FILE`'s verdict;
    the scenarios written and the notices to show."""
    import json

    from kernellab.compile.amber import prepare
    from kernellab.formats.amber.origins import ORIGINS_FILE
    from kernellab.formats.amber.places import PLACES_FILE
    from kernellab.suite.amber import checks_of
    from kernellab.suite.expectations import Expectations, sidecar_for

    script, checkpoints = prepare(path, folder)
    # the files written are the user's from now on (edited, moved): their errors name them, not the script
    (folder / ORIGINS_FILE).unlink(missing_ok=True)
    (folder / PLACES_FILE).unlink(missing_ok=True)
    written: list[Path] = []
    for checkpoint in checkpoints:
        sidecar = sidecar_for(checkpoint.scenario)
        expectations = Expectations(sidecar, checkpoint.scenario, description=f"the EXPECTs of {path.name}",
                                    checks=checks_of(script, checkpoint.expects))
        tmp = sidecar.with_name(sidecar.name + ".tmp")
        tmp.write_text(json.dumps(expectations.to_json(), indent=1) + "\n")
        tmp.replace(sidecar)
        written.append(checkpoint.scenario)
    notices: list[str] = []
    if script.features or script.extensions or script.instance_extensions or script.properties:
        notices.append(f"kernellab: notice: {path.name} requires device features or extensions; the scenarios "
                       "do not record them (kernellab run FILE checks them, exit 77)")
    if script.debugger_threads:
        notices.append(f"kernellab: notice: {path.name}'s DEBUG THREAD blocks need a shader debugger; the "
                       "scenarios run their dispatches only (kernellab run FILE skips it, exit 77)")
    return written, notices
