"""One door for compiler options (issue 18): every option string a file gives is parsed once by
:mod:`kernellab.compiler_options` into typed options, and what reaches a compiler, a driver or a
cache key is rendered from that list.

Two halves: a walk over src/ that fails when a call site hands options to a driver or lets a
file's raw option text flow anywhere but the door (with a self-test that it does flag planted
bypasses), and the attacks of the issue, through every command that builds OpenCL C.
"""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "kernellab"

#: attributes holding an option string exactly as a file wrote it
RAW = ("build_options", "compiler_flags")
#: functions of kernellab.compiler_options that take raw text: the door
DOOR = {"read", "parse", "check", "parsed_or_none"}
#: calls whose ``build_options=`` keyword hands the text to a record that parses it through the
#: door before any tool sees it (CompileRequest.option_list), or that is file data again
#: (a model Shader, read by the executor through the door)
PARSING_RECORDS = {"CompileRequest", "Shader", "compile_tensor_glsl", "request_for"}
#: (module, function) where raw text is read for something that is neither a tool nor a driver,
#: with why; every entry is checked to still exist, so the list cannot rot into a blanket pass
ALLOWED = {
    ("session.py", "vulkan_module"): "a memo key of the request, which parses the same text",
    ("compile/tensor_glsl.py", "_arm_glslc_spirv"): "whether there are options at all (.strip())",
    ("compile/opencl_stages.py", "_device_binary"): "the repro command printed for the user",
}


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _function(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> str:
    while node in parents and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        node = parents[node]
    return getattr(node, "name", "<module>")


def _call_name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _sink(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> tuple[ast.AST, ast.AST]:
    """Where the raw text goes: climbing through ``or ''``, conditionals, concatenation with
    kernellab's own text and ``.strip()``; returns (the node it ends in, its parent)."""
    while True:
        parent = parents[node]
        if isinstance(parent, (ast.BoolOp, ast.IfExp, ast.BinOp)):
            node = parent
        elif isinstance(parent, ast.Attribute) and parent.attr == "strip" and isinstance(parents[parent], ast.Call):
            node = parents[parent]
        else:
            return node, parent


def raw_text_bypasses(source: str, module: str) -> list[str]:
    """Each place in ``source`` where a file's raw option text flows somewhere other than the
    door, a parsing record, file data or a condition."""
    tree = ast.parse(source)
    parents = _parents(tree)
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and node.attr in RAW and isinstance(node.ctx, ast.Load)):
            continue
        if isinstance(parents.get(node), ast.Call) and parents[node].func is node:  # type: ignore[attr-defined]
            continue  # a method of that name (PySchedCL's macros -> -D text), checked where its result goes
        value, parent = _sink(node, parents)
        if isinstance(parent, ast.Call) and value in parent.args and _call_name(parent) in DOOR:
            continue
        if isinstance(parent, ast.keyword) and parent.arg == "build_options" \
                and _call_name(parents[parent]) in PARSING_RECORDS:  # type: ignore[arg-type]
            continue
        if isinstance(parent, ast.Assign) and all(isinstance(t, ast.Subscript) for t in parent.targets):
            continue  # written into a file's JSON, where it is data again
        if isinstance(parent, (ast.If, ast.Compare)):
            continue
        if (module, _function(node, parents)) in ALLOWED:
            continue
        found.append(f"{module}:{node.lineno}: {ast.unparse(parent)[:100]}")
    return found


def _assigned_from(name: str, function: ast.AST) -> list[ast.AST]:
    return [a.value for a in ast.walk(function) if isinstance(a, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == name for t in a.targets)]


def _renders(value: ast.AST, function: ast.AST) -> bool:
    """Whether ``value`` is the door's rendering for a driver (``options.driver_text()``)."""
    if isinstance(value, ast.Name):
        sources = _assigned_from(value.id, function)
        return bool(sources) and all(_renders(v, function) for v in sources)
    return isinstance(value, ast.Call) and _call_name(value) == "driver_text"


def _str_made(node: ast.AST) -> bool:
    """An expression that builds option text or words itself instead of taking the door's list."""
    if isinstance(node, (ast.Constant, ast.JoinedStr, ast.List, ast.ListComp, ast.Tuple)):
        return True
    if isinstance(node, ast.BinOp):  # Options + Options is the door's; text + text is not
        return _str_made(node.left) or _str_made(node.right)
    return isinstance(node, ast.Call) and _call_name(node) in ("split", "join", "str", "format", "argv", "driver_text")


def driver_bypasses(source: str, module: str) -> list[str]:
    """Each driver build not made through ``native.cl.build`` (which renders the door's list and
    keeps the time limit): an ``X.build(...)`` call is allowed only as that function's own call,
    with the door's rendering as ``options``, or as ``ncl.build(program, options, ...)`` given a
    list it did not make from text; ``clBuildProgram`` is called only by the direct Oclgrind
    binding's ``Program.build``, which ``native.cl.build`` calls."""
    tree = ast.parse(source)
    parents = _parents(tree)
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        function = node
        while function in parents and not isinstance(function, ast.FunctionDef):
            function = parents[function]
        name = getattr(function, "name", "")
        if node.func.attr == "clBuildProgram":
            if not (module == "native/oclgrind.py" and name == "build"):
                found.append(f"{module}:{node.lineno}: {ast.unparse(node)[:100]}")
            continue
        if node.func.attr != "build":
            continue
        options = next((k.value for k in node.keywords if k.arg == "options"), None)
        if module == "native/cl.py" and name == "build" and options is not None and _renders(options, function):
            continue
        through_door = isinstance(node.func.value, ast.Name) and node.func.value.id == "ncl" \
            and len(node.args) >= 2 and not _str_made(node.args[1]) and options is None
        if not through_door:
            found.append(f"{module}:{node.lineno}: {ast.unparse(node)[:100]}")
    return found


def _modules() -> list[tuple[str, str]]:
    return [(str(p.relative_to(SRC)), p.read_text(encoding="utf-8")) for p in sorted(SRC.rglob("*.py"))]


def test_no_call_site_bypasses_the_door() -> None:
    found = [f for module, text in _modules() for f in raw_text_bypasses(text, module) + driver_bypasses(text, module)]
    assert found == [], "option text reaching a tool or driver outside compiler_options:\n" + "\n".join(found)


def test_the_drivers_one_build_call_is_found() -> None:
    """The walk is not vacuous: the driver call it allows exists, and the allow-list's places too."""
    modules = dict(_modules())
    tree = ast.parse(modules["native/cl.py"])
    build = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "build")
    calls = [n for n in ast.walk(build) if isinstance(n, ast.Call) and _call_name(n) == "build"
             and any(k.arg == "options" for k in n.keywords)]
    assert len(calls) == 1
    for module, function in ALLOWED:
        assert f"def {function}(" in modules[module], f"{module}: {function} is gone; drop it from ALLOWED"


