"""Where an image's CPU time goes: each stage of the train (or eval) recipe timed alone, on one thread, over the
same shard samples that images_per_sec.py reads, and what that implies for any loader's images/s.

    python benchmarks/image_stages.py                                   # bench-out/images/shards (train)
    python benchmarks/image_stages.py --shards SHARDS --eval --images 512

Stages (fastdata's own functions, in the order the kornia backend runs them): read the sample's bytes from
the shard; decode (libjpeg-turbo, DCT-downscaled when the crop allows); crop + antialiased bilinear resize to
224; horizontal flip (half the samples); the uint8 -> normalised float32 conversion into the batch (a 128-image
batch divided by 128). The sum is a floor on the CPU time per image of anything that delivers the same
tensors; the decode alone is what the ceiling candidate (f) of images_per_sec.py does. A loader at 75% of
the decode-only images/s would have to spend at most (read + decode) / 0.75 per image on everything: the
last line compares that budget with the floor. `main` returns the best reachable share.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import fastdata  # noqa: E402
from fastdata.images.decode import (  # noqa: E402
    _decode,
    crop_resize_train,
    dct_factor,
    hflip_hwc,
    resize_crop_eval,
)
from fastdata.images.device_aug import DeviceAugment  # noqa: E402


def _timed(fn, items: list, reps: int) -> float:
    """Median over `reps` passes of the per-item seconds of `fn` over `items`."""
    per_pass = []
    for _ in range(reps):
        t = time.perf_counter()
        for item in items:
            fn(item)
        per_pass.append((time.perf_counter() - t) / len(items))
    return statistics.median(per_pass)


def stages(shards: str, *, train: bool, images: int, reps: int, batch: int) -> dict[str, float]:
    """Single-thread seconds per image of each stage; torch's thread count is restored afterwards."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _stages(shards, train=train, images=images, reps=reps, batch=batch)
    finally:
        torch.set_num_threads(threads)


def _stages(shards: str, *, train: bool, images: int, reps: int, batch: int) -> dict[str, float]:
    loader = fastdata.loader(shards, split="train", batch_size=batch, train=train, backend="kornia", device="cpu")
    backend = loader._backend  # the kornia backend's own preparation: the same boxes and flips as its batches
    count = min(images, len(backend._reader))
    draw = backend._prepare.draws(0)  # epoch 0's rows of draws (None in eval)
    rows = draw(np.arange(count)) if draw is not None else [None] * count
    prepared = [backend._prepare(i, row) for i, row in zip(range(count), rows)]
    size = backend._opts.image_size
    out: dict[str, float] = {}
    out["read bytes from the shard"] = _timed(lambda p: backend._reader.read(p.index), prepared, reps)

    def decode(p):
        if p.box is None:
            return _decode(p.raw)
        return _decode(p.raw, dct_factor(p.box.height, p.box.width, size), p.height, p.width)

    decoded = [decode(p) for p in prepared]
    out["decode (libjpeg-turbo" + (", DCT-downscaled)" if train else ", full size)")] = _timed(decode, prepared, reps)

    def crop_resize(pair):
        p, image = pair
        if p.box is None:
            return resize_crop_eval(image, resize_short=backend._opts.resize_short, size=size)
        return crop_resize_train(image, p.box, p.height, p.width, size)

    pairs = list(zip(prepared, decoded))
    resized = [crop_resize(pr) for pr in pairs]
    out[f"crop + antialiased resize to {size}"] = _timed(crop_resize, pairs, reps)
    if train:
        flips = [r for p, r in zip(prepared, resized) if p.params.flip]
        out["horizontal flip (its share: half the samples)"] = _timed(hflip_hwc, flips, reps) * len(flips) / len(
            resized)
    normalizer = DeviceAugment(backend._opts, torch.device("cpu"))
    batch_u8 = torch.from_numpy(np.stack([r.numpy() for r in resized[:batch]]))
    if len(batch_u8) < batch:
        batch_u8 = batch_u8.repeat((batch + len(batch_u8) - 1) // len(batch_u8), 1, 1, 1)[:batch]
    out["uint8 -> normalised float32 batch (per image)"] = _timed(lambda b: normalizer(b), [batch_u8] * 3,
                                                                 reps) / batch
    return out


def main(argv: list[str] | None = None) -> float:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shards", default=str(ROOT / "bench-out" / "images" / "shards"))
    p.add_argument("--eval", action="store_true", help="resize shorter side to 256 + centre crop 224")
    p.add_argument("--images", type=int, default=512)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--batch", type=int, default=128)
    args = p.parse_args(argv)
    if not Path(args.shards).is_dir():
        p.error(f"{args.shards} is not a dataset; run benchmarks/images_per_sec.py once (it converts one)")
    cost = stages(args.shards, train=not args.eval, images=args.images, reps=args.reps, batch=args.batch)
    total = sum(cost.values())
    ceiling = next(iter(cost.values())) + next(v for k, v in cost.items() if k.startswith("decode"))
    print(f"{'eval' if args.eval else 'train'}: single-thread ms per image, median of {args.reps} passes over "
          f"{args.images} samples of {args.shards}")
    print("| stage | ms/image | share |\n|---|---:|---:|")
    for name, v in cost.items():
        print(f"| {name} | {v * 1e3:.3f} | {v / total:.0%} |")
    print(f"| sum: the floor for these tensors | {total * 1e3:.3f} | 100% |")
    print(f"\nread + decode alone (ceiling candidate f): {ceiling * 1e3:.3f} ms; with every stage, at best "
          f"{ceiling / total:.0%} of its images/s on the same cores (75% would need everything within "
          f"{ceiling / 0.75 * 1e3:.3f} ms per image)")
    return ceiling / total


if __name__ == "__main__":
    main()
