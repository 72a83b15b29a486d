"""One volume file read with SimpleITK (MetaImage: metaimage.py; NRRD: nrrd.py), as volume.py reads a NIfTI image:
its header first (shape, spacing, origin, direction, type), so a volume over `--max-voxels` is refused before its
voxels are read, then its voxels when asked. ITK's geometry is in DICOM's LPS patient frame already (NRRD's
right-anterior-superior files are turned into it by ITK), and the array it gives is (z, y, x), or (z, y, x, c) for
several components a voxel (the channels)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from converters.dicom.geometry import RejectSeries
from fastdata.errors import require


def header_bytes(path: str, rel: str, size: int) -> bytes:
    """The first `size` bytes of the header at `path`, where each format's check looks for its data file;
    RejectSeries when the file cannot be read."""
    try:
        with open(path, "rb") as f:
            return f.read(size)
    except OSError as exc:
        raise RejectSeries(f"{rel}: unreadable ({type(exc).__name__}: {exc.strerror})") from exc


def beside(path: str, rel: str, name: str, field: str) -> str:
    """`name`, what the header at `path` names in `field` as the file of its voxels, checked to be a file beside the
    header (no folder in it); RejectSeries otherwise. The reasons never quote the name: LUNA16's are series UIDs,
    and a file name may name a patient."""
    if "/" in name or "\\" in name or name in ("", ".", ".."):
        raise RejectSeries(f"{rel}: {field} names no file beside it; only a file in the header's folder is read")
    if not Path(path).with_name(name).is_file():
        raise RejectSeries(f"{rel}: the file {field} names is not beside it")
    return name


class ItkImage:
    """A volume file ITK reads with the ImageIO named `io` (`what` names its format in reasons)."""

    def __init__(self, path: str, rel: str, io: str, what: str) -> None:
        sitk = self._sitk = require("SimpleITK", "nifti")
        self.path, self.rel, self.io, self.what = path, rel, io, what
        self._array: np.ndarray | None = None
        reader = sitk.ImageFileReader()
        reader.SetImageIO(io)
        reader.SetFileName(path)
        try:
            reader.ReadImageInformation()
        except RuntimeError as exc:  # ITK's message quotes the file's path: reasons never do
            raise RejectSeries(f"{rel}: not a readable {what} file (RuntimeError)") from exc
        self.dimension = reader.GetDimension()
        self.size = tuple(int(n) for n in reader.GetSize())  # (x, y, z)
        self.spacing = tuple(float(v) for v in reader.GetSpacing())
        self.origin = tuple(float(v) for v in reader.GetOrigin())
        self.direction = tuple(float(v) for v in reader.GetDirection())  # row-major, columns: the index axes
        self.components = int(reader.GetNumberOfComponents())
        if self.dimension != 3:
            raise RejectSeries(f"{rel}: a {self.dimension}D {what}; volumes are 3D")

    @property
    def shape(self) -> tuple[int, ...]:
        """nibabel's order, as volume.py reads a NIfTI image's: (x, y, z), then the channels when there are
        several."""
        return (*self.size, self.components) if self.components > 1 else self.size

    @property
    def affine(self) -> np.ndarray:
        """The RAS+ affine of (x, y, z) voxel indices, as nibabel gives a NIfTI image's (ITK's frame is LPS)."""
        matrix = np.array(self.direction, dtype=np.float64).reshape(3, 3) * np.array(self.spacing)
        out = np.eye(4)
        out[:3, :3] = matrix * np.array([-1.0, -1.0, 1.0])[:, None]
        out[:3, 3] = np.array(self.origin) * np.array([-1.0, -1.0, 1.0])
        return out

    def voxels(self, channel: int | None) -> np.ndarray:
        """The (x, y, z) voxels of one channel, in nibabel's order as volume.py expects them (the file is read once,
        whatever the number of channels asked for)."""
        if self._array is None:
            sitk = self._sitk
            try:
                self._array = sitk.GetArrayFromImage(sitk.ReadImage(self.path, imageIO=self.io))
            except RuntimeError as exc:
                raise RejectSeries(f"{self.rel}: cannot read the voxels (RuntimeError)") from exc
        arr = self._array  # (z, y, x) or (z, y, x, c)
        if arr.ndim == 4:
            arr = arr[..., channel or 0]
        return arr.transpose(2, 1, 0)
