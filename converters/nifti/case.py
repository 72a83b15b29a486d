"""Per-case work (runs in worker processes): read a NIfTI image and its mask (or merge its per-structure masks
into one), check that they lie on the same grid, resample both to the requested spacing (linear for the image,
nearest for the mask), and emit `{key}.npy`, `{key}.label.npy` (the mask, where there is one) and `{key}.json`
(geometry; no source path by default)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from converters.dicom.arrays import INT16, integral, npy_bytes, rounded, stored_array, too_many
from converters.dicom.geometry import RejectSeries
from converters.dicom.label_volume import LabelVolume, overlap_stats
from converters.dicom.orientation import axis_code, reorient_on
from converters.dicom.resample import output_shape, resample, resample_mask, target_spacing
from converters.guarded import Guarded
from converters.nifti.channel_grid import OffGrid, channel_onto, mask_onto
from converters.nifti.channels import ALL
from converters.nifti.discover import CaseFiles
from converters.nifti.options import NiftiOptions
from converters.nifti.rejected_cases import files_of, others
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


@dataclass(frozen=True)
class CaseImage:
    """A case's channels as read: those on its grid, and (--resample-channels) those off it, by their places in the
    stack."""

    planes: list[np.ndarray]  # (z, y, x) each, on `grid`
    grid: Grid
    off: dict[int, OffGrid] = field(default_factory=dict)

    @property
    def whole(self) -> bool:
        """Whether every channel's values are whole numbers in int16's range, as read (before any interpolation)."""
        return all(integral(v, INT16.min, INT16.max) for v in (*self.planes, *(o.values for o in self.off.values())))


def _image(case: CaseFiles, opts: NiftiOptions) -> CaseImage:
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
        return CaseImage(every_channel(img, rel), grid)
    return CaseImage([voxels(img, rel, case.axis)], grid)


def _channel_files(case: CaseFiles, opts: NiftiOptions) -> CaseImage:
    """--channel all over a case's channel files (nnU-Net's NAME_000C, BraTS's modalities): each holds one
    channel, and all lie on the first one's grid (or, with --resample-channels, are sampled onto it)."""
    planes: list[np.ndarray] = []
    off: dict[int, OffGrid] = {}
    first: Grid | None = None
    total = 0
    for place, ((path, rel), name) in enumerate(zip(case.channel_files, case.channel_names, strict=True)):
        img = load(path, rel, opts.max_voxels)
        grid = grid_of(img, rel)
        if channels(img) > 1:
            raise RejectSeries(f"{rel}: a channel file of {channels(img)} channels; each channel file of a case "
                               "holds one")
        on_grid = first is None or same_grid(first, grid)
        if not on_grid and not opts.resample_channels:
            raise RejectSeries(f"{rel}: the channel's grid ({_described(grid)}) is not its case's first channel's "
                               f"({_described(first)}); --resample-channels samples it onto that grid")
        first = first or grid
        total += header_voxels(img)
        if total > opts.max_voxels:
            raise too_many(total, opts.max_voxels, f"its first {place + 1} channels hold")
        if on_grid:
            planes.append(voxels(img, rel, None))
        else:
            off[place] = OffGrid(voxels(img, rel, None), grid, rel, name)
    assert first is not None  # discovery gives a stacked case two files or more
    return CaseImage(planes, first, off)


def _described(grid: Grid) -> str:
    """A grid in a reason: its numbers to 0.001 mm (a header's float32 values print as -84.400002 otherwise)."""
    return (f"shape {list(grid.shape)}, spacing {[round(float(v), 3) for v in grid.spacing]} mm, origin "
            f"{[round(float(v), 3) for v in grid.origin]}")


def _read_mask(path: str, rel: str, grid: Grid, max_voxels: int | None = None
               ) -> tuple[np.ndarray, Grid, tuple[int, int, int] | None]:
    """A mask file's voxels, its grid, and where that grid lies in the image's (box_in; None: off it, read only
    when `max_voxels` is given (--resample-channels), and then checked against it on the header)."""
    img = load(path, rel, max_voxels or math.prod(grid.shape[:3]))
    mask_grid = grid_of(img, rel)
    if channels(img) > 1:
        raise RejectSeries(f"{rel}: a mask of {channels(img)} channels; a mask holds one label value per voxel")
    at = box_in(grid, mask_grid)
    if at is None and max_voxels is None:
        raise RejectSeries(f"{rel}: the mask's grid ({_described(mask_grid)}) is not its image's "
                           f"({_described(grid)}), nor a part of it")
    if at is None and header_voxels(img) > max_voxels:  # off the grid, so not bounded by it: checked before reading
        raise too_many(header_voxels(img), max_voxels, "the mask holds")
    return voxels(img, rel, None), mask_grid, at


