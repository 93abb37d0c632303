"""`verify --prove` where the optional solver is not installed (a machine without
``kernellab[prove]``): one line naming what to install, exit 1 (as for any missing tool), never an internal error."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "vector_add" / "scenario.json"

# z3 hidden from the import system, as on a machine that lacks it
WITHOUT_Z3 = """
import sys
class NoZ3:
    def find_spec(self, name, path=None, target=None):
        if name == "z3" or name.startswith("z3."):
            raise ModuleNotFoundError("No module named 'z3'", name="z3")
        return None
sys.meta_path.insert(0, NoZ3())
from kernellab.cli import main
sys.exit(main(["verify", "--prove", sys.argv[1]]))
"""


def test_prove_without_the_solver_says_what_to_install() -> None:
    proc = subprocess.run([sys.executable, "-c", WITHOUT_Z3, str(EXAMPLE)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 1, proc.stderr  # the machine lacks a tool: not the workload's fault (2)
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert "verify --prove needs the z3 solver: pip install 'kernellab[prove]'" in proc.stderr, proc.stderr
