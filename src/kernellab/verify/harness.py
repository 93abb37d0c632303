"""The child process ``kernellab verify`` runs: one workload on Oclgrind with every check on.

Oclgrind reads its ``OCLGRIND_*`` settings when the platform is first enumerated, so they are set
here, before pyopencl is imported, and never in the parent. Oclgrind writes its diagnostics to
this process's stderr; the harness writes marker lines into the same stream around each launch
(``@@kernellab <event> <json>``) so the parent can tell which launch each diagnostic belongs to.

Run by hand to see the raw log: ``python -m kernellab.verify.harness K.json [--index N] [--seed S]``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

MARK = "@@kernellab"

#: Oclgrind settings: every checker on; races need optimizations off (-cl-opt-disable, below)
OCLGRIND_ENV = {
    "OCLGRIND_DATA_RACES": "1",
    "OCLGRIND_UNINITIALIZED": "1",
    "OCLGRIND_CHECK_API": "1",
    "OCLGRIND_MAX_ERRORS": "10000",
    "PYOPENCL_NO_CACHE": "1",
}


KEEP_ENV = {"OCLGRIND_NUM_THREADS", "OCLGRIND_PCH_DIR", "OCLGRIND_DISABLE_PCH"}


def mark(event: str, **data: Any) -> None:
    sys.stderr.flush()
    sys.stderr.write(f"{MARK} {event} {json.dumps(data)}\n")
    sys.stderr.flush()


def _run_instantiations(path: str, index: int | None, seed: int) -> None:
    from kernellab.backends.opencl import OpenCLBackend
    from kernellab.errors import BackendError
    from kernellab.formats import gpuverify
    from kernellab.runtime.instantiation import build, prepare, select

    insts, _ = gpuverify.load(path)
    chosen = select(insts, index, Path(path))
    backend = OpenCLBackend.open("Oclgrind")
    try:
        for inst in chosen:
            program = build(backend, inst)
            launch = prepare(backend, inst, program, seed)
            # Oclgrind numbers global buffers 1, 2, ... in creation order: arrays then images
            allocated = [n for n, a in enumerate(launch.args)
                         if n in launch.arrays or program.args[n].kind == "image"]
            enqueued = [f"{h.compilation_unit}:{h.line_number}" for h in inst.host_api_calls or ()
                        if h.function_name == "clEnqueueNDRangeKernel"]
            mark("begin", index=inst.index, kernel=inst.entry_point, kernel_file=str(inst.kernel_path),
                 buffers=allocated, filled=launch.filled, enqueued_at=enqueued[-1] if enqueued else None)
            try:
                launch.launch(backend)
                backend.submit()
            except BackendError as exc:
                mark("launch-error", index=inst.index, call=exc.call, code=exc.code, message=str(exc))
            mark("end", index=inst.index)
            for buf in launch.arrays.values():
                buf.mem.release()
    finally:
        backend.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kernellab.verify.harness")
    p.add_argument("file")
    p.add_argument("--index", type=int)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    # a user's own OCLGRIND_* settings could send the log elsewhere (OCLGRIND_LOG) or skip
    # work-groups (OCLGRIND_QUICK); only the thread count and header locations are kept
    for key in [k for k in os.environ if k.startswith("OCLGRIND_") and k not in KEEP_ENV]:
        del os.environ[key]
    os.environ.update(OCLGRIND_ENV)
    from kernellab.backends import opencl
    from kernellab.errors import InputError, KernellabError
    opencl.force_build_options("-cl-opt-disable")
    try:
        _run_instantiations(args.file, args.index, args.seed)
    except InputError as exc:
        mark("input-error", problems=[{"file": p.file, "where": p.where, "message": p.message}
                                      for p in exc.problems])
        return 0
    except KernellabError as exc:
        mark("failure", message=str(exc))
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
