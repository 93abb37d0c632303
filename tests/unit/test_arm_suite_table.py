"""conformance/junit_table.py: the side-by-side table of Arm's suite run by Arm's runner and by
kernellab (issue 11), read from two JUnit XML files."""
from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from conformance import junit_table  # noqa: E402

ARM = """<testsuites><testsuite>
<testcase classname="test_shader" name="test_add[1]"/>
<testcase classname="test_shader" name="test_add[2]"/>
<testcase classname="test_dds" name="test_depth"/>
<testcase classname="test_dds" name="test_skip"><skipped message="no"/></testcase>
</testsuite></testsuites>"""

OURS = """<testsuites><testsuite>
<testcase classname="test_shader" name="test_add[1]"/>
<testcase classname="test_shader" name="test_add[2]"><failure message="AssertionError: assert 1 == 2">x</failure></testcase>
<testcase classname="test_dds" name="test_depth"><failure message="CalledProcessError">x</failure>
<system-err>some noise
kernellab: /tmp/s.json: /resources/0/image/format: unknown format VK_FORMAT_D32_SFLOAT_S8_UINT
</system-err></testcase>
</testsuite></testsuites>"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_outcomes_and_messages(tmp_path):
    ours = junit_table.outcomes(write(tmp_path, "k.xml", OURS))
    assert ours["test_shader::test_add[1]"].status == "passed"
    assert ours["test_shader::test_add[2]"] == junit_table.Outcome("failed", "AssertionError: assert 1 == 2")
    assert ours["test_dds::test_depth"].message.startswith("kernellab: /tmp/s.json: /resources/0/image/format")


def test_table_tallies_only_what_arm_passes(tmp_path):
    arm = junit_table.outcomes(write(tmp_path, "a.xml", ARM))
    ours = junit_table.outcomes(write(tmp_path, "k.xml", OURS))
    lines = junit_table.table(arm, ours)
    assert lines[-1] == "Arm passes 3 of 4; kernellab passes 1 of those (1 of 3 in all)."
    assert "| `test_dds::test_skip` | skipped | not run |  |" in lines
    depth = next(line for line in lines if "test_dds::test_depth" in line)
    assert "| passed | failed | kernellab: /tmp/s.json" in depth
    assert "| `test_shader` | 2 | 2 | 1 |" in lines


def test_messages_drop_pytests_temporary_folder():
    text = "/tmp/pytest-of-root/pytest-196/test_png0/swizzle.json: /resources/0/image/src: bad | worse"
    assert junit_table._cell(text) == "<tmp>/swizzle.json: /resources/0/image/src: bad \\| worse"
