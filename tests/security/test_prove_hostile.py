"""verify --prove's annotation step facing a hostile kernel source: its time and its output grow
at most with the source, not with the invariants times the loops or the edits times the text."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from kernellab.verify.prove.annotations import MAX_INSERTED, prepare


def test_function_wide_invariants_do_not_multiply_the_source() -> None:
    """400 invariants and 400 loops (17 KB) became a 2.9 MB source in 4 s (each loop gets every
    invariant, and each edit copied the whole text); past the limit the invariants stay as they
    are written (unsupported: the proof says unknown), and it takes milliseconds."""
    n = 400
    source = "void f(int x){\n" + "__function_wide_invariant(x>0);\n" * n + "for(;;){}\n" * n + "}\n"
    start = time.monotonic()
    out = prepare(source)
    assert time.monotonic() - start < 2
    assert len(out) <= len(source) + MAX_INSERTED and out == source
    # a few invariants still reach every loop
    small = "void f(int x){\n__function_wide_invariant(x>0);\nfor(;;){}\nwhile(1){}\n}\n"
    assert prepare(small).count("__invariant(x>0)") == 2


def test_many_edits_take_one_pass() -> None:
    source = "void g(int x){\n" + "__requires(x);\n" * 100_000 + "}\n"
    start = time.monotonic()
    out = prepare(source)
    assert time.monotonic() - start < 10
    assert out.count("__requires_in_function(x);") == 100_000
    assert out.count("\n") == source.count("\n")


def _prove(argv: list[str], capsys: object) -> tuple[int, str]:
    from kernellab.cli import main
    status = main(["verify", "--prove", *argv])
    return status, capsys.readouterr().err  # type: ignore[attr-defined]


def test_a_kernel_source_outside_the_folder_is_never_read(tmp_path: Path, capsys: object) -> None:
    """The proof annotates its own copy of the source, so the compiler's boundary check saw the
    copy: ``kernel_file`` (a symlink, ``..``, an absolute path) and a scenario's OpenCL C ``src``
    reached /etc/passwd, and clang's error quoted its first line. Now refused as every build
    refuses them, unless ``--allow-outside`` names the folder."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.cl").write_text("SECRET_TEXT\n")
    work = tmp_path / "work"
    work.mkdir()
    (work / "link.cl").symlink_to(outside / "secret.cl")
    for named in ("link.cl", "../outside/secret.cl", str(outside / "secret.cl")):
        path = work / "i.json"
        path.write_text(json.dumps([{"language": "OpenCL", "kernel_file": named, "entry_point": "k",
                                     "global_size": [4], "local_size": [4]}]))
        status, err = _prove([str(path)], capsys)
        assert status == 2 and "SECRET_TEXT" not in err, err
        assert f"{path}: /0/kernel_file: cannot read the kernel: {outside / 'secret.cl'} is outside the workload's " \
               "folder" in err, err
    scenario = work / "s.json"
    scenario.write_text(json.dumps({
        "resources": [{"shader": {"uid": "k", "type": "OpenCL-C", "src": "link.cl", "entry": "k"}},
                      {"buffer": {"uid": "a", "size": 64, "shader_access": "writeonly", "dst": "a.npy"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [16],
                                           "bindings": [{"set": 0, "id": 0, "resource_ref": "a"}]}}]}))
    status, err = _prove([str(scenario)], capsys)
    assert status == 2 and "SECRET_TEXT" not in err and "/resources/0/shader/src: cannot read the kernel" in err, err
    # the user's flag, never the file, widens it: then the text reaches the compiler
    (outside / "secret.cl").write_text("__kernel void k(__global int *A) { A[get_global_id(0)] = 1; }\n")
    status, err = _prove(["--allow-outside", str(outside), str(work / "i.json")], capsys)
    assert status == 0, err


def test_a_fifo_or_a_name_with_a_newline_is_told_as_such(tmp_path: Path, capsys: object) -> None:
    os.mkfifo(tmp_path / "fifo.cl")
    path = tmp_path / "i.json"
    for named, want in (("fifo.cl", "is not a regular file (a FIFO, device or folder is never read)"),
                        ("k.cl\nx.json: proven", "not found (looked at '" + str(tmp_path) + "/k.cl\\nx.json: proven')")):
        path.write_text(json.dumps([{"language": "OpenCL", "kernel_file": named, "entry_point": "k",
                                     "global_size": [4], "local_size": [4]}]))
        status, err = _prove([str(path)], capsys)
        assert status == 2 and want in err, err
        assert "\nx.json: proven" not in err, err  # a name cannot forge a line of output


def test_an_include_refused_in_the_proof_names_the_users_file_and_line(tmp_path: Path, capsys: object) -> None:
    """The proof's annotated copy (a temporary file, its header first) was named with the
    header's line count added: /tmp/kl-prove-*/k.cl:163 for the source's line 2."""
    (tmp_path / "k.cl").write_text('// a kernel\n#include "/etc/passwd"\n__kernel void k(__global int *A) {}\n')
    path = tmp_path / "i.json"
    path.write_text(json.dumps([{"language": "OpenCL", "kernel_file": "k.cl", "entry_point": "k",
                                 "global_size": [4], "local_size": [4]}]))
    status, err = _prove([str(path)], capsys)
    assert status == 2, err
    assert f'{path}: /0/kernel_file: {tmp_path / "k.cl"}:2: #include "/etc/passwd": /etc/passwd is outside' in err, err
    assert "kl-prove" not in err and "root:" not in err, err
