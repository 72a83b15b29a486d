"""Resampling to a uniform voxel spacing with correct geometry, and onto another series' grid (--channel).

The output grid starts at the same physical point as the input (voxel 0 keeps its position, so
`origin` and `direction` are unchanged) and covers the input's extent: along an axis with n input
voxels at spacing s, the output has floor((n - 1) * s / t) + 1 voxels at spacing t exactly.
"""

from __future__ import annotations

from typing import Any

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
    return as_labels(nearest, mask)


def as_labels(nearest: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Class values sampled by the nearest voxel (float) as a mask again: uint8, uint16 past 255 classes (`mask`'s
    largest value says)."""
    return np.rint(nearest).astype(np.uint8 if int(mask.max(initial=0)) <= np.iinfo(np.uint8).max else np.uint16)


def _transform(source: Any, grid: Any) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """(matrix, offset, output shape) of scipy's affine_transform that samples a volume placed by `source` (a
    Geometry's spacing, origin and directions) at the voxels of `grid` (another Geometry, in the same patient
    coordinates)."""
    source_dirs, grid_dirs = np.asarray(source.direction, np.float64), np.asarray(grid.direction, np.float64)
    source_spacing, grid_spacing = np.asarray(source.spacing, np.float64), np.asarray(grid.spacing, np.float64)
    # the index along source axis b of grid voxel idx: ((origin + sum_a idx[a] * spacing[a] * dirs[a]) - source
    # origin) . source_dirs[b] / source_spacing[b] (the directions are orthonormal)
    matrix = source_dirs @ grid_dirs.T * grid_spacing[None, :] / source_spacing[:, None]
    shift = np.asarray(grid.origin, np.float64) - np.asarray(source.origin, np.float64)
    offset = source_dirs @ shift / source_spacing
    shape = tuple(grid.shape)
    # parallel axes (a PET and its CT, as most scanners write them): scipy's path for a diagonal matrix, given as its
    # diagonal, is 1.6x faster; taken where the rest of the matrix moves no voxel by more than 0.001 of a voxel
    off_diagonal = np.abs(matrix - np.diag(np.diagonal(matrix)))
    if float((off_diagonal @ (np.asarray(shape, np.float64) - 1)).max()) < 1e-3:
        matrix = np.diagonal(matrix).copy()
    return matrix, offset, shape


def onto_grid(values: np.ndarray, source: Any, grid: Any, *, order: int, fill: float) -> np.ndarray:
    """`values` (a (z, y, x) volume placed by `source`) sampled at the voxels of `grid` by their positions, as
    float32: linear (order 1) or nearest (order 0); a voxel of `grid` outside `values`' extent takes `fill`."""
    ndimage = require("scipy.ndimage", "dicom")
    matrix, offset, shape = _transform(source, grid)
    return ndimage.affine_transform(values.astype(np.float32, copy=False), matrix, offset, output_shape=shape,
                                    order=order, mode="constant", cval=fill, prefilter=False, output=np.float32)


def outside_grid(source: Any, grid: Any) -> int:
    """How many voxels of `grid` lie outside the extent of a volume placed by `source` (those onto_grid fills)."""
    ndimage = require("scipy.ndimage", "dicom")
    matrix, offset, shape = _transform(source, grid)
    inside = ndimage.affine_transform(np.ones(source.shape, np.uint8), matrix, offset, output_shape=shape, order=0,
                                      mode="constant", cval=0, prefilter=False, output=np.uint8)
    return int(inside.size - np.count_nonzero(inside))
