"""``kernellab run``: execute a workload file (flags compatible with Arm's scenario-runner)."""
from __future__ import annotations

import sys
import time
from pathlib import Path

from kernellab import logs
from kernellab.backends.registry import names as backend_names
from kernellab.commands import PROCESS, compile_cache_as_asked, start_up_done
from kernellab.errors import UsageError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    import argparse
    from typing import Any

log = logs.getLogger("kernellab.run")


def register(sub: Any) -> None:
    p = sub.add_parser("run", help="run a scenario (or other workload file) and write its outputs",
                       description="Run a workload file. Flags follow Arm's scenario-runner, so scripts can "
                                   "switch by changing the program name.")
    p.add_argument("file", nargs="?", type=Path, help="the workload file (same as --scenario)")
    p.add_argument("--scenario", type=Path, help="scenario JSON file to run")
    p.add_argument("--format", choices=["scenario", "kernel-instantiation", "pyschedcl", "amber"],
                   help="input format (default: detected from the file's content)")
    p.add_argument("--output", type=Path,
                   help="folder for the outputs: a scenario's relative dst paths and a PySchedCL spec's "
                        "arg<pos>.npy (default: the file's folder); a kernel-instantiation file's arg<N>.bin "
                        "are written only with --output (with --check and no --output, to a temporary folder)")
    p.add_argument("--device", help="device index or name substring (see `kernellab devices`)")
    # issue 3: OpenCL C scenarios on OpenCL devices; launches of kernel-instantiation files
    p.add_argument("--backend", choices=backend_names(), default="vulkan",
                   help="scenarios: run on Vulkan (default) or OpenCL devices (OpenCL-C shaders only)")
    p.add_argument("--index", type=int, help="kernel-instantiation files: run only instantiation N (default: all)")
    p.add_argument("--seed", type=int, default=0,
                   help="kernel-instantiation files: seed for arguments the file leaves unconstrained (default 0)")
    p.add_argument("--dry-run", action="store_true", help="build everything, execute nothing")
    p.add_argument("--repeat", type=int, default=1, help="run the commands N times (default 1)")
    p.add_argument("--strict", action="store_true", help="treat unknown fields as errors")
    p.add_argument("--allow-absolute-dst", action="store_true",
                   help="let dst paths be absolute (Arm's behaviour); without it they must lie under --output")
    p.add_argument("--profiling-dump-path", type=Path, help="write each command's GPU time (JSON)")
    p.add_argument("--perf-counters-dump-path", type=Path, help="write host-side phase timings (JSON)")
    p.add_argument("--pipeline-caching", action="store_true",
                   help="keep the Vulkan pipeline cache in CACHE_PATH/<scenario stem>.cache (as Arm's runner)")
    p.add_argument("--cache-path", type=Path, help="folder for --pipeline-caching (default: the temp folder)")
    p.add_argument("--clear-pipeline-cache", action="store_true",
                   help="with --pipeline-caching: delete the scenario's cache file first")
    p.add_argument("--fail-on-pipeline-cache-miss", action="store_true",
                   help="with --pipeline-caching: fail when a loaded cache lacks a pipeline")
    p.add_argument("--no-cache", action="store_true",
                   help="compile every kernel afresh: neither read nor write the compiled-artifact cache")
    p.add_argument("--enable-robustness-features", action="store_true", help="enable robust buffer access")
    p.add_argument("--capture-frames", type=Path, metavar="DIR",
                   help="save the resources each mark_boundary lists as <uid>.frame<N>.npy in DIR")
    p.add_argument("--dump-stages", type=Path, metavar="DIR",
                   help="write every compilation stage of every kernel as <uid>.<stage>.<ext>")
    # issue 13: expected outputs and timelines
    p.add_argument("--check", action="store_true",
                   help="compare the outputs with the expectations sidecar (NAME.expect.json); exit 1 on a mismatch")
    p.add_argument("--expectations", type=Path, metavar="FILE",
                   help="the sidecar for --check (default: beside the file)")
    p.add_argument("--trace", type=Path, metavar="F.json",
                   help="write a Chrome trace-event timeline (host phases; GPU time per command)")
    # kernel specs (PySchedCL): --set, --partition, --devices, --input, --split
    from kernellab.commands.options import add_spec_arguments
    add_spec_arguments(p)
    add_arm_only_flags(p)
    p.set_defaults(func=run)


