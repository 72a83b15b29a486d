"""Slice geometry: order slices along the normal of their plane and check they form a regular stack.

Conventions (also written into every sample's json): the volume array has axes (z, y, x) =
(slice, row, column). `direction[a]` is the unit vector, in DICOM patient coordinates (LPS, mm), of
array axis `a`; `origin` is the patient position of voxel [0, 0, 0]; `spacing` is (dz, dy, dx) in mm.
So voxel (k, i, j) lies at origin + k*dz*direction[0] + i*dy*direction[1] + j*dx*direction[2].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


class RejectSeries(Exception):
    """The series cannot be converted; the message is the recorded reason."""


@dataclass(frozen=True)
class Slice:
    """One 2D image of a series (a single-frame file, or one frame of a multi-frame object)."""

    rel: str
    frame: int | None  # None: single-frame file
    shape: tuple[int, int]
    position: tuple[float, float, float] | None
    orientation: tuple[float, ...] | None  # six direction cosines: row direction, then column direction
    pixel_spacing: tuple[float, float] | None  # (between rows, between columns) in mm
    slope: float
    intercept: float
    thickness: float | None = None


@dataclass(frozen=True)
class Geometry:
    shape: tuple[int, ...]
    spacing: tuple[float, ...]
    origin: tuple[float, float, float] | None
    direction: tuple[tuple[float, float, float], ...] | None
    spacing_source: str


def unit(v: np.ndarray) -> np.ndarray:
    """A direction cosine vector scaled to unit length; RejectSeries for one of no length."""
    n = float(np.linalg.norm(v))
    if n < 1e-6:
        raise RejectSeries(f"degenerate ImageOrientationPatient {v.tolist()} (zero-length direction)")
    return v / n


def _example(slices: list[Slice], bad: list[int]) -> str:
    return ", ".join(slices[i].rel + ("" if slices[i].frame is None else f" frame {slices[i].frame}")
                     for i in bad[:3]) + (f" and {len(bad) - 3} more" if len(bad) > 3 else "")


def _check_common(slices: list[Slice]) -> None:
    shapes = sorted({s.shape for s in slices})
    if len(shapes) > 1:
        raise RejectSeries(f"mixed image shapes within the series: {[list(s) for s in shapes]}")
    spacings = {s.pixel_spacing for s in slices}
    if len(spacings) > 1:
        raise RejectSeries(f"mixed PixelSpacing within the series: {sorted(spacings, key=str)}")


def planar_geometry(s: Slice) -> Geometry:
    """A single 2D image without position (CR/DX/NM): kept as a 2D array of shape (rows, columns)."""
    spacing = s.pixel_spacing or (1.0, 1.0)
    return Geometry(shape=s.shape, spacing=tuple(float(v) for v in spacing), origin=None, direction=None,
                    spacing_source="PixelSpacing" if s.pixel_spacing else "unknown (1 mm assumed)")


def stack_geometry(slices: list[Slice], *, tolerance: float) -> tuple[list[int], Geometry]:
    """(slice order, geometry) of a regular stack; RejectSeries says why the slices are not one."""
    _check_common(slices)
    missing = [i for i, s in enumerate(slices) if s.position is None or s.orientation is None]
    if missing:
        raise RejectSeries(f"missing position tags (ImagePositionPatient/ImageOrientationPatient) in "
                           f"{len(missing)} of {len(slices)} slices: {_example(slices, missing)}")
    orients = np.array([s.orientation for s in slices], dtype=np.float64)
    if np.abs(orients - orients[0]).max() > 1e-3:
        raise RejectSeries(f"mixed slice orientations within the series ({len(np.unique(orients.round(3), axis=0))}"
                           " different ImageOrientationPatient values): not one volume")
    row_dir, col_dir = unit(orients[0, :3]), unit(orients[0, 3:])
    if abs(float(row_dir @ col_dir)) > 1e-3:
        raise RejectSeries("ImageOrientationPatient row and column directions are not orthogonal")
    normal = np.cross(row_dir, col_dir)
    pos = np.array([s.position for s in slices], dtype=np.float64)
    proj = pos @ normal
    order = [int(i) for i in np.argsort(proj, kind="stable")]
    dy, dx = slices[0].pixel_spacing or (1.0, 1.0)
    pixel_source = "PixelSpacing" if slices[0].pixel_spacing else "unknown (1 mm assumed)"
    if len(slices) == 1:
        dz = slices[0].thickness or 1.0
        source = "SliceThickness (single slice)" if slices[0].thickness else "unknown (single slice, 1 mm assumed)"
    else:
        sorted_proj = proj[order]
        gaps = np.diff(sorted_proj)
        dup = [order[i + 1] for i in np.flatnonzero(gaps < 1e-3)]
        if dup:
            raise RejectSeries(f"duplicate slices: {len(dup)} slice(s) share a position with another "
                               f"({_example(slices, dup)})")
        dz = float(np.median(gaps))
        bad = np.flatnonzero(np.abs(gaps - dz) > tolerance * dz)
        if bad.size:
            i = int(bad[0])
            multiple = gaps[i] / dz
            if abs(multiple - round(multiple)) <= tolerance and round(multiple) >= 2:
                raise RejectSeries(f"missing slices: gap of {gaps[i]:.3f} mm at {sorted_proj[i]:.3f} mm along the "
                                   f"normal where {dz:.3f} mm is expected (~{round(multiple) - 1} slice(s) missing)")
            raise RejectSeries(f"irregular slice spacing: gap of {gaps[i]:.3f} mm at {sorted_proj[i]:.3f} mm along "
                               f"the normal, median gap {dz:.3f} mm (tolerance {tolerance:.0%})")
        inplane = (pos[order] - pos[order[0]]) - np.outer(sorted_proj - sorted_proj[0], normal)
        if np.abs(inplane).max() > 0.5 * min(dy, dx):
            raise RejectSeries(f"slices are shifted in-plane by up to {np.abs(inplane).max():.2f} mm "
                               "(gantry tilt or sheared stack): not a rectilinear volume")
        source = "ImagePositionPatient"
    direction = (tuple(normal.tolist()), tuple(col_dir.tolist()), tuple(row_dir.tolist()))
    origin = tuple(float(v) for v in pos[order[0]])
    shape = (len(slices), *slices[0].shape)
    return order, Geometry(shape=shape, spacing=(dz, float(dy), float(dx)), origin=origin,  # type: ignore[arg-type]
                           direction=direction, spacing_source=f"{source}; in-plane {pixel_source}")
