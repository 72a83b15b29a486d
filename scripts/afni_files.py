"""AFNI datasets of known voxels and geometry, for the tests, the fuzz harness and the docs walk's sample data (not
used by fastdata itself). nibabel reads AFNI and writes none, so these are written as AFNI lays a dataset out: a
text header `NAME+VIEW.HEAD` of typed attributes, and the voxels in `NAME+VIEW.BRIK`, each sub-brick (a 4D
dataset's volume) in turn with its first axis varying fastest. IJK_TO_DICOM_REAL places voxel (i, j, k) at
`matrix @ (i, j, k, 1)` in DICOM's LPS millimetres; BRICK_FLOAT_FACS scales each sub-brick (0: not scaled)."""

from __future__ import annotations

import bz2
import gzip
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

TYPES = {np.dtype(np.uint8): 0, np.dtype(np.int16): 1, np.dtype(np.float32): 3, np.dtype(np.complex64): 5}
COMPRESS = {"": lambda b: b, ".gz": lambda b: gzip.compress(b, mtime=0), ".bz2": bz2.compress}


@dataclass
class Afni:
    """A dataset: `data` of shape (i, j, k) or (i, j, k, sub-bricks), stored as its dtype (uint8, int16, float32 or
    complex64), little-endian unless `big_endian`."""

    data: np.ndarray
    matrix: np.ndarray  # (3, 4): LPS mm of voxel (i, j, k) = matrix @ (i, j, k, 1)
    facs: list[float] | None = None  # BRICK_FLOAT_FACS, one per sub-brick
    labels: list[str] = field(default_factory=list)  # BRICK_LABS
    history: str = ""  # HISTORY_NOTE: AFNI records each command run on the dataset (paths and names included)
    big_endian: bool = False

    @property
    def bricks(self) -> np.ndarray:
        return self.data if self.data.ndim == 4 else self.data[..., None]


def _attribute(name: str, value: object) -> str:
    if isinstance(value, str):
        return f"type = string-attribute\nname = {name}\ncount = {len(value) + 1}\n'{value}~\n"
    numbers = list(np.ravel(value))
    kind = "integer" if all(isinstance(v, int | np.integer) for v in numbers) else "float"
    text = " ".join(str(int(v)) if kind == "integer" else repr(float(v)) for v in numbers)
    return f"type = {kind}-attribute\nname = {name}\ncount = {len(numbers)}\n {text}\n"


def header_text(dataset: Afni, *, matrix: bool = True) -> str:
    """The HEAD file's text (without IJK_TO_DICOM_REAL when not `matrix`, as a damaged header has it)."""
    bricks = dataset.bricks
    steps = np.linalg.norm(dataset.matrix[:, :3], axis=0)
    attributes: list[tuple[str, object]] = [
        ("TYPESTRING", "3DIM_HEAD_ANAT"),
        ("DATASET_RANK", [3, int(bricks.shape[3]), 0, 0, 0, 0, 0, 0]),
        ("DATASET_DIMENSIONS", [*(int(n) for n in bricks.shape[:3]), 0, 0]),
        ("BRICK_TYPES", [TYPES[bricks.dtype]] * int(bricks.shape[3])),
        ("BYTEORDER_STRING", "MSB_FIRST" if dataset.big_endian else "LSB_FIRST"),
        ("ORIGIN", [float(v) for v in dataset.matrix[:, 3]]),
        ("DELTA", [float(v) for v in steps]),
    ]
    if matrix:
        attributes.append(("IJK_TO_DICOM_REAL", [float(v) for v in np.ravel(dataset.matrix)]))
    if dataset.facs is not None:
        attributes.append(("BRICK_FLOAT_FACS", [float(v) for v in dataset.facs]))
    if dataset.labels:
        attributes.append(("BRICK_LABS", "~".join(dataset.labels)))
    if dataset.history:
        attributes.append(("HISTORY_NOTE", dataset.history))
    return "".join("\n" + _attribute(name, value) for name, value in attributes)


def write_afni(head: Path, dataset: Afni, *, compress: str = "", matrix: bool = True) -> Path:
    """Write `head` (`NAME+VIEW.HEAD`) and its `.BRIK` (`.BRIK.gz`, `.BRIK.bz2` with `compress`); returns the BRIK."""
    head.parent.mkdir(parents=True, exist_ok=True)
    head.write_text(header_text(dataset, matrix=matrix))
    bricks = dataset.bricks
    stored = bricks.astype(bricks.dtype.newbyteorder(">" if dataset.big_endian else "<"))
    brik = head.with_name(head.name[: -len(".HEAD")] + ".BRIK" + compress)
    brik.write_bytes(COMPRESS[compress](stored.tobytes(order="F")))
    return brik
