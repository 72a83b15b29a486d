"""Per-case work (runs in worker processes): read a NIfTI image and its mask (or merge its per-structure masks
into one), check that they lie on the same grid, resample both to the requested spacing (linear for the image,
nearest for the mask), and emit `{key}.npy`, `{key}.label.npy` (the mask, where there is one) and `{key}.json`
(geometry; no source path by default)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from converters.dicom.arrays import INT16, integral, npy_bytes, rounded, to_int16, too_many
from converters.dicom.geometry import RejectSeries
from converters.dicom.label_volume import LabelVolume, overlap_stats
from converters.dicom.orientation import axis_code, reorient_on
from converters.dicom.resample import output_shape, resample, resample_mask, target_spacing
from converters.guarded import Guarded
from converters.nifti.channels import ALL
from converters.nifti.discover import CaseFiles
from converters.nifti.options import NiftiOptions
from converters.nifti.volume import (
    Grid,
    box_in,
    channels,
    every_channel,
    failure,
    grid_of,
    header_voxels,
    load,
    same_grid,
    voxels,
)
from converters.sample import Rejection, Sample, WorkItem
from fastdata.volumes.intensity import FOREGROUND, histogram_of

MASK_MAX = np.iinfo(np.uint16).max


def _image(case: CaseFiles, opts: NiftiOptions) -> tuple[list[np.ndarray], Grid]:
    """The (z, y, x) voxels of each channel the case converts (one, or with --channel all every one) and their
    grid."""
    if case.channel_files:
        return _channel_files(case, opts)
    path, rel = case.image
    img = load(path, rel, opts.max_voxels)
    grid = grid_of(img, rel)
    n = channels(img)
    every = case.channel == ALL
    if n > 1 and case.axis is None and not every:
        raise RejectSeries(f"{rel}: a 4D image of {n} channels; pick one with --channel C, or stack them all with "
                           "--channel all")
    total = header_voxels(img) * (n if every else 1)
    if total > opts.max_voxels:  # checked on the header, before any voxel is read
        raise too_many(total, opts.max_voxels, "the image holds")
    if every and n > 1:
        return every_channel(img, rel), grid
    return [voxels(img, rel, case.axis)], grid


def _channel_files(case: CaseFiles, opts: NiftiOptions) -> tuple[list[np.ndarray], Grid]:
    """--channel all over a case's channel files (nnU-Net's NAME_000C, BraTS's modalities): each holds one
    channel, and all lie on the first one's grid."""
    planes: list[np.ndarray] = []
    first: Grid | None = None
    total = 0
    for path, rel in case.channel_files:
        img = load(path, rel, opts.max_voxels)
        grid = grid_of(img, rel)
        if channels(img) > 1:
            raise RejectSeries(f"{rel}: a channel file of {channels(img)} channels; each channel file of a case "
                               "holds one")
        if first is not None and not same_grid(first, grid):
            raise RejectSeries(f"{rel}: the channel's grid ({_described(grid)}) is not its case's first channel's "
                               f"({_described(first)})")
        first = first or grid
        total += header_voxels(img)
        if total > opts.max_voxels:
            raise too_many(total, opts.max_voxels, f"its first {len(planes) + 1} channels hold")
        planes.append(voxels(img, rel, None))
    assert first is not None  # discovery gives a stacked case two files or more
    return planes, first


def _described(grid: Grid) -> str:
    return f"shape {list(grid.shape)}, spacing {rounded(grid.spacing)} mm, origin {rounded(grid.origin)}"


def _mask_voxels(path: str, rel: str, grid: Grid) -> np.ndarray:
    """The voxels of a mask file on its image's grid: stored on it, or on a part of it (a segmentation saved cropped
    to its extent, as older 3D Slicer releases did by default), then padded with 0 to the whole grid."""
    img = load(path, rel, math.prod(grid.shape[:3]))  # a mask lies on its image's grid, or on a part of it
    mask_grid = grid_of(img, rel)
    if channels(img) > 1:
        raise RejectSeries(f"{rel}: a mask of {channels(img)} channels; a mask holds one label value per voxel")
    at = box_in(grid, mask_grid)
    if at is None:
        raise RejectSeries(f"{rel}: the mask's grid ({_described(mask_grid)}) is not its image's ({_described(grid)}), "
                           "nor a part of it")
    part = voxels(img, rel, None)
    if part.shape == grid.shape:  # the image's own grid (a part as large as the image can only start at 0, 0, 0)
        return part
    whole = np.zeros(grid.shape, part.dtype)
    whole[tuple(slice(a, a + n) for a, n in zip(at, part.shape, strict=True))] = part
    return whole


def _merged(case: CaseFiles, grid: Grid, overlap: str) -> LabelVolume:
    """One label volume of a case's per-structure masks: structure N (class order) takes value N. Each mask marks
    its structure with one value (1, or 255); a voxel two structures mark rejects the case, or goes to the later
    one (--overlap later: label_volume.py)."""
    painted = LabelVolume(grid.shape, np.uint8 if case.classes <= 256 else np.uint16, policy=overlap,
                          rel=case.image[1], what="structure")
    for value, ((path, rel), name) in enumerate(zip(case.structures, case.structure_names, strict=True), start=1):
        marked = _mask_voxels(path, rel, grid)
        inside = marked != 0
        found = marked[inside]
        if found.size and (found.min() != found.max() or found.min() < 0 or found.min() != np.rint(found.min())):
            raise RejectSeries(f"{rel}: a structure mask marks its voxels with one whole positive value (1, or 255); "
                               f"found {found.min()} .. {found.max()}")
        painted.paint(inside, value, name)
    return painted


