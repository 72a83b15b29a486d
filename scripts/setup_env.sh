#!/usr/bin/env bash
# Creates the project environment in $1 (default .venv) on a fresh machine.
# Pins live here only; pyproject.toml declares ranges.
set -euo pipefail
venv="${1:-.venv}"
python="${PYTHON:-python3}"
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
pip="$venv/bin/pip"
"$pip" install -q --upgrade pip
# torch first, pinned, together with a torchvision that imports beside it (the baseline benchmark
# and `fastdata doctor` use torchvision). An unpinned torch would pull the newest multi-GB build.
case "$(uname -m)" in
  x86_64) torch_pins="torch==2.14.1 torchvision==0.29.1" ;;
  *) torch_pins="torch==2.9.1 torchvision==0.24.1" ;;
esac
"$pip" install -q ${FASTDATA_TORCH_PINS:-$torch_pins}
"$pip" install -q -e ".[all]"
echo "environment ready in $venv"