def _on_grid(part: np.ndarray, at: tuple[int, int, int], grid: Grid) -> np.ndarray:
    """A mask stored on its image's grid, or on a part of it (a segmentation saved cropped to its extent, as older
    3D Slicer releases did by default), padded with 0 to the whole grid."""
    if part.shape == grid.shape:  # the image's own grid (a part as large as the image can only start at 0, 0, 0)
        return part
    whole = np.zeros(grid.shape, part.dtype)
    whole[tuple(slice(a, a + n) for a, n in zip(at, part.shape, strict=True))] = part
    return whole


def _mask_voxels(path: str, rel: str, grid: Grid) -> np.ndarray:
    """The voxels of a mask file on its image's grid (or on a part of it)."""
    part, _, at = _read_mask(path, rel, grid)
    assert at is not None  # _read_mask rejects a mask off the grid
    return _on_grid(part, at, grid)


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


def _mask(case: CaseFiles, grid: Grid, opts: NiftiOptions
          ) -> tuple[np.ndarray | OffGrid | None, list[dict[str, Any]]]:
    """The case's mask (None without one; off its image's grid with --resample-channels, to be sampled onto it), and
    what --overlap later gave a later structure."""
    if case.structures:
        painted = _merged(case, grid, opts.overlap)
        return painted.labels, painted.overlaps
    if case.label is None:
        return None, []
    path, rel = case.label
    part, mask_grid, at = _read_mask(path, rel, grid, opts.max_voxels if opts.resample_channels else None)
    if not integral(part, 0, MASK_MAX):
        raise RejectSeries(f"{rel}: mask values must be whole numbers in 0..{MASK_MAX}, found {part.min()} .. "
                           f"{part.max()}" + ("" if part.dtype.kind in "iu" else " or fractions"))
    if case.classes and int(part.max()) >= case.classes:
        raise RejectSeries(f"{rel}: mask value {int(part.max())}, but dataset.json names {case.classes} labels "
                           f"(0..{case.classes - 1})")
    return (OffGrid(part, mask_grid, rel, "") if at is None else _on_grid(part, at, grid)), []


def convert_case(case: CaseFiles, opts: NiftiOptions) -> tuple[np.ndarray, np.ndarray | None, dict[str, Any]]:
    """The image array, the mask array (or None) and the metadata of one case. Raises RejectSeries with the reason."""
    image = _image(case, opts)
    planes, grid = image.planes, image.grid
    mask, overlaps = _mask(case, grid, opts)
    on_mask = mask if isinstance(mask, np.ndarray) else None
    stored = axis_code(grid.direction)
    if opts.orientation is not None:  # the mask moves with its image, voxel for voxel
        moved, grid = reorient_on([*planes, *([] if on_mask is None else [on_mask])], grid, opts.orientation)
        planes, on_mask = moved[:len(planes)], (None if on_mask is None else moved[-1])
    target = target_spacing(planes[0].shape, grid.spacing, opts.spacing)
    resampled = math.prod(output_shape(planes[0].shape, grid.spacing, target)) * (len(planes) + len(image.off))
    if resampled > opts.max_voxels:  # checked before the output is allocated
        raise too_many(resampled, opts.max_voxels, f"resampled to {rounded(target)} mm the image would hold")
    whole = image.whole
    outs = iter(resample(plane.astype(np.float32), grid.spacing, target) for plane in planes)
    first, spacing = next(outs)
    final = replace(grid, shape=first.shape, spacing=spacing)
    sampled = {place: channel_onto(off, final) for place, off in image.off.items()}
    stack = [first, *(o for o, _ in outs)]
    for place in sorted(sampled):
        stack.insert(place, sampled[place][0])
    out = stack[0] if len(stack) == 1 else np.stack(stack)
    arr, clipped = stored_array(out, whole)
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
    onto = [sampled[place][1] for place in sorted(sampled)]
    labels = None
    if isinstance(mask, OffGrid):
        labels, entry = mask_onto(mask, final)
        onto.append(entry)
    elif on_mask is not None:
        labels = resample_mask(on_mask, grid.spacing, target)
    if labels is not None:
        meta.update({"label_dtype": str(labels.dtype), "label_max": int(labels.max())})
        meta.update({"structures": len(case.structures)} if case.structures else {"label": case.label[1]})  # type: ignore[index]
        meta.update({"overlaps": overlaps} if overlaps else {})
    meta.update({"onto_grid": onto} if onto else {})
    return arr, labels, meta


def process_case(item: WorkItem, /, *, opts: NiftiOptions) -> Sample | Rejection:
    """Convert one case (item.payload: CaseFiles) into a sample with members npy, label.npy (a mask) and json."""
    case: CaseFiles = item.payload
    also = others(item.rel, **files_of(case))  # every file of the case is listed with its rejection
    for path, rel in (case.image, *case.channel_files, *case.masks):
        if not Path(path).exists():
            return Rejection(item.split, item.rel, f"file vanished since discovery: {rel}", also)
    try:
        arr, labels, meta = convert_case(case, opts)
    except RejectSeries as exc:
        return Rejection(item.split, item.rel, str(exc), also)
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

    def also(self, item: WorkItem, /) -> tuple[tuple[str, str], ...]:
        return others(item.rel, **files_of(item.payload))
