#!/bin/sh
# Stands in for Arm's scenario-runner executable: same flags, kernellab underneath.
# $KERNELLAB names the kernellab executable (default: the one on PATH).
# Arm's runner writes absolute dst paths where they point; kernellab does that only when asked
# (docs/security.md): --allow-absolute-dst is the documented way to get Arm's behaviour.
exec "${KERNELLAB:-kernellab}" run --allow-absolute-dst "$@"
