"""Volumes in two files, read with nibabel: a NIfTI-1 or NIfTI-2 pair, or an Analyze 7.5 image (OASIS-1's, SPM's),
is a header `NAME.hdr` with its voxels in `NAME.img` beside it, and SPM keeps an Analyze image's affine in `NAME.mat`
beside them. nibabel reads those names and no other, so each is read with its header and is no file of its own
(discover.py); a header whose `.img` is missing is rejected before nibabel is asked (it would open the header and
fail only when the voxels are read). nibabel reads `.hdr` and `.HDR` (with `.IMG`, `.MAT`), no other case, and a
gzip-compressed pair as a whole: `NAME.hdr.gz` with `NAME.img.gz` (and `NAME.mat.gz`), the suffix in either case."""

from __future__ import annotations

import os

from converters.dicom.geometry import RejectSeries

HEADERS = (".hdr", ".HDR")
GZ = (".gz", ".GZ")


def _gzip_split(name: str) -> tuple[str, str]:
    """(`name` without `.gz`, the `.gz` in its case or "")."""
    return (name[:-3], name[-3:]) if name.endswith(GZ) else (name, "")


def _split(header: str, ext: str) -> tuple[str, str]:
    """(NAME, the suffix of `ext` beside the header `NAME.hdr`): in the header's case, `.gz` kept (`.img.gz` beside
    `.hdr.gz`)."""
    rest, gz = _gzip_split(header)
    base, suffix = os.path.splitext(rest)
    return base, (ext.upper() if suffix.isupper() else ext) + gz


def beside(header: str, ext: str) -> str:
    """`NAME.ext` beside the header `NAME.hdr`: its suffix in the header's case, as nibabel looks for it (the data
    file of an AFNI or PAR header too: afni.py, parrec.py)."""
    return "".join(_split(header, ext))


def is_header(name: str) -> bool:
    return _gzip_split(name)[0].endswith(HEADERS)


def sidecars(header: str) -> tuple[str, str]:
    """The files nibabel reads with the header `header`: its voxels (`.img`) and SPM's affine (`.mat`)."""
    return beside(header, ".img"), beside(header, ".mat")


def check(path: str, rel: str) -> None:
    """RejectSeries when the header's `.img` is not a file (the reason never names it: the name is the header's)."""
    if not os.path.isfile(sidecars(path)[0]):
        raise RejectSeries(f"{rel}: its data file ({_split(path, '.img')[1]} of the same name, beside it) is missing")