#: what Arm 0.11's ``--disable-extension`` lists (src/main.cpp); kernellab enables none of them
ARM_DISABLABLE_EXTENSIONS = ("VK_EXT_custom_border_color", "VK_EXT_frame_boundary",
                             "VK_ARM_data_graph_neural_accelerator_statistics", "VK_KHR_maintenance5",
                             "VK_KHR_deferred_host_operations")
#: Arm's dump-folder flags that need a device feature kernellab does not emulate, and Arm's words for
#: a folder that is not there (scripts match on them)
_ARM_DUMP_DIRS = (("--neural-debug-database-dump-dir", "Neural Debug Database"),
                  ("--emulation-layer-profiling-dump-dir", "graph profiling"),
                  ("--neural-statistics-dump-dir", "Neural Statistics"),
                  ("--session-memory-dump-dir", "Session Memory"))


def _arm_version(**kwargs: Any) -> argparse.Action:
    """``run -v``/``--version``'s argparse action (:func:`kernellab.commands.run_extras.arm_version`),
    made only when argparse reads the command line."""
    from kernellab.commands.run_extras import arm_version

    return arm_version(**kwargs)


def add_arm_only_flags(p: Any) -> None:
    """The rest of Arm 0.11's flags (its src/main.cpp), so a script written for Arm runs unchanged."""
    p.add_argument("-v", "--version", nargs=0, action=_arm_version,
                   help="print version information as JSON (as Arm's runner does) and exit")
    p.add_argument("--wait-for-key-stroke-before-run", action="store_true",
                   help="wait for Enter before running")
    p.add_argument("--pause-on-exit", action="store_true", help="wait for Enter before exiting")
    p.add_argument("--enable-gpu-debug-markers", action="store_true",
                   help="label each dispatch with VK_EXT_debug_utils (when the loader has it)")
    p.add_argument("--capture-frame", action="store_true",
                   help="Arm: RenderDoc frame capture (accepted, no RenderDoc here; see --capture-frames)")
    p.add_argument("--disable-extension", action="extend", nargs="+", default=[], metavar="EXT",
                   choices=ARM_DISABLABLE_EXTENSIONS,
                   help="Arm: extensions not to enable (accepted; kernellab enables none of them)")
    for flag, _ in _ARM_DUMP_DIRS[:3]:
        p.add_argument(flag, nargs="?", const="", default="", metavar="DIR",
                       help="Arm: ML-extension dump folder (accepted; nothing to dump here)")
    p.add_argument("--session-memory-dump-dir", metavar="DIR", default="",
                   help="Arm: data-graph session memory dump folder (accepted; nothing to dump here)")
    p.add_argument("--neural-statistics-mode", choices=["0", "1"], default=None,
                   help="Arm: neural accelerator statistics mode (accepted; no such accelerator here)")


def arm_only_notices(args: argparse.Namespace) -> list[str]:
    """One line per Arm flag given that has no effect here; a dump folder that is not one is refused
    as Arm refuses it (before anything runs)."""
    for flag, what in _ARM_DUMP_DIRS:
        folder = getattr(args, flag[2:].replace("-", "_"), "") or ""
        if folder and not Path(folder).is_dir():
            raise UsageError(f"{flag}: Invalid {what} dump directory: {folder}")
    notices = []
    if getattr(args, "enable_gpu_debug_markers", False):
        notices.append("--enable-gpu-debug-markers: each dispatch is labelled with VK_EXT_debug_utils when the "
                       "Vulkan loader has it (a warning says when it does not)")
    if getattr(args, "capture_frame", False):
        notices.append("--capture-frame: accepted; no RenderDoc integration here "
                       "(kernellab's --capture-frames DIR saves the resources of each boundary)")
    if getattr(args, "disable_extension", None):
        notices.append(f"--disable-extension {' '.join(args.disable_extension)}: accepted; "
                       "kernellab does not enable these extensions")
    for flag, _ in _ARM_DUMP_DIRS:
        if getattr(args, flag[2:].replace("-", "_"), ""):
            notices.append(f"{flag}: accepted; kernellab has no ML-extension data to dump")
    if getattr(args, "neural_statistics_mode", None) is not None:
        notices.append("--neural-statistics-mode: accepted; there is no neural accelerator here")
    return [f"kernellab: notice: {n}" for n in notices]


