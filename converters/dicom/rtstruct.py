"""DICOM RT Structure Sets (RTSTRUCT: the contours of radiotherapy planning, TCIA's NSCLC-Radiomics, LCTSC and
Head-Neck collections, what treatment planning systems export) as the masks of the series they outline.

Discovery reads a structure set's header: the series it outlines (ReferencedFrameOfReferenceSequence ->
RTReferencedStudySequence -> RTReferencedSeriesSequence) and its ROIs that hold closed planar contours, each known
by its name (ROIName, "GTV-1"); the dataset's classes are those names over every structure set of the source, as a
SEG's are its codes (segmentation.class_names). ROIs of points or open contours (markers, isocentres) outline no
area: they are no classes, and their contours are not drawn.

Conversion places each closed contour on the slice of the series whose plane holds it (by position along the
slices' normal, within a quarter of the slice gap) and fills it by DICOM's rule (polygons.py: the voxels whose
centres lie inside it or on it). An ROI's CLOSED_PLANAR contours on a slice are united (a hole is drawn as a keyhole,
PS3.3 C.8.8.6.3); its CLOSEDPLANAR_XOR contours are combined by exclusive or, so one inside another is a hole. A
voxel in two ROIs rejects the case, naming both, unless `--overlap later` gives it to the later class
(converters/dicom/label_volume.py): a label volume holds one class per voxel, and `--structures` picks ROIs that do not
overlap, or orders them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from converters.dicom.geometry import RejectSeries, Slice, unit
from converters.dicom.label_volume import LabelVolume
from converters.dicom.polygons import MAX_CROSSINGS_PER_ROW, region
from converters.dicom.privacy import sop_class
from converters.dicom.segmentation import SegHeader
from fastdata.errors import require

RTSTRUCT_SOP_CLASS = "1.2.840.10008.5.1.4.1.1.481.3"  # RT Structure Set Storage
WHAT = "a structure set (RTSTRUCT)"  # how reasons name such a file
CLOSED, XOR = "CLOSED_PLANAR", "CLOSEDPLANAR_XOR"  # areas: united, and combined by exclusive or
FAR = 1e6  # pixels: a contour point farther off the image is no outline of it (and its arithmetic may overflow)
PLANE_TOLERANCE = 0.25  # of the slice gap: how far off a slice's plane a contour may lie


def is_mask(ds: Any) -> bool:
    return sop_class(ds) == RTSTRUCT_SOP_CLASS


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
        closed = any(str(c.get("ContourGeometricType", "")) in (CLOSED, XOR) for c in item.get("ContourSequence") or [])
        if closed and (number is None or int(number) not in names):
            return "a structure set (RTSTRUCT) with contours of an ROI it does not name (ReferencedROINumber)"
        if closed:
            areas.append(int(number))
    if not areas:
        return "a structure set (RTSTRUCT) without closed planar contours (no ROI outlines an area)"
    return SegHeader(next(iter(uids)), tuple((n, ("ROIName", names[n]), names[n]) for n in sorted(set(areas))),
                     structure_set=True)


def read_mask(path: str, rel: str, slices: list[Slice], values: tuple[tuple[int, int], ...],
              overlap: str = "reject") -> LabelVolume:
    """The (slice, row, column) class values of the structure set at `path` over `slices` (the series' slices in
    the volume's order, a stack of them), painted in class order by the `--overlap` policy; `values`: (ROINumber,
    class value). RejectSeries says why they cannot be had."""
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
    painted = LabelVolume((len(slices), *plane.shape), np.uint16, policy=overlap, rel=rel, what="ROI",
                          hint="--structures picks ROIs that do not overlap")
    budget = [MAX_CROSSINGS_PER_ROW * len(slices) * plane.shape[0]]
    for number, value in sorted(((n, v) for n, v in values if v), key=lambda nv: nv[1]):  # in class order; value
        # 0: an ROI --structures leaves out
        name = names.get(number, str(number))
        painted.paint(plane.filled(rois.get(number, []), name, budget), value, name)
    return painted


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
        self.row_dir, self.col_dir = unit(orient[:3]), unit(orient[3:])  # along a row the column index grows
        self.normal = np.cross(self.row_dir, self.col_dir)
        self.positions = np.array([s.position for s in slices], np.float64)
        self.along = self.positions @ self.normal
        gaps = np.diff(self.along)
        gap = float(np.median(gaps)) if gaps.size else float(first.thickness or 1.0)  # slices in volume order
        self.tolerance = PLANE_TOLERANCE * gap
        self.spacing = first.pixel_spacing or (1.0, 1.0)  # (between rows, between columns)

    def filled(self, contours: list[Any], name: str, budget: list[int]) -> np.ndarray:
        """The voxels of one ROI: on each slice, the union of its CLOSED_PLANAR contours' regions and the exclusive
        or of its CLOSEDPLANAR_XOR ones'."""
        united = np.zeros((len(self.positions), *self.shape), bool)
        exclusive = np.zeros_like(united)
        for c, contour in enumerate(contours):
            kind = str(contour.get("ContourGeometricType", ""))
            if kind not in (CLOSED, XOR):
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
            pixels = region(r, q, self.shape, budget, self.rel)
            if kind == CLOSED:
                united[k] |= pixels
            else:
                exclusive[k] ^= pixels
        return united | exclusive

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
