"""Philips PAR/REC volumes, read with nibabel: a text header `NAME.PAR` (one line per 2D image: its slice, echo,
dynamic, image type, scaling and geometry) with the images' pixels in `NAME.REC` beside it, in the header's case
(`.par` with `.rec`: Kirby21's names). nibabel reads PAR versions 4 to 4.2, uncompressed only.

- Order: the images are sorted as nibabel's `strict_sort` does (slice, echo, cardiac phase, gradient orientation,
  b value, label type, dynamic, image type): slices make z, and each distinct rest is a volume along the fourth
  axis, a case's channels. nibabel's default order, that in which images first appear in the file, follows the
  order of the file's lines; this one does not (tested with the lines shuffled).
- Text: a PAR file is decoded as Latin-1 (every byte is a character), not in the locale's encoding as nibabel's
  own `load` does: a patient's name written by a scanner in Latin-1 (`Müller`) made it fail to read the file.
  The fields read are ASCII; the patient's name is never copied.
- Values: display values (DV = stored * rescale slope + rescale intercept, per image: nibabel's `dv` scaling, its
  default and its parrec2nii's), the values the scanner's console shows.
"""

from __future__ import annotations

import io
import os
from typing import Any

from converters.dicom.geometry import RejectSeries
from converters.nifti import pairs

HEADERS = (".PAR", ".par")
COMPRESSED = (".gz", ".bz2", ".zst")  # a `.REC.gz`: nibabel reads PAR/REC uncompressed only
MAX_HEADER = 64 * 2**20  # bytes; nibabel reads a header whole: one line of ~300 bytes per image (a long DTI run: MBs)


def is_header(name: str) -> bool:
    return name.endswith(HEADERS)


def sidecars(header: str) -> list[str]:
    """The REC file nibabel reads with `header` (`NAME.REC`, in the header's case)."""
    return [pairs.beside(header, ".rec")]


def check(path: str, rel: str) -> None:
    """RejectSeries unless the header at `path` is named in a case nibabel reads, has its REC beside it, and is no
    larger than MAX_HEADER. Reasons never name the files (names go into DST)."""
    if not is_header(path):
        raise RejectSeries(f"{rel}: a PAR header whose suffix is not .PAR or .par (nibabel reads no other case)")
    (rec,) = sidecars(path)
    if not os.path.isfile(rec):
        packed = next((suffix for suffix in COMPRESSED if os.path.isfile(rec + suffix)), None)
        if packed:
            raise RejectSeries(f"{rel}: its REC file is compressed ({os.path.splitext(rec)[1]}{packed}); nibabel "
                               "reads PAR/REC uncompressed only: decompress it first")
        raise RejectSeries(f"{rel}: its REC file ({os.path.splitext(rec)[1]} of the same name, beside it) is missing")
    try:
        size = os.path.getsize(path)
    except OSError as exc:
        raise RejectSeries(f"{rel}: unreadable ({type(exc).__name__}: {exc.strerror})") from exc
    if size > MAX_HEADER:
        raise RejectSeries(f"{rel}: a PAR header of {size} bytes; nibabel reads it whole (at most {MAX_HEADER})")


def load(path: str) -> Any:
    """nibabel's image of the PAR file at `path` (checked: `check`) and its REC: strictly sorted, display values, a
    header that lists more images than it holds refused (nibabel's `permit_truncated=False`). nibabel's errors
    propagate (the caller rejects the file, naming their type)."""
    from nibabel.fileholders import FileHolder
    from nibabel.parrec import PARRECImage

    with open(path, "rb") as f:
        text = f.read().decode("latin-1")
    file_map = {"header": FileHolder(path, io.StringIO(text)), "image": FileHolder(sidecars(path)[0])}
    return PARRECImage.from_file_map(file_map, strict_sort=True, scaling="dv", permit_truncated=False)
