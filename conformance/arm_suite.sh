#!/usr/bin/env bash
# Arm's own scenario-runner test suite (src/tests, pytest) run twice on lavapipe: with Arm's 0.11
# binary from pip, then with kernellab in its place (arm-runner-wrapper.sh). Issue 11, item 2.
#
#   conformance/arm_suite.sh ARM_CHECKOUT [OUT_DIR] [-- extra pytest args]
#
# ARM_CHECKOUT is a checkout of github.com/arm/ai-ml-sdk-scenario-runner (this script fetches
# nothing). OUT_DIR (default /work/ext/arm-suite-results) gets arm.xml, kernellab.xml, the two
# pytest logs and table.md (per-test results side by side, with the tally).
# Environment: PYTHON (default: the repository's .venv), KERNELLAB (default: beside PYTHON).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
[ $# -ge 1 ] || { sed -n 2,12p "$0" >&2; exit 2; }
checkout=$(cd "$1" && pwd); shift
out=/work/ext/arm-suite-results
if [ $# -ge 1 ] && [ "$1" != "--" ]; then out=$1; shift; fi
[ "${1:-}" = "--" ] && shift
tests=$checkout/src/tests
[ -f "$tests/conftest.py" ] || { echo "arm_suite.sh: $tests/conftest.py not found: not Arm's checkout?" >&2; exit 2; }

python=${PYTHON:-$repo/.venv/bin/python}
export KERNELLAB=${KERNELLAB:-$(dirname "$python")/kernellab}
bin=$(dirname "$python")

# What Arm's conftest imports (numpy, Pillow, jsonschema) and the two Arm packages, from the registry.
"$python" - <<'PY' || "$python" -m pip install -q numpy pillow jsonschema pytest \
    ai-ml-sdk-scenario-runner==0.11.0 ai-ml-emulation-layer-for-vulkan==0.11.0
import numpy, PIL, jsonschema, pytest, scenario_runner, emulation_layer  # noqa: F401
PY

arm_bin=$("$python" -c "import scenario_runner, os; print(os.path.join(os.path.dirname(scenario_runner.__file__), 'binaries', 'bin'))")
spirv_as=$(command -v "$bin/spirv-as" || command -v spirv-as)
spirv_val=$(command -v "$bin/spirv-val" || command -v spirv-val)
mkdir -p "$out"
build_dir=$(mktemp -d)          # conftest wants a build folder (for VGF's Python module); none here
trap 'rm -rf "$build_dir"' EXIT
printf '[pytest]\n' > "$build_dir/pytest.ini"   # keep pytest from taking a parent folder's settings

# Arm needs its ML emulation layers stacked Graph above Tensor (docs/arm-compat.md); kernellab
# gets lavapipe alone. Both are pinned to lavapipe.
arm_env=$("$python" - <<'PY'
import shlex
from kernellab.testing.arm_runner import lavapipe_icd, require_arm_runner
for k, v in require_arm_runner().tool(icd=lavapipe_icd()).env.items():
    print(f"export {k}={shlex.quote(v)}")
PY
)
icd=$("$python" -c "from kernellab.testing.arm_runner import lavapipe_icd; print(lavapipe_icd() or '')")

run_suite() {  # name runner-executable env-lines
    local name=$1 runner=$2 envlines=$3
    shift 3
    echo "== $name: $runner" >&2
    ( eval "$envlines"
      cd "$tests"
      "$python" -m pytest "$tests" --rootdir "$tests" -c "$build_dir/pytest.ini" \
          -p no:cacheprovider -rA -q --continue-on-collection-errors -o junit_logging=system-err \
          --junitxml="$out/$name.xml" \
          --build-dir "$build_dir" --scenario-runner "$runner" \
          --glsl-compiler "$arm_bin/glslc" --dds-utils "$arm_bin/dds_utils" --png-utils "$arm_bin/png_utils" \
          --spirv-as "$spirv_as" --spirv-val "$spirv_val" --emulation-layer \
          "$@" < /dev/null > "$out/$name.log" 2>&1 ) || true
    tail -n 1 "$out/$name.log" >&2
}

export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
run_suite arm "$arm_bin/scenario-runner" "$arm_env" "$@"
run_suite kernellab "$here/arm-runner-wrapper.sh" \
    "export VK_ICD_FILENAMES=$icd VK_DRIVER_FILES=$icd" "$@"
"$python" "$here/junit_table.py" "$out/arm.xml" "$out/kernellab.xml" > "$out/table.md"
tail -n 1 "$out/table.md"
