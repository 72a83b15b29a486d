"""What progressive resizing saves: train images/s of one loader at each size of a schedule, side by side.

    python benchmarks/progressive.py                           # kornia, CPU, sizes 128 160 192 224, 5 repetitions
    python benchmarks/progressive.py --backend dali --reps 5

The bundled photos (tests/data/photos) are converted once with `--short-side 256`, each photo --copies times under
another name. One loader per size (what a schedule's backend is for its epochs) runs one warm-up epoch, then each
repetition runs every size's next epoch once, the starting size rotating (benchmarks/common.py `interleaved`).
Prints the median images/s per size and its ratio to the largest size. Train: random resized crop + flip, float32,
channels_last, batch 32. The time a change of size costs (a new backend) is not in these epochs: it is printed
apart, as the time from `set_epoch` to the first batch of a loader with the whole schedule, beside the same for a
loader of one size (whose next epoch was made ahead, docs/loading.md "Epochs overlap").
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import fastdata  # noqa: E402
from benchmarks.common import interleaved  # noqa: E402
from converters import get_kind  # noqa: E402
from converters.engine import ConvertConfig, convert  # noqa: E402
from converters.images import ImageOptions  # noqa: E402

PHOTOS = ROOT / "tests" / "data" / "photos"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[128, 160, 192, 224])
    ap.add_argument("--backend", default="kornia")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--copies", type=int, default=32)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="fastdata-progressive-") as tmp:
        src = Path(tmp) / "src" / "photos"
        src.mkdir(parents=True)
        for photo in sorted(PHOTOS.glob("*.jpg")):
            for k in range(args.copies):
                (src / f"{k}-{photo.name}").write_bytes(photo.read_bytes())
        convert(get_kind("images"), src.parent, Path(tmp) / "shards", options=ImageOptions(short_side=256),
                config=ConvertConfig(jobs=2))
        shards = Path(tmp) / "shards"
        kw = dict(batch_size=args.batch_size, backend=args.backend, device="cpu")
        loaders = {s: fastdata.loader(shards, image_size=s, **kw) for s in args.sizes}
        epochs = dict.fromkeys(args.sizes, 0)
        rates: dict[int, list[float]] = {s: [] for s in args.sizes}

        def epoch_of(size: int) -> float:
            loaders[size].set_epoch(epochs[size])
            epochs[size] += 1
            start, images = time.perf_counter(), 0
            for batch, _ in loaders[size]:
                images += batch.shape[0]
            return images / (time.perf_counter() - start)

        for size in args.sizes:  # warm-up: each loader's first epoch
            epoch_of(size)
        for _, name in interleaved([str(s) for s in args.sizes], args.reps):
            rates[int(name)].append(epoch_of(int(name)))
        for ld in loaders.values():
            ld.close()
        changes = first_batches(fastdata.loader(shards, image_size=dict(enumerate(args.sizes)), **kw), args.sizes)
        same = first_batches(fastdata.loader(shards, image_size=args.sizes[-1], **kw), args.sizes)
    top = statistics.median(rates[args.sizes[-1]])
    print(f"{args.backend}, CPU, train, batch {args.batch_size}, {args.reps} repetitions; median images/s per size")
    for size in args.sizes:
        median = statistics.median(rates[size])
        print(f"  {size:4d} px  {median:8.1f} img/s  (min {min(rates[size]):.1f}, max {max(rates[size]):.1f})  "
              f"{median / top:.2f}x the {args.sizes[-1]} px rate")
    print(f"  first batch of an epoch (set_epoch to the batch in hand): {1000 * statistics.median(changes):.1f} ms "
          f"after a change of size (a new backend), {1000 * statistics.median(same):.1f} ms without one (medians "
          f"of {len(changes)})")


def first_batches(loader: object, sizes: list[int]) -> list[float]:
    """Seconds from `set_epoch(e)` to the first batch of epoch e, for e = 1.. (each after a whole epoch e - 1)."""
    out = []
    for _ in loader:  # epoch 0
        pass
    for epoch in range(1, len(sizes)):
        start = time.perf_counter()
        loader.set_epoch(epoch)
        it = iter(loader)
        next(it)
        out.append(time.perf_counter() - start)
        for _ in it:
            pass
    loader.close()
    return out


if __name__ == "__main__":
    main()
