"""Reading one MetaImage file with SimpleITK: `.mhd` with its data file beside it (LUNA16's CT, PROMISE12's MR:
`NAME.mhd` + `NAME.raw` or `.zraw`), or `.mha` with its data inside. ITK writes and reads the format; its geometry is
ITK's, which is DICOM's LPS patient frame already.

- The header is text: `DimSize` (x, y, z), `ElementSpacing`, `Offset` (the origin), `TransformMatrix` (the axes'
  directions, one column per index axis), `ElementType`, then `ElementDataFile`, the last line. The header alone is
  read first (shape, spacing, type), so a volume over `--max-voxels` is refused before its voxels are read.
- `ElementDataFile` may name any path, and ITK would read it: a hostile header naming `/dev/zero` or
  `../../secret.raw` would make a conversion read it. It is read here (the one line ITK does not check) and must be
  `LOCAL` (the data follows the header) or the name of a file beside the header (a space in it is part of the name,
  as ITK reads it); a list of files (`LIST`, or a `%d` pattern of slice files) is refused.
- The array ITK gives is (z, y, x), or (z, y, x, c) for several components a voxel (the channels).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from converters.dicom.geometry import RejectSeries
from fastdata.errors import require

EXTENSIONS = (".mhd", ".mha")
DATA_FILES = (".raw", ".zraw")  # the data file beside an `.mhd` of the same name (what ITK writes)
MAX_HEADER = 1 << 16  # bytes of text before ElementDataFile
# ITK's MetaIO reads a key, then any run of spaces, tabs, ':' and '=' (`ElementDataFile: x`, `ElementDataFile := x`),
# then the value; the first ElementDataFile line is the one it reads
_DATA_FILE = re.compile(rb"^[ \t]*ElementDataFile[ \t]*[:=][ \t:=]*(.*?)[ \t\r]*$", re.MULTILINE)


def is_metaimage(name: str) -> bool:
    return name.lower().endswith(EXTENSIONS)


def is_data_file(path: Path) -> bool:
    """Whether `path` is the data file of an `.mhd` header beside it with the same name."""
    return path.suffix.lower() in DATA_FILES and path.with_suffix(".mhd").is_file()


def data_file(path: str, rel: str) -> str:
    """What the header at `path` names as its data (`LOCAL`, or a file name beside it); RejectSeries for anything
    else."""
    try:
        with open(path, "rb") as f:
            head = f.read(MAX_HEADER)
    except OSError as exc:
        raise RejectSeries(f"{rel}: unreadable ({type(exc).__name__}: {exc.strerror})") from exc
    found = _DATA_FILE.search(head)
    if found is None:
        raise RejectSeries(f"{rel}: not a MetaImage header (no ElementDataFile line in its first {MAX_HEADER} "
                           "bytes)")
    try:
        name = found.group(1).decode("utf-8")
    except UnicodeDecodeError:
        raise RejectSeries(f"{rel}: its ElementDataFile is no UTF-8 text") from None
    if name == "LOCAL":
        return name
    # (the reasons never quote the name: LUNA16's are series UIDs, and a file name may name a patient)
    if name.upper().startswith("LIST") or "%" in name:  # MetaIO's `LIST [2D]`, and `slice%03d.raw 1 40 1`
        raise RejectSeries(f"{rel}: its ElementDataFile names a list of files; only one data file (or LOCAL) is read")
    if "/" in name or "\\" in name or name in ("", ".", ".."):
        raise RejectSeries(f"{rel}: its ElementDataFile names no file beside it; only a file in the header's folder "
                           "is read")
    if not Path(path).with_name(name).is_file():
        raise RejectSeries(f"{rel}: the data file its ElementDataFile names is not beside it")
    return name


class MetaImage:
    """A MetaImage volume: its header read (shape, spacing, origin, direction, type), its voxels when asked."""

    def __init__(self, path: str, rel: str) -> None:
        sitk = require("SimpleITK", "nifti")
        data_file(path, rel)
        self.path, self.rel = path, rel
        self._array: np.ndarray | None = None
        reader = sitk.ImageFileReader()
        reader.SetImageIO("MetaImageIO")
        reader.SetFileName(path)
        try:
            reader.ReadImageInformation()
        except RuntimeError as exc:  # ITK's message quotes the file's path: reasons never do
            raise RejectSeries(f"{rel}: not a readable MetaImage file (RuntimeError)") from exc
        self.dimension = reader.GetDimension()
        self.size = tuple(int(n) for n in reader.GetSize())  # (x, y, z)
        self.spacing = tuple(float(v) for v in reader.GetSpacing())
        self.origin = tuple(float(v) for v in reader.GetOrigin())
        self.direction = tuple(float(v) for v in reader.GetDirection())  # row-major, columns: the index axes
        self.components = int(reader.GetNumberOfComponents())
        if self.dimension != 3:
            raise RejectSeries(f"{rel}: a {self.dimension}D MetaImage; volumes are 3D")

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
            sitk = require("SimpleITK", "nifti")
            try:
                self._array = sitk.GetArrayFromImage(sitk.ReadImage(self.path, imageIO="MetaImageIO"))
            except RuntimeError as exc:
                raise RejectSeries(f"{self.rel}: cannot read the voxels (RuntimeError)") from exc
        arr = self._array  # (z, y, x) or (z, y, x, c)
        if arr.ndim == 4:
            arr = arr[..., channel or 0]
        return arr.transpose(2, 1, 0)
