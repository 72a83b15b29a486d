"""Find DICOM series by content (not extension): read every file's header, group images by
SeriesInstanceUID, pair each series with the segmentation (SEG: segmentation.py) or structure set (RTSTRUCT:
rtstruct.py) that is its mask, and record every file that is not a usable image or mask as a rejection."""

from __future__ import annotations

import logging
import os
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from converters.dicom import rtstruct, segmentation
from converters.dicom.channel_groups import Place, grouped, place_of, text_of
from converters.dicom.privacy import burned_in, failure, quiet_values, sop_class, uid_name
from converters.dicom.segmentation import SegHeader
from converters.kind import Discovery
from converters.sample import Rejection, WorkItem
from converters.tree import SPLIT_FOLDERS, outside_rejections, split_folders
from converters.val_fraction import check_divisible, held_out
from converters.walk import Walk, display, is_folder, listed
from fastdata.errors import ConvertError, require

log = logging.getLogger(__name__)

DICOMDIR_SOP_CLASS = "1.2.840.10008.1.3.10"
HEADER_THREADS = 8


@dataclass(frozen=True)
class SeriesFiles:
    """The payload of a series' work item: its SeriesInstanceUID and (absolute path, name) per file, the
    name being the path relative to SRC or, without --keep-phi, the file's pseudonym (privacy.file_name); and the
    mask file of the series, if it has one (a SEG, or a structure set: `structure_set`), with its segments' (ROIs')
    class values."""

    uid: str
    files: tuple[tuple[str, str], ...]
    seg: tuple[str, str] | None = None
    segments: tuple[tuple[int, int], ...] = ()  # (segment number or ROINumber, class value)
    structure_set: bool = False
    channels: tuple[SeriesFiles, ...] = ()  # --channel: the series stacked after this one, in --channel order


def read_files(series: SeriesFiles) -> tuple[tuple[str, str], ...]:
    """Every file a work item reads: its series' images and mask, and those of the series stacked with it."""
    own = (*series.files, *([series.seg] if series.seg else []))
    return own + tuple(f for stacked in series.channels for f in read_files(stacked))


def read_header(path: Path) -> tuple[Any | None, str | None]:
    """(dataset without pixel data, None) for a DICOM file, else (None, reason). pydicom is needed only
    for files with the DICOM marker, so `--kind auto` on other sources works without the dicom extra."""
    try:
        with open(path, "rb") as f:
            head = f.read(132)
    except OSError as exc:
        return None, f"unreadable: {exc.strerror or exc}"
    if not head:
        return None, "empty file (0 bytes)"
    if len(head) < 132 or head[128:132] != b"DICM":
        return None, "not a DICOM file (no 'DICM' marker at byte 128)"
    pydicom = require("pydicom", "dicom")
    try:
        ds = pydicom.dcmread(path, stop_before_pixels=True)
    except Exception as exc:  # noqa: BLE001 - pydicom raises many types (BytesLengthException, ...) on bad files
        return None, f"corrupt DICOM header: {failure(exc)}"
    return ds, None


def _classify(ds: Any, allow_burned_in: bool) -> str | None:
    """Reason why a readable DICOM file is not an image we convert, or None if it is one."""
    sop = sop_class(ds)
    if sop == DICOMDIR_SOP_CLASS:
        return "DICOMDIR (a directory index, not an image)"
    if ds.get("Rows") is None or ds.get("Columns") is None:
        return f"DICOM object without an image (no Rows/Columns; {uid_name(sop, 'a SOP class pydicom does not know')})"
    if not ds.get("SeriesInstanceUID"):
        return "image without SeriesInstanceUID (cannot be grouped into a series)"
    if not allow_burned_in and burned_in(ds):
        return ("BurnedInAnnotation YES: the pixels may show identifying text that de-identification cannot "
                "remove (--allow-burned-in converts such images)")
    return None


def _classified(ds: Any, allow_burned_in: bool) -> str | None:
    """`_classify`, with a value pydicom cannot parse (it parses lazily, here) as the reason."""
    try:
        return _classify(ds, allow_burned_in)
    except Exception as exc:  # noqa: BLE001 - pydicom raises many types for malformed values
        return f"malformed attribute value: {failure(exc)}"


def _segmentation(ds: Any) -> SegHeader | str | None:
    """A SEG's or a structure set's header (or the reason it cannot be used); None for a file that is neither."""
    for module in (segmentation, rtstruct):
        try:
            if module.is_mask(ds):
                return module.header_of(ds)
        except Exception as exc:  # noqa: BLE001 - pydicom raises many types for malformed values
            return f"malformed attribute value in {module.WHAT}: {failure(exc)}"
    return None


