"""The foreground intensity statistics of a masked volume dataset, nnU-Net's CT normalisation.

The nifti kind counts, for every case with a mask whose image is stored as int16 (CT in HU, most MR), how many
voxels under the mask (label > 0) hold each value: the split's `stats.foreground_values` in the manifest, an exact
histogram summed over its cases. From the train split's histogram (of every dataset of a mixture) come the 0.5th
and 99.5th percentiles, the mean and the standard deviation of the foreground; `zscore="foreground"` clips a
patch to the percentiles and standardises it with the mean and standard deviation, as nnU-Net's CTNormalization
does with its dataset fingerprint. Eval and test loaders use the train split's numbers, never their own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

FOREGROUND = "foreground_values"  # the split stat: {stored value: voxels under a mask}
TRAIN = "train"
LOW, HIGH = 0.5, 99.5  # nnU-Net's percentiles


@dataclass(frozen=True)
class Foreground:
    voxels: int
    mean: float
    std: float
    low: float  # the 0.5th percentile
    high: float  # the 99.5th percentile


def percentile(values: np.ndarray, counts: np.ndarray, q: float) -> float:
    """np.percentile(q) (linear interpolation) of the multiset where sorted `values[i]` occurs `counts[i]` times."""
    position = q / 100.0 * (int(counts.sum()) - 1)
    ends = np.cumsum(counts)  # the multiset's items 0..ends[i]-1 are values[:i+1]
    below, above = math.floor(position), math.ceil(position)
    lo = float(values[np.searchsorted(ends, below, side="right")])
    hi = float(values[np.searchsorted(ends, above, side="right")])
    return lo + (hi - lo) * (position - below)


def foreground_of(histogram: dict[str, Any]) -> Foreground:
    """The statistics of a histogram {value (text): voxels}."""
    pairs = sorted((int(k), int(v)) for k, v in histogram.items() if int(v) > 0)
    if not pairs:
        raise ValueError("the foreground histogram counts no voxel")
    values = np.array([p[0] for p in pairs], dtype=np.float64)
    counts = np.array([p[1] for p in pairs], dtype=np.int64)
    total = int(counts.sum())
    mean = float(np.dot(values, counts) / total)
    std = math.sqrt(float(np.dot((values - mean) ** 2, counts) / total))
    return Foreground(voxels=total, mean=mean, std=std, low=percentile(values, counts, LOW),
                      high=percentile(values, counts, HIGH))


def histogram_of(image: np.ndarray, labels: np.ndarray) -> dict[str, int]:
    """{value: voxels} of the image under the mask (label > 0): a case's share of the split's histogram."""
    values, counts = np.unique(image[labels > 0], return_counts=True)
    return {str(int(v)): int(c) for v, c in zip(values, counts)}


def dataset_foreground(view: Any) -> Foreground:  # a DatasetView/MixedView
    """The foreground statistics of the train split of every dataset the loader reads; ValueError, saying what to
    pass instead, where one has none."""
    total: dict[str, int] = {}
    for member in view.views:
        split = member.manifest.splits.get(TRAIN)
        histogram = None if split is None else split.stats.get(FOREGROUND)
        if not isinstance(histogram, dict) or not histogram:
            raise ValueError(f"zscore='foreground' takes its statistics from the train split's foreground "
                             f"histogram, and {member.root} has none (no train split, no masks, volumes stored as "
                             "float32, or converted before fastdata counted it); pass clip=(lo, hi) and "
                             "zscore=(mean, std) instead")
        try:
            for value, n in histogram.items():
                total[str(int(value))] = total.get(str(int(value)), 0) + int(n)
        except (TypeError, ValueError):
            raise ValueError(f"{member.root}'s manifest holds a foreground histogram that does not count whole "
                             "numbers of voxels by whole values; convert the dataset again") from None
    return foreground_of(total)


def summary(histogram: dict[str, Any]) -> str:
    """One line of `fastdata info` for a split's histogram (thousands of values: not listed)."""
    f = foreground_of(histogram)
    return (f"{f.voxels:,} voxels under masks, mean {f.mean:.2f}, std {f.std:.2f}, percentiles 0.5 / 99.5: "
            f"{f.low:.2f} / {f.high:.2f} (zscore='foreground')")
