"""Which samples a rank visits in an epoch, in which order, in how many batches.

Everything here is a pure function of (num_samples, seed, epoch, rank, world_size, batch_size, train,
keep_last): no hidden state, so a resumed or a restarted run computes the same plan.

- train: one permutation of all N samples per (seed, epoch); rank r takes the r-th contiguous block of
  n = floor(N / W) entries of it (the N mod W leftover samples sit out this epoch, a different set each
  epoch). Every rank yields floor(n / B) full batches (plus one partial batch when keep_last).
- eval: no shuffle; rank r takes samples [floor(r*N/W), floor((r+1)*N/W)) in dataset order. Every rank
  yields ceil(ceil(N/W) / B) batches of B rows; rows past the rank's samples are padding (label -100).
  With drop_last=True in eval, every rank yields floor(floor(N/W) / B) full batches and no padding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

PAD_LABEL = -100  # torch.nn.CrossEntropyLoss's default ignore_index
_PERMUTATION_STREAM = 0
_SAMPLE_STREAM = 1


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

    def start(self, batch: int, /) -> int:
        """Position in `sequence` where batch `batch` starts when no sample was skipped."""
        return batch * self.batch_size


def rank_block(num_samples: int, rank: int, world_size: int) -> tuple[int, int]:
    """[lo, hi) of the contiguous block of `num_samples` that rank `rank` of `world_size` owns."""
    return (rank * num_samples) // world_size, ((rank + 1) * num_samples) // world_size


def epoch_permutation(num_samples: int, /, *, seed: int, epoch: int) -> np.ndarray:
    """The shuffled order of all samples for one (seed, epoch)."""
    rng = np.random.default_rng([seed, epoch, _PERMUTATION_STREAM])
    return rng.permutation(num_samples)


def sample_rng(seed: int, epoch: int, index: int) -> np.random.Generator:
    """The random generator of one sample's augmentation: depends on nothing but these three numbers."""
    return np.random.default_rng([seed, epoch, int(index), _SAMPLE_STREAM])


def rank_counts(num_samples: int, /, *, train: bool, batch_size: int, keep_last: bool, rank: int,
                world_size: int) -> tuple[int, int]:
    """(batches, real samples) rank `rank` yields per epoch; the rules of the module docstring, shared by
    every backend (the DALI plan in dali_plan.py counts with this too)."""
    if train or not keep_last:
        per_rank = num_samples // world_size  # the smallest block: every rank yields the same count
        full, rest = divmod(per_rank, batch_size)
        if keep_last and rest:
            return full + 1, per_rank
        return full, full * batch_size
    lo, hi = rank_block(num_samples, rank, world_size)
    return math.ceil(math.ceil(num_samples / world_size) / batch_size), hi - lo


def epoch_plan(num_samples: int, /, *, train: bool, batch_size: int, keep_last: bool, seed: int, epoch: int,
               rank: int, world_size: int) -> EpochPlan:
    """The plan of rank `rank` of `world_size` in `epoch`; see the module docstring for the rules."""
    if num_samples < 0 or batch_size < 1 or not 0 <= rank < world_size or epoch < 0 or seed < 0:
        raise ValueError(f"bad plan arguments: num_samples={num_samples} batch_size={batch_size} "
                         f"rank={rank} world_size={world_size} epoch={epoch} seed={seed}")
    batches, samples = rank_counts(num_samples, train=train, batch_size=batch_size, keep_last=keep_last, rank=rank,
                                   world_size=world_size)
    if train:
        per_rank = num_samples // world_size  # all of it: skipped samples are replaced by the following ones
        perm = epoch_permutation(num_samples, seed=seed, epoch=epoch)
        sequence = perm[rank * per_rank:(rank + 1) * per_rank].astype(np.int64)
        return EpochPlan(sequence=sequence, num_batches=batches, batch_size=batch_size, padded=False)
    lo = rank_block(num_samples, rank, world_size)[0]
    return EpochPlan(sequence=np.arange(lo, lo + samples, dtype=np.int64), num_batches=batches,
                     batch_size=batch_size, padded=keep_last)
