#!/usr/bin/env bash
# The whole test suite on the devices this machine has (lavapipe, PoCL, Oclgrind), after setup.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh test
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
# lint and types first: they take seconds and name the line (configuration in pyproject.toml)
.venv/bin/ruff check src tests benchmarks conformance
.venv/bin/mypy
set +e
.venv/bin/python -m pytest "$@"
status=$?
set -e
if [ "$status" = 5 ]; then
    echo "test: pytest collected no tests; that is a failure here" >&2
    exit 1
fi
exit "$status"
