"""How long discovery takes to read ImageNet's training archive where it lies (converters/images/imagenet_archives.py):
a tar of class tars, as `ILSVRC2012_img_train.tar` is, whose members are read as tar headers only.

    python benchmarks/archive_discovery.py                              # 100 class tars of 1,000 members
    python benchmarks/archive_discovery.py --classes 10 --per-class 100 --reps 1

The archive is written once into a temporary folder (members of 700 bytes each: their bytes are never read), then
discovered --reps times in this process, from the page cache. Prints the median time, the time a member, and what
that makes for ImageNet's 1,281,167 training images; returns the row.
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from converters.images.imagenet_archives import TRAIN, discover_imagenet_archives  # noqa: E402

IMAGENET_TRAIN = 1_281_167


def write_archive(path: Path, classes: int, per_class: int) -> None:
    """A tar of `classes` class tars (`n00000000.tar` ...) of `per_class` JPEG-named members each."""
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as outer:
        for c in range(classes):
            inner = io.BytesIO()
            with tarfile.open(fileobj=inner, mode="w", format=tarfile.USTAR_FORMAT) as tar:
                for k in range(per_class):
                    info = tarfile.TarInfo(f"n{c:08d}_{k}.JPEG")
                    info.size = 700
                    tar.addfile(info, io.BytesIO(b"\xff" * 700))
            info = tarfile.TarInfo(f"n{c:08d}.tar")
            info.size = inner.tell()
            inner.seek(0)
            outer.addfile(info, inner)


def main(argv: list[str] | None = None) -> dict[str, float]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--classes", type=int, default=100)
    p.add_argument("--per-class", type=int, default=1000)
    p.add_argument("--reps", type=int, default=3)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fastdata-archive-bench-") as tmp:
        write_archive(Path(tmp) / TRAIN, args.classes, args.per_class)
        times, members = [], 0
        for _ in range(args.reps):
            start = time.perf_counter()
            found = discover_imagenet_archives(Path(tmp), follow=True)
            times.append(time.perf_counter() - start)
            members = sum(len(items) for items in found.splits.values())
    median = statistics.median(times)
    row = {"members": members, "median_s": median, "us_per_member": median / members * 1e6,
           "imagenet_train_s": median / members * IMAGENET_TRAIN}
    print(f"{members} members in {median:.2f} s (median of {args.reps}), {row['us_per_member']:.1f} us a member: "
          f"ImageNet's {IMAGENET_TRAIN:,} training images in about {row['imagenet_train_s']:.0f} s")
    return row


if __name__ == "__main__":
    main()
