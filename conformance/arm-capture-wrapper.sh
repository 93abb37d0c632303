#!/bin/sh
# Stands in for kernellab under conformance/arm-runner-wrapper.sh (KERNELLAB=this script) and keeps
# a copy of each scenario folder whose scenario has a dispatch_compute, under $CAPTURE (one folder
# per run), so that conformance/verify_coverage.py --arm $CAPTURE checks the scenarios of Arm's
# suite. It then runs kernellab ($KERNELLAB_REAL, default: the one on PATH) as asked.
: "${CAPTURE:?CAPTURE names the folder for the captured scenarios}"
prev="" s=""
for a in "$@"; do
  [ "$prev" = "--scenario" ] && s=$a
  case "$a" in --scenario=*) s=${a#--scenario=};; esac
  prev=$a
done
if [ -n "$s" ] && grep -q dispatch_compute "$s" 2>/dev/null; then
  mkdir -p "$CAPTURE"
  d=$(mktemp -d "$CAPTURE/s.XXXXXX")
  cp -r "$(dirname "$s")"/. "$d"/ 2>/dev/null
  echo "$(basename "$s") ${PYTEST_CURRENT_TEST:-}" > "$d/.origin"
fi
exec "${KERNELLAB_REAL:-kernellab}" "$@"
