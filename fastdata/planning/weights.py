"""Weighted sampling (`sample_weights=`, as `torch.utils.data.WeightedRandomSampler(weights, len(weights))` takes
them): each train epoch draws as many samples as the split holds, with replacement, sample i with probability
w_i / sum(w). `sample_weights="balanced"` weighs each sample by 1 / the count of its class, so that every class
is drawn about as often as every other (the loader reads the labels: fastdata/images/labels.py).

An epoch's draws are counts, a multinomial of N draws over the weights, as a pure function of (seed, epoch). The
epoch's sequence is the unweighted plan's shard sequence with each sample repeated its count of times (0: left out
this epoch), so an epoch still reads each shard in one stretch (fastdata/images/order.py) and the plan's window
shuffle mixes the repeats. The k-th occurrence of sample i in an epoch is numbered k * N + i, as a mixture numbers
its repeats (planning/mixture.py): each repeat draws its own crop and flip, and the readers read sample id % N.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import numpy as np

BALANCED = "balanced"
_WEIGHT_STREAM = 0x5747  # the draws' own random stream, apart from the plan's permutations (order.py)


def sample_weights(value: Any) -> np.ndarray | str:
    """`value` as a read-only float64 array of weights (a sequence, numpy array or CPU tensor of numbers >= 0, not
    all 0), or "balanced"; ValueError otherwise. Their count must be the split's size, which the loader checks
    (`weights_for`)."""
    if isinstance(value, str):
        if value != BALANCED:
            raise _not_weights(value)
        return value
    try:
        array = np.asarray(value.cpu() if hasattr(value, "cpu") else value)
    except (TypeError, ValueError):
        raise _not_weights(value) from None
    if array.ndim != 1 or array.size == 0 or array.dtype.kind not in "iuf":
        raise _not_weights(value)
    out = array.astype(np.float64)
    if not np.isfinite(out).all() or (out < 0).any() or not out.sum() > 0:
        raise _not_weights(value)
    out.setflags(write=False)
    return out


def _not_weights(value: Any) -> ValueError:
    text = repr(value)
    return ValueError(f"sample_weights={text if len(text) <= 80 else text[:77] + '...'} is not allowed; "
                      f"sample_weights must be {BALANCED!r} or one finite number >= 0 per sample of the split "
                      "(manifest order), not all 0 (not a mask: indices= selects a subset)")


def weights_for(weights: np.ndarray | str, num_samples: int, *, train: bool, mixture: bool, subset: bool,
                labels: Callable[[], np.ndarray]) -> np.ndarray:
    """`weights` (checked by `sample_weights`; "balanced" from `labels()`, called only then) as a loader of a split of
    `num_samples` samples uses them; ValueError for another count, an eval loader, a mixture or a subset."""
    if not train:
        raise ValueError("sample_weights draw the samples of training epochs; a loader that reads every sample once, "
                         "in order (train=False; for tokens, shuffle=False), takes none")
    if mixture:
        raise ValueError("sample_weights weigh the samples of one dataset; a mixture weighs its datasets (weights=)")
    if subset:
        raise ValueError("give indices= or sample_weights=, not both: a weight of 0 leaves a sample out")
    if isinstance(weights, str):
        weights = balanced(labels())
    if len(weights) != num_samples:
        raise ValueError(f"sample_weights holds {len(weights)} weights, but the split has {num_samples} samples "
                         "(one weight per sample, in the manifest's order)")
    return weights


def balanced(labels: np.ndarray) -> np.ndarray:
    """Weights of 1 / (the count of the sample's class) for `labels` (one class id per sample); ValueError for a
    dataset without classes."""
    labels = np.asarray(labels, dtype=np.int64)
    if labels.size == 0 or (labels < 0).any():
        raise ValueError(f"sample_weights='balanced' weighs samples by their class, and {int((labels < 0).sum())} of "
                         f"the split's {labels.size} samples have none; give one weight per sample instead")
    counts = np.bincount(labels)
    out = 1.0 / counts[labels]
    out.setflags(write=False)
    return out


def draws(weights: np.ndarray, *, seed: int, epoch: int) -> np.ndarray:
    """How many times each sample is drawn in `epoch`: a multinomial of N = len(weights) draws over the weights."""
    return np.random.default_rng([seed, epoch, _WEIGHT_STREAM]).multinomial(len(weights), weights / weights.sum())


def weighted_items(weights: np.ndarray, *, seed: int, epoch: int) -> np.ndarray:
    """The samples drawn in `epoch`, each as often as drawn, in index order (the token and volume plans shuffle
    them; their repeats need no numbering apart: the volume plan draws each patch by its place in the epoch)."""
    return np.repeat(np.arange(len(weights), dtype=np.int64), draws(weights, seed=seed, epoch=epoch))


def weighted_sequence(full: np.ndarray, weights: np.ndarray, *, seed: int, epoch: int) -> np.ndarray:
    """`full` (every sample of the split once, in visiting order) with each sample repeated as often as it is drawn
    in `epoch` (`draws`), its k-th repeat numbered k * N + its index (the image plans: each repeat its own crop)."""
    n = len(weights)
    times = draws(weights, seed=seed, epoch=epoch)[full]
    sequence = np.repeat(full, times)
    firsts = np.repeat(np.cumsum(times) - times, times)  # where each sample's run of repeats starts
    return sequence + (np.arange(len(sequence), dtype=np.int64) - firsts) * n


def weights_digest(data: str | None, weights: np.ndarray | None) -> str | None:
    """The data digest of a loader drawing with `weights` from the data `data` names: a state saved with one
    weighting is not resumed with another."""
    if weights is None or data is None:
        return data
    return hashlib.sha256(data.encode() + b"weights" + weights.tobytes()).hexdigest()[:32]
