"""AFNI datasets, read with nibabel: a header `NAME+VIEW.HEAD` (VIEW: orig, acpc or tlrc) with its voxels in
`NAME+VIEW.BRIK`, or gzip- or bzip2-compressed (`.BRIK.gz`, `.BRIK.bz2`; AFNI never compresses the header). The
sub-bricks of a dataset (an fMRI run's volumes, a statistics dataset's maps) are its fourth axis: a case's channels,
each scaled by its BRICK_FLOAT_FACS factor. The geometry is IJK_TO_DICOM_REAL, the header's voxel-to-coordinate
matrix (DICOM's LPS, oblique or not). A dataset's view is not part of its name: `anat+orig` and `anat+tlrc` in one
folder are two files of one name, and neither is taken for the other.

nibabel finds the data file by the header's case (`.HEAD` with `.BRIK`, `.head` with `.brik`) and tries `.gz`,
`.bz2`, `.Z` and `.zst` in turn: it would read a `.BRIK.Z` (compress) file's bytes as voxels, and a `.BRIK.zst` needs
a package fastdata does not install. `check` therefore finds the one data file nibabel will read before nibabel is
asked, and refuses the dataset when there is none, when there are two, or when it is compressed another way.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from converters.dicom.geometry import RejectSeries
from converters.nifti import pairs

HEADERS = (".HEAD", ".head")
DATA = ("", ".gz", ".bz2")  # what follows `.BRIK`: the compressions nibabel reads without another package
UNREAD = (".Z", ".zst")  # compressions nibabel tries but fastdata does not read
MAX_HEADER = 16 * 2**20  # bytes; nibabel reads a header whole, and AFNI's are a few KB (HISTORY_NOTE grows them)
MATRIX = b"IJK_TO_DICOM_REAL"
COMPLEX = 5  # BRICK_TYPES' code of complex voxels (two float32), which nibabel 5.x takes for two float64


def is_header(name: str) -> bool:
    return name.endswith(HEADERS)


def _data_names(header: str) -> list[str]:
    """Every name nibabel could read the voxels of `header` from: `NAME.BRIK` in the header's case, then compressed."""
    data = pairs.beside(header, ".brik")
    return [data + suffix for suffix in (*DATA, *UNREAD)]


def sidecars(header: str) -> list[str]:
    """The data files beside `header` that are read with it (all of them: one too many is refused, not left over)."""
    return [name for name in _data_names(header) if os.path.isfile(name)]


def check(path: str, rel: str) -> None:
    """RejectSeries unless the header at `path` has exactly one data file nibabel reads, and is a header: no larger
    than MAX_HEADER, with its voxel-to-coordinate matrix. Reasons never name the files (names go into DST)."""
    if not is_header(path):
        raise RejectSeries(f"{rel}: an AFNI header whose suffix is not .HEAD or .head (nibabel reads no other case)")
    found = sidecars(path)
    suffixes = [name[len(os.path.splitext(path)[0]):] for name in found]
    if not found:
        raise RejectSeries(f"{rel}: its data file (.BRIK of the same name, or .BRIK.gz, .BRIK.bz2, beside it) is "
                           "missing (a dataset AFNI warps on demand has none: write it out with 3dcopy)")
    if len(found) > 1:
        raise RejectSeries(f"{rel}: {len(found)} data files of its name ({', '.join(suffixes)}): keep one")
    if found[0].endswith(UNREAD):
        raise RejectSeries(f"{rel}: its data file is compressed as {suffixes[0]}, which nibabel does not read "
                           "(fastdata reads .BRIK, .BRIK.gz and .BRIK.bz2): decompress it first")
    try:
        size = os.path.getsize(path)
        if size > MAX_HEADER:
            raise RejectSeries(f"{rel}: an AFNI header of {size} bytes; they hold a few KB (at most {MAX_HEADER} "
                               "read)")
        with open(path, "rb") as f:
            text = f.read(size)  # measured, then read: no more, even if the file grows meanwhile
    except OSError as exc:
        raise RejectSeries(f"{rel}: unreadable ({type(exc).__name__}: {exc.strerror})") from exc
    if MATRIX not in text:
        raise RejectSeries(f"{rel}: an AFNI header without IJK_TO_DICOM_REAL, the matrix that places its voxels "
                           "(the geometry is read from it alone)")


def check_opened(img: Any, rel: str) -> None:
    """RejectSeries for a dataset nibabel opened but reads wrongly: complex sub-bricks, read as twice their bytes
    (so as other voxels' bytes, where the file has more sub-bricks). A volume holds one number per voxel anyway."""
    if COMPLEX in np.atleast_1d(img.header.info["BRICK_TYPES"]):  # nibabel opens no header without it
        raise RejectSeries(f"{rel}: complex voxels (BRICK_TYPES {COMPLEX}); volumes hold one number per voxel")
