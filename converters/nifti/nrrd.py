"""NRRD files, read with SimpleITK (itk_image.py): `.nrrd` with its data after the header (what 3D Slicer saves:
`CT.nrrd`, `Segmentation.seg.nrrd`), or a detached `.nhdr` header with its data file beside it (`NAME.nhdr` +
`NAME.raw`, or `.raw.gz` when gzip-encoded).

- The header is text after the `NRRD000X` magic, one `field: value` a line up to the first empty line: `type`,
  `dimension`, `sizes`, `space` (ITK turns right-anterior-superior files into its LPS frame), `space directions`,
  `space origin`, `encoding` (raw, gzip, bzip2, ascii).
- A `data file:` field may name any path, in a `.nrrd` as in a `.nhdr`, and ITK would read it: `/dev/zero`,
  `../../secret.raw`, or a list of files (`LIST`, a `slice%03d.raw 1 40 1` pattern). ITK (teem's parser) takes the
  field's name in any case, as `data file` or `datafile`, before `: `. Every header line whose name could be that
  one is found here, also those ITK would not read (`data  file :`): one at most, naming one file beside the
  header (`NAME` or `./NAME`, no space in it); anything else is refused before ITK reads the file.
"""

from __future__ import annotations

import re

from converters.dicom.geometry import RejectSeries
from converters.nifti.itk_image import beside, header_bytes

EXTENSIONS = (".nrrd", ".nhdr")
IO, WHAT = "NrrdImageIO", "NRRD"  # ITK's reader, and the format's name in reasons
MAX_HEADER = 1 << 16  # bytes of header text read here; a longer header is refused
_LINES = re.compile(rb"\r\n|\r|\n")  # teem ends a line at any of these
# a field ITK could read as `data file` (any case, `data file` or `datafile`), and more: spaces anywhere
_DATA_FILE = re.compile(rb"(?i)^[ \t]*data[ \t]*file[ \t]*:")


def _header_lines(path: str, rel: str) -> list[bytes]:
    """The header's lines after the magic: up to the first empty line (the data follows it), or the whole file of
    a detached header."""
    head = header_bytes(path, rel, MAX_HEADER + 1)
    if not head.startswith(b"NRRD000"):
        raise RejectSeries(f"{rel}: not a NRRD file (no NRRD000X magic)")
    lines = _LINES.split(head)
    if b"" in lines[1:-1]:  # the empty line that ends an attached header, followed by the data
        return lines[1:lines.index(b"", 1)]
    if len(head) > MAX_HEADER:
        raise RejectSeries(f"{rel}: a NRRD header longer than {MAX_HEADER} bytes")
    return lines[1:]


def data_file(path: str, rel: str) -> str | None:
    """The name of the file beside the header at `path` that holds its voxels, or None when they follow the header;
    RejectSeries for anything else."""
    found = [line for line in _header_lines(path, rel) if _DATA_FILE.match(line)]
    if not found:
        return None
    if len(found) > 1:
        raise RejectSeries(f"{rel}: its header has {len(found)} data file fields; one is read")
    try:
        name = found[0].split(b":", 1)[1].lstrip(b" \t").decode("utf-8")
    except UnicodeDecodeError:
        raise RejectSeries(f"{rel}: its data file field is no UTF-8 text") from None
    if name.upper().startswith("LIST") or "%" in name or re.search(r"\s", name):
        raise RejectSeries(f"{rel}: its data file field names a list of files (or a name with a space); only one "
                           "data file is read")
    return beside(path, rel, name[2:] if name.startswith("./") else name, "its data file field")
