"""MetaImage files, read with SimpleITK (itk_image.py): `.mhd` with its data file beside it (LUNA16's CT, PROMISE12's
MR: `NAME.mhd` + `NAME.raw` or `.zraw`), or `.mha` with its data inside. ITK writes and reads the format.

- The header is text: `DimSize` (x, y, z), `ElementSpacing`, `Offset` (the origin), `TransformMatrix` (the axes'
  directions, one column per index axis), `ElementType`, then `ElementDataFile`, the last line. The header alone is
  read first (shape, spacing, type), so a volume over `--max-voxels` is refused before its voxels are read.
- `ElementDataFile` may name any path, and ITK would read it: a hostile header naming `/dev/zero` or
  `../../secret.raw` would make a conversion read it. It is read here (the one line ITK does not check) and must be
  `LOCAL` (the data follows the header) or the name of a file beside the header (a space in it is part of the name,
  as ITK reads it); a list of files (`LIST`, or a `%d` pattern of slice files) is refused.
"""

from __future__ import annotations

import re

from converters.dicom.geometry import RejectSeries
from converters.nifti.itk_image import beside, header_bytes

EXTENSIONS = (".mhd", ".mha")
IO, WHAT = "MetaImageIO", "MetaImage"  # ITK's reader, and the format's name in reasons
MAX_HEADER = 1 << 16  # bytes of text before ElementDataFile
# ITK's MetaIO reads a key, then any run of spaces, tabs, ':' and '=' (`ElementDataFile: x`, `ElementDataFile := x`),
# then the value; the first ElementDataFile line is the one it reads
_DATA_FILE = re.compile(rb"^[ \t]*ElementDataFile[ \t]*[:=][ \t:=]*(.*?)[ \t\r]*$", re.MULTILINE)


def data_file(path: str, rel: str) -> str | None:
    """The name of the file beside the header at `path` that holds its voxels, or None when they follow the header
    (`LOCAL`); RejectSeries for anything else."""
    head = header_bytes(path, rel, MAX_HEADER)
    found = _DATA_FILE.search(head)
    if found is None:
        raise RejectSeries(f"{rel}: not a MetaImage header (no ElementDataFile line in its first {MAX_HEADER} "
                           "bytes)")
    try:
        name = found.group(1).decode("utf-8")
    except UnicodeDecodeError:
        raise RejectSeries(f"{rel}: its ElementDataFile is no UTF-8 text") from None
    if name == "LOCAL":
        return None
    if name.upper().startswith("LIST") or "%" in name:  # MetaIO's `LIST [2D]`, and `slice%03d.raw 1 40 1`
        raise RejectSeries(f"{rel}: its ElementDataFile names a list of files; only one data file (or LOCAL) is read")
    return beside(path, rel, name, "its ElementDataFile")
