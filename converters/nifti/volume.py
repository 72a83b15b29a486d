"""Reading one NIfTI file with nibabel (an Analyze or NIfTI pair, pairs.py, an MGH file, a MINC file, minc.py, an
AFNI dataset, afni.py, and a Philips PAR/REC file, parrec.py, too; one MetaImage or NRRD file with SimpleITK:
itk_files.py) into the volume format the dicom kind writes: a (z, y, x) array with its spacing in mm, and the origin
and axis directions in DICOM's LPS patient frame.

NIfTI stores voxel (i, j, k) at `affine @ (i, j, k, 1)` in RAS+ millimetres (nibabel picks the sform, else the
qform, as the NIfTI standard says). The array is transposed to (k, j, i) so that its axes are (slice, row, column)
as in the dicom kind; LPS is RAS with x and y negated. Scaling (scl_slope, scl_inter) is applied by nibabel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from converters.dicom.arrays import FLOAT32_MAX, rounded
from converters.dicom.geometry import RejectSeries
from converters.nifti import afni, minc, pairs, parrec
from converters.nifti.itk_files import format_of, open_itk
from converters.nifti.itk_image import ItkImage
from converters.nifti.minc import MincVolume
from fastdata.errors import require

ORTHOGONAL = 1e-3  # largest |cosine| between two voxel axes of an affine we accept (no shear)
SAME_AFFINE_MM = 1e-2  # a label's affine may differ from its image's by this much in each entry (float32 headers)
RAS_TO_LPS = np.array([-1.0, -1.0, 1.0])
UNITS_MM = {"mm": 1.0, "meter": 1000.0, "micron": 1e-3, "unknown": 1.0}
WRAPPED = (ItkImage, MincVolume)  # read by a class of ours: geometry in mm, voxels(channel) in nibabel's order
NIFTI_VALUES = "stored values (scl_slope/scl_inter applied)"


@dataclass(frozen=True)
class Grid:
    """Where a (z, y, x) array lies: voxel spacing (mm), origin and unit axis directions (LPS), per array axis."""

    shape: tuple[int, ...]
    spacing: tuple[float, float, float]
    origin: tuple[float, float, float]
    direction: tuple[tuple[float, float, float], ...]
    units: str  # the header's spatial unit, converted to mm ("unknown" is read as mm, as nibabel and ITK do)
    values: str = NIFTI_VALUES  # what the voxels' values are (value_units), the json's `units` unless CT (HU)


def failure(exc: BaseException) -> str:
    """What a reason says of an error while reading a file: its type, and an OSError's strerror. Never the message:
    nibabel's quote the file's path, and reasons go into DST."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"{type(exc).__name__}: {exc.strerror}"
    return type(exc).__name__


def _what(path: str) -> str:
    lower = path.lower()
    if pairs.is_header(lower):
        return "Analyze or NIfTI pair"
    if lower.endswith(".head"):
        return "AFNI"
    if lower.endswith(".par"):
        return "PAR/REC"
    return "MGH" if lower.endswith((".mgz", ".mgh")) else "MINC" if minc.is_minc(lower) else "NIfTI"


def load(path: str, rel: str, max_voxels: int) -> Any:
    """The nibabel image of `path` (NIfTI, a NIfTI or Analyze pair, MGH, AFNI, PAR/REC), its ITK image (MetaImage,
    NRRD: the header is read, the voxels later) or its MincVolume; RejectSeries if it is none of those. A MINC file,
    which nibabel reads whole, is refused first when its bytes exceed what `max_voxels` voxels need (minc.py); an
    AFNI or PAR header is checked first for its data file (afni.py, parrec.py)."""
    if format_of(path) is not None:
        return open_itk(path, rel)
    nib = require("nibabel", "nifti")
    what = _what(path)
    if pairs.is_header(path):
        pairs.check(path, rel)
    if minc.is_minc(path):
        minc.check(path, rel, max_voxels)
    if what == "AFNI":
        afni.check(path, rel)
    if what == "PAR/REC":
        parrec.check(path, rel)
    try:
        img = parrec.load(path) if what == "PAR/REC" else nib.load(path)
    except Exception as exc:  # noqa: BLE001 - nibabel raises many types for files that are not NIfTI or are damaged
        raise RejectSeries(f"{rel}: not a readable {what} file ({failure(exc)})") from exc
    if isinstance(img, nib.Minc1Image):  # MINC-2's class is a subclass; nibabel takes a .mnc file for no other
        return MincVolume(img, rel)
    from nibabel.brikhead import AFNIImage  # neither is among nibabel's top-level names
    from nibabel.parrec import PARRECImage

    # a NIfTI-1 or -2 file or pair, an Analyze 7.5 image (SPM's too: subclasses), FreeSurfer's MGH, AFNI, PAR/REC
    if not isinstance(img, nib.Nifti1Pair | nib.Nifti2Pair | nib.AnalyzeImage | nib.MGHImage | AFNIImage | PARRECImage):
        raise RejectSeries(f"{rel}: a {type(img).__name__}, not a NIfTI, Analyze, MGH, MINC, AFNI or PAR/REC image")
    if isinstance(img, AFNIImage):
        afni.check_opened(img, rel)
    return img


