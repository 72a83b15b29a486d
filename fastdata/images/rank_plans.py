"""This rank's epoch plans (`order.py`), replayed through an elastic lineage when the epoch was interrupted on
other world sizes (`planning/elastic.py`), with a mixture's sample sequence in train. Plans are pure functions of
(epoch, lineage); the last two asked for are kept: the consumer's epoch and the one the producer goes on with
(`overlap.py`)."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from fastdata.images.options import ImageLoaderOptions
from fastdata.images.order import EpochPlan, epoch_plan, epoch_plans, split_sequence
from fastdata.planning.elastic import Step, replay
from fastdata.planning.weights import Weighting

log = logging.getLogger(__name__)


class RankPlans:
    """`plans.get(epoch, lineage)`: this rank's plan of an epoch over shards of `shard_sizes` samples (a mixture's
    epochs drawn by `mixture` with `permute` in train; None without one), over the subset `keep` marks, or drawn
    by `weights`; `num_samples`: how many samples the plans are of."""

    def __init__(self, opts: ImageLoaderOptions, shard_sizes: tuple[int, ...], num_samples: int, *,
                 mixture: Any = None, permute: Any = None, keep: np.ndarray | None = None,
                 weights: Weighting | None = None) -> None:
        self._opts, self._shard_sizes, self._num_samples = opts, shard_sizes, num_samples
        self._mixture, self._permute, self._keep, self._weights = mixture, permute, keep, weights
        self._kept: dict[tuple[int, tuple[Step, ...]], EpochPlan] = {}

    def get(self, epoch: int, lineage: tuple[Step, ...]) -> EpochPlan:
        key = (epoch, lineage)
        if key not in self._kept:  # kept: this plan and the last other one (the producer's next epoch)
            o = self._opts
            self._kept = {**dict(list(self._kept.items())[-1:]), key: self._replay(epoch, lineage)[o.rank]}
            if self._kept[key].num_batches == 0:
                log.warning("epoch %d yields no batch on rank %d: %d samples over %d ranks with batch_size %d "
                            "(drop_last=%s)", epoch, o.rank, self._num_samples, o.world_size, o.batch_size,
                            not o.keep_last)
        return self._kept[key]

    def _replay(self, epoch: int, lineage: tuple[Step, ...]) -> list[EpochPlan] | dict[int, EpochPlan]:
        """The plan of every rank (only this one when the epoch was not interrupted on another world size)."""
        o = self._opts
        sequence = None
        if self._mixture is not None and o.train:
            sequence = self._mixture.epoch_items(epoch, self._permute, distinct=True)

        args = dict(train=o.train, batch_size=o.batch_size, keep_last=o.keep_last, seed=o.seed, epoch=epoch,
                    window=o.shuffle_window, sequence=sequence, keep=self._keep, weights=self._weights)
        if not lineage:
            return {o.rank: epoch_plan(self._shard_sizes, rank=o.rank, world_size=o.world_size, **args)}

        def redeal(rests: list[np.ndarray], world_size: int) -> list[EpochPlan]:
            rest = np.concatenate(rests)
            return [split_sequence(rest, train=o.train, batch_size=o.batch_size, keep_last=o.keep_last, rank=r,
                                   world_size=world_size) for r in range(world_size)]

        return replay(lineage, o.world_size, plans=lambda w: epoch_plans(self._shard_sizes, world_size=w, **args),
                      rest=lambda plan, done: plan.sequence[done * plan.batch_size:], redeal=redeal)
