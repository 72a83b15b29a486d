"""DICOM Segmentation objects (SEG: the annotations TCIA and the Imaging Data Commons publish, dcmqi's, highdicom's
and 3D Slicer's exports) as the masks of the series they segment, read with highdicom.

Discovery reads a SEG file's header only: the series it segments (ReferencedSeriesSequence) and its segments, each
known by its segmented property type, a code (SCT 10200004, "Liver"). The dataset's classes are those codes, over
every SEG of the source, named by their meaning and sorted by name after the background (0): a segment's voxels take
its code's class, so "Liver" is one value in every case whatever its segment number in each file.

Conversion reads the frames with highdicom, each placed on the slice of the source image it names
(DerivationImageSequence), slices no frame names being empty, as a SEG leaves them out. A voxel in two segments
rejects the case, naming them, unless `--overlap later` gives it to the later class (label_volume.py): a label
volume holds one class per voxel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from converters.dicom.geometry import RejectSeries
from converters.dicom.label_volume import LabelVolume
from converters.dicom.options import named_classes, structure_values, unheld_structures
from converters.dicom.privacy import sop_class
from fastdata.errors import ConvertError, MissingDependencyError, require

SEG_SOP_CLASS = "1.2.840.10008.5.1.4.1.1.66.4"  # Segmentation Storage
WHAT = "a segmentation (SEG)"  # how reasons name such a file
BACKGROUND = "background"


@dataclass(frozen=True)
class SegHeader:
    """What discovery reads of a SEG file (or of a structure set: rtstruct.py): the series it segments, and its
    segments as (segment number, code, meaning); a structure set's are (ROINumber, ("ROIName", name), name)."""

    series_uid: str
    segments: tuple[tuple[int, tuple[str, str], str], ...]  # (number, (scheme, value), meaning)
    structure_set: bool = False


def is_mask(ds: Any) -> bool:
    return sop_class(ds) == SEG_SOP_CLASS


def header_of(ds: Any) -> SegHeader | str:
    """The SegHeader of a SEG dataset (read without its pixel data), or the reason it cannot be used."""
    referenced = ds.get("ReferencedSeriesSequence") or []
    uids = {str(item.get("SeriesInstanceUID", "")) for item in referenced} - {""}
    if len(uids) != 1:
        return (f"a segmentation (SEG) that references {len(uids)} series (ReferencedSeriesSequence); fastdata reads "
                "one that segments one series of the source")
    segments = []
    for item in ds.get("SegmentSequence") or []:
        codes = item.get("SegmentedPropertyTypeCodeSequence") or []
        value = _code_value(codes[0]) if len(codes) == 1 else None
        meaning = str(codes[0].get("CodeMeaning") or "").strip() if len(codes) == 1 else ""
        if value is None or not meaning or item.get("SegmentNumber") is None:
            return ("a segmentation (SEG) segment without its number or its segmented property type (a code, with "
                    "its meaning)")
        key = (str(codes[0].get("CodingSchemeDesignator") or ""), value)  # a URN code may have no scheme
        segments.append((int(item.SegmentNumber), key, meaning))
    if not segments:
        return "a segmentation (SEG) without segments (SegmentSequence)"
    return SegHeader(next(iter(uids)), tuple(segments))


def _code_value(code: Any) -> str | None:
    """A code's value: CodeValue, or the LongCodeValue or URNCodeValue a longer one is kept in (DICOM PS3.3 8.8)."""
    for keyword in ("CodeValue", "LongCodeValue", "URNCodeValue"):
        if code.get(keyword):
            return str(code.get(keyword))
    return None


