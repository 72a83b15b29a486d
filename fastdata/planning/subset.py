"""A subset of a split's samples (`indices=`, as FFCV's `Loader(indices=...)` and `torch.utils.data.Subset` take
them): the global indices, in the manifest's order of shards and samples, that a loader reads; the others are not
read. The image plan (fastdata/images/order.py) takes them out of each epoch's sequence before the ranks' shares are
cut; the token plan (fastdata/text/plan.py) plans its batches over them alone; the volume plans
(fastdata/volumes/patches.py) draw and slide over those volumes alone. Order, ranks, padding and resume keep their
rules over the subset's N samples, and a state records the subset in its data digest.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from fastdata.option_rules import refused


def subset(indices: Any) -> np.ndarray:
    """`indices` (a sequence, range, numpy array or CPU tensor of sample indices) as a sorted, read-only int64
    array; ValueError for anything but distinct integers >= 0, or none at all (their upper bound is the split's
    size, checked by the loader that knows it)."""
    try:
        array = np.asarray(indices.cpu() if hasattr(indices, "cpu") else indices)
    except (TypeError, ValueError):
        array = np.zeros(0, dtype=np.float64)
    if array.ndim != 1 or array.size == 0 or array.dtype.kind not in "iu":
        raise _not_indices(indices, "a non-empty sequence of sample indices (integers, not a mask)")
    out = np.unique(array.astype(np.int64))
    if out[0] < 0 or len(out) != len(array):
        raise _not_indices(indices, "distinct indices >= 0 (a sample twice would be read twice an epoch)")
    out.setflags(write=False)
    return out


def _not_indices(value: Any, allowed: str) -> ValueError:
    return refused("indices", value, allowed, cut=80)


def subset_size(indices: np.ndarray | None, num_samples: int, *, mixture: bool) -> int:
    """How many of the split's `num_samples` samples a loader of `indices` reads (all of them without); ValueError for
    an index past the split or a subset of a mixture."""
    if indices is None:
        return num_samples
    if mixture:
        raise ValueError("indices selects samples of one dataset; a mixture draws from its datasets by their weights "
                         "(give each dataset of the mixture its own samples instead)")
    if indices[-1] >= num_samples:
        raise ValueError(f"indices go up to {int(indices[-1])}, but the split has {num_samples} samples (indices "
                         f"0..{num_samples - 1})")
    return len(indices)


def subset_mask(indices: np.ndarray | None, num_samples: int) -> np.ndarray | None:
    """A bool per sample of the split, True for those of `indices` (checked by `subset_size`); None: every sample."""
    if indices is None:
        return None
    keep = np.zeros(num_samples, dtype=bool)
    keep[indices] = True
    return keep


def subset_digest(data: str | None, indices: np.ndarray | None) -> str | None:
    """The data digest of a loader reading `indices` of the data `data` names: a state saved on one subset is not
    resumed on another."""
    if indices is None or data is None:
        return data
    return hashlib.sha256(data.encode() + indices.tobytes()).hexdigest()[:32]
