"""Per-series work (runs in worker processes): read every file of a series (slices.py), order its slices,
apply RescaleSlope/RescaleIntercept (HU for CT), resample to the requested spacing, and emit
`{key}.npy` (int16) + `{key}.json` (geometry and acquisition metadata, no PHI by default), and `{key}.label.npy`
for a series with a mask (a SEG: segmentation.py; a structure set: rtstruct.py), moved and resampled with it
(nearest)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from converters.dicom import pet, rtstruct, segmentation
from converters.dicom.arrays import INT16, integral, npy_bytes, rounded, stored_array, too_many
from converters.dicom.discover import SeriesFiles, read_files
from converters.dicom.geometry import Geometry, RejectSeries, Slice, planar_geometry, stack_geometry
from converters.dicom.label_volume import LabelVolume, overlap_stats
from converters.dicom.options import DicomOptions
from converters.dicom.orientation import axis_code, reorient_on
from converters.dicom.privacy import failure, phi_fields, quiet_values, series_hash
from converters.dicom.resample import output_shape, resample, resample_mask, target_spacing
from converters.dicom.slices import code_attribute, read_slices
from converters.guarded import Guarded
from converters.sample import Rejection, Sample, WorkItem
from fastdata.volumes.intensity import FOREGROUND, histogram_of


def _mask(series: SeriesFiles, slices: list[Slice], order: list[int], sops: dict[str, str],
          opts: DicomOptions) -> LabelVolume:
    """The class values of the series' SEG or structure set on its slices, in the volume's slice order."""
    assert series.seg is not None
    path, rel = series.seg
    if series.structure_set:
        return rtstruct.read_mask(path, rel, [slices[i] for i in order], series.segments, opts.overlap)
    if any(s.frame is not None for s in slices):
        raise RejectSeries(f"{rel}: a segmentation of a multi-frame series; its frames are placed on single-frame "
                           "images only")
    sources = [sops[slices[i].rel] for i in order]
    return segmentation.read_mask(path, rel, sources, slices[0].shape, series.segments, opts.max_voxels,
                                  opts.overlap)


def _suv(ds: Any, earliest: datetime | None, rel: str, by: str) -> float:
    """pet.suv_factor, its reason naming the attribute pydicom cannot parse (never the value)."""
    try:
        return pet.suv_factor(ds, earliest, rel, by)
    except RejectSeries:
        raise
    except Exception as exc:  # noqa: BLE001 - pydicom parses a value when it is first read
        raise RejectSeries(f"{rel}: --suv: a malformed PET attribute ({failure(exc)})") from exc


@dataclass
class SeriesVolume:
    """One series read: its values (float32, in slice order, SUV applied; a planar image's 2D), its mask on the same
    voxels (None without one) with what --overlap moved, its geometry as stored, its first dataset (`ds`), and what
    its json says of it (`whole`: int16 holds its values: below)."""

    values: np.ndarray
    mask: np.ndarray | None
    overlaps: list[dict[str, Any]]
    geometry: Geometry
    ds: Any
    modality: str
    suv: float | None
    whole: bool
    syntaxes: set[str]
    slices: int


@dataclass
class PlacedSeries:
    """A series' values (float32) and mask on its output grid: `geometry` reoriented (--orientation), `spacing` the
    output's (--spacing; the origin and directions are the reoriented geometry's), `stored` the orientation code as
    stored (None for a planar image)."""

    values: np.ndarray
    labels: np.ndarray | None
    geometry: Geometry
    spacing: tuple[float, ...]
    stored: str | None

    @property
    def grid(self) -> Geometry:
        """The output grid: where each voxel of `values` lies."""
        return replace(self.geometry, shape=self.values.shape, spacing=self.spacing)


def read_volume(series: SeriesFiles, opts: DicomOptions) -> SeriesVolume:
    """Read one series: its slices ordered into a volume, rescaled, with its mask painted on them. Raises
    RejectSeries with the reason."""
    files = series.files
    slices, planes, ds, syntaxes, sops, earliest = read_slices(files, opts.max_voxels, opts.suv)
    first_rel = files[0][1]  # ds is the series' first file
    modality = code_attribute(ds, "Modality", first_rel)
    suv = _suv(ds, earliest, first_rel, opts.suv) if opts.suv and modality == "PT" else None
    planar = len(slices) == 1 and (slices[0].position is None or slices[0].orientation is None)
    if planar:
        geometry: Geometry = planar_geometry(slices[0])
        order = [0]
    else:
        order, geometry = stack_geometry(slices, tolerance=opts.slice_tolerance)
    values = np.stack([planes[i].astype(np.float32) * np.float32(slices[i].slope) + np.float32(slices[i].intercept)
                       for i in order])
    if suv is not None:
        values *= np.float32(suv)
    if not np.all(np.isfinite(values)):
        raise RejectSeries(f"{first_rel}: rescaled values beyond float32's range (RescaleSlope, RescaleIntercept)")
    # CT is whole Hounsfield units (rounded); other values are kept as int16 where each is a whole number in its
    # range, else as float32 (PET's activity concentrations, SUVs and MR's fractional rescales lose nothing)
    whole = modality == "CT" or integral(values, INT16.min, INT16.max)
    painted = None if series.seg is None else _mask(series, slices, order, sops, opts)
    mask = None if painted is None else painted.labels
    if planar:
        values = values[0]
        mask = None if mask is None else mask[0]
    return SeriesVolume(values, mask, [] if painted is None else painted.overlaps, geometry, ds, modality, suv, whole,
                        syntaxes, len(slices))


def place(volume: SeriesVolume, opts: DicomOptions) -> PlacedSeries:
    """`volume` reoriented (--orientation) and resampled (--spacing), its mask with it (nearest)."""
    values, mask, geometry = volume.values, volume.mask, volume.geometry
    stored = None if geometry.direction is None else axis_code(geometry.direction)
    if opts.orientation is not None and geometry.direction is not None:  # a planar image has no patient axes
        moved, geometry = reorient_on([values, *([] if mask is None else [mask])], geometry, opts.orientation)
        values, mask = moved[0], (None if mask is None else moved[1])
    target = target_spacing(values.shape, geometry.spacing, opts.spacing)
    resampled = math.prod(output_shape(values.shape, geometry.spacing, target))
    if resampled > opts.max_voxels:  # checked before the output is allocated
        raise too_many(resampled, opts.max_voxels, f"resampled to {rounded(target)} mm the series would hold")
    out, spacing = resample(values, geometry.spacing, target)
    labels = None if mask is None else resample_mask(mask, geometry.spacing, target)
    return PlacedSeries(out, labels, geometry, spacing, stored)


def units_of(volume: SeriesVolume, opts: DicomOptions) -> str:
    """What a series' values are, in its json."""
    if volume.modality == "CT":
        return "HU"
    return pet.UNITS[opts.suv] if volume.suv is not None else ("rescaled stored values (RescaleSlope/RescaleIntercept "
                                                               "applied)")


