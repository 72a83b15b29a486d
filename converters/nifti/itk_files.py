"""The volume files the nifti kind reads with SimpleITK rather than nibabel: MetaImage (metaimage.py) and NRRD
(nrrd.py). A header may name the file that holds its voxels; each format's check reads that name first, so ITK only
ever reads a file beside the header (itk_image.py reads the volume)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
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


def named_data_files(files: Iterable[Path]) -> dict[Path, list[Path]]:
    """The data files the headers among `files` name (LUNA16's `NAME.raw` beside `NAME.mhd`, `NAME.raw.gz` beside
    `NAME.nhdr`), each with the headers that name it. A header that fails its check names none here: it is
    rejected with its reason when it is read."""
    named: dict[Path, list[Path]] = defaultdict(list)
    for header in files:
        fmt = format_of(header.name)
        if fmt is None:
            continue
        try:
            name = fmt.data_file(str(header), header.name)
        except RejectSeries:
            continue
        if name is not None:
            named[header.with_name(name)].append(header)
    return dict(named)
