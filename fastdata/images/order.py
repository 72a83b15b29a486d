"""Which samples a rank visits in an epoch, in which order, in how many batches.

Everything here is a pure function of (num_samples, seed, epoch, rank, world_size, batch_size, train,
keep_last): no hidden state, so a resumed or a restarted run computes the same plan.

- train: the shards are permuted per (seed, epoch) and their samples concatenated in that order; rank r
  takes the r-th contiguous block of n = floor(N / W) entries (the N mod W leftover samples sit out this
  epoch, a different set each epoch), and shuffles it within consecutive windows of `window` samples.
  Every rank yields floor(n / B) full batches (plus one partial batch when keep_last). An epoch thus
  reads each shard in one stretch (what a bounded node-local cache of remote shards needs), while the
  converter's write-time shuffle already mixed every shard; `window=None` shuffles a rank's whole block.
- eval: no shuffle; rank r takes samples [floor(r*N/W), floor((r+1)*N/W)) in dataset order. Every rank
  yields ceil(ceil(N/W) / B) batches of B rows; rows past the rank's samples are padding (label -100).
  With drop_last=True in eval, every rank yields floor(floor(N/W) / B) full batches and no padding.
- a subset (`keep`, a mask of the split's samples): the sequence above with the other samples taken out, before the
  ranks' blocks are cut from it; N is then the subset's size.
- weighted sampling (`weights`, train): the sequence above with each sample repeated as often as the epoch's M
  draws take it, repeats numbered apart (fastdata/planning/weights.py), before the ranks' blocks are cut from it;
  N is then M.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fastdata.planning.weights import Weighting

PAD_LABEL = -100  # torch.nn.CrossEntropyLoss's default ignore_index
_PERMUTATION_STREAM = 0
_WINDOW_STREAM = 2
SHUFFLE_WINDOW = 16384  # train: samples shuffled together (a rank reads ~window/shard-size shards at once)


@dataclass(frozen=True)
class EpochPlan:
    """The sample sequence of one rank in one epoch and how it is cut into batches."""

    sequence: np.ndarray  # global sample indices, in visiting order, padding excluded
    num_batches: int
    batch_size: int
    padded: bool  # eval with keep_last: every batch has batch_size rows, the tail is padding

    def rows(self, batch: int, /) -> int:
        """Rows of batch `batch` (batch_size except a train keep_last final batch)."""
        if self.padded:
            return self.batch_size
        return min(self.batch_size, len(self.sequence) - batch * self.batch_size)


def derive_seed(*parts: int) -> int:
    """A 31-bit seed that is a pure function of `parts` (DALI takes a non-negative int)."""
    return int(np.random.SeedSequence([p & 0xFFFFFFFF for p in parts]).generate_state(1)[0] & 0x7FFFFFFF)


def rank_block(num_samples: int, rank: int, world_size: int) -> tuple[int, int]:
    """[lo, hi) of the contiguous block of `num_samples` that rank `rank` of `world_size` owns."""
    return (rank * num_samples) // world_size, ((rank + 1) * num_samples) // world_size


def shard_sequence(shard_sizes: tuple[int, ...], /, *, seed: int, epoch: int) -> np.ndarray:
    """Every global sample index, shards in the order of one (seed, epoch) permutation, samples in shard order."""
    starts = np.concatenate([[0], np.cumsum(shard_sizes, dtype=np.int64)])
    order = np.random.default_rng([seed, epoch, _PERMUTATION_STREAM]).permutation(len(shard_sizes))
    if not len(order):
        return np.zeros(0, dtype=np.int64)
    return np.concatenate([np.arange(starts[s], starts[s + 1], dtype=np.int64) for s in order])


def window_shuffle(block: np.ndarray, /, *, window: int | None, seed: int, epoch: int, start: int) -> np.ndarray:
    """`block` (positions start.. of the epoch's sequence) shuffled within consecutive windows of `window`."""
    out = block.copy()
    step = len(out) if window is None else window
    for k in range(0, len(out), max(step, 1)):
        rng = np.random.default_rng([seed, epoch, _WINDOW_STREAM, start + k])
        out[k:k + step] = rng.permutation(out[k:k + step])
    return out


def rank_counts(num_samples: int, /, *, train: bool, batch_size: int, keep_last: bool, rank: int,
                world_size: int) -> tuple[int, int]:
    """(batches, real samples) rank `rank` yields per epoch; the rules of the module docstring, shared by
    every backend."""
    if train or not keep_last:
        per_rank = num_samples // world_size  # the smallest block: every rank yields the same count
        full, rest = divmod(per_rank, batch_size)
        if keep_last and rest:
            return full + 1, per_rank
        return full, full * batch_size
    lo, hi = rank_block(num_samples, rank, world_size)
    return math.ceil(math.ceil(num_samples / world_size) / batch_size), hi - lo


def split_sequence(sequence: np.ndarray, /, *, train: bool, batch_size: int, keep_last: bool, rank: int,
                   world_size: int) -> EpochPlan:
    """Rank `rank`'s share of `sequence` (the samples left to visit, in order) by the module's rules, not
    shuffled: how the rest of an interrupted epoch is dealt to a new number of ranks."""
    n = len(sequence)
    batches, samples = rank_counts(n, train=train, batch_size=batch_size, keep_last=keep_last, rank=rank,
                                   world_size=world_size)
    if train:
        per_rank = n // world_size
        return EpochPlan(sequence=sequence[rank * per_rank:(rank + 1) * per_rank], num_batches=batches,
                         batch_size=batch_size, padded=False)
    lo = rank_block(n, rank, world_size)[0]
    return EpochPlan(sequence=sequence[lo:lo + samples], num_batches=batches, batch_size=batch_size,
                     padded=keep_last)


def epoch_plan(shard_sizes: tuple[int, ...] | int, /, *, train: bool, batch_size: int, keep_last: bool, seed: int,
               epoch: int, rank: int, world_size: int, window: int | None = SHUFFLE_WINDOW,
               sequence: np.ndarray | None = None, keep: np.ndarray | None = None,
               weights: Weighting | None = None) -> EpochPlan:
    """The plan of rank `rank` of `world_size` in `epoch`; see the module docstring for the rules.

    `shard_sizes` are the sample counts of the split's shards in manifest order (an int: one shard).
    `sequence` (train) replaces the epoch's shard sequence: a mixture's items (fastdata/planning/mixture.py).
    `keep` (a bool per sample of the split) selects a subset; `weights` (train) draws the epoch's samples."""
    sizes = _checked(shard_sizes, batch_size=batch_size, rank=rank, world_size=world_size, epoch=epoch, seed=seed,
                     window=window)
    full = _full_sequence(sizes, train=train, seed=seed, epoch=epoch, sequence=sequence, keep=keep, weights=weights)
    return _rank_plan(full, train=train,
                      batch_size=batch_size, keep_last=keep_last, seed=seed, epoch=epoch, rank=rank,
                      world_size=world_size, window=window)


def epoch_plans(shard_sizes: tuple[int, ...] | int, /, *, train: bool, batch_size: int, keep_last: bool, seed: int,
                epoch: int, world_size: int, window: int | None = SHUFFLE_WINDOW,
                sequence: np.ndarray | None = None, keep: np.ndarray | None = None,
                weights: Weighting | None = None) -> list[EpochPlan]:
    """`epoch_plan` of every rank of `world_size`, the epoch's sequence made once (an elastic replay plans every
    rank of each world size it passes through: up to MAX_WORLD_SIZE of them, fastdata/distributed.py)."""
    sizes = _checked(shard_sizes, batch_size=batch_size, rank=0, world_size=world_size, epoch=epoch, seed=seed,
                     window=window)
    full = _full_sequence(sizes, train=train, seed=seed, epoch=epoch, sequence=sequence, keep=keep, weights=weights)
    return [_rank_plan(full, train=train, batch_size=batch_size, keep_last=keep_last, seed=seed, epoch=epoch, rank=r,
                       world_size=world_size, window=window) for r in range(world_size)]


def _checked(shard_sizes: tuple[int, ...] | int, *, batch_size: int, rank: int, world_size: int, epoch: int,
             seed: int, window: int | None) -> tuple[int, ...]:
    sizes = (shard_sizes,) if isinstance(shard_sizes, int) else tuple(shard_sizes)
    if any(s < 0 for s in sizes) or batch_size < 1 or not 0 <= rank < world_size or epoch < 0 or seed < 0 \
            or (window is not None and window < 1):
        raise ValueError(f"bad plan arguments: shard sizes {sizes[:5]} batch_size={batch_size} rank={rank} "
                         f"world_size={world_size} epoch={epoch} seed={seed} window={window}")
    return sizes


def _full_sequence(sizes: tuple[int, ...], *, train: bool, seed: int, epoch: int, sequence: np.ndarray | None,
                   keep: np.ndarray | None = None, weights: Weighting | None = None) -> np.ndarray:
    """What the ranks' blocks are cut from: train, the epoch's shard sequence (or `sequence`); eval, dataset order;
    only the samples `keep` marks, with one; each sample as often as the epoch draws it, with `weights` (train)."""
    if not train:
        full = np.arange(sum(sizes), dtype=np.int64)
    else:
        full = shard_sequence(sizes, seed=seed, epoch=epoch) if sequence is None else sequence
    if weights is not None:  # train only (weights_for refuses them in eval)
        full = weights.sequence(full, seed=seed, epoch=epoch)
    return full if keep is None else full[keep[full]]


def _rank_plan(full: np.ndarray, *, train: bool, batch_size: int, keep_last: bool, seed: int, epoch: int, rank: int,
               world_size: int, window: int | None) -> EpochPlan:
    plan = split_sequence(full, train=train, batch_size=batch_size, keep_last=keep_last, rank=rank,
                          world_size=world_size)
    if not train:
        return plan
    per_rank = len(full) // world_size  # all of it: skipped samples are replaced by the following ones
    shuffled = window_shuffle(plan.sequence, window=window, seed=seed, epoch=epoch, start=rank * per_rank)
    return EpochPlan(sequence=shuffled, num_batches=plan.num_batches, batch_size=batch_size, padded=False)
