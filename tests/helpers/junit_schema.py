"""The JUnit XML schema CI systems follow (Jenkins/Surefire ``junit-10.xsd``), for validating reports.

It is not vendored: pytest's source distribution ships it (testing/example_scripts/junit-10.xsd),
so it is fetched once with pip into kernellab's cache.
"""
from __future__ import annotations

import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from kernellab import config

MEMBER = "testing/example_scripts/junit-10.xsd"


def junit_xsd() -> Path | None:
    target = config.get().cache_dir / "test-schemas" / "junit-10.xsd"
    if target.is_file():
        return target
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                               "pytest==9.0.2", "-d", tmp], capture_output=True, text=True, timeout=300)
        sdists = list(Path(tmp).glob("pytest-*.tar.gz"))
        if proc.returncode != 0 or not sdists:
            return None
        with tarfile.open(sdists[0]) as tar:
            member = next((m for m in tar.getmembers() if m.name.endswith(MEMBER)), None)
            if member is None:
                return None
            data = tar.extractfile(member).read()  # type: ignore[union-attr]
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp_target = target.with_suffix(".tmp")
    tmp_target.write_bytes(data)
    tmp_target.replace(target)
    return target
