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


def block(rank: int, world_size: int, total: int) -> tuple[int, int]:
    """The [start, stop) samples of rank `rank`: how DALI's readers split shard_id/num_shards."""
    return rank * total // world_size, (rank + 1) * total // world_size


def derive_seed(*parts: int) -> int:
    """A 31-bit seed that is a pure function of `parts` (DALI takes a non-negative int)."""
    return int(np.random.SeedSequence([p & 0xFFFFFFFF for p in parts]).generate_state(1)[0] & 0x7FFFFFFF)


def plan_epoch(shards: tuple[ShardSource, ...], /, *, train: bool, batch_size: int, keep_last: bool, seed: int,
               epoch: int, rank: int, world_size: int) -> EpochPlan:
    """The plan for (seed, epoch, rank, world_size): the order is a pure function of these."""
    total = sum(s.samples for s in shards)
    start, stop = block(rank, world_size, total)
    rank_samples = stop - start
    if train:
        order = np.random.default_rng([seed & 0xFFFFFFFF, epoch]).permutation(len(shards))
        shards = tuple(shards[i] for i in order)
        per_rank = total // world_size  # the smallest block: every rank yields the same count
        full, rest = divmod(per_rank, batch_size)
        batches = full + (1 if keep_last and rest else 0)
        last_rows = rest if keep_last and rest else batch_size
        num_samples = per_rank if keep_last else full * batch_size
        return EpochPlan(shards=shards, shard_id=rank, num_shards=world_size, shuffle=True,
                         initial_fill=max(1, min(SHUFFLE_BUFFER, rank_samples)),
                         seed=derive_seed(seed, epoch, rank, world_size), rank_samples=rank_samples,
                         dali_batches=batches, last_rows=last_rows, batches=batches, num_samples=num_samples)
    if keep_last:
        # Every sample once across ranks; ranks pad to the largest block's batch count.
        largest = -(-total // world_size)
        batches = -(-largest // batch_size)
        dali_batches = -(-rank_samples // batch_size)
        last_rows = rank_samples - (dali_batches - 1) * batch_size if dali_batches else batch_size
        num_samples = rank_samples
    else:
        batches = dali_batches = (total // world_size) // batch_size
        last_rows = batch_size
        num_samples = batches * batch_size
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
    start, stop = block(plan.shard_id, plan.num_shards, total)
    out: list[tuple[ShardSource, int]] = []
    offset = 0
    for shard in plan.shards:
        lo, hi = max(start, offset), min(stop, offset + shard.samples)
        out.extend((shard, i - offset) for i in range(lo, hi))
        offset += shard.samples
    return out
