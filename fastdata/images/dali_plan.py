"""What one rank reads in one epoch with DALI: shard order, reader arguments, batch and sample counts.

Pure Python (no DALI import), so every rank-splitting rule is testable without building a pipeline.
DALI's `fn.readers.webdataset(shard_id=r, num_shards=W)` gives rank r the contiguous block of
samples [floor(r*N/W), floor((r+1)*N/W)) of the concatenated shards, in the order the shards are
passed. Training permutes the shard list per epoch (same permutation on every rank, seeded by
(seed, epoch)), so the rank blocks stay disjoint while their content changes every epoch; DALI's
shuffle buffer then mixes samples inside the block. Evaluation keeps manifest order.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fastdata.images.order import rank_block, rank_counts

SHUFFLE_BUFFER = 2048  # samples held by DALI's reader for in-block shuffling (train only)


@dataclass(frozen=True)
class ShardSource:
    """One shard as DALI reads it: the tar, its index, how many samples the index lists."""

    path: Path
    index_path: Path
    samples: int
    sha256: str = ""  # from the manifest; keys the cache of the corrupt-sample check


@dataclass(frozen=True)
class EpochPlan:
    """Everything that decides the sample sequence of one rank in one epoch."""

    shards: tuple[ShardSource, ...]  # in reading order
    shard_id: int
    num_shards: int
    shuffle: bool
    initial_fill: int
    seed: int  # DALI pipeline seed (reader shuffle + augmentation draws)
    rank_samples: int  # samples in this rank's block
    dali_batches: int  # batches pulled from DALI
    last_rows: int  # real rows in the last pulled batch (batch_size when it is full)
    batches: int  # batches yielded (eval may add whole padding batches)
    num_samples: int  # real (non-padding) samples yielded


def derive_seed(*parts: int) -> int:
    """A 31-bit seed that is a pure function of `parts` (DALI takes a non-negative int)."""
    return int(np.random.SeedSequence([p & 0xFFFFFFFF for p in parts]).generate_state(1)[0] & 0x7FFFFFFF)


def plan_epoch(shards: tuple[ShardSource, ...], /, *, train: bool, batch_size: int, keep_last: bool, seed: int,
               epoch: int, rank: int, world_size: int) -> EpochPlan:
    """The plan for (seed, epoch, rank, world_size): the order is a pure function of these."""
    total = sum(s.samples for s in shards)
    start, stop = rank_block(total, rank, world_size)
    rank_samples = stop - start
    # The batch and sample counts are the kornia backend's (order.py); DALI delivers the real samples in
    # ceil(num_samples / batch_size) batches and eval pads the rest with whole padding batches.
    batches, num_samples = rank_counts(total, train=train, batch_size=batch_size, keep_last=keep_last, rank=rank,
                                       world_size=world_size)
    dali_batches = -(-num_samples // batch_size)
    last_rows = num_samples - (dali_batches - 1) * batch_size if dali_batches else batch_size
    if train:
        order = np.random.default_rng([seed & 0xFFFFFFFF, epoch]).permutation(len(shards))
        shards = tuple(shards[i] for i in order)
        return EpochPlan(shards=shards, shard_id=rank, num_shards=world_size, shuffle=True,
                         initial_fill=max(1, min(SHUFFLE_BUFFER, rank_samples)),
                         seed=derive_seed(seed, epoch, rank, world_size), rank_samples=rank_samples,
                         dali_batches=dali_batches, last_rows=last_rows, batches=batches, num_samples=num_samples)
    shard_id, num_shards = rank, world_size
    if world_size > total:
        # DALI refuses more shards than samples; every block then holds at most the one sample at `start`,
        # which is DALI's block `start` of `total`.
        shard_id, num_shards = min(start, max(total - 1, 0)), max(total, 1)
    return EpochPlan(shards=shards, shard_id=shard_id, num_shards=num_shards, shuffle=False, initial_fill=1,
                     seed=derive_seed(seed, rank, world_size), rank_samples=rank_samples,
                     dali_batches=dali_batches, last_rows=last_rows, batches=batches, num_samples=num_samples)


def rank_stream(plan: EpochPlan) -> list[tuple[ShardSource, int]]:
    """(shard, index line) of every sample of this rank's block, in reading order (before shuffling)."""
    total = sum(s.samples for s in plan.shards)
    start, stop = rank_block(total, plan.shard_id, plan.num_shards)
    out: list[tuple[ShardSource, int]] = []
    offset = 0
    for shard in plan.shards:
        lo, hi = max(start, offset), min(stop, offset + shard.samples)
        out.extend((shard, i - offset) for i in range(lo, hi))
        offset += shard.samples
    return out
