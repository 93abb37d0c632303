"""Per-test results of two JUnit XML files (Arm's runner and kernellab on Arm's suite), side by side.

    python conformance/junit_table.py arm.xml kernellab.xml   # Markdown tables and tally on stdout

For a test Arm passes and kernellab does not, the last column quotes kernellab's own error line (from
the test's captured stderr, so run pytest with ``-o junit_logging=system-err``) or else the
assertion that failed.
"""
from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Outcome:
    status: str          #: passed / failed / error / skipped
    message: str = ""    #: why it did not pass, one line


def _why(case: ET.Element) -> str:
    stderr = "\n".join(child.text or "" for child in case if child.tag == "system-err")
    lines = [line.strip() for line in stderr.splitlines()
             if line.strip() and not line.startswith("---") and "notice:" not in line]
    if lines:  # an error naming a place first, else the runner's last word
        return next((line for line in lines if "error" in line.lower() or ": /" in line), lines[-1])
    for child in case:
        if child.tag in ("failure", "error"):
            text = (child.get("message") or child.text or "").strip().splitlines()
            return text[0] if text else child.tag
    return ""


def outcomes(junit: Path) -> dict[str, Outcome]:
    """test id (``module::name[param]``) -> its outcome."""
    result: dict[str, Outcome] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        module = case.get("classname", "").rsplit(".", 1)[-1]
        kinds = {child.tag for child in case}
        status = ("failed" if "failure" in kinds else "error" if "error" in kinds
                  else "skipped" if "skipped" in kinds else "passed")
        result[f"{module}::{case.get('name', '')}"] = Outcome(status, _why(case) if status != "passed" else "")
    return result


#: pytest's per-test folder, which differs on every run: shown as ``<tmp>/``
_TMP_DIR = re.compile(r"/\S*?/pytest-of-[^/]+/pytest-\d+/[^/]+/")


def _cell(text: str) -> str:
    text = _TMP_DIR.sub("<tmp>/", text).replace("|", "\\|").replace("`", "'")
    return text[:240] + ("..." if len(text) > 240 else "")


def table(arm: dict[str, Outcome], ours: dict[str, Outcome]) -> list[str]:
    missing = Outcome("not run")
    per_module: Counter[str] = Counter()
    arm_ok: Counter[str] = Counter()
    both_ok: Counter[str] = Counter()
    lines = ["| test | Arm 0.11 | kernellab | kernellab's message where Arm passes and it does not |",
             "|---|---|---|---|"]
    for key in sorted(set(arm) | set(ours)):
        a, k = arm.get(key, missing), ours.get(key, missing)
        module = key.split("::", 1)[0]
        per_module[module] += 1
        arm_ok[module] += a.status == "passed"
        both_ok[module] += a.status == "passed" and k.status == "passed"
        why = _cell(k.message) if a.status == "passed" and k.status != "passed" else ""
        lines.append(f"| `{key}` | {a.status} | {k.status} | {why} |")
    lines += ["", "| module | tests | Arm passes | kernellab passes of those |", "|---|---|---|---|"]
    for module in sorted(per_module):
        lines.append(f"| `{module}` | {per_module[module]} | {arm_ok[module]} | {both_ok[module]} |")
    lines += ["", f"Arm passes {sum(arm_ok.values())} of {len(arm)}; kernellab passes {sum(both_ok.values())} "
                  f"of those ({sum(o.status == 'passed' for o in ours.values())} of {len(ours)} in all)."]
    return lines


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    print("\n".join(table(outcomes(Path(argv[0])), outcomes(Path(argv[1])))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
