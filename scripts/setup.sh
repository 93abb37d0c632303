#!/usr/bin/env bash
# Prepares a fresh Debian/Ubuntu machine for kernellab: the Debian packages for Vulkan on the CPU
# (lavapipe) and binutils (PoCL links kernels with ld), then a virtual environment in .venv with
# kernellab and its Python dependencies. Safe to run again: it installs only what is missing.
#   usage: scripts/setup.sh [test]     ("test" also installs the test extras)
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
pkgs=(libvulkan1 mesa-vulkan-drivers binutils)
# the test suite also exercises the OpenCL C stages that clang and llvm-spirv provide
[ "${1:-}" = test ] && pkgs+=(clang-14 llvm-14 llvm-spirv-14)
# ... and the Khronos validation layer, whose synchronization validation cross-checks verify
[ "${1:-}" = test ] && pkgs+=(vulkan-validationlayers)
for pkg in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "setup: installing Debian packages: ${need[*]}" >&2
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    else
        echo "setup: missing Debian packages: ${need[*]}" >&2
        echo "setup: run as root, or: sudo apt-get install -y ${need[*]}" >&2
        exit 1
    fi
fi

PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
    echo "setup: kernellab needs Python >= 3.10 ($PY is $("$PY" --version 2>&1))" >&2
    exit 1
fi
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv || { echo "setup: python3 -m venv failed; on Debian: apt-get install python3-venv" >&2; exit 1; }
fi
target="."
[ "${1:-}" = test ] && target=".[ml,test]"
stamp=".venv/.kernellab-installed-${1:-main}"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    echo "setup: installing kernellab ($target) into .venv" >&2
    # some machines' pip config names local indexes that may be absent: keep that noise out
    pip_install() {
        .venv/bin/python -m pip install -q --disable-pip-version-check "$@" 2>&1 \
            | { grep -v "^WARNING: Location '" || true; } >&2
    }
    pip_install --upgrade pip || { echo "setup: upgrading pip failed" >&2; exit 1; }
    pip_install -e "$target" || { echo "setup: pip install -e '$target' failed" >&2; exit 1; }
    touch "$stamp"
fi
