#!/usr/bin/env bash
# A/B of the start-up on one GPU machine: this tree's kernellab against another commit's, each with
# its own bench_scenarios.py, in rounds new/old/new/old, shaders as SPIR-V. OLD is a folder holding
# `git archive COMMIT src benchmarks`, made beforehand (the GPU machine has no git history); the
# wheels (in .whl, or the folder WHEELS names), the loader's .deb and Arm's binary travel as
# benchmarks/gpu_check.sh says.
# usage: bash benchmarks/gpu_startup_ab.sh OLD   (BENCHMARKS.md, "H200 ... eighth session")
set -u
old=$(cd "${1:?usage: gpu_startup_ab.sh OLD_TREE}" && pwd)
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 XDG_RUNTIME_DIR=/tmp
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "${WHEELS:-.whl}"/*.whl || exit 3
rm -rf /tmp/site/kernellab
python3 -m compileall -q src $old/src /tmp/site >/dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE
ICD=$(ls /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json | head -1)
export VK_DRIVER_FILES=$ICD VK_ICD_FILENAMES=$ICD
nvidia-smi -L
for round in new old new old; do
  if [ $round = new ]; then root=$PWD; else root=$old; fi
  echo "== $round ($root)"
  PYTHONPATH=$root/src:/tmp/site KERNELLAB_CACHE_DIR=/tmp/cache-$round timeout 120 python3 $root/benchmarks/bench_scenarios.py --only tiny,fma --repeats 7 --icd "$ICD" --arm-executable .arm/scenario-runner --arm-deploy /tmp/site/emulation_layer/deploy 2>&1 | grep -E "Arm |kernellab |ratio"
done
echo "== python start"; for i in 1 2 3; do /usr/bin/time -f "%e s %U u" python3 -c pass; done 2>&1
