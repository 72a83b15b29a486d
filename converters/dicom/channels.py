"""`--channel CT,PT`: one study's series stacked into one (C, z, y, x) volume (channel_groups.py finds them).

The first channel's series is converted as a series by itself is (reoriented, resampled); that is the stack's grid,
and its json. Every other series is read as it is stored and sampled at the grid's voxels by their patient
positions (linear; the series share a frame of reference, so one position is one point in the patient), wherever
its slices lie and however they are oriented or spaced: a PET series of 4 mm voxels onto its CT's 0.98 mm grid.
A grid voxel outside another series' extent takes that series' smallest value (a PET's 0, an MR's background), and
the json counts those voxels per channel. A series' mask (SEG, RTSTRUCT; one per stack) goes onto the grid with its
series (nearest). The stack is int16 where every channel's values are (CT's Hounsfield units, whole MR values),
else float32: a CT beside PET activity or SUVs is float32.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from converters.dicom.arrays import rounded, stored_array, too_many
from converters.dicom.discover import SeriesFiles
from converters.dicom.geometry import RejectSeries
from converters.dicom.options import DicomOptions
from converters.dicom.orientation import axis_code
from converters.dicom.privacy import series_hash
from converters.dicom.resample import as_labels, onto_grid, outside_grid
from converters.dicom.series import PlacedSeries, SeriesVolume, place, read_volume, series_meta, units_of


def _stackable(series: SeriesFiles, opts: DicomOptions, why: str) -> SeriesVolume:
    """The series read; RejectSeries for a planar image (no position to place it by), `why` ending the reason."""
    volume = read_volume(series, opts)
    if volume.geometry.direction is None:
        raise RejectSeries(f"{series.files[0][1]}: a planar image without a position{why}")
    return volume


def _placed_channel(series: SeriesFiles, first: PlacedSeries, opts: DicomOptions
                    ) -> tuple[np.ndarray, SeriesVolume, np.ndarray | None, dict[str, Any]]:
    """(a stacked series' values on the first's grid, the series as read, its mask on the grid or None, its json
    entry)."""
    volume = _stackable(series, opts, f" cannot be placed on the {opts.channels[0]} grid (--channel stacks volumes)")
    rel = series.files[0][1]
    fill = float(volume.values.min())
    values = onto_grid(volume.values, volume.geometry, first.grid, order=1, fill=fill)
    outside = outside_grid(volume.geometry, first.grid)
    if outside == values.size:
        raise RejectSeries(f"{rel}: no voxel of the stack's grid lies within this {volume.modality} series: the two "
                           "share a frame of reference but not a place")
    labels = None
    if volume.mask is not None:
        labels = as_labels(onto_grid(volume.mask, volume.geometry, first.grid, order=0, fill=0.0), volume.mask)
    entry = {"modality": volume.modality, "series": series_hash(series.uid, opts.salt), "units": units_of(volume, opts),
             "files": len(series.files), "slices": volume.slices, "original_shape": list(volume.geometry.shape),
             "original_spacing": rounded(volume.geometry.spacing), "orientation": axis_code(volume.geometry.direction),
             "transfer_syntaxes": sorted(volume.syntaxes), "outside_voxels": outside, "outside_value": rounded(fill)}
    if series.seg is not None:
        entry["label"] = series.seg[1]
    if opts.keep_phi:
        entry["files_rel"] = [r for _, r in series.files]
    return values, volume, labels, entry


def convert_stack(stack: SeriesFiles, opts: DicomOptions) -> tuple[np.ndarray, np.ndarray | None, dict[str, Any]]:
    """The (C, z, y, x) array, its mask (None when no series of the stack has one) and the json of a stack: `stack`
    the first channel's series, holding the others (`channels`). Raises RejectSeries with the reason."""
    volume = _stackable(stack, opts, ": --channel stacks volumes")
    first = place(volume, opts)
    total = math.prod(first.values.shape) * (1 + len(stack.channels))
    if total > opts.max_voxels:  # checked before the other channels are read onto the grid
        raise too_many(total, opts.max_voxels, f"its {1 + len(stack.channels)} channels on the "
                                               f"{volume.modality} grid would hold")
    planes, labels, overlaps, whole, stacked = [first.values], first.labels, volume.overlaps, volume.whole, []
    for series in stack.channels:
        values, read, mask, entry = _placed_channel(series, first, opts)
        planes.append(values)
        if mask is not None:  # the stack's one mask (channel_groups.py)
            labels, overlaps = mask, read.overlaps
        whole = whole and read.whole
        stacked.append(entry)
    arr, clipped = stored_array(np.stack(planes), whole)
    meta = series_meta(stack, volume, first, arr, clipped, opts)  # its label fields: the first series' mask's
    if overlaps:  # what --overlap later moved, in the mask of whichever series holds it
        meta["overlaps"] = overlaps
    meta.update({"channels": list(opts.channels), "stacked": stacked,
                 "modality": "+".join(opts.channels),
                 "units": "; ".join(f"{m}: {u}" for m, u in zip(opts.channels, [units_of(volume, opts)] +
                                                                   [e["units"] for e in stacked], strict=True))})
    if labels is not None and stack.seg is None:  # the mask of a stacked series: series_meta saw none
        meta.update({"label": next(e["label"] for e in stacked if "label" in e), "label_dtype": str(labels.dtype),
                     "label_max": int(labels.max()),
                     "interpolation": f"{meta['interpolation']}; masks nearest (order=0)"})
    return arr, labels, meta