def _objects(found: list[tuple[str, str, SegHeader]]) -> str:
    """What the mask files of one series are, in the plural."""
    kinds = {header.structure_set for _, _, header in found}
    if kinds == {False}:
        return "segmentations (SEG)"
    if kinds == {True}:
        return "structure sets (RTSTRUCT)"
    return "masks (segmentations, SEG, and structure sets, RTSTRUCT)"


def _object(header: SegHeader) -> str:
    return (rtstruct if header.structure_set else segmentation).WHAT


def _bounded_map(pool: ThreadPoolExecutor, fn, items: list, chunk: int = 256):
    """pool.map in chunks, so that only a few hundred headers are held at a time."""
    for i in range(0, len(items), chunk):
        yield from pool.map(fn, items[i:i + chunk])


def _series_rel(rels: list[str]) -> str:
    """How the manifest names a series: its one file, or the folder its files share."""
    if len(rels) == 1:
        return rels[0]
    common = os.path.commonpath(rels)
    return f"{common or '.'} ({len(rels)} files)"


def discover_dicom(src: Path, /, *, split: str = "train", follow_symlinks: bool = True,
                   allow_burned_in: bool = False, private: bool = True, val_fraction: float = 0.0,
                   structures: tuple[str, ...] = (), channels: tuple[str, ...] = ()) -> Discovery:
    """Series per split. A source with train/val/test folders keeps them as splits; otherwise all
    series go to `split`, and with `val_fraction` about that fraction of its patients' series to val.
    Payload of a work item: SeriesFiles (names are paths relative to SRC); with `channels` (--channel CT,PT) one
    work item per stack of series (channel_groups.py), the first channel's SeriesFiles holding the others'."""
    if not src.is_dir():
        raise ConvertError(f"source {src} is not a directory")
    with quiet_values():  # no value pydicom finds invalid is printed or logged (privacy.py)
        return _discover(src, split=split, follow_symlinks=follow_symlinks, allow_burned_in=allow_burned_in,
                         private=private, val_fraction=val_fraction, structures=structures, channels=channels)


def _patient(ds: Any, uid: str) -> str:
    """What holds a series out as val: its PatientID, so that a patient's series all land on one side; a series
    without one (or with one pydicom cannot read) is held out by itself. Kept in memory, never written."""
    patient = text_of(ds, "PatientID")
    return f"patient\0{patient}" if patient else f"series\0{uid}"


def _discover(src: Path, /, *, split: str, follow_symlinks: bool, allow_burned_in: bool, private: bool,
              val_fraction: float, structures: tuple[str, ...], channels: tuple[str, ...]) -> Discovery:
    walk = Walk(follow=follow_symlinks, private=private)
    top = listed(src)
    split_dirs = split_folders([n for n in top if is_folder(src / n, follow=follow_symlinks)])  # folder -> split
    if val_fraction:
        check_divisible("split/series" if split_dirs else "series", list(split_dirs.values()) or [split], split,
                        ("series",))
    rejected: list[Rejection] = []
    roots = [(s, src / folder) for folder, s in split_dirs.items()] if split_dirs else [(split, src)]
    if split_dirs:
        rejected += outside_rejections(src, [n for n in top if n not in split_dirs],
                                       f"not inside a split folder ({SPLIT_FOLDERS})", follow=follow_symlinks,
                                       private=private)
    splits: dict[str, list[WorkItem]] = {}
    identity: list[list[object]] = []
    segmented: dict[str, SegHeader] = {}  # series uid -> the header of its one SEG, over every split
    for split_name, root in roots:
        series: dict[str, list[tuple[str, str]]] = defaultdict(list)
        segs: dict[str, list[tuple[str, str, SegHeader]]] = defaultdict(list)  # by the series each segments
        patients: dict[str, str] = {}
        places: dict[str, Place] = {}  # --channel: what each series is stacked by
        paths = []
        for path, problem in walk.files(root, root=src):  # nothing but regular files is opened
            if problem is None:
                paths.append(path)
            else:
                rejected.append(Rejection(split_name, display(path.relative_to(src).as_posix()), problem))
        paths.sort()
        with ThreadPoolExecutor(HEADER_THREADS) as pool:  # header reads wait on storage more than on the CPU
            for path, (ds, reason) in zip(paths, _bounded_map(pool, read_header, paths)):
                rel = display(path.relative_to(src).as_posix())
                seg = None if reason else _segmentation(ds)
                if isinstance(seg, SegHeader):
                    segs[seg.series_uid].append((str(path), rel, seg))
                    continue
                reason = reason or seg or _classified(ds, allow_burned_in)
                if reason is not None:
                    rejected.append(Rejection(split_name, rel, reason))
                    continue
                uid = str(ds.SeriesInstanceUID)
                series[uid].append((str(path), rel))
                if val_fraction and uid not in patients:  # the series' first file's patient (paths are sorted)
                    patients[uid] = _patient(ds, uid)
                if channels and uid not in places:
                    places[uid] = place_of(ds)
        masks = _masks(segs, series, split_name, rejected)
        items = []
        for uid, files in series.items():
            files.sort(key=lambda f: f[1])
            rels = [r for _, r in files]
            mask = masks.get(uid)
            if uid in masks and mask is None:
                rejected.append(Rejection(split_name, _series_rel(rels), f"its {len(segs[uid])} {_objects(segs[uid])} "
                                          "were rejected: a series converts with one mask"))
                continue
            if mask is not None:
                segmented[uid] = mask[2]
            held = bool(val_fraction) and held_out(patients[uid], val_fraction)
            items.append(WorkItem(split="val" if held else split_name, rel=_series_rel(rels), source=files[0][0],
                                  payload=SeriesFiles(uid, tuple(files), None if mask is None else mask[:2],
                                                      structure_set=mask is not None and mask[2].structure_set)))
        if channels:
            items = _stacks(items, places, channels, rejected, segmented)
        items.sort(key=lambda it: it.payload.files[0][1])  # canonical order: by first file's relative path
        splits.setdefault(split_name, [])
        for it in items:
            splits.setdefault(it.split, []).append(it)
            identity.append([it.split, [[r, os.path.getsize(p)] for p, r in read_files(it.payload)]])
    splits, names = _with_classes(splits, segmented, structures)
    log.info("found %d %s (%d files rejected)", sum(len(v) for v in splits.values()),
             f"stack(s) of {','.join(channels)} series" if channels else "series", len(rejected))
    if segmented:
        log.info("%d series have a mask (a segmentation, SEG, or a structure set, RTSTRUCT)", len(segmented))
    return Discovery(splits, names, rejected, "split/series" if split_dirs else "series", identity)


