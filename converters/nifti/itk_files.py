"""The volume files the nifti kind reads with SimpleITK rather than nibabel: MetaImage (metaimage.py) and NRRD
(nrrd.py). A header may name the file that holds its voxels; each format's check reads that name first, so ITK only
ever reads a file beside the header (itk_image.py reads the volume)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from converters.dicom.geometry import RejectSeries
from converters.nifti import metaimage, nrrd
from converters.nifti.itk_image import ItkImage

FORMATS = (metaimage, nrrd)


def format_of(name: str) -> ModuleType | None:
    """The module of the ITK format a file name has, or None."""
    lower = name.lower()
    return next((f for f in FORMATS if lower.endswith(f.EXTENSIONS)), None)


def open_itk(path: str, rel: str) -> ItkImage:
    """The volume at `path`, its header read after its data file was checked; RejectSeries otherwise."""
    fmt = format_of(path)
    assert fmt is not None, path
    fmt.data_file(path, rel)
    return ItkImage(path, rel, fmt.IO, fmt.WHAT)


def data_file_name(header: Path) -> str | None:
    """The name of the file beside `header` that holds its voxels (LUNA16's `NAME.raw` beside `NAME.mhd`,
    `NAME.raw.gz` beside `NAME.nhdr`), or None: a file of no ITK format, voxels inside the file, or a header that
    fails its check (rejected with its reason when it is read)."""
    fmt = format_of(header.name)
    if fmt is None:
        return None
    try:
        return fmt.data_file(str(header), header.name)
    except RejectSeries:
        return None