def series_meta(series: SeriesFiles, volume: SeriesVolume, placed: PlacedSeries, arr: np.ndarray, clipped: int,
                opts: DicomOptions) -> dict[str, Any]:
    """The json of a sample: `series` as read (`volume`), placed and stored (`arr`: a (C, z, y, x) stack's
    geometry is its spatial axes')."""
    first_rel = series.files[0][1]
    whole = arr.dtype == np.int16
    geometry, spacing, ds = placed.geometry, placed.spacing, volume.ds
    spatial = list(placed.values.shape)
    meta: dict[str, Any] = {
        "series": series_hash(series.uid, opts.salt),
        "ndim": len(spatial),
        "axes": "czyx" if arr.ndim == 4 else "zyx" if arr.ndim == 3 else "yx",
        "shape": spatial,
        "spacing": rounded(spacing),
        "origin": rounded(geometry.origin),
        "direction": rounded(geometry.direction),
        "orientation": None if geometry.direction is None else axis_code(geometry.direction),
        "stored_orientation": placed.stored,
        "original_shape": list(geometry.shape),
        "original_spacing": rounded(geometry.spacing),
        "slice_spacing_source": geometry.spacing_source,
        "resampled": spatial != list(geometry.shape) or rounded(spacing) != rounded(geometry.spacing),
        "interpolation": "linear (scipy.ndimage.affine_transform, order=1)",
        "modality": volume.modality,
        "units": units_of(volume, opts),
        "dtype": str(arr.dtype),
        "photometric": code_attribute(ds, "PhotometricInterpretation", first_rel),
        "transfer_syntaxes": sorted(volume.syntaxes),
        "files": len(series.files),
        "slices": volume.slices,
        "min": int(arr.min()) if whole else rounded(arr.min()),
        "max": int(arr.max()) if whole else rounded(arr.max()),
        "clipped_voxels": clipped,
    }
    if placed.labels is not None and series.seg is not None:
        meta.update({"label": series.seg[1], "label_dtype": str(placed.labels.dtype),
                     "label_max": int(placed.labels.max()),
                     "interpolation": f"{meta['interpolation']}; masks nearest (order=0)"})
    if volume.overlaps:
        meta["overlaps"] = volume.overlaps
    if opts.keep_phi:
        try:
            meta["phi"] = phi_fields(ds)
        except Exception as exc:  # noqa: BLE001 - pydicom parses a value when it is first read
            raise RejectSeries(f"{first_rel}: an identifying attribute is malformed ({type(exc).__name__})") from exc
        meta["files_rel"] = [rel for _, rel in series.files]
    return meta


