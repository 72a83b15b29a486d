"""Orientation of a volume, shared by the dicom and nifti kinds: the axis code of its voxel axes, and reorienting
it to a requested code by permuting and flipping its array (no interpolation: every voxel value is kept).

A code names, for the x, y and z axes of the array (column, row, slice: the (i, j, k) of NIfTI and ITK), the
patient direction each points towards: "LPS" (DICOM's and ITK's default: x towards the patient's left, y
posterior, z superior), "RAS" (nibabel's canonical form, MONAI's `Orientationd(axcodes="RAS")`). An oblique axis is
named by the patient axis nearest to it. The arithmetic is nibabel's (`nibabel.orientations`); this module turns
fastdata's (z, y, x) arrays and LPS directions into its (i, j, k) affines and back.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from converters.dicom.geometry import RejectSeries
from fastdata.errors import require

# nibabel names each world axis by the letters of its (low, high) ends; our world is DICOM's LPS frame
LPS_LABELS = (("R", "L"), ("A", "P"), ("I", "S"))
_PAIRS = {"L": 0, "R": 0, "P": 1, "A": 1, "S": 2, "I": 2}


def check_code(code: object) -> None:
    """ValueError unless `code` names three letters, one of L/R, one of A/P and one of S/I (LPS, RAS, PIR...)."""
    if not (isinstance(code, str) and len(code) == 3 and all(c in _PAIRS for c in code)
            and sorted(_PAIRS[c] for c in code) == [0, 1, 2]):
        raise ValueError(f"--orientation must be three letters, one each of L/R, A/P and S/I, naming where the x, y "
                         f"and z axes point (LPS, RAS), got {code!r}")


@dataclass(frozen=True)
class Placed:
    """A (z, y, x) volume's arrays (an image, and its mask where there is one) with where they lie."""

    arrays: tuple[np.ndarray, ...]
    spacing: tuple[float, float, float]
    origin: tuple[float, float, float]
    direction: tuple[tuple[float, float, float], ...]


def _affine(spacing: tuple[float, ...], origin: tuple[float, ...], direction: tuple[tuple[float, ...], ...]
            ) -> np.ndarray:
    """The (i, j, k) = (x, y, z) voxel-to-LPS affine of a (z, y, x) array."""
    affine = np.eye(4)
    for col, axis in enumerate((2, 1, 0)):
        affine[:3, col] = np.asarray(direction[axis], dtype=np.float64) * spacing[axis]
    affine[:3, 3] = origin
    return affine


def _orientation(direction: tuple[tuple[float, ...], ...]) -> np.ndarray:
    """nibabel's orientation of the (i, j, k) axes: from the unit directions alone, so that no spacing (however
    small or large beside the others) can make an axis look degenerate to its SVD."""
    orientations = require("nibabel.orientations", "dicom")
    return orientations.io_orientation(_affine((1.0, 1.0, 1.0), (0.0, 0.0, 0.0), direction))


def axis_code(direction: tuple[tuple[float, ...], ...]) -> str:
    """The code of a (z, y, x) volume's LPS axis directions: "LPS" for an axial DICOM series, as stored."""
    orientations = require("nibabel.orientations", "dicom")
    return "".join(orientations.ornt2axcodes(_orientation(direction), labels=LPS_LABELS))


def reorient(volume: Placed, code: str) -> Placed:
    """`volume` with its axes permuted and flipped so that x, y and z point as `code` names; its origin (the position
    of voxel [0, 0, 0]), spacing and directions follow. Voxel values and their patient positions are unchanged.
    RejectSeries where the new origin (the far corner of a flipped axis) is not a finite position."""
    check_code(code)
    orientations = require("nibabel.orientations", "dicom")
    transform = orientations.ornt_transform(_orientation(volume.direction),
                                            orientations.axcodes2ornt(tuple(code), labels=LPS_LABELS))
    shape = volume.arrays[0].shape[::-1]  # (i, j, k)
    with np.errstate(over="ignore", invalid="ignore"):
        moved = _affine(volume.spacing, volume.origin, volume.direction) @ orientations.inv_ornt_aff(transform, shape)
    origin = moved[:3, 3]
    if not np.all(np.isfinite(origin)):
        raise RejectSeries(f"reoriented to {code}, voxel [0, 0, 0] would lie at a position that is not finite "
                           f"(spacing {[float(s) for s in volume.spacing]} mm over {list(volume.arrays[0].shape)} "
                           "voxels)")
    arrays = tuple(np.ascontiguousarray(orientations.apply_orientation(arr.transpose(2, 1, 0), transform)
                                        .transpose(2, 1, 0)) for arr in volume.arrays)
    # (i, j, k) axis `old` becomes axis `new`, flipped where `flip` is -1: its spacing moves with it, exactly
    spacing: list[float] = [0.0] * 3
    direction: list[tuple[float, ...]] = [()] * 3
    for old, (new, flip) in enumerate(transform.astype(int).tolist()):
        spacing[2 - new] = float(volume.spacing[2 - old])
        direction[2 - new] = tuple(float(v) * flip + 0.0 for v in volume.direction[2 - old])  # + 0.0: no -0.0
    return Placed(arrays=arrays, spacing=tuple(spacing), origin=tuple(float(v) + 0.0 for v in origin),  # type: ignore[arg-type]
                  direction=tuple(direction))  # type: ignore[arg-type]


def reorient_on(arrays: list[np.ndarray], grid: Any, code: str) -> tuple[list[np.ndarray], Any]:
    """`arrays` (a volume's channels and its mask, all on `grid`: dicom's Geometry or nifti's Grid) reoriented to
    `code`, and `grid` moved with them: the step both volume kinds take before resampling."""
    placed = reorient(Placed(tuple(arrays), grid.spacing, grid.origin, grid.direction), code)
    return list(placed.arrays), replace(grid, shape=placed.arrays[0].shape, spacing=placed.spacing,
                                        origin=placed.origin, direction=placed.direction)
