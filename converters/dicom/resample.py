"""Resampling to a uniform voxel spacing with correct geometry.

The output grid starts at the same physical point as the input (voxel 0 keeps its position, so
`origin` and `direction` are unchanged) and covers the input's extent: along an axis with n input
voxels at spacing s, the output has floor((n - 1) * s / t) + 1 voxels at spacing t exactly.
"""

from __future__ import annotations

import numpy as np

from fastdata.errors import require


def output_shape(shape: tuple[int, ...], spacing: tuple[float, ...], target: tuple[float, ...]) -> tuple[int, ...]:
    return tuple(int(np.floor((n - 1) * s / t + 1e-6)) + 1 for n, s, t in zip(shape, spacing, target))


def target_spacing(shape: tuple[int, ...], spacing: tuple[float, ...], requested: tuple[float, ...] | None
                   ) -> tuple[float, ...]:
    """The spacing to resample an array of `shape` to: `requested` (its last len(shape) values: a 2D image takes
    Y X of Z Y X), else the native `spacing`. An axis of one voxel keeps its spacing: there is nothing to
    interpolate along it, and a slab's thickness is no gap to stretch."""
    if requested is None:
        return tuple(spacing)
    return tuple(s if n == 1 else t for n, s, t in zip(shape, spacing, requested[-len(shape):]))


def resample(values: np.ndarray, spacing: tuple[float, ...], target: tuple[float, ...], *,
             order: int = 1) -> tuple[np.ndarray, tuple[float, ...]]:
    """(resampled float32 array, its spacing). Linear interpolation (order 1) suits HU."""
    if len(spacing) != values.ndim or len(target) != values.ndim:
        raise ValueError(f"spacing {spacing} / target {target} do not match an array of {values.ndim} dimensions")
    if all(abs(s - t) <= 1e-6 * max(s, t) for s, t in zip(spacing, target)):
        return values, tuple(float(s) for s in spacing)
    ndimage = require("scipy.ndimage", "dicom")
    shape = output_shape(values.shape, spacing, target)
    scale = np.array([t / s for s, t in zip(spacing, target)], dtype=np.float64)
    out = ndimage.affine_transform(values, scale, offset=0.0, output_shape=shape, order=order, mode="nearest",
                                   prefilter=False, output=np.float32)
    return out, tuple(float(t) for t in target)


def resample_mask(mask: np.ndarray, spacing: tuple[float, ...], target: tuple[float, ...]) -> np.ndarray:
    """A mask's class values at `target` spacing, by the nearest voxel (never blended into another class), as uint8
    (uint16 past 255 classes): both volume kinds' masks."""
    nearest, _ = resample(mask.astype(np.float32), spacing, target, order=0)
    return np.rint(nearest).astype(np.uint8 if int(mask.max(initial=0)) <= np.iinfo(np.uint8).max else np.uint16)
