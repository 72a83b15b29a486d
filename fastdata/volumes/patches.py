"""Which patches an epoch yields on a rank, and how a patch is cut from a volume.

Everything here is a pure function of its arguments: the plan of an epoch depends only on
(seed, epoch, rank, world_size) and the volume shapes, so every rank, and every resumed run,
computes the same plan without talking to the others.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

Triple = tuple[int, int, int]


@dataclass(frozen=True)
class PatchSpec:
    """One patch: its volume, its start (None: drawn when the volume is read) and its random stream."""

    volume: int
    start: Triple | None
    stream: tuple[int, ...]  # seeds numpy's generator for the random start of this patch
    duplicate: bool = False  # eval: a repeat that only pads this rank to the common batch count


def train_plan(n_volumes: int, *, per_volume: int, seed: int, epoch: int, rank: int,
               world_size: int, items: np.ndarray | None = None) -> list[PatchSpec]:
    """Shuffle the volumes (or `items`, the volumes of a mixture's epoch), wrap to a multiple of world_size,
    deal them round robin; every rank gets ceil(n / world_size) volumes and `per_volume` random patches
    from each."""
    if n_volumes == 0:
        return []
    rng = np.random.default_rng([seed, epoch, 0x7E5])
    order = rng.permutation(n_volumes) if items is None else rng.permutation(items)
    per_rank = -(-len(order) // world_size)
    padded = np.resize(order, per_rank * world_size)
    mine = padded[rank::world_size]
    return [PatchSpec(int(v), None, (seed, epoch, int(v), j, slot)) for slot, v in enumerate(mine)
            for j in range(per_volume)]


def redeal_patches(rests: list[list[PatchSpec]], world_size: int, *, train: bool) -> list[list[PatchSpec]]:
    """The patches the old ranks had not delivered, in old rank order, dealt to `world_size` ranks in
    contiguous blocks (a volume's patches stay together): train, floor(R / world_size) each (at most
    world_size - 1 left out); eval, ceil(R / world_size) each, the last padded with `duplicate` repeats."""
    rest = [p for part in rests for p in part if not p.duplicate]
    if not rest:
        return [[] for _ in range(world_size)]
    if train:
        per = len(rest) // world_size
        return [rest[r * per:(r + 1) * per] for r in range(world_size)]
    per = -(-len(rest) // world_size)
    padded = rest + [PatchSpec(p.volume, p.start, p.stream, True) for p in
                     (rest[i % len(rest)] for i in range(per * world_size - len(rest)))]
    return [padded[r * per:(r + 1) * per] for r in range(world_size)]


def window_starts(n: int, p: int, overlap: int) -> list[int]:
    """Starts of windows of size p covering 0..n-1 with at least `overlap` shared voxels; the last
    window ends at the volume's end. A volume shorter than p gets one (padded) window at 0."""
    if n <= p:
        return [0]
    step = p - overlap
    starts = list(range(0, n - p, step))
    return [*starts, n - p]


def sliding_windows(shape: Triple, patch: Triple, overlap: Triple) -> list[Triple]:
    axes = [window_starts(n, p, o) for n, p, o in zip(shape, patch, overlap)]
    return [(z, y, x) for z in axes[0] for y in axes[1] for x in axes[2]]


def eval_plan(shapes: list[Triple], *, patch: Triple, overlap: Triple, rank: int, world_size: int,
              volumes: np.ndarray | None = None) -> list[PatchSpec]:
    """Every sliding window of every volume (or of `volumes`, a subset), in volume order; rank r takes a contiguous
    block. The list is padded (repeating its start, marked `duplicate`) so all ranks get equal counts."""
    chosen = range(len(shapes)) if volumes is None else volumes.tolist()
    windows = [(v, s) for v in chosen for s in sliding_windows(shapes[v], patch, overlap)]
    if not windows:
        return []
    per_rank = -(-len(windows) // world_size)
    total = per_rank * world_size
    specs = [PatchSpec(windows[i % len(windows)][0], windows[i % len(windows)][1], (), i >= len(windows))
             for i in range(total)]
    return specs[rank * per_rank:(rank + 1) * per_rank]


def random_start(volume: np.ndarray, size: Triple, rng: np.random.Generator, *, foreground: bool,
                 threshold: float, exact: bool = False) -> tuple[Triple, bool]:
    """A uniformly random start (windows may overhang small volumes, which get padded), or, with
    `foreground`, a window centred on a random voxel above `threshold`: found on a grid of every 4th voxel
    (a voxel near one above it), or with `exact` among all voxels (a mask's small lesions). Returns (start, centred)."""
    lo = [min(0, n - p) for n, p in zip(volume.shape, size)]
    hi = [max(0, n - p) for n, p in zip(volume.shape, size)]
    if foreground:
        step = 4 if min(volume.shape) >= 16 and not exact else 1
        hits = np.flatnonzero(volume[::step, ::step, ::step] > threshold)
        if hits.size:
            coarse = np.unravel_index(int(hits[rng.integers(hits.size)]), volume[::step, ::step, ::step].shape)
            centre = [min(c * step + int(rng.integers(step)), n - 1) for c, n in zip(coarse, volume.shape)]
            start = tuple(int(np.clip(c - p // 2, a, b)) for c, p, a, b in zip(centre, size, lo, hi))
            return start, True  # type: ignore[return-value]
    start = tuple(int(rng.integers(a, b + 1)) for a, b in zip(lo, hi))
    return start, False  # type: ignore[return-value]


def crop(volume: np.ndarray, start: Triple, size: Triple, *, pad_value: float | tuple[float, ...]) -> np.ndarray:
    """volume[start : start + size], with `pad_value` wherever the window lies outside the volume; a (C, D, H, W)
    volume is cut channel by channel, each padded with its own value where `pad_value` gives one per channel."""
    if volume.ndim == 4:
        pads = pad_value if isinstance(pad_value, tuple) else (pad_value,) * len(volume)
        return np.stack([crop(channel, start, size, pad_value=pad) for channel, pad in zip(volume, pads, strict=True)])
    if all(s >= 0 and s + p <= n for s, p, n in zip(start, size, volume.shape)):
        return np.ascontiguousarray(volume[start[0]:start[0] + size[0], start[1]:start[1] + size[1],
                                           start[2]:start[2] + size[2]])
    out = np.full(size, pad_value, dtype=volume.dtype)  # a one-channel volume's (pad,) broadcasts
    src = tuple(slice(max(s, 0), min(s + p, n)) for s, p, n in zip(start, size, volume.shape))
    dst = tuple(slice(sl.start - s, sl.stop - s) for sl, s in zip(src, start))
    out[dst] = volume[src]
    return out