def _wait_for_enter() -> None:
    print("Press enter to continue...", file=sys.stderr, flush=True)
    sys.stdin.readline()  # an empty line or end of input both continue


def _detected(path: Path, args: argparse.Namespace) -> tuple[str, Any]:
    """The file's format (``--format``, else told from its content) and, when telling it read the
    file's JSON, that document (None otherwise)."""
    if args.format:
        return args.format, None
    from kernellab.formats.detect import detect_document
    return detect_document(path)


def run(args: argparse.Namespace) -> int:
    if args.file and args.scenario and args.file != args.scenario:
        raise UsageError("give the file once: either as an argument or with --scenario")
    path = args.scenario or args.file
    if path is None:
        raise UsageError("no workload file: kernellab run S.json (or --scenario S.json)")
    if args.repeat < 1:
        raise UsageError(f"--repeat must be >= 1, got {args.repeat}")
    for notice in arm_only_notices(args):
        print(notice, file=sys.stderr)
    try:
        if getattr(args, "wait_for_key_stroke_before_run", False):
            _wait_for_enter()
        return _run(path, args)
    finally:
        if getattr(args, "pause_on_exit", False):
            _wait_for_enter()


def _run(path: Path, args: argparse.Namespace) -> int:
    if args.output is not None:
        from kernellab.outputs import usable_output_folder
        usable_output_folder(args.output)  # a file, /proc, a read-only folder: said before anything runs
    fmt, document = _detected(path, args)
    if fmt == "amber":
        from kernellab.commands.run_extras import run_amber_file
        return run_amber_file(path, args)
    if _native_kernels(fmt, args):
        from kernellab.commands.run_extras import sweep_outputs
        from kernellab.native.launch_guard import supervised
        status = supervised(cleanup=lambda: sweep_outputs(args.output or path.parent))
        if status is not None:  # the parent: the child ran the command
            return status
    check = getattr(args, "check", False) and not args.dry_run
    expectations = None
    if check:
        from kernellab.suite.checking import expectations_to_check
        expectations = expectations_to_check(path, args.expectations)
    temporary = None
    if fmt == "kernel-instantiation" and args.output is None and check:
        # its launches write nothing without --output; --check compares files, so they go
        # to a folder of their own, removed afterwards
        import tempfile

        temporary = tempfile.TemporaryDirectory(prefix="kernellab-check-")
        args.output = Path(temporary.name)
    try:
        with compile_cache_as_asked(args):
            if fmt != "scenario":
                from kernellab.commands.run_extras import format_options
                from kernellab.runtime.runners import run_format
                status = run_format(fmt, path, format_options(args))
            else:
                status = run_scenario(path, args, document)
        if fmt == "kernel-instantiation" and args.output is None and not args.dry_run and status == 0:
            # told once the launches ran: a file refused before them wrote nothing for another reason
            print("kernellab: notice: no --output: the launches ran and their outputs (arg<N>.bin) were not "
                  "written; pass --output DIR to keep them", file=sys.stderr)
        if check and status == 0:
            from kernellab.suite.checking import check_written_outputs
            status = check_written_outputs(path, args.output, fmt, args.expectations, expectations=expectations)
    finally:
        if temporary is not None:
            temporary.cleanup()
    return status


def _native_kernels(fmt: str, args: argparse.Namespace) -> bool:
    """Whether this run may execute OpenCL kernels as native code in this process (any OpenCL
    device but the Oclgrind simulator), in the ``kernellab`` program's own process: then a
    crashing kernel must give a line naming its launch (native/launch_guard.py)."""
    opencl = fmt in ("kernel-instantiation", "pyschedcl") or (fmt == "scenario" and args.backend == "opencl")
    if not opencl:
        return False  # a Vulkan run does without the build limit's module
    from kernellab.native.build_limit import armed
    interactive = getattr(args, "wait_for_key_stroke_before_run", False) or getattr(args, "pause_on_exit", False)
    return bool(armed) and not interactive and "oclgrind" not in str(args.device or "").lower()


