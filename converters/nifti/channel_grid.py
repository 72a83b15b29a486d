"""`--resample-channels`: a case's channel file, or its mask, that lies off the case's first channel's grid is
sampled onto that grid rather than rejecting the case: a PET exported beside its CT at its own resolution and
extent, as autoPET's SUV.nii.gz (on the PET's grid) lies beside CT.nii.gz (on the CT's own).

The sampling is the dicom kind's for a stack of series (`--channel CT,PT`, resample.py's onto_grid): every voxel of
the case's final grid (after `--orientation` and `--spacing`, so values are interpolated once) takes the value at its
patient position, linear for a channel, nearest for a mask. A grid voxel outside the file's extent takes the file's
smallest value (a PET's 0, an MR's background), a mask's 0; the sample's json counts those voxels (`onto_grid`). A
file none of whose extent the grid reaches rejects the case."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from converters.dicom.arrays import rounded
from converters.dicom.geometry import RejectSeries
from converters.dicom.orientation import axis_code
from converters.dicom.resample import as_labels, onto_grid, outside_grid
from converters.nifti.volume import Grid


@dataclass(frozen=True)
class OffGrid:
    """A file read on its own grid, to be sampled onto its case's grid once that grid is final."""

    values: np.ndarray  # (z, y, x)
    grid: Grid  # of those three axes: a file of one channel (a 4D file's axis of one is dropped when it is read)
    rel: str
    name: str  # the channel's name; "" for the mask


def _outside(off: OffGrid, final: Grid) -> int:
    outside = outside_grid(off.grid, final)
    if outside == math.prod(final.shape):
        raise RejectSeries(f"{off.rel}: no voxel of its case's grid lies within this "
                           f"{'channel' if off.name else 'mask'}'s extent")
    return outside


def _entry(off: OffGrid, outside: int) -> dict[str, Any]:
    return {("channel" if off.name else "label"): off.name or off.rel, "original_shape": list(off.values.shape),
            "original_spacing": rounded(off.grid.spacing), "orientation": axis_code(off.grid.direction),
            "outside_voxels": outside}


def channel_onto(off: OffGrid, final: Grid) -> tuple[np.ndarray, dict[str, Any]]:
    """A channel's float32 values at the voxels of `final` (linear), and its json entry."""
    outside = _outside(off, final)
    fill = float(off.values.min())
    values = onto_grid(off.values, off.grid, final, order=1, fill=fill)
    return values, {**_entry(off, outside), "outside_value": rounded(fill)}


def mask_onto(off: OffGrid, final: Grid) -> tuple[np.ndarray, dict[str, Any]]:
    """A mask's class values at the voxels of `final` (nearest; 0 outside it), and its json entry."""
    outside = _outside(off, final)
    nearest = onto_grid(off.values, off.grid, final, order=0, fill=0.0)
    return as_labels(nearest, off.values), _entry(off, outside)