@pytest.mark.parametrize("planted", [
    "def f(prog, spec):\n    prog.build(options=spec.build_options.split())\n",
    "def f(program, spec):\n    program.build(options=' '.join([spec.code, '-cl-kernel-arg-info']))\n",
    "def f(p, inst):\n    ncl.build(p, inst.compiler_flags, what='k')\n",
    "def f(p, inst):\n    ncl.build(p, (inst.compiler_flags or '').split(), what='k')\n",
    "def f(req):\n    subprocess.run(['clang', *shlex.split(req.build_options), 'k.cl'])\n",
    "def f(shader):\n    return ProgramSpec(uid='u', code=b'', language='opencl-c', options=shader.build_options)\n",
    "def f(inst):\n    options = inst.compiler_flags or ''\n    return options + ' -cl-std=CL2.0'\n",
    "def f(cl, ctx, src):\n    return cl.Program(ctx, src).build('-DA=1')\n",
    "def f(program):\n    return program.build()\n",
    "def f(handle):\n    lib().clBuildProgram(handle, 0, None, b'-DA', None, None)\n",
    "def f(p):\n    ncl.build(p, ['-DA'], what='k')\n",
    "def f(p, o):\n    ncl.build(p, o.argv(), what='k')\n",
    "def f(p, o):\n    ncl.build(p, o.driver_text() + ' -DB', what='k')\n",
])
def test_the_walk_flags_a_planted_bypass(planted: str) -> None:
    assert raw_text_bypasses(planted, "planted.py") + driver_bypasses(planted, "planted.py")


@pytest.mark.parametrize("fine", [
    "def f(inst, folder, roots, place):\n"
    "    return compiler_options.read('opencl-c', inst.compiler_flags or '', folder, roots, place)\n",
    "def f(shader):\n    return CompileRequest(source=shader.src_path, language='glsl', build_options=shader.build_options)\n",
    "def f(shader, inst):\n    if shader.build_options:\n        inst['compiler_flags'] = shader.build_options\n",
    "def f(p, options):\n    ncl.build(p, options + compiler_options.own('-cl-opt-disable'), what='k')\n",
])
def test_the_walk_passes_the_door(fine: str) -> None:
    assert raw_text_bypasses(fine, "fine.py") == []
    assert driver_bypasses(fine, "fine.py") == []