def value_units(img: Any) -> str:
    """What an image's voxel values are: the stored values with its format's own scaling applied, named as the
    format names it (MetaImage, NRRD and MGH files hold no scaling)."""
    if isinstance(img, MincVolume):
        return "real values (image-min/image-max applied)"
    if isinstance(img, ItkImage):  # read with SimpleITK: nibabel need not be installed
        return "stored values"
    from nibabel import MGHImage
    from nibabel.brikhead import AFNIImage
    from nibabel.parrec import PARRECImage

    if isinstance(img, AFNIImage):
        return "stored values (BRICK_FLOAT_FACS applied)"
    if isinstance(img, PARRECImage):
        return "display values (rescale slope/intercept applied)"
    return "stored values" if isinstance(img, MGHImage) else NIFTI_VALUES


def grid_of(img: Any, rel: str) -> Grid:
    """The geometry of a 3D (or 4D, channels last) image, checked: finite, positive spacing, no shear; with what its
    values are (value_units)."""
    return replace(_geometry(img, rel), values=value_units(img))


def _geometry(img: Any, rel: str) -> Grid:
    shape = tuple(int(n) for n in img.shape)
    if len(shape) < 3 or len(shape) > 4 or min(shape) < 1:
        raise RejectSeries(f"{rel}: an image of shape {list(shape)}; volumes are 3D (or 4D with channels last)")
    header = getattr(img, "header", None)
    in_mm = isinstance(img, WRAPPED) or not hasattr(header, "keys")  # ITK's, MINC's; AFNI's and PAR's: no fields
    if in_mm or "pixdim" not in header:  # MGH's spacing is in mm too
        return _grid(np.asarray(img.affine, dtype=np.float64), shape, "mm", rel)
    sform = int(header.get_sform(coded=True)[1]) if hasattr(header, "get_sform") else 0  # Analyze 7.5 has none
    if sform == 0:  # the affine comes from pixdim: check it as stored
        stored = stored_pixdim(img)
        if not (np.all(np.isfinite(stored)) and np.all(stored > 0)):
            raise RejectSeries(f"{rel}: voxel sizes (pixdim) {rounded(list(stored))} are not positive, and with "
                               "no sform the geometry comes from them (nibabel would read them as 1 mm)")
    try:
        unit = header.get_xyzt_units()[0] if hasattr(header, "get_xyzt_units") else "mm"  # Analyze: mm
    except KeyError:  # nibabel knows every code the standard defines; another is a damaged header
        raise RejectSeries(f"{rel}: xyzt_units {int(header['xyzt_units'])} names no unit the NIfTI standard "
                           "defines") from None
    return _grid(np.asarray(img.affine, dtype=np.float64), shape, unit, rel)


def _grid(affine: np.ndarray, shape: tuple[int, ...], unit: str, rel: str) -> Grid:
    """The grid of an (x, y, z) voxel array whose RAS+ affine, in `unit`, is `affine`: checked finite, no shear."""
    matrix = affine[:3, :3] * UNITS_MM[unit]
    if not np.all(np.isfinite(affine)):
        raise RejectSeries(f"{rel}: the affine (sform/qform) is not finite")
    steps = np.linalg.norm(matrix, axis=0)  # mm per voxel along i, j, k
    if not np.all(steps > 0):
        raise RejectSeries(f"{rel}: the affine gives voxel axes of length {[round(float(s), 6) for s in steps]} mm")
    axes = matrix / steps
    cosines = np.abs(axes.T @ axes - np.eye(3))
    if float(cosines.max()) > ORTHOGONAL:
        raise RejectSeries(f"{rel}: the affine is sheared (voxel axes not orthogonal, |cos| up to "
                           f"{float(cosines.max()):.4f}); resample it to an orthogonal grid first")
    lps = axes * RAS_TO_LPS[:, None]  # columns: the LPS direction of i, j, k
    origin = affine[:3, 3] * UNITS_MM[unit] * RAS_TO_LPS
    return Grid(shape=(shape[2], shape[1], shape[0]), spacing=(float(steps[2]), float(steps[1]), float(steps[0])),
                origin=tuple(float(v) + 0.0 for v in origin),  # type: ignore[arg-type]  # + 0.0: no -0.0
                direction=tuple(tuple(float(v) + 0.0 for v in lps[:, a]) for a in (2, 1, 0)),
                units=unit)


def stored_pixdim(img: Any) -> np.ndarray:
    """pixdim[1:4] as the file stores them: nibabel's loaded header has zeros replaced by 1 (with a log line)."""
    with img.file_map["header" if "header" in img.file_map else "image"].get_prepare_fileobj("rb") as f:
        header = type(img.header).from_fileobj(f, check=False)
    return np.asarray(header["pixdim"][1:4], dtype=np.float64)


