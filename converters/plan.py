"""Deterministic work planning: shuffle each split once with the seed, cut it into shards, deal
shards to parts. Everything here is a pure function of the inputs, so every part of a distributed
conversion, and every resumed run, computes the same plan."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from converters.sample import WorkItem


@dataclass(frozen=True)
class ShardPlan:
    """Shard `index` of `split` holds the inputs at positions [start, stop) of the shuffled split."""

    split: str
    index: int
    start: int
    stop: int
    ordinal: int  # position among all shards of all splits; parts are dealt by it

    def name(self, suffix: str) -> str:
        return f"{self.split}-{self.index:06d}{suffix}"

    def to_dict(self) -> dict[str, object]:
        return {"split": self.split, "index": self.index, "start": self.start, "stop": self.stop,
                "ordinal": self.ordinal}


def shuffle_split(items: list[WorkItem], *, seed: int, split: str) -> list[WorkItem]:
    """Shuffle a split (given in a canonical sorted order) and number the items by their new position."""
    order = list(range(len(items)))
    random.Random(f"fastdata:{seed}:{split}").shuffle(order)
    return [replace(items[i], position=pos) for pos, i in enumerate(order)]


def plan_shards(split_sizes: dict[str, int], samples_per_shard: dict[str, int]) -> list[ShardPlan]:
    plans: list[ShardPlan] = []
    for split in sorted(split_sizes):
        n, per = split_sizes[split], samples_per_shard[split]
        if per < 1:
            raise ValueError(f"samples per shard must be >= 1, got {per}")
        for index, start in enumerate(range(0, n, per)):
            plans.append(ShardPlan(split, index, start, min(start + per, n), len(plans)))
    return plans


def shards_for_part(plans: list[ShardPlan], *, num_parts: int, part: int) -> list[ShardPlan]:
    """The disjoint subset of shards part `part` of `num_parts` converts (round robin by ordinal)."""
    if num_parts < 1:
        raise ValueError(f"--num-parts must be >= 1, got {num_parts}")
    if not 0 <= part < num_parts:
        raise ValueError(f"--part must be in 0..{num_parts - 1} for --num-parts {num_parts}, got {part}")
    return [p for p in plans if p.ordinal % num_parts == part]


def samples_per_shard_from_probe(sizes: list[int], *, shard_size: int, n: int) -> int:
    """Samples per shard so that shards come out near `shard_size` bytes, from probed sample sizes."""
    if not sizes:
        return max(n, 1)
    mean = sum(sizes) / len(sizes) + 1024  # + tar headers (3 members x 512 B) and padding, roughly
    return max(1, min(max(n, 1), int(shard_size // mean)))
