"""`make demo`: build a small class tree from the bundled real photos, convert, verify, describe, load.

Run from the repository root inside the project environment (the Makefile does both).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PHOTOS = ROOT.parent / "shared" / "data" / "photos"
OUT = ROOT / "demo-out"
CLASSES = ("indoor", "outdoor", "figures")


def build_tree(dst: Path) -> Path:
    """Deal the real photos into train/val class folders (every 5th photo goes to val)."""
    photos = sorted(PHOTOS.glob("*.jpg"))
    if not photos:
        sys.exit(f"no photos found in {PHOTOS}")
    for i, p in enumerate(photos):
        split = "val" if i % 5 == 4 else "train"
        target = dst / split / CLASSES[i % len(CLASSES)] / p.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, target)
    return dst


def fastdata(*args: str) -> None:
    cmd = [sys.executable, "-m", "fastdata", *args]
    print(f"\n$ fastdata {' '.join(args)}", flush=True)
    subprocess.run(cmd, check=True)


def main() -> None:
    shutil.rmtree(OUT, ignore_errors=True)
    src = build_tree(OUT / "photos")
    shards = OUT / "shards"
    fastdata("convert", str(src), str(shards), "--shard-size", "1MB")
    fastdata("verify", str(shards), "--decode")
    fastdata("info", str(shards))


if __name__ == "__main__":
    main()
