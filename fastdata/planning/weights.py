"""Weighted sampling (`sample_weights=`, as `torch.utils.data.WeightedRandomSampler(weights, num_samples)` takes
them): each train epoch draws `samples_per_epoch` samples (by default as many as the split holds), with replacement,
sample i with probability w_i / sum(w). `sample_weights="balanced"` weighs each sample by 1 / the count of its
class, so that every class is drawn about as often as every other (the loader reads the labels:
fastdata/images/labels.py).

An epoch's draws are counts, a multinomial of M draws over the weights, as a pure function of (seed, epoch). The
epoch's sequence is the unweighted plan's shard sequence with each sample repeated its count of times (0: left out
this epoch), so an epoch still reads each shard in one stretch (fastdata/images/order.py) and the plan's window
shuffle mixes the repeats. The k-th occurrence of sample i in an epoch is numbered k * N + i, as a mixture numbers
its repeats (planning/mixture.py): each repeat draws its own crop and flip, and the readers read sample id % N.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from fastdata.memory_fit import check_epoch_memory
from fastdata.option_rules import refused

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
    return refused("sample_weights", value, f"{BALANCED!r} or one finite number >= 0 per sample of the split "
                   "(manifest order), not all 0 (not a mask: indices= selects a subset)", cut=80)


def per_epoch_option(value: Any, weights: Any) -> int | None:
    """`samples_per_epoch` of a loader of one dataset: an integer >= 1 that goes with `sample_weights`, or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"samples_per_epoch={value!r} is not allowed; samples_per_epoch must be an integer >= 1 "
                         "(the samples an epoch draws)")
    if weights is None:
        raise ValueError("samples_per_epoch sets how many samples sample_weights= draw an epoch (or how long a "
                         "mixture's epoch is); give sample_weights too")
    check_epoch_memory("samples_per_epoch", value)
    return value


@dataclass(frozen=True, eq=False)
class Weighting:
    """Weights over a split's N samples (read-only float64) and the draws an epoch takes (`per_epoch`, M)."""

    weights: np.ndarray
    per_epoch: int

    def draws(self, *, seed: int, epoch: int) -> np.ndarray:
        """How many times each sample is drawn in `epoch`: a multinomial of M draws over the weights."""
        scaled = self.weights / self.weights.max()  # in [0, 1]: their sum cannot overflow, whatever their scale
        return np.random.default_rng([seed, epoch, _WEIGHT_STREAM]).multinomial(self.per_epoch, scaled / scaled.sum())

    def items(self, *, seed: int, epoch: int) -> np.ndarray:
        """The samples drawn in `epoch`, each as often as drawn, in index order (the token and volume plans shuffle
        them; their repeats need no numbering apart: the volume plan draws each patch by its place in the epoch)."""
        n = len(self.weights)
        return np.repeat(np.arange(n, dtype=np.int64), self.draws(seed=seed, epoch=epoch))

    def sequence(self, full: np.ndarray, *, seed: int, epoch: int) -> np.ndarray:
        """`full` (every sample of the split once, in visiting order) with each sample repeated as often as it is
        drawn in `epoch`, its k-th repeat numbered k * N + its index (the image plans: each repeat its own crop)."""
        n = len(self.weights)
        times = self.draws(seed=seed, epoch=epoch)[full]
        sequence = np.repeat(full, times)
        firsts = np.repeat(np.cumsum(times) - times, times)  # where each sample's run of repeats starts
        return sequence + (np.arange(len(sequence), dtype=np.int64) - firsts) * n

    def digest(self, data: str | None) -> str | None:
        """The data digest of a loader drawing this way from the data `data` names: a state saved with other
        weights, or another epoch length, is not resumed."""
        if data is None:
            return None
        text = data.encode() + b"weights" + self.weights.tobytes() + str(self.per_epoch).encode()
        return hashlib.sha256(text).hexdigest()[:32]


def weights_for(weights: np.ndarray | str, num_samples: int, *, per_epoch: int | None, train: bool, mixture: bool,
                subset: bool, labels: Callable[[], np.ndarray]) -> Weighting:
    """`weights` (checked by `sample_weights`; "balanced" from `labels()`, called only then) as a loader of a split of
    `num_samples` samples draws with them, `per_epoch` samples an epoch (None: `num_samples`); ValueError for another
    count, an eval loader, a mixture or a subset."""
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
    return Weighting(weights, num_samples if per_epoch is None else per_epoch)


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


def weighting_digest(data: str | None, weighting: Weighting | None) -> str | None:
    """`data` as a loader drawing with `weighting` (None: reading every sample) records it in its states."""
    return data if weighting is None else weighting.digest(data)