def class_names(headers: list[SegHeader],
                structures: tuple[str, ...] = ()) -> tuple[dict[tuple[str, str], int], tuple[str, ...]]:
    """({code: class value}, class names with the background first) over every SEG (and structure set) of a source:
    codes sorted by the name each shows; a meaning two codes share names each of them with its code. With
    `structures` (--structures), the classes are those, in that order, each taking every code of its meaning or
    of its other names ("Lung_L|Lung-Left"), in any case; the other codes take 0 (not drawn); a class no mask of the
    source holds is an error."""
    meanings: dict[tuple[str, str], str] = {}
    for header in headers:
        for _, key, meaning in header.segments:
            meanings.setdefault(key, meaning)
    if structures:
        missing = unheld_structures(structures, meanings.values())
        if missing:
            raise ConvertError(f"--structures names {missing}, which no mask of the source holds; its structures are "
                               f"{sorted(set(meanings.values()))}")
        wanted = structure_values(structures)
        return ({key: wanted.get(m.casefold(), 0) for key, m in meanings.items()},
                (BACKGROUND, *named_classes(structures)))
    shared = [m for m in meanings.values() if list(meanings.values()).count(m) > 1]
    names = {key: f"{m} ({key[0]} {key[1]})" if m in shared else m for key, m in meanings.items()}
    ordered = sorted(names, key=lambda key: (names[key], key))
    return {key: n for n, key in enumerate(ordered, start=1)}, (BACKGROUND, *(names[key] for key in ordered))


def segment_values(header: SegHeader, classes: dict[tuple[str, str], int]) -> tuple[tuple[int, int], ...]:
    """(segment number, class value) of each segment of one SEG."""
    return tuple((number, classes[key]) for number, key, _ in header.segments)


def read_mask(path: str, rel: str, sources: list[str], shape: tuple[int, int], values: tuple[tuple[int, int], ...],
              max_voxels: int, overlap: str = "reject") -> LabelVolume:
    """The (slice, row, column) class values of the SEG at `path` on the slices whose SOPInstanceUIDs are `sources`,
    in that order, its segments painted in class order by the `--overlap` policy; RejectSeries with the reason
    when they cannot be had."""
    pydicom = require("pydicom", "dicom")
    try:
        hd = require("highdicom", "dicom")
    except MissingDependencyError as exc:  # else every segmented series' reason would be an unexpected error
        raise RejectSeries(f"{rel}: a segmentation (SEG), which fastdata reads with highdicom: {exc}") from exc
    try:
        head = pydicom.dcmread(path, stop_before_pixels=True)
        frames = int(head.get("NumberOfFrames") or 1) * int(head.Rows) * int(head.Columns)
    except Exception as exc:  # noqa: BLE001 - pydicom raises many types for damaged files
        raise RejectSeries(f"{rel}: cannot read the segmentation ({type(exc).__name__})") from exc
    if frames > max_voxels:  # checked on the header, before the frames are decoded
        raise RejectSeries(f"{rel}: a segmentation of {frames} voxels in its frames, more than --max-voxels "
                           f"{max_voxels}")
    if (int(head.Rows), int(head.Columns)) != shape:
        raise RejectSeries(f"{rel}: segmentation frames of {int(head.Rows)} x {int(head.Columns)} pixels on a series "
                           f"of {shape[0]} x {shape[1]}")
    header = header_of(head)
    meanings = {} if isinstance(header, str) else {number: meaning for number, _, meaning in header.segments}
    painted = LabelVolume((len(sources), *shape), np.uint16, policy=overlap, rel=rel, what="segment",
                          hint="--structures picks segments that do not overlap")
    kept = sorted(((n, v) for n, v in values if v), key=lambda nv: nv[1])  # value 0: left out by --structures
    if not kept:
        return painted
    try:
        seg = hd.seg.segread(path)
        # one segment at a time, in class order: each of a BINARY SEG's frames holds one segment, so no frame is
        # decoded twice
        for number, value in kept:
            marked = seg.get_pixels_by_source_instance(
                source_sop_instance_uids=sources, segment_numbers=[number], combine_segments=True, relabel=True,
                assert_missing_frames_are_empty=True, dtype=np.uint8)
            painted.paint(marked != 0, value, meanings.get(number, f"#{number}"))
    except RejectSeries:
        raise
    except Exception as exc:  # noqa: BLE001 - highdicom raises many types for what it cannot place or decode
        fractional = str(head.get("SegmentationType", "")) == "FRACTIONAL"
        why = " (a FRACTIONAL one of values between 0 and its maximum: probabilities)" if fractional else ""
        raise RejectSeries(f"{rel}: cannot read the segmentation{why} ({type(exc).__name__})") from exc
    return painted
