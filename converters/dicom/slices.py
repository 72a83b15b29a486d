"""The files of a DICOM series read (in worker processes): each file's slices (their positions, orientation, pixel
spacing, rescale and thickness, per frame for a multi-frame object, checked for values that would silently give a
wrong volume), its stored pixels (MONOCHROME1 inverted), and the code-string attributes a sample's json copies.
series.py orders the slices into a volume."""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import Any

import numpy as np

from converters.dicom import pet
from converters.dicom.arrays import FLOAT32_MAX, too_many
from converters.dicom.geometry import RejectSeries, Slice
from converters.dicom.privacy import failure, uid_name
from fastdata.errors import require

_CODE_STRING = re.compile(r"[A-Z0-9_ ]{0,16}")  # DICOM PS3.5 6.2, VR CS


def _floats(value: Any, n: int) -> tuple[float, ...] | None:
    if value is None:
        return None
    try:
        out = tuple(float(v) for v in value)
    except (TypeError, ValueError):
        return None
    return out if len(out) == n else None


def number(value: Any, default: float) -> float:
    """`value` as a float; `default` when absent (None), empty or not a number."""
    try:
        return float(value)
    except (TypeError, ValueError):  # None, "", "abc"
        return default


def _finite(rel: str, name: str, values: tuple[float, ...] | None) -> tuple[float, ...] | None:
    if values is not None and not all(math.isfinite(v) for v in values):
        raise RejectSeries(f"{rel}: {name} {list(values)} is not finite")
    return values


def _checked(rel: str, s: Slice) -> Slice:
    """RejectSeries for values that would silently give a wrong volume (NaN rescale: all-zero voxels)."""
    for name, value in (("RescaleSlope", s.slope), ("RescaleIntercept", s.intercept)):
        if not math.isfinite(value):
            raise RejectSeries(f"{rel}: {name} {value} is not a finite number")
        if abs(value) > FLOAT32_MAX:  # the values are computed in float32: infinite, and 0 * inf is NaN
            raise RejectSeries(f"{rel}: {name} {value} is beyond float32's range")
    if s.slope == 0:
        raise RejectSeries(f"{rel}: RescaleSlope 0 maps every stored value to the same number")
    _finite(rel, "ImagePositionPatient", s.position)
    _finite(rel, "ImageOrientationPatient", s.orientation)
    if s.pixel_spacing is not None and not all(math.isfinite(v) and v > 0 for v in s.pixel_spacing):
        raise RejectSeries(f"{rel}: PixelSpacing {list(s.pixel_spacing)} is not positive and finite")
    if s.thickness is not None and not (math.isfinite(s.thickness) and s.thickness > 0):
        raise RejectSeries(f"{rel}: slice thickness/spacing {s.thickness} is not positive and finite")
    return s


def _group(item: Any, shared: Any, seq: str, attr: str) -> Any:
    """An attribute from a frame's functional group, falling back to the shared functional group."""
    for source in (item, shared):
        if source is not None and seq in source and len(source[seq].value) and attr in source[seq].value[0]:
            return source[seq].value[0].get(attr)
    return None


def slices_of(ds: Any, rel: str) -> list[Slice]:
    frames = int(number(ds.get("NumberOfFrames"), 1))
    shape = (int(ds.Rows), int(ds.Columns))
    per_frame = ds.get("PerFrameFunctionalGroupsSequence")
    if per_frame is not None:
        shared = ds.SharedFunctionalGroupsSequence[0] if ds.get("SharedFunctionalGroupsSequence") else None
        if len(per_frame) != frames:
            raise RejectSeries(f"{rel}: {frames} frames but {len(per_frame)} per-frame functional groups")
        out = []
        for f, item in enumerate(per_frame):
            out.append(_checked(f"{rel} frame {f}", Slice(
                rel=rel, frame=f, shape=shape,
                position=_floats(_group(item, shared, "PlanePositionSequence", "ImagePositionPatient"), 3),
                orientation=_floats(_group(item, shared, "PlaneOrientationSequence", "ImageOrientationPatient"), 6),
                pixel_spacing=_floats(_group(item, shared, "PixelMeasuresSequence", "PixelSpacing"), 2),
                slope=number(_group(item, shared, "PixelValueTransformationSequence", "RescaleSlope"), 1.0),
                intercept=number(_group(item, shared, "PixelValueTransformationSequence", "RescaleIntercept"), 0.0),
                thickness=number(_group(item, shared, "PixelMeasuresSequence", "SliceThickness"), 0.0) or None,
            )))
        return out
    if frames > 1:
        raise RejectSeries(f"missing position tags: {rel} is a multi-frame object ({frames} frames) without "
                           "per-frame positions (PerFrameFunctionalGroupsSequence)")
    spacing = _floats(ds.get("PixelSpacing"), 2) or _floats(ds.get("ImagerPixelSpacing"), 2)
    thickness = number(ds.get("SpacingBetweenSlices"), 0.0) or number(ds.get("SliceThickness"), 0.0) or None
    return [_checked(rel, Slice(rel=rel, frame=None, shape=shape,
                                position=_floats(ds.get("ImagePositionPatient"), 3),
                                orientation=_floats(ds.get("ImageOrientationPatient"), 6),
                                pixel_spacing=spacing, slope=number(ds.get("RescaleSlope"), 1.0),
                                intercept=number(ds.get("RescaleIntercept"), 0.0), thickness=thickness))]


