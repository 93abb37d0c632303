"""docs/verify-vulkan.md lists every instruction the SPIR-V checker refuses: the list is kept in
step with the checker's tables and the SPIR-V grammar."""
from __future__ import annotations

import re
from pathlib import Path

from kernellab.listing import grammar
from kernellab.spirvsim import matrix, ops
from kernellab.spirvsim.machine import HANDLERS, TERMINATORS

DOC = (Path(__file__).parents[2] / "docs" / "verify-vulkan.md").read_text()
_OPS = re.compile(r"\bOp[A-Za-z0-9]+\b")


def _section(start: str, end: str) -> str:
    return DOC[DOC.index(start):DOC.index(end, DOC.index(start))]


def test_refused_list_is_the_grammar_minus_what_the_checker_runs() -> None:
    accepted_text = _section("**Accepted instructions**", "### Every core SPIR-V instruction refused")
    accepted = set(_OPS.findall(accepted_text)) - {"OpExecutionMode"} | {"OpExecutionMode", "OpExecutionModeId"}
    assert set(HANDLERS) | set(TERMINATORS) <= accepted
    refused_text = DOC[DOC.index("### Every core SPIR-V instruction refused"):]
    listed = set(_OPS.findall(refused_text.split("\n", 3)[3]))
    core = {spec.opname for spec in grammar.core().instructions.values()}
    assert listed == core - accepted
    assert not listed & set(HANDLERS)


def test_refused_glsl_std_450_instructions_are_listed() -> None:
    implemented = ops.GLSL_COMPONENTWISE | ops.GLSL_GEOMETRIC | {"Modf", "Frexp"} | matrix.GLSL
    refused = {s.opname for s in grammar.extended("GLSL.std.450").instructions.values()} - implemented
    line = next(l for l in DOC.splitlines() if "from GLSL.std.450:" in l)
    following = DOC[DOC.index(line):DOC.index("(all others are implemented)")]
    assert {name for name in refused if name in following} == refused