def convert_series(series: SeriesFiles, opts: DicomOptions) -> tuple[np.ndarray, np.ndarray | None, dict[str, Any]]:
    """The array (int16, or float32 for values int16 does not hold: read_volume), the mask (a series with a SEG or a
    structure set; else None) and the metadata of one series. Raises RejectSeries with the reason."""
    volume = read_volume(series, opts)
    placed = place(volume, opts)
    arr, clipped = stored_array(placed.values, volume.whole)
    return arr, placed.labels, series_meta(series, volume, placed, arr, clipped, opts)


def process_series(item: WorkItem, /, *, opts: DicomOptions) -> Sample | Rejection:
    """Convert the files of one series (item.payload: SeriesFiles), or of a stack of series (--channel), into a
    sample with members npy and json (and label.npy for a series with a mask)."""
    for path, rel in read_files(item.payload):
        if not Path(path).exists():
            return Rejection(item.split, item.rel, f"file vanished since discovery: {rel}")
    from converters.dicom.channels import convert_stack  # it builds on this module's reading

    convert = convert_stack if item.payload.channels else convert_series
    try:
        with quiet_values():  # no value pydicom finds invalid is printed or logged (privacy.py)
            arr, labels, meta = convert(item.payload, opts)
    except RejectSeries as exc:
        return Rejection(item.split, item.rel, str(exc))
    meta = {"key": item.key, **meta}
    info = json.dumps(meta, sort_keys=True).encode()
    stats = {"series": 1, "slices": meta["slices"], "voxels": int(arr.size), "clipped_voxels": meta["clipped_voxels"],
             "modality": {meta["modality"] or "unknown": 1}, "ndim": {str(arr.ndim): 1},
             **({"orientation": {meta["orientation"]: 1}} if meta["orientation"] else {}), **overlap_stats(meta)}
    members = {"npy": npy_bytes(arr)}
    if labels is not None:
        members["label.npy"] = npy_bytes(labels)
        stats["masks"] = 1
        if arr.ndim == 3 and arr.dtype == np.int16:  # the foreground histogram (intensity.py), as the nifti kind's
            stats[FOREGROUND] = histogram_of(arr, labels)
    members["json"] = info
    return Sample(key=item.key, label=None, members=members, stats=stats)


class SeriesProcessor(Guarded):
    """The per-item callable handed to the engine: one series per task (converters/guarded.py)."""

    def convert(self, item: WorkItem, /) -> Sample | Rejection:
        return process_series(item, opts=self.opts)

    def failure(self, exc: BaseException, /) -> str:
        return failure(exc)
