"""Arm 0.11's command line on ``kernellab run`` (issue 11): every flag accepted, those without meaning
here with a one-line notice, no abbreviated long options, ``--log-level`` before or after the command.

Device-free: the run itself is replaced by a recorder, only the command line is under test."""
from __future__ import annotations

import argparse
import io
import json

import pytest

from kernellab import __version__, cli
from kernellab.commands import run as run_command

#: Arm 0.11's flags, as its ``--help`` lists them, each with a value where it takes one
ARM_FLAGS = [
    ["--output", "OUT"], ["--profiling-dump-path", "p.json"], ["--pipeline-caching"],
    ["--clear-pipeline-cache"], ["--cache-path", "/tmp"], ["--neural-debug-database-dump-dir"],
    ["--fail-on-pipeline-cache-miss"], ["--emulation-layer-profiling-dump-dir"],
    ["--neural-statistics-dump-dir"], ["--neural-statistics-mode", "0"], ["--perf-counters-dump-path", "c.json"],
    ["--log-level", "info"], ["--wait-for-key-stroke-before-run"], ["--dry-run"],
    ["--disable-extension", "VK_EXT_frame_boundary"], ["--enable-gpu-debug-markers"],
    ["--session-memory-dump-dir", "/tmp"], ["--repeat", "2"], ["--capture-frame"], ["--pause-on-exit"],
    ["--enable-robustness-features"],
]


@pytest.fixture
def recorded(monkeypatch):
    """Replace the run by a recorder of the parsed arguments."""
    seen: list[argparse.Namespace] = []

    def fake_run(path, args):
        seen.append(args)
        return 0

    monkeypatch.setattr(run_command, "_run", fake_run)
    monkeypatch.setattr("sys.stdin", io.StringIO("\n\n"))
    return seen


def main(argv, capsys):
    rc = cli.main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return rc, out, err


@pytest.mark.parametrize("flag", ARM_FLAGS, ids=lambda f: f[0])
def test_every_arm_flag_is_accepted(flag, recorded, capsys):
    rc, _, err = main(["run", "--scenario", "s.json", *flag], capsys)
    assert rc == 0, err
    assert len(recorded) == 1


@pytest.mark.parametrize("flag", [["--enable-gpu-debug-markers"], ["--capture-frame"],
                                  ["--disable-extension", "VK_EXT_custom_border_color", "VK_EXT_frame_boundary"],
                                  ["--neural-statistics-mode", "1"], ["--session-memory-dump-dir", "/tmp"],
                                  ["--neural-debug-database-dump-dir", "/tmp"],
                                  ["--emulation-layer-profiling-dump-dir", "/tmp"],
                                  ["--neural-statistics-dump-dir", "/tmp"]], ids=lambda f: f[0])
def test_flags_without_meaning_here_give_one_notice(flag, recorded, capsys):
    rc, _, err = main(["run", "s.json", *flag], capsys)
    assert rc == 0
    notices = [line for line in err.splitlines() if line.startswith("kernellab: notice:")]
    assert len(notices) == 1 and flag[0] in notices[0]


def test_flags_with_meaning_give_no_notice(recorded, capsys):
    rc, _, err = main(["run", "s.json", "--dry-run", "--repeat", "2", "--enable-robustness-features"], capsys)
    assert rc == 0 and "notice" not in err


@pytest.mark.parametrize("flag,words", [
    ("--emulation-layer-profiling-dump-dir", "Invalid graph profiling dump directory:"),
    ("--neural-debug-database-dump-dir", "Invalid Neural Debug Database dump directory:"),
    ("--neural-statistics-dump-dir", "Invalid Neural Statistics dump directory:"),
    ("--session-memory-dump-dir", "Invalid Session Memory dump directory:"),
])
def test_a_dump_folder_that_is_not_one_is_refused_in_arms_words(flag, words, tmp_path, recorded, capsys):
    missing = tmp_path / "missing"
    rc, _, err = main(["run", "s.json", flag, str(missing)], capsys)
    assert rc == 2 and f"{words} {missing}" in err and not recorded


def test_disable_extension_takes_several_and_repeats(recorded, capsys):
    rc, _, _ = main(["run", "s.json", "--disable-extension", "VK_EXT_custom_border_color", "VK_EXT_frame_boundary",
                     "--disable-extension", "VK_KHR_deferred_host_operations"], capsys)
    assert rc == 0
    assert recorded[0].disable_extension == ["VK_EXT_custom_border_color", "VK_EXT_frame_boundary",
                                             "VK_KHR_deferred_host_operations"]


@pytest.mark.parametrize("argv", [["--disable-extension", "VK_KHR_nonsense"], ["--disable-extension"],
                                  ["--neural-statistics-mode", "2"], ["--log-level", "verbose"]])
