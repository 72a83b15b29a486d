#!/usr/bin/env bash
# Creates $1 (default .venv-oldest) with the oldest releases pyproject.toml admits (scripts/oldest.txt) and the
# test tools: `make test-oldest`. torch 2.2.2 comes with the torchvision release made for it (0.17.2); on x86_64
# PyPI has it as a CUDA build of about 5 GB, which runs on the CPU. transformers is left out: every
# release the benchmarks admit needs a newer tokenizers than the oldest one fastdata admits, and only
# benchmarks/sequences.py uses it. tfrecord is published as a source archive only (pure Python): it is built.
set -euo pipefail
venv="${1:-.venv-oldest}"
python="${PYTHON:-python3}"
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
pip="$venv/bin/pip"
"$pip" install -q --upgrade pip
"$pip" install -q --only-binary=:all: --no-binary=tfrecord -r scripts/oldest.txt torchvision==0.17.2
"$pip" install -q --only-binary=:all: --no-binary=tfrecord -c scripts/oldest.txt \
  -e ".[dali,kornia,text,dicom,nifti,hdf5,lmdb,remote,ray,tfrecord,dev]" \
  "matplotlib>=3.7" "psutil>=5.9"
echo "oldest environment ready in $venv"