def _same_axes(image: Grid, other: Grid) -> bool:
    """The same spacing and axis directions, within SAME_AFFINE_MM."""
    return np.allclose(np.r_[image.spacing, np.ravel(image.direction)], np.r_[other.spacing, np.ravel(other.direction)],
                       rtol=0, atol=SAME_AFFINE_MM)


def same_grid(image: Grid, label: Grid) -> bool:
    return (image.shape == label.shape and _same_axes(image, label)
            and np.allclose(image.origin, label.origin, rtol=0, atol=SAME_AFFINE_MM))


def box_in(image: Grid, box: Grid) -> tuple[int, int, int] | None:
    """Where the grid `box` lies in `image`'s voxels, as the (z, y, x) index of its first voxel, when it is a part
    of them: the same spacing and axes, its origin on one of `image`'s voxels, every voxel inside `image` (3D
    Slicer's segmentations saved cropped to their segments' extent); None otherwise. The same grid is (0, 0, 0)."""
    if not _same_axes(image, box):
        return None
    axes = np.asarray(image.direction) * np.asarray(image.spacing)[:, None]  # row a: one voxel along array axis a
    steps = np.rint(np.linalg.solve(axes.T, np.subtract(box.origin, image.origin)))
    if not np.allclose(np.asarray(image.origin) + steps @ axes, box.origin, rtol=0, atol=SAME_AFFINE_MM):
        return None  # between voxels
    if np.any(steps < 0) or np.any(steps + np.asarray(box.shape[:3]) > np.asarray(image.shape[:3])):
        return None  # reaching outside the image: its voxels there would be lost
    return int(steps[0]), int(steps[1]), int(steps[2])


def channels(img: Any) -> int:
    shape = img.shape
    return int(shape[3]) if len(shape) == 4 else 1


def voxels(img: Any, rel: str, channel: int | None) -> np.ndarray:
    """The (z, y, x) voxels of one channel as float32 or the stored integers, scaling applied; RejectSeries for
    a damaged file and for values that are not finite."""
    n = channels(img)
    if channel is not None and channel >= n:
        raise RejectSeries(f"{rel}: --channel {channel}, but the image has {n} channel(s)")
    if isinstance(img, WRAPPED):
        return _checked(img.voxels(channel), rel)
    return _checked(_read(img, rel, (..., channel or 0) if len(img.shape) == 4 else ...), rel)


def every_channel(img: Any, rel: str) -> list[np.ndarray]:
    """The (z, y, x) voxels of each channel of a 4D image, read in one pass over the file. nibabel reads a gzip
    stream from its start for each slice, so reading channel by channel decompressed a `.nii.gz` fMRI run once per
    volume (200 volumes of 64x64x36: 52 s against 0.55 s in one pass). A NIfTI file's channels are views of the one
    array: nibabel gives it in the file's (Fortran) order, so a channel is one block and its (z, y, x) view is
    contiguous, and no voxel is copied (another layout is copied channel by channel)."""
    if isinstance(img, WRAPPED):  # ITK's reads its file once; MINC's (HDF5, netCDF) reads any part directly
        return [voxels(img, rel, c) for c in range(channels(img))]
    whole = _read(img, rel, ...)
    return [_checked(whole[..., c], rel) for c in range(channels(img))]


def _read(img: Any, rel: str, index: Any) -> np.ndarray:
    try:
        return np.asarray(img.dataobj[index])
    except Exception as exc:  # noqa: BLE001 - truncated or corrupt voxel data (zlib, EOF, short reads)
        raise RejectSeries(f"{rel}: cannot read the voxels ({failure(exc)})") from exc


def _checked(arr: np.ndarray, rel: str) -> np.ndarray:
    """One channel's (x, y, z) voxels as (z, y, x), once they are numbers and finite."""
    if arr.dtype.kind not in "iuf" or arr.ndim != 3:
        raise RejectSeries(f"{rel}: voxels of type {arr.dtype} and shape {list(arr.shape)}; volumes hold one number "
                           "per voxel")
    if arr.dtype.kind == "f":
        bad = int(np.count_nonzero(~np.isfinite(arr)))
        if bad:
            raise RejectSeries(f"{rel}: {bad} voxel(s) are NaN or infinite")
        beyond = int(np.count_nonzero(np.abs(arr) > FLOAT32_MAX)) if arr.dtype.itemsize > 4 else 0
        if beyond:  # float32 is what is stored: they would become infinite
            raise RejectSeries(f"{rel}: {beyond} voxel(s) beyond float32's range (|value| > {FLOAT32_MAX:.4g})")
    return np.ascontiguousarray(arr.transpose(2, 1, 0))


def header_voxels(img: Any) -> int:
    return math.prod(int(n) for n in img.shape[:3])
