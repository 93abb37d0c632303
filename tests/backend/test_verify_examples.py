"""`kernellab verify` on every bundled example gives the verdict its README states (a line
"`kernellab verify` ...: **verified|defects|refused**"; folders of several scenarios state it
once, in the parent's README)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernellab import tools
from kernellab.cli import main

pytestmark = pytest.mark.skipif(tools.find("glslangValidator") is None, reason="needs glslangValidator")

EXAMPLES = Path(__file__).parents[2] / "examples"
_VERDICT = re.compile(r"`kernellab verify[^`]*`[^*]*\*\*(verified|defects|refused)\*\*")
_STATUS = {"verified": 0, "defects": 1, "refused": 2}
SCENARIOS = sorted(p for p in EXAMPLES.rglob("*.json") if not p.name.endswith(".expect.json"))


def stated(scenario: Path) -> str:
    for folder in (scenario.parent, scenario.parent.parent):
        readme = folder / "README.md"
        if readme.exists():
            found = _VERDICT.search(readme.read_text())
            assert found, f"{readme} states no verdict of kernellab verify"
            return found.group(1)
    raise AssertionError(f"no README beside {scenario}")


def test_every_example_folder_is_covered() -> None:
    assert {p.relative_to(EXAMPLES).parts[0] for p in SCENARIOS} == {
        p.name for p in EXAMPLES.iterdir() if p.is_dir()}


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_verdict_is_the_one_the_readme_states(scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["verify", str(scenario)])
    out = capsys.readouterr()
    verdict = stated(scenario)
    assert status == _STATUS[verdict], out.out + out.err
    if verdict == "refused":  # by name, saying what the checker does not take
        assert ("verify checks dispatch_compute only" in out.err or "is not supported by the SPIR-V checker" in out.err
                or "not PySchedCL kernel specs" in out.err)
