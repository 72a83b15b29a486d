"""DICOM RT Structure Sets (RTSTRUCT) of known contours over the test phantom, written with pydicom as planning
systems write them: each ROI named in StructureSetROISequence, its contours in ROIContourSequence as (x, y, z)
points in the patient's millimetres, one planar contour per slice it crosses (several for holes)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from conftest_dicom import Phantom

RTSTRUCT = "1.2.840.10008.5.1.4.1.1.481.3"


def on_slice(phantom: Phantom, k: int, polygon: list[tuple[float, float]]) -> list[tuple[float, float, float]]:
    """The patient coordinates (mm) of a polygon given in (row, column) pixel coordinates of the phantom's slice k
    (pixel centres at whole numbers, as DICOM places ImagePositionPatient)."""
    x0, y0, z0 = phantom.origin
    return [(x0 + c * phantom.pixel_spacing[1], y0 + r * phantom.pixel_spacing[0], z0 + k * phantom.slice_spacing)
            for r, c in polygon]


def write_rtstruct(path: Path, series_uid: str, rois: list[tuple[str, list[list[tuple[float, float, float]]]]], *,
                   kinds: dict[str, str] | None = None, numbers: dict[str, int] | None = None,
                   referenced: tuple[str | None, ...] | None = None) -> Path:
    """A structure set at `path` outlining the series `series_uid` (or referencing the series `referenced`), ROI n
    (from 1, or `numbers`) named as `rois` names it, of its contours (each a list of (x, y, z) points), CLOSED_PLANAR
    unless `kinds` says otherwise for the ROI (POINT, OPEN_PLANAR; or a list: each contour's). The patient's name is
    in it, as it is in a real one."""
    from pydicom.dataset import Dataset, FileMetaDataset
    from pydicom.uid import ExplicitVRLittleEndian, generate_uid

    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = RTSTRUCT
    meta.MediaStorageSOPInstanceUID = generate_uid(entropy_srcs=[str(path), "sop"])
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = Dataset()
    ds.file_meta = meta
    ds.SOPClassUID = RTSTRUCT
    ds.SOPInstanceUID = meta.MediaStorageSOPInstanceUID
    ds.Modality = "RTSTRUCT"
    ds.PatientName = "Doe^Jane"
    ds.PatientID = "PAT-000123"
    ds.StudyInstanceUID = generate_uid(entropy_srcs=[str(path), "study"])
    ds.SeriesInstanceUID = generate_uid(entropy_srcs=[str(path), "series"])
    ds.StructureSetLabel = "Doe plan"
    frame = "1.2.826.0.1.3680043.8.498.77"
    ds.ReferencedFrameOfReferenceSequence = [Dataset()]
    ds.ReferencedFrameOfReferenceSequence[0].FrameOfReferenceUID = frame
    studies = []
    for uid in referenced if referenced is not None else (series_uid,):
        series = Dataset()
        if uid is not None:  # None: an item that names no series
            series.SeriesInstanceUID = uid
        study = Dataset()
        study.ReferencedSOPClassUID = "1.2.840.10008.3.1.2.3.1"
        study.ReferencedSOPInstanceUID = ds.StudyInstanceUID
        study.RTReferencedSeriesSequence = [series]
        studies.append(study)
    ds.ReferencedFrameOfReferenceSequence[0].RTReferencedStudySequence = studies
    ds.StructureSetROISequence, ds.ROIContourSequence = [], []
    for n, (name, contours) in enumerate(rois, start=1):
        number = (numbers or {}).get(name, n)
        roi = Dataset()
        roi.ROINumber = number
        roi.ReferencedFrameOfReferenceUID = frame
        roi.ROIName = name
        roi.ROIGenerationAlgorithm = "MANUAL"
        ds.StructureSetROISequence.append(roi)
        item = Dataset()
        item.ReferencedROINumber = number
        item.ROIDisplayColor = [255, 0, 0]
        item.ContourSequence = []
        kind = (kinds or {}).get(name, "CLOSED_PLANAR")
        for c, points in enumerate(contours):
            contour = Dataset()
            contour.ContourGeometricType = kind if isinstance(kind, str) else kind[c]
            contour.NumberOfContourPoints = len(points)
            contour.ContourData = [f"{v:.6g}" for point in points for v in point]
            item.ContourSequence.append(contour)
        ds.ROIContourSequence.append(item)
    path.parent.mkdir(parents=True, exist_ok=True)
    ds.save_as(path, enforce_file_format=True)
    return path


def inside(shape: tuple[int, int], polygons: list[list[tuple[float, float]]], *, boundary: bool = False) -> np.ndarray:
    """The pixels of `shape` whose centres lie inside the polygons ((row, column) vertices) by the even-odd rule:
    a ray cast from each centre, pixel by pixel, as the oracle of the converter's scanline fill. With `boundary`,
    a centre within 1e-3 of a pixel of an edge counts as inside (DICOM's rule: the contour's path is the ROI's)."""
    out = np.zeros(shape, bool)
    for r in range(shape[0]):
        for c in range(shape[1]):
            crossings, on = 0, False
            for polygon in polygons:
                for (r0, c0), (r1, c1) in zip(polygon, polygon[1:] + polygon[:1]):
                    if (r0 <= r) != (r1 <= r):  # the edge spans the centre's row
                        crossings += c < c0 + (r - r0) * (c1 - c0) / (r1 - r0)
                    on = on or _distance((r, c), (r0, c0), (r1, c1)) <= 1e-3
            out[r, c] = crossings % 2 == 1 or (boundary and on)
    return out


def _distance(p: tuple[float, float], a: tuple[float, float], b: tuple[float, float]) -> float:
    """The distance from p to the segment a-b."""
    (pr, pc), (ar, ac), (br, bc) = p, a, b
    dr, dc = br - ar, bc - ac
    t = 0.0 if dr == dc == 0 else max(0.0, min(1.0, ((pr - ar) * dr + (pc - ac) * dc) / (dr * dr + dc * dc)))
    return float(np.hypot(pr - ar - t * dr, pc - ac - t * dc))