def pixels(ds: Any, rel: str) -> np.ndarray:
    if not any(k in ds for k in ("PixelData", "FloatPixelData", "DoubleFloatPixelData")):
        raise RejectSeries(f"missing pixel data in {rel}")
    if int(number(ds.get("SamplesPerPixel"), 1)) != 1:
        raise RejectSeries(f"{rel}: colour image (SamplesPerPixel={ds.SamplesPerPixel}); volumes are single-channel")
    try:
        arr = ds.pixel_array
    except Exception as exc:  # noqa: BLE001 - any decoder failure is a recorded reason
        # the type only (failure): pydicom's messages quote values, an unregistered transfer syntax UID among them
        syntax = uid_name(ds.file_meta.get("TransferSyntaxUID"), "unknown transfer syntax")
        why = "no installed decoder supports it" if isinstance(exc, NotImplementedError) else failure(exc)
        raise RejectSeries(f"cannot decode pixel data of {rel} ({syntax}): {why}") from exc
    if str(ds.get("PhotometricInterpretation", "")) == "MONOCHROME1" and arr.dtype.kind == "u":
        arr = np.asarray((1 << int(ds.get("BitsStored", arr.dtype.itemsize * 8))) - 1, dtype=np.int64) - arr
    return arr


def read_slices(files: tuple[tuple[str, str], ...], max_voxels: int, acquisitions: bool
                ) -> tuple[list[Slice], list[np.ndarray], Any, set[str], dict[str, str], datetime | None]:
    """The series' slices, their stored pixels, its first dataset, its transfer syntaxes, {file name:
    SOPInstanceUID} and, with `acquisitions` (--suv), the earliest acquisition of its files (pet.py; None when none
    says, and without it)."""
    pydicom = require("pydicom", "dicom")
    slices, planes, syntaxes, first = [], [], set(), None
    sops: dict[str, str] = {}
    times = []
    voxels = 0
    for path, rel in files:
        try:
            ds = pydicom.dcmread(path)
        except Exception as exc:  # noqa: BLE001
            raise RejectSeries(f"cannot read {rel}: {failure(exc)}") from exc
        first = first if first is not None else ds
        try:  # pydicom parses values when they are first read: a malformed one fails here, in any way
            syntaxes.add(uid_name(ds.file_meta.get("TransferSyntaxUID"), "unknown"))
            these = slices_of(ds, rel)
            sops[rel] = str(ds.get("SOPInstanceUID", ""))
            if acquisitions:
                times.append(pet.acquired(ds))
        except RejectSeries:
            raise
        except Exception as exc:  # noqa: BLE001 - a value pydicom cannot parse is a reason, not a crash
            raise RejectSeries(f"{rel}: malformed attribute value: {failure(exc)}") from exc
        if not these or min(these[0].shape) < 1:
            raise RejectSeries(f"{rel}: an image of {list(these[0].shape) if these else 0} pixels")
        voxels += len(these) * these[0].shape[0] * these[0].shape[1]
        if voxels > max_voxels:  # checked on the header, before any pixel data is decoded
            raise too_many(voxels, max_voxels, "the series holds at least")
        try:
            arr = pixels(ds, rel)
        except RejectSeries:
            raise
        except Exception as exc:  # noqa: BLE001
            raise RejectSeries(f"{rel}: malformed attribute value: {failure(exc)}") from exc
        if arr.ndim == 2:
            arr = arr[None]
        if arr.shape[0] != len(these) or arr.shape[1:] != these[0].shape:
            raise RejectSeries(f"{rel}: pixel data of shape {list(arr.shape)} does not match Rows/Columns/frames")
        slices.extend(these)
        planes.extend(arr[i] for i in range(arr.shape[0]))
    return slices, planes, first, syntaxes, sops, min((t for t in times if t is not None), default=None,
                                                       key=lambda t: t.replace(tzinfo=None))


def code_attribute(ds: Any, keyword: str, rel: str) -> str:
    """A code string (CS) attribute of the series' first file ('' when absent), written into DST. pydicom parses a
    value when it is first read, so a malformed one (an unknown VR, undecodable bytes) fails here; a value that is
    not a code string (a damaged length can run it on over the next elements: the institution's name after
    Modality) is refused as well. The reason names the attribute, never the value (it may identify the patient)."""
    try:
        value = ds.get(keyword)
        text = "" if value is None else str(value).strip()
    except Exception as exc:  # noqa: BLE001 - pydicom raises many types for malformed values
        raise RejectSeries(f"{rel}: malformed {keyword} attribute ({type(exc).__name__})") from exc
    if not _CODE_STRING.fullmatch(text):
        raise RejectSeries(f"{rel}: malformed {keyword} attribute (not a code string of at most 16 capitals, digits, "
                           "spaces or underscores)")
    return text