def _mask(case: CaseFiles, grid: Grid, overlap: str) -> tuple[np.ndarray | None, list[dict[str, Any]]]:
    """The case's mask (None without one), and what --overlap later gave a later structure."""
    if case.structures:
        painted = _merged(case, grid, overlap)
        return painted.labels, painted.overlaps
    if case.label is None:
        return None, []
    path, rel = case.label
    mask = _mask_voxels(path, rel, grid)
    if not integral(mask, 0, MASK_MAX):
        raise RejectSeries(f"{rel}: mask values must be whole numbers in 0..{MASK_MAX}, found {mask.min()} .. "
                           f"{mask.max()}" + ("" if mask.dtype.kind in "iu" else " or fractions"))
    if case.classes and int(mask.max()) >= case.classes:
        raise RejectSeries(f"{rel}: mask value {int(mask.max())}, but dataset.json names {case.classes} labels "
                           f"(0..{case.classes - 1})")
    return mask, []


def convert_case(case: CaseFiles, opts: NiftiOptions) -> tuple[np.ndarray, np.ndarray | None, dict[str, Any]]:
    """The image array, the mask array (or None) and the metadata of one case. Raises RejectSeries with the reason."""
    planes, grid = _image(case, opts)
    mask, overlaps = _mask(case, grid, opts.overlap)
    stored = axis_code(grid.direction)
    if opts.orientation is not None:  # the mask moves with its image, voxel for voxel
        moved, grid = reorient_on([*planes, *([] if mask is None else [mask])], grid, opts.orientation)
        planes, mask = moved[:len(planes)], (None if mask is None else moved[-1])
    target = target_spacing(planes[0].shape, grid.spacing, opts.spacing)
    resampled = math.prod(output_shape(planes[0].shape, grid.spacing, target)) * len(planes)
    if resampled > opts.max_voxels:  # checked before the output is allocated
        raise too_many(resampled, opts.max_voxels, f"resampled to {list(target)} mm the image would hold")
    whole = all(integral(plane, INT16.min, INT16.max) for plane in planes)
    outs = [resample(plane.astype(np.float32), grid.spacing, target) for plane in planes]
    out, spacing = (outs[0][0] if len(outs) == 1 else np.stack([o for o, _ in outs])), outs[0][1]
    arr, clipped = to_int16(out) if whole else (np.ascontiguousarray(out), 0)
    spatial = list(arr.shape[-3:])
    meta: dict[str, Any] = {
        "source": case.image[1],
        "ndim": 3,
        "axes": "czyx" if arr.ndim == 4 else "zyx",
        "shape": spatial,
        "spacing": rounded(spacing),
        "origin": rounded(grid.origin),
        "direction": rounded(grid.direction),
        "orientation": axis_code(grid.direction),
        "stored_orientation": stored,
        "original_shape": list(grid.shape),
        "original_spacing": rounded(grid.spacing),
        "spatial_units": grid.units,
        "resampled": spatial != list(grid.shape) or rounded(spacing) != rounded(grid.spacing),
        "interpolation": "linear (scipy.ndimage.affine_transform, order=1); masks nearest (order=0)",
        "modality": case.modality,
        "units": "HU" if case.modality.upper() == "CT" else grid.values,
        "dtype": str(arr.dtype),
        "channel": case.channel,
        "min": rounded(arr.min()),
        "max": rounded(arr.max()),
        "clipped_voxels": clipped,
        **({"channels": list(case.channel_names)} if arr.ndim == 4 else {}),
    }
    labels = None
    if mask is not None:
        labels = resample_mask(mask, grid.spacing, target)
        meta.update({"label_dtype": str(labels.dtype), "label_max": int(labels.max())})
        meta.update({"structures": len(case.structures)} if case.structures else {"label": case.label[1]})  # type: ignore[index]
        meta.update({"overlaps": overlaps} if overlaps else {})
    return arr, labels, meta


def process_case(item: WorkItem, /, *, opts: NiftiOptions) -> Sample | Rejection:
    """Convert one case (item.payload: CaseFiles) into a sample with members npy, label.npy (a mask) and json."""
    case: CaseFiles = item.payload
    for path, rel in (case.image, *case.channel_files, *case.masks):
        if not Path(path).exists():
            return Rejection(item.split, item.rel, f"file vanished since discovery: {rel}")
    try:
        arr, labels, meta = convert_case(case, opts)
    except RejectSeries as exc:
        return Rejection(item.split, item.rel, str(exc))
    meta = {"key": item.key, **meta}
    members = {"npy": npy_bytes(arr)}
    if labels is not None:
        members["label.npy"] = npy_bytes(labels)
    members["json"] = json.dumps(meta, sort_keys=True).encode()
    stats = {"volumes": 1, "voxels": int(arr.size), "clipped_voxels": meta["clipped_voxels"],
             "modality": {meta["modality"] or "unknown": 1}, "dtype": {meta["dtype"]: 1},
             "masks": int(labels is not None), "orientation": {meta["orientation"]: 1}, **overlap_stats(meta)}
    if labels is not None and arr.dtype == np.int16 and arr.ndim == 3:  # the foreground histogram (intensity.py)
        stats[FOREGROUND] = histogram_of(arr, labels)
    return Sample(key=item.key, label=None, members=members, stats=stats)


class CaseProcessor(Guarded):
    """The per-item callable handed to the engine: one case per task (converters/guarded.py)."""

    def convert(self, item: WorkItem, /) -> Sample | Rejection:
        return process_case(item, opts=self.opts)

    def failure(self, exc: BaseException, /) -> str:
        return failure(exc)