def test_bad_values_of_arm_flags_are_usage_errors(argv, recorded, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "s.json", *argv])
    assert exc.value.code == 2 and not recorded


@pytest.mark.parametrize("flag", ["-v", "--version"])
def test_run_version_is_arms_json(flag, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", flag])
    assert exc.value.code == 0
    info = json.loads(capsys.readouterr().out)
    assert info["version"] == __version__ and isinstance(info["dependencies"], list)
    assert set(info) == {"version", "revision", "dependencies"}


def test_capture_frame_is_not_capture_frames(recorded, capsys):
    rc, _, _ = main(["run", "s.json", "--capture-frame"], capsys)
    assert rc == 0
    assert recorded[0].capture_frame is True and recorded[0].capture_frames is None


@pytest.mark.parametrize("argv", [["run", "s.json", "--capture-frames"], ["run", "s.json", "--capture-fr", "d"],
                                  ["run", "s.json", "--dry"], ["--log", "info", "run", "s.json"],
                                  ["run", "s.json", "--profiling-dump", "p.json"]])
def test_no_abbreviated_long_options(argv, recorded, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2 and not recorded


def test_every_parser_refuses_abbreviations():
    parser = cli.build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert parser.allow_abbrev is False
    for name, sub in subparsers.choices.items():
        assert sub.allow_abbrev is False, name


@pytest.mark.parametrize("argv,level", [
    (["--log-level", "debug", "run", "s.json"], "debug"),
    (["run", "s.json", "--log-level", "error"], "error"),
    (["run", "--log-level", "INFO", "s.json"], "info"),
    (["--log-level", "debug", "run", "s.json", "--log-level", "warning"], "warning"),
    (["run", "s.json"], None),
])
def test_log_level_before_or_after_the_command(argv, level, recorded, capsys):
    rc, _, _ = main(argv, capsys)
    assert rc == 0 and recorded[0].log_level == level


@pytest.mark.parametrize("command", [["validate", "s.json"], ["schema"], ["devices"], ["listing", "s.spv"]],
                         ids=lambda c: c[0])
def test_log_level_after_other_commands(command):
    args = cli.build_parser().parse_args([*command, "--log-level", "debug"])
    assert args.log_level == "debug"


def test_global_log_level_value_is_not_taken_for_the_command():
    parser = cli.build_parser(["--log-level", "debug", "run", "s.json"], only_named=True)
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert list(subparsers.choices) == ["run"]


def test_wait_for_key_stroke_reads_a_line_before_running(recorded, monkeypatch, capsys):
    stdin = io.StringIO("\nrest\n")
    monkeypatch.setattr("sys.stdin", stdin)
    rc, _, err = main(["run", "s.json", "--wait-for-key-stroke-before-run"], capsys)
    assert rc == 0 and "Press enter to continue..." in err and stdin.read() == "rest\n"


def test_pause_on_exit_waits_even_after_a_failure(monkeypatch, capsys):
    from kernellab.errors import UsageError

    def failing(path, args):
        raise UsageError("boom")

    monkeypatch.setattr(run_command, "_run", failing)
    stdin = io.StringIO("\nrest\n")
    monkeypatch.setattr("sys.stdin", stdin)
    rc, _, err = main(["run", "s.json", "--pause-on-exit"], capsys)
    assert rc == 2 and "boom" in err and "Press enter to continue..." in err and stdin.read() == "rest\n"


def test_no_pause_without_the_flag(recorded, monkeypatch, capsys):
    stdin = io.StringIO("\n")
    monkeypatch.setattr("sys.stdin", stdin)
    rc, _, err = main(["run", "s.json"], capsys)
    assert rc == 0 and "Press enter" not in err and stdin.read() == "\n"


@pytest.mark.parametrize("extra,expected", [([], False), (["--pipeline-caching", "--cache-path", "CACHE"], True)])
def test_fail_on_cache_miss_counts_only_with_pipeline_caching(extra, expected, tmp_path, monkeypatch, capsys):
    """Arm reads --fail-on-pipeline-cache-miss only with --pipeline-caching; alone it is a notice."""
    from kernellab.runtime import executor

    seen = []

    def fake_execute(scenario, options, lease=None):
        seen.append(options)
        return executor.RunReport()

    monkeypatch.setattr(executor, "execute", fake_execute)
    scenario = tmp_path / "s.json"
    scenario.write_text(json.dumps({"resources": [], "commands": []}))
    extra = [str(tmp_path) if word == "CACHE" else word for word in extra]
    rc, _, err = main(["run", str(scenario), "--fail-on-pipeline-cache-miss", *extra], capsys)
    assert rc == 0, err
    assert seen[0].fail_on_cache_miss is expected
    assert ("--fail-on-pipeline-cache-miss: has no effect without --pipeline-caching" in err) is not expected
