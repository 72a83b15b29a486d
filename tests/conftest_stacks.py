"""Studies of series that share a frame of reference (a PET/CT study: tests/test_dicom_channels.py, the fuzz
harness's dicom target): each series' values are a linear function of the patient position, which linear
interpolation reproduces exactly, so a series sampled on another's grid has known values at every voxel."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from conftest_dicom import edit_dicom, make_slice

STUDY, FRAME = "1.2.826.0.1.3680043.8.498.55.1", "1.2.826.0.1.3680043.8.498.55.2"
GRADIENT = (3.0, 2.0, 1.0, 1000.0)  # the value at (x, y, z) mm: 3x + 2y + z + 1000


def value_at(points: np.ndarray, gradient: tuple[float, ...] = GRADIENT) -> np.ndarray:
    """The value of the linear function at patient positions (..., 3) in mm."""
    return points @ np.asarray(gradient[:3]) + gradient[3]


def write_series(root: Path, *, uid: str, modality: str, shape: tuple[int, int, int], origin: tuple[float, ...],
                 spacing: tuple[float, float, float], row=(1.0, 0.0, 0.0), col=(0.0, 1.0, 0.0), slope: float = 1.0,
                 gradient: tuple[float, ...] = GRADIENT, study: str = STUDY, frame: str | None = FRAME,
                 **attrs: object) -> list[Path]:
    """A series of shape (slices, rows, columns) at `spacing` (z, y, x) mm whose first voxel lies at `origin`, rows
    along `row` and columns along `col`: stored values that make `slope` * stored the linear function of `gradient`
    (rounded: pick a gradient that gives whole stored numbers), in one study and frame of reference."""
    normal = np.cross(row, col)
    k, i, j = np.meshgrid(*(np.arange(n) for n in shape), indexing="ij")
    points = (np.asarray(origin) + k[..., None] * spacing[0] * normal + i[..., None] * spacing[1] * np.asarray(col)
              + j[..., None] * spacing[2] * np.asarray(row))
    stored = np.rint(value_at(points, gradient) / slope)
    assert stored.min() >= 0 and stored.max() < 2**16, "the gradient leaves uint16"
    paths = []
    for z in range(shape[0]):
        path = make_slice(root / f"{uid[-3:]}-{z:03d}.dcm", stored[z].astype(np.uint16), series_uid=uid,
                          position=tuple(points[z, 0, 0]), orientation=(*row, *col),
                          pixel_spacing=(spacing[1], spacing[2]), slope=slope, instance=z + 1, modality=modality)
        edit_dicom(path, StudyInstanceUID=study, **({"FrameOfReferenceUID": frame} if frame else {}), **attrs)
        paths.append(path)
    return paths


def grid_points(meta: dict) -> np.ndarray:
    """The patient position of every voxel of a sample's (z, y, x) grid, from its json."""
    k, i, j = np.meshgrid(*(np.arange(n) for n in meta["shape"]), indexing="ij")
    d = np.asarray(meta["direction"])
    s = meta["spacing"]
    return (np.asarray(meta["origin"]) + k[..., None] * s[0] * d[0] + i[..., None] * s[1] * d[1]
            + j[..., None] * s[2] * d[2])


def pet_ct(root: Path, *, ct_uid: str = "1.2.9.1.100", pet_uid: str = "1.2.9.1.200", study: str = STUDY,
           frame: str = FRAME, **pet: object) -> Path:
    """A CT of 12 x 20 x 18 voxels at (2, 0.8, 0.9) mm and a PET of 6 x 8 x 8 at (4, 3, 3) mm over part of it, one
    study and frame of reference, under `root`/ct and `root`/pet; `pet` replaces write_series' PET arguments."""
    write_series(root / "ct", uid=ct_uid, modality="CT", shape=(12, 20, 18), origin=(0.0, 0.0, 0.0),
                 spacing=(2.0, 0.8, 0.9), gradient=(1.0, 1.0, 1.0, 100.0), study=study, frame=frame)
    write_series(root / "pet", **{"uid": pet_uid, "modality": "PT", "shape": (6, 8, 8), "origin": (1.5, -2.0, 4.0),
                                  "spacing": (4.0, 3.0, 3.0), "slope": 0.25, "study": study, "frame": frame, **pet})
    return root


def second_stack(root: Path) -> Path:
    """Another PET/CT study under `root`, one that converts (beside a study a test rejects)."""
    return pet_ct(root, ct_uid="1.2.9.8.100", pet_uid="1.2.9.8.200", study="1.2.9.8", frame="1.2.9.8.1")
