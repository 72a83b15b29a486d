"""MINC volumes (`.mnc`, and MINC-1's `.mnc.gz`: BrainWeb's phantoms, the MNI/ICBM templates, the output of the
MINC tools), read with nibabel: MINC-1 is netCDF, which nibabel reads itself; MINC-2 is HDF5, which nibabel reads with
h5py, uncompressed only.

Three things differ from the other formats volume.py reads:
- nibabel's netCDF reader reads every variable of a MINC-1 file when it opens it (from a file object it cannot map
  the file), so a file is measured first: one that holds more bytes than `--max-voxels` voxels of MINC's widest type
  (double) could is refused before it is read; a `.mnc.gz` is decompressed once to be measured, as gzip's ratio
  could otherwise turn a small file into a read of many GB.
- An HDF5 file may keep what it holds in other files, and h5py would read them: a MINC-2 file is walked first
  (`_contained`, converters/hdf5_files.py), and one that reaches outside itself is refused.
- MINC names the axes of its image array, in the file's order: three spatial ones (`xspace`, `yspace`, `zspace`,
  in any order) whose directions and steps make nibabel's RAS+ affine, column for column, and a fourth that is
  time (4D fMRI and PET files put it first) or a list of values. `MincVolume` moves that fourth axis last, where
  volume.py reads a 4D image's channels, so a MINC file's frames are a case's channels as an MGH file's are.
"""

from __future__ import annotations

import gzip
import os
import zlib
from typing import Any

import numpy as np

from converters import hdf5_files
from converters.dicom.geometry import RejectSeries
from fastdata.errors import MissingDependencyError, require

EXTENSIONS = (".mnc", ".mnc.gz")
HDF5 = hdf5_files.SIGNATURE[:4]  # MINC-2; MINC-1 starts with netCDF's b"CDF\x01"
WIDEST = 8  # bytes of a voxel of MINC's widest type (double)
HEADROOM = 16 * 2**20  # bytes of a file's header, attributes and scaling variables besides its voxels
CHUNK = 2**20
MAX_OBJECTS = 10_000  # links walked in a MINC-2 (HDF5) file before it is refused


def is_minc(name: str) -> bool:
    return name.lower().endswith(EXTENSIONS)


def _limit(max_voxels: int) -> int:
    return max_voxels * WIDEST + HEADROOM


def _too_large(rel: str, what: str, max_voxels: int) -> RejectSeries:
    return RejectSeries(f"{rel}: {what} more bytes than {max_voxels} voxels of any MINC type fill (the --max-voxels "
                        "cap, or its image's voxels for a mask): nibabel would read it whole")


def _gzip_head(path: str, rel: str, max_voxels: int) -> bytes:
    """The first bytes of a `.mnc.gz` once decompressed, after a pass that checks it decompresses, whole, to no more
    bytes than `max_voxels` voxels need."""
    total = 0
    head = b""
    try:
        with gzip.open(path, "rb") as f:
            while chunk := f.read(CHUNK):
                head = head or chunk[:4]
                total += len(chunk)
                if total > _limit(max_voxels):
                    raise _too_large(rel, "it decompresses to", max_voxels)
    except (OSError, EOFError, zlib.error) as exc:  # not gzip, or cut short
        raise RejectSeries(f"{rel}: not a readable MINC file ({type(exc).__name__}: damaged gzip data)") from exc
    return head


def check(path: str, rel: str, max_voxels: int) -> None:
    """What must hold before nibabel opens the MINC file at `path` (RejectSeries otherwise): its bytes within what
    `max_voxels` voxels need, and for a MINC-2 file h5py installed, the file uncompressed and everything in it
    (`_contained`)."""
    if path.lower().endswith(".gz"):
        if _gzip_head(path, rel, max_voxels).startswith(HDF5):
            raise RejectSeries(f"{rel}: a gzip-compressed MINC-2 (HDF5) file; nibabel reads MINC-2 uncompressed "
                               "only: decompress it (gunzip) first")
        return
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError as exc:
        raise RejectSeries(f"{rel}: unreadable ({type(exc).__name__}: {exc.strerror})") from exc
    if size > _limit(max_voxels):
        raise _too_large(rel, "it holds", max_voxels)
    if head == HDF5:
        try:  # nibabel would fail on its import with a message naming no package to install
            h5py = require("h5py", "nifti")
        except MissingDependencyError as exc:
            raise RejectSeries(f"{rel}: a MINC-2 (HDF5) file, which nibabel reads with h5py: {exc}") from exc
        _contained(h5py, path, rel)


def _contained(h5py: Any, path: str, rel: str) -> None:
    """RejectSeries unless everything in the HDF5 file at `path` lies in it (converters/hdf5_files.py), walking at
    most MAX_OBJECTS links: a MINC-2 file holds a few dozen."""
    try:
        with h5py.File(path, "r") as f:
            problem = hdf5_files.outside(h5py, f, MAX_OBJECTS, holds="a MINC-2 file holds a few dozen")
    except hdf5_files.ERRORS as exc:  # h5py's errors for damaged files
        raise RejectSeries(f"{rel}: not a readable MINC file ({type(exc).__name__})") from exc
    if problem is not None:
        raise RejectSeries(f"{rel}: {problem}")


class MincVolume:
    """A MINC image as volume.py reads a NIfTI one: `shape` is (i, j, k) in the order of the `affine`'s columns,
    then the channels (the fourth axis, where there is one); `voxels(channel)` gives one channel's (i, j, k) array.
    (i, j, k) are the file's spatial axes from the fastest-varying one, as a NIfTI file's are, so the converted
    (z, y, x) array keeps the file's order: a MINC file's first spatial axis (`zspace` in most) becomes z."""

    def __init__(self, img: Any, rel: str) -> None:
        self.rel = rel
        self._img = img
        names = [str(n) for n in img.dataobj.minc_file._dim_names]  # nibabel's names of the array's axes, in order
        spatial = [a for a, name in enumerate(names) if name.endswith("space")]
        self._other = [a for a in range(len(names)) if a not in spatial]
        if len(spatial) != 3 or len(self._other) > 1:
            raise RejectSeries(f"{rel}: a MINC image of axes {names}; volumes have xspace, yspace and zspace, and at "
                               "most one axis more (time: its channels)")
        shape = tuple(int(n) for n in img.shape)
        self.shape = tuple(shape[a] for a in (*spatial[::-1], *self._other))
        affine = img.affine  # column c: the file's spatial axis c
        self.affine = np.column_stack([affine[:, 2], affine[:, 1], affine[:, 0], affine[:, 3]])

    def voxels(self, channel: int | None) -> np.ndarray:
        """The (i, j, k) voxels of one channel, MINC's scaling (image-min, image-max over the valid range) applied."""
        index: list[int | slice] = [slice(None)] * len(self._img.shape)
        if self._other:
            index[self._other[0]] = channel or 0
        try:
            arr = np.asarray(self._img.dataobj[tuple(index)])
        except Exception as exc:  # noqa: BLE001 - damaged data or scaling variables (MincError, KeyError, h5py's)
            raise RejectSeries(f"{self.rel}: cannot read the voxels ({type(exc).__name__})") from exc
        return arr.transpose(2, 1, 0)
