"""Which samples of a split each epoch of a loader reads: every one, a subset (`indices=`, subset.py) or weighted
draws (`sample_weights=` and `samples_per_epoch=`, weights.py). The image, token and volume loaders check their
options' three fields with `check_selection` and plan from what `selection` makes of them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from fastdata.planning.subset import subset, subset_digest, subset_size
from fastdata.planning.weights import Weighting, per_epoch_option, sample_weights, weighting_digest, weights_for


def check_selection(opts: Any) -> None:
    """Check a loader's frozen options' `indices`, `sample_weights` and `samples_per_epoch`, holding the first two
    as read-only arrays (ValueError naming the option)."""
    if opts.indices is not None:
        object.__setattr__(opts, "indices", subset(opts.indices))
    if opts.sample_weights is not None:
        object.__setattr__(opts, "sample_weights", sample_weights(opts.sample_weights))
    per_epoch_option(opts.samples_per_epoch, opts.sample_weights)


@dataclass(frozen=True)
class Selection:
    """What a loader's plans read of a split: `count` samples an epoch (the split's, the subset's or the draws'), drawn
    by `weights` when given, and the data digest its states record (`digest`, checked on load)."""

    count: int
    weights: Weighting | None
    digest: str | None


def selection(opts: Any, num_samples: int, *, train: bool, mixture: bool, labels: Callable[[], np.ndarray],
              data: str | None) -> Selection:
    """The selection `opts` (checked by `check_selection`) makes of a split of `num_samples` samples whose data digest
    is `data`; `labels()` gives the samples' classes for sample_weights='balanced' (called only then). ValueError for
    an index past the split, weights of another count, or either option where it does not apply."""
    count = subset_size(opts.indices, num_samples, mixture=mixture)
    weights = None if opts.sample_weights is None else weights_for(
        opts.sample_weights, num_samples, per_epoch=opts.samples_per_epoch, train=train, mixture=mixture,
        subset=opts.indices is not None, labels=labels)
    return Selection(count if weights is None else weights.per_epoch, weights,
                     weighting_digest(subset_digest(data, opts.indices), weights))
