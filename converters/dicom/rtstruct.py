"""DICOM RT Structure Sets (RTSTRUCT: the contours of radiotherapy planning, TCIA's NSCLC-Radiomics, LCTSC and
Head-Neck collections, what treatment planning systems export) as the masks of the series they outline.

Discovery reads a structure set's header: the series it outlines (ReferencedFrameOfReferenceSequence ->
RTReferencedStudySequence -> RTReferencedSeriesSequence) and its ROIs that hold closed planar contours, each known
by its name (ROIName, "GTV-1"); the dataset's classes are those names over every structure set of the source, as a
SEG's are its codes (segmentation.class_names). ROIs of points or open contours (markers, isocentres) outline no
area: they are no classes, and their contours are not drawn.

Conversion places each closed contour on the slice of the series whose plane holds it (by position along the
slices' normal, within a quarter of the slice gap) and fills it: a voxel is inside when its centre is, by the
even-odd rule over all the ROI's contours on that slice, so a contour inside another of the same ROI is a hole (as
plastimatch and most planning systems read them). A voxel in two ROIs rejects the case, naming both: a label volume
holds one class per voxel, and `--structures` picks ROIs that do not overlap.

The fill is a scanline over the contours' edges in numpy: scikit-image's `draw.polygon` tests every pixel of a
contour's box against every vertex (0.36 s for one 800-vertex body outline on a 512 x 512 slice, about a minute a
series), and Pillow's `ImageDraw.polygon` rounds the vertices to whole pixels and fills the outline too.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from converters.dicom.geometry import RejectSeries, Slice
from converters.dicom.segmentation import SegHeader
from fastdata.errors import require

RTSTRUCT_SOP_CLASS = "1.2.840.10008.5.1.4.1.1.481.3"  # RT Structure Set Storage
CLOSED = "CLOSED_PLANAR"
MAX_CROSSINGS_PER_ROW = 64  # a contour's edges crossing the rows of a slice, on average over the series: a bound
FAR = 1e6  # pixels: a contour point farther off the image is no outline of it (and its arithmetic may overflow)
PLANE_TOLERANCE = 0.25  # of the slice gap: how far off a slice's plane a contour may lie


def is_mask(ds: Any) -> bool:
    sop = str(ds.get("SOPClassUID", "") or ds.file_meta.get("MediaStorageSOPClassUID", ""))
    return sop == RTSTRUCT_SOP_CLASS


def header_of(ds: Any) -> SegHeader | str:
    """The SegHeader of a structure set (its ROIs of closed contours as (ROINumber, ("ROIName", name), name)), or
    the reason it cannot be used."""
    uids = {str(series.get("SeriesInstanceUID", ""))
            for frame in ds.get("ReferencedFrameOfReferenceSequence") or []
            for study in frame.get("RTReferencedStudySequence") or []
            for series in study.get("RTReferencedSeriesSequence") or []} - {""}
    if len(uids) != 1:
        return (f"a structure set (RTSTRUCT) that references {len(uids)} series (ReferencedFrameOfReferenceSequence); "
                "fastdata reads one that outlines one series of the source")
    names: dict[int, str] = {}
    for roi in ds.get("StructureSetROISequence") or []:
        name = str(roi.get("ROIName") or "").strip()
        if roi.get("ROINumber") is None or not name:
            return "a structure set (RTSTRUCT) ROI without its number or its name (StructureSetROISequence)"
        if name in names.values() or int(roi.ROINumber) in names:
            return f"a structure set (RTSTRUCT) of two ROIs named {name!r} or numbered {int(roi.ROINumber)}"
        names[int(roi.ROINumber)] = name
    areas = []
    for item in ds.get("ROIContourSequence") or []:
        number = item.get("ReferencedROINumber")
        closed = any(str(c.get("ContourGeometricType", "")) == CLOSED for c in item.get("ContourSequence") or [])
        if closed and (number is None or int(number) not in names):
            return "a structure set (RTSTRUCT) with contours of an ROI it does not name (ReferencedROINumber)"
        if closed:
            areas.append(int(number))
    if not areas:
        return "a structure set (RTSTRUCT) without closed planar contours (no ROI outlines an area)"
    return SegHeader(next(iter(uids)), tuple((n, ("ROIName", names[n]), names[n]) for n in sorted(set(areas))),
                     structure_set=True)


def read_mask(path: str, rel: str, slices: list[Slice], values: tuple[tuple[int, int], ...]) -> np.ndarray:
    """The (slice, row, column) class values of the structure set at `path` over `slices` (the series' slices in
    the volume's order, a stack of them); `values`: (ROINumber, class value). RejectSeries says why they cannot be
    had."""
    pydicom = require("pydicom", "dicom")
    try:
        ds = pydicom.dcmread(path)
        rois: dict[int, list[Any]] = {}
        for item in ds.get("ROIContourSequence") or []:  # an ROI's contours may come in several items
            if item.get("ReferencedROINumber") is not None:
                rois.setdefault(int(item.ReferencedROINumber), []).extend(item.get("ContourSequence") or [])
        names = {int(roi.ROINumber): str(roi.ROIName).strip() for roi in ds.get("StructureSetROISequence") or []}
    except Exception as exc:  # noqa: BLE001 - pydicom raises many types for damaged files and values
        raise RejectSeries(f"{rel}: cannot read the structure set ({type(exc).__name__})") from exc
    plane = _Plane(slices, rel)
    labels = np.zeros((len(slices), *plane.shape), np.uint16)
    owner: dict[int, str] = {}
    budget = [MAX_CROSSINGS_PER_ROW * len(slices) * plane.shape[0]]
    for number, value in ((n, v) for n, v in values if v):  # value 0: an ROI --structures leaves out
        inside = plane.filled(rois.get(number, []), names.get(number, str(number)), budget)
        taken = labels[inside]
        if np.any(taken):
            others = " and ".join(repr(owner[int(v)]) for v in np.unique(taken[taken != 0]))
            raise RejectSeries(f"{rel}: ROI {names.get(number)!r} overlaps {others} in {np.count_nonzero(taken)} "
                               "voxels, and a label volume holds one class per voxel; --structures picks ROIs that "
                               "do not overlap")
        labels[inside] = value
        owner[value] = names.get(number, str(number))
    return labels


class _Plane:
    """The stack's geometry: each slice's position, the in-plane axes and the pixel spacing, to turn a contour's
    patient coordinates (mm) into (slice, row, column)."""

    def __init__(self, slices: list[Slice], rel: str) -> None:
        first = slices[0]
        if first.position is None or first.orientation is None:
            raise RejectSeries(f"{rel}: a structure set (RTSTRUCT) of an image without a position; its contours lie "
                               "in the patient's coordinates")
        self.rel = rel
        self.shape = first.shape
        orient = np.asarray(first.orientation, np.float64)
        self.row_dir = orient[:3] / np.linalg.norm(orient[:3])  # along a row: the column index grows
        self.col_dir = orient[3:] / np.linalg.norm(orient[3:])
        normal = np.cross(self.row_dir, self.col_dir)
        self.normal = normal
        self.positions = np.array([s.position for s in slices], np.float64)
        self.along = self.positions @ normal
        gaps = np.diff(self.along)
        gap = float(np.median(gaps)) if gaps.size else float(first.thickness or 1.0)  # slices in volume order
        self.tolerance = PLANE_TOLERANCE * gap
        self.spacing = first.pixel_spacing or (1.0, 1.0)  # (between rows, between columns)

    def filled(self, contours: list[Any], name: str, budget: list[int]) -> np.ndarray:
        """The voxels inside one ROI's closed contours (even-odd over each slice's contours)."""
        n, (rows, cols) = len(self.positions), self.shape
        toggles = np.zeros((n * rows, cols + 1), np.uint8)  # a crossing flips every pixel from its column on
        for c, contour in enumerate(contours):
            if str(contour.get("ContourGeometricType", "")) != CLOSED:
                continue
            try:
                points = _numbers(contour.get_item("ContourData"))
            except Exception as exc:  # noqa: BLE001 - a missing or malformed ContourData
                raise RejectSeries(f"{self.rel}: ROI {name!r} contour {c}: malformed ContourData "
                                   f"({type(exc).__name__})") from exc
            if points.size % 3 or not np.all(np.isfinite(points)):
                raise RejectSeries(f"{self.rel}: ROI {name!r} contour {c}: ContourData is not (x, y, z) points of "
                                   "finite millimetres")
            points = points.reshape(-1, 3)
            if len(points) < 3:
                continue  # no area
            k = self._slice(points, name, c)
            offset = points - self.positions[k]
            r = offset @ self.col_dir / self.spacing[0]
            q = offset @ self.row_dir / self.spacing[1]
            if not (np.all(np.abs(r) <= FAR) and np.all(np.abs(q) <= FAR)):  # NaN fails too
                raise RejectSeries(f"{self.rel}: ROI {name!r} contour {c} reaches more than {FAR:.0e} pixels off the "
                                   "slice's first pixel")
            at, col = _crossings(r, q, rows, budget, self.rel)
            np.add.at(toggles, (at + k * rows, np.clip(np.ceil(col), 0, cols).astype(np.intp)), 1)
        inside = np.bitwise_xor.accumulate(toggles & 1, axis=1)[:, :cols]
        return inside.reshape(n, rows, cols).astype(bool)

    def _slice(self, points: np.ndarray, name: str, c: int) -> int:
        """The slice whose plane holds the contour."""
        along = points @ self.normal
        k = int(np.argmin(np.abs(self.along - along.mean())))
        off = float(np.abs(along - self.along[k]).max())
        if not off <= self.tolerance:  # NaN from points at float64's ends is off too
            raise RejectSeries(f"{self.rel}: ROI {name!r} contour {c} lies {off:.3g} mm off the nearest slice's plane "
                               f"(tolerance {self.tolerance:.3g} mm): not on this series' slices")
        return k


def _numbers(element: Any) -> np.ndarray:
    """A decimal string (DS) element's values. Read from its bytes by numpy: pydicom makes an object of each value
    and checks it, 3.6 s of the 4.7 s an 800-point body outline on 150 slices took; numpy takes 0.7 ms a slice."""
    value = element.value
    if isinstance(value, bytes):
        return np.array(value.split(b"\\"), np.float64)
    return np.atleast_1d(np.asarray(value, np.float64))


def _crossings(r: np.ndarray, q: np.ndarray, rows: int, budget: list[int], rel: str) -> tuple[np.ndarray, np.ndarray]:
    """(row, column) where a closed polygon's edges cross the rows' pixel centres: an edge from row r0 to r1 crosses
    the whole rows in [min, max) (half-open, so a vertex on a row is counted once)."""
    r0, r1, q0, q1 = r, np.roll(r, -1), q, np.roll(q, -1)
    low, high = np.minimum(r0, r1), np.maximum(r0, r1)
    first = np.clip(np.ceil(low), 0, rows).astype(np.int64)
    end = np.clip(np.ceil(high), 0, rows).astype(np.int64)
    counts = end - first  # 0 for an edge along a row
    total = int(counts.sum())
    budget[0] -= total
    if budget[0] < 0:
        raise RejectSeries(f"{rel}: contours crossing the slices' rows more than {MAX_CROSSINGS_PER_ROW} times a row "
                           "on average; not the outline of an anatomy")
    edge = np.repeat(np.arange(len(r)), counts)
    row = np.repeat(first, counts) + (np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts))
    t = (row - r0[edge]) / (r1[edge] - r0[edge])
    return row, q0[edge] + t * (q1[edge] - q0[edge])