def test_a_driver_takes_only_the_doors_list() -> None:
    from kernellab.native import cl as ncl
    with pytest.raises(TypeError):
        ncl.build(object(), "-DA=1", what="k")  # type: ignore[arg-type]


# --- the attacks, through every command that builds OpenCL C -----------------------------------

KERNEL = "__kernel void k(__global int *out) { out[get_global_id(0)] = 1; }\n"


def _attacks(tmp_path: Path) -> list[tuple[str, str]]:
    """(name, compiler_flags): the issue's options attacks; ``target`` must never be created."""
    target = tmp_path / "outside" / "written"
    (tmp_path / "outside").mkdir(exist_ok=True)
    return [
        ("dependency-file", f"-dependency-file {target} -MT TEXT"),
        ("include", "-include /etc/passwd"),
        ("plugin", "-Xclang -load -Xclang ./evil.so"),
        ("quoted-define", "-DA='0 -I/x -DB=0'"),
        ("newline-define", "'-DA=1\n#include \"/etc/passwd\"'"),
    ]


def kernellab(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "KERNELLAB_NO_CACHE": "1"}
    return subprocess.run([sys.executable, "-m", "kernellab", *argv], capture_output=True, text=True, timeout=120,
                          env=env, cwd=cwd)


def _refused(name: str, proc: subprocess.CompletedProcess[str], file: Path, pointer: str, tmp_path: Path) -> None:
    assert proc.returncode == 2, f"{name}: {proc.stderr}"  # bad input: not 0, not a signal (negative), not a crash
    assert f"{file}: {pointer}: compiler option" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "outside" / "written").exists()


def _instantiation_file(tmp_path: Path, flags: str) -> Path:
    (tmp_path / "k.cl").write_text(KERNEL)
    path = tmp_path / "k.json"
    path.write_text(json.dumps([{"language": "OpenCL", "kernel_file": "k.cl", "global_size": [4], "local_size": [4],
                                 "entry_point": "k", "compiler_flags": flags,
                                 "kernel_arguments": [{"type": "array", "size": 16}]}]))
    return path


@pytest.mark.parametrize("command", [("verify",), ("verify", "--prove"), ("run", "--device", "Oclgrind"), ("import",)])
def test_a_kernel_instantiation_files_flags_pass_the_door(tmp_path: Path, command: tuple[str, ...]) -> None:
    pytest.importorskip("pyopencl")
    for name, flags in _attacks(tmp_path):
        path = _instantiation_file(tmp_path, flags)
        out = ["--output", str(tmp_path / "out")] if command[0] != "verify" else []
        proc = kernellab(*command, str(path), *out, cwd=tmp_path)
        _refused(name, proc, path, "/0/compiler_flags", tmp_path)


def _scenario(tmp_path: Path, flags: str) -> Path:
    (tmp_path / "k.cl").write_text(KERNEL)
    path = tmp_path / "s.json"
    path.write_text(json.dumps({
        "resources": [{"shader": {"uid": "k", "src": "k.cl", "type": "OpenCL-C", "entry": "k", "build_options": flags}},
                      {"buffer": {"uid": "b", "size": 16, "shader_access": "readwrite", "dst": "b.npy"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [4],
                                           "bindings": [{"set": 0, "id": 0, "resource_ref": "b"}]}}]}))
    return path


@pytest.mark.parametrize("command", [("export",), ("run", "--backend", "opencl"), ("snapshot",),
                                     ("verify", "--prove")])
def test_a_scenarios_build_options_pass_the_door(tmp_path: Path, command: tuple[str, ...]) -> None:
    """``export`` and the OpenCL backend hand them to a driver; ``snapshot`` to clang and clspv
    (where a -D value is written into the source: a newline there was an #include)."""
    pytest.importorskip("pyopencl")
    for name, flags in _attacks(tmp_path):
        path = _scenario(tmp_path, flags)
        out = {"export": ["--output", str(tmp_path / "out")], "run": ["--output", str(tmp_path / "out")],
               "snapshot": ["--stage", "spirv-vulkan"], "verify": []}[command[0]]
        proc = kernellab(*command, str(path), *out, cwd=tmp_path)
        _refused(name, proc, path, "/resources/0/shader/build_options", tmp_path)


def test_the_clspv_source_gets_no_directive_from_a_macro(tmp_path: Path) -> None:
    """What the door lets through cannot make a line of its own in clspv's source."""
    from kernellab.compile.opencl_stages import clspv_source
    from kernellab.compiler_options import allowed_roots, parse
    opts = parse("opencl-c", "-DA=1 -DB -UC", tmp_path, allowed_roots(tmp_path))
    text = clspv_source("k", opts.argv())
    assert text.splitlines() == ["#define A 1", "#define B 1", "#undef C", "#line 1", "k"]