def run_scenario(path: Path, args: argparse.Namespace, document: Any = None) -> int:
    """Run the scenario at ``path``; ``document``: its JSON when already read (format detection)."""
    from kernellab.classcode import collector_paused

    with collector_paused():  # start-up allocates only what lives to the end (classcode.py)
        from kernellab.formats.scenario import load_scenario
        from kernellab.runtime.executor import RunOptions, UntilExit, execute

        t0 = time.perf_counter()
        scenario, warnings = load_scenario(path, args.output, strict=args.strict,
                                           allow_absolute_dst=getattr(args, "allow_absolute_dst", False),
                                           document=document)
        parse_ms = (time.perf_counter() - t0) * 1e3
        if args.backend == "vulkan":
            _load_vulkan_binding()
        start_up_done()  # before the collector resumes: its next pass would walk them all
    for w in warnings:
        print(w, file=sys.stderr)
    log.info("parse: %s, %d resources and %d commands (%.1f ms)", path, len(scenario.resources),
             len(scenario.commands), parse_ms)

    cache_dir = None
    if args.pipeline_caching:
        # Arm's src/main.cpp: the folder must exist (default: the temp folder); the file is <stem>.cache
        import tempfile

        cache_dir = args.cache_path or Path(tempfile.gettempdir())
        if not cache_dir.is_dir():
            raise UsageError(f"Invalid cache directory: {cache_dir}")
    elif args.fail_on_pipeline_cache_miss:
        # Arm reads the flag only together with --pipeline-caching (its src/main.cpp); so do we
        print("kernellab: notice: --fail-on-pipeline-cache-miss: has no effect without --pipeline-caching",
              file=sys.stderr)
    options = RunOptions(device=args.device, backend=args.backend, dry_run=args.dry_run, repeat=args.repeat,
                         capture_frames=args.capture_frames, dump_stages=args.dump_stages, cache_dir=cache_dir,
                         robust_buffer_access=args.enable_robustness_features,
                         timestamps=args.profiling_dump_path is not None or getattr(args, "trace", None) is not None,
                         iteration_counters=args.perf_counters_dump_path is not None,
                         fail_on_cache_miss=args.fail_on_pipeline_cache_miss and cache_dir is not None,
                         clear_pipeline_cache=args.clear_pipeline_cache and cache_dir is not None,
                         arm_log=cache_dir is not None,
                         debug_markers=getattr(args, "enable_gpu_debug_markers", False),
                         strict=args.strict, guard_bands=True,
                         finish=lambda report, outputs: _stage_dumps(args, report, outputs, parse_ms))
    progress = None
    if args.repeat > 1:
        from rich.progress import Progress
        progress = Progress(transient=True, console=_stderr_console())
        task = progress.add_task("running", total=args.repeat)
        options.progress = lambda done, total: progress.update(task, completed=done)
    # a process that ends with the command leaves the device to its exit (executor.UntilExit)
    lease = UntilExit() if PROCESS.one_shot else None
    if progress is not None:
        with progress:
            report = execute(scenario, options, lease)
    else:
        report = execute(scenario, options, lease)
    for notice in report.warnings:
        print(f"kernellab: warning: {notice}", file=sys.stderr)
    if getattr(args, "trace", None) is not None:
        from kernellab.suite.trace import run_report_events, write_trace
        write_trace(args.trace, run_report_events(str(path), report))
    return 0


def _load_vulkan_binding() -> None:
    """Load the compute path's Vulkan binding now, with start-up's collector pause; a missing
    loader is reported where the device is opened."""
    from kernellab.errors import DeviceError
    from kernellab.native import vk

    try:
        vk.compute()
    except DeviceError:
        pass


def _stage_dumps(args: argparse.Namespace, report: Any, outputs: Any, parse_ms: float) -> None:
    """Stage the profiling and perf-counter dumps (Arm's schemas, runtime/arm_dumps.py) into the
    run's outputs: they are committed with the dst files, so a dump that cannot be written leaves
    no output either."""
    report.phases_ms = {"parse": parse_ms, **report.phases_ms}
    if not (args.perf_counters_dump_path or args.profiling_dump_path):
        return  # no dump asked for: the dumps' module is not loaded
    from kernellab.runtime.arm_dumps import dump_text, perf_counters_document, profiling_document

    if args.perf_counters_dump_path:
        outputs.text(args.perf_counters_dump_path, dump_text(perf_counters_document(report)))
    if args.profiling_dump_path:
        outputs.text(args.profiling_dump_path, dump_text(profiling_document(report, args.dry_run)))


def _stderr_console() -> Any:
    from rich.console import Console

    from kernellab.textsafe import raw  # the progress bar's own escape sequences; its text is ours
    return Console(file=raw(sys.stderr))