def _stacks(items: list[WorkItem], places: dict[str, Place], channels: tuple[str, ...], rejected: list[Rejection],
            segmented: dict[str, SegHeader]) -> list[WorkItem]:
    """--channel: one work item per stack (channel_groups.grouped), named by the files of all its series; the masks
    of series in no stack leave `segmented` (their classes are not the dataset's)."""
    out = []
    for first, *rest in grouped(items, places, channels, rejected):
        payload = replace(first.payload, channels=tuple(it.payload for it in rest))
        rels = [rel for series in (payload, *payload.channels) for _, rel in series.files]
        out.append(replace(first, rel=_series_rel(rels), payload=payload))
    kept = {s.uid for it in out for s in (it.payload, *it.payload.channels)}
    for uid in [uid for it in items if (uid := it.payload.uid) not in kept]:
        segmented.pop(uid, None)
    return out


def _with_classes(splits: dict[str, list[WorkItem]], segmented: dict[str, SegHeader],
                  structures: tuple[str, ...]) -> tuple[dict[str, list[WorkItem]], tuple[str, ...]]:
    """The work items with each mask's segments given their class values (segmentation.class_names over every mask
    kept, or the --structures named), and the class names (none without a mask)."""
    if not segmented:
        if structures:
            raise ConvertError(f"--structures {','.join(structures)}, but no series of the source has a mask (a "
                               "segmentation, SEG, or a structure set, RTSTRUCT)")
        return splits, ()
    classes, names = segmentation.class_names(list(segmented.values()), structures)

    def valued(series: SeriesFiles) -> SeriesFiles:
        series = replace(series, channels=tuple(valued(s) for s in series.channels))
        return replace(series, segments=segmentation.segment_values(segmented[series.uid], classes)) if series.seg \
            else series

    return {split: [replace(it, payload=valued(it.payload)) for it in items] for split, items in splits.items()}, names


def _masks(segs: dict[str, list[tuple[str, str, SegHeader]]], series: dict[str, list[tuple[str, str]]], split: str,
           rejected: list[Rejection]) -> dict[str, tuple[str, str, SegHeader] | None]:
    """{series uid: its one SEG (path, name, header)}, or None for a series of several (each rejected, and the
    series with them: which of them is its mask is not for fastdata to guess); a SEG of no series here is rejected."""
    out: dict[str, tuple[str, str, SegHeader] | None] = {}
    for uid, found in segs.items():
        if uid not in series:
            rejected.extend(Rejection(split, rel, f"{_object(header)} of a series that is not among this split's "
                                                  "images") for _, rel, header in found)
        elif len(found) > 1:
            rejected.extend(Rejection(split, rel, f"{len(found)} {_objects(found)} of one series: keep one, move the "
                                                  "others out of the source") for _, rel, _ in found)
            out[uid] = None
        else:
            out[uid] = found[0]
    return out
