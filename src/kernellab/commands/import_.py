"""``kernellab import FILE -o DIR``: a kernel-instantiation file or a PySchedCL kernel spec as an
equivalent scenario."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser("import", help="convert a kernel-instantiation file (GPUVerify JSON) or a PySchedCL "
                                      "kernel spec into a scenario",
                       description="Write DIR/scenario.json with an OpenCL C shader, buffers (.npy) and a "
                                   "dispatch per instantiation; `kernellab run DIR/scenario.json` then gives the "
                                   "outputs `kernellab run K.json` gives.")
    p.add_argument("file", type=Path, help="kernel-instantiation JSON or PySchedCL kernel spec")
    p.add_argument("-o", "--output", type=Path, required=True, help="folder for scenario.json and its files")
    p.add_argument("--index", type=int, help="import only instantiation N (default: all)")
    p.add_argument("--seed", type=int, default=0, help="seed for unconstrained arguments (default 0)")
    p.add_argument("--device", help="OpenCL device used to read the kernel's parameters (default: the best)")
    p.add_argument("--set", action="append", default=None, metavar="NAME=VALUE",
                   help="kernel specs: a variable of the spec's expressions, e.g. --set dataset=4096 (repeatable)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kernellab.formats.detect import detect

    fmt = detect(args.file)
    if fmt == "amber":
        return _import_amber(args.file, args.output)
    if fmt == "pyschedcl":
        from kernellab.convert.pyschedcl_scenario import import_spec
        from kernellab.formats.pyschedcl.kernel import parse_assignments
        print(import_spec(args.file, args.output, variables=parse_assignments(args.set), seed=args.seed))
        return 0
    from kernellab.convert.gpuverify_scenario import import_instantiations
    path = import_instantiations(args.file, args.output, index=args.index, seed=args.seed, device=args.device,
                                 report=lambda s: print(s, file=sys.stderr))
    print(path)
    return 0


def _import_amber(path: Path, folder: Path) -> int:
    """An AmberScript file as scenario files in ``folder``, each checkpoint's EXPECTs in the
    sidecar beside its scenario, so `kernellab test FOLDER` gives `kernellab run FILE`'s verdict."""
    import json

    from kernellab.compile.amber import prepare
    from kernellab.outputs import usable_output_folder
    from kernellab.suite.amber import checks_of
    from kernellab.suite.expectations import Expectations, sidecar_for

    usable_output_folder(folder)
    script, checkpoints = prepare(path, folder)
    for checkpoint in checkpoints:
        sidecar = sidecar_for(checkpoint.scenario)
        expectations = Expectations(sidecar, checkpoint.scenario, description=f"the EXPECTs of {path.name}",
                                    checks=checks_of(script, checkpoint.expects))
        tmp = sidecar.with_name(sidecar.name + ".tmp")
        tmp.write_text(json.dumps(expectations.to_json(), indent=1) + "\n")
        tmp.replace(sidecar)
        print(checkpoint.scenario)
    if script.features or script.extensions or script.instance_extensions or script.properties:
        print(f"kernellab: notice: {path.name} requires device features or extensions; the scenarios do not "
              "record them (kernellab run FILE checks them, exit 77)", file=sys.stderr)
    if script.debugger_threads:
        print(f"kernellab: notice: {path.name}'s DEBUG THREAD blocks need a shader debugger; the scenarios run "
              "their dispatches only (kernellab run FILE skips it, exit 77)", file=sys.stderr)
    return 0
