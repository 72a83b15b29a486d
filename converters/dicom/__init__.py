"""The dicom kind: folders of DICOM series -> int16 Hounsfield-unit volumes (npy + json samples)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from converters.dicom.discover import discover_dicom, read_header
from converters.dicom.options import DEFAULT_SALT_ENV, DicomOptions, parse_spacing
from converters.dicom.privacy import PHI_KEYWORDS, warn_keep_phi, warn_unsalted
from converters.dicom.series import SeriesProcessor
from converters.kind import ArrowLayout, Discovery
from converters.tree import first_files

DETECT_FILES = 200  # files whose header detect reads


class DicomKind:
    name = "dicom"
    formats = ("wds",)
    member_order = ("npy", "json")
    # series are large: size shards from a few of them (past engine.PROBE_KEEP_BYTES a probed one is converted twice)
    probe_items = 4

    def detect(self, src: Path, /) -> bool:
        return any(read_header(path)[0] is not None for path in first_files(src, DETECT_FILES))

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--spacing", type=float, nargs="+", metavar="MM",
                            help="resample to this voxel spacing in mm: one value (isotropic) or Z Y X "
                                 "(slice, row, column); default: keep each series' native spacing")
        parser.add_argument("--keep-phi", action="store_true",
                            help="copy patient names, IDs, birth dates, accession numbers, institution and UIDs "
                                 "into the shards (off by default)")
        parser.add_argument("--salt", default=None,
                            help=f"secret salt for the series hash (default: ${DEFAULT_SALT_ENV}, else unsalted)")
        parser.add_argument("--split", default="train",
                            help="split name for a source without train/val/test folders (default: train)")

    def options_from_args(self, args: Any) -> DicomOptions:
        salt = args.salt if args.salt is not None else os.environ.get(DEFAULT_SALT_ENV, "")
        return DicomOptions(spacing=parse_spacing(args.spacing), salt=salt, keep_phi=args.keep_phi,
                            split=args.split)

    def discover(self, src: Path, /, *, options: DicomOptions, follow_symlinks: bool = True) -> Discovery:
        if options.keep_phi:
            warn_keep_phi()
        if not options.salt:
            warn_unsalted()
        return discover_dicom(src, split=options.split, follow_symlinks=follow_symlinks)

    def processor(self, options: DicomOptions):
        return SeriesProcessor(options)

    def arrow_layout(self, discovery: Discovery, options: DicomOptions) -> ArrowLayout:
        raise ValueError("the dicom kind writes WebDataset tar shards only (--format wds)")

    def describe(self, discovery: Discovery, options: DicomOptions) -> dict[str, Any]:
        return {
            "preprocessing": {
                "spacing": None if options.spacing is None else list(options.spacing),
                "spacing_axes": "zyx",
                "interpolation": "linear (scipy.ndimage.affine_transform, order=1)",
                "values": "int16; CT in Hounsfield units (RescaleSlope/RescaleIntercept applied)",
                "slice_order": "ImagePositionPatient projected on the ImageOrientationPatient normal",
                "slice_tolerance": options.slice_tolerance,
                "keep_phi": options.keep_phi,
                "salted_series_hash": bool(options.salt),
            },
            "extra": {"phi_removed": [] if options.keep_phi else list(PHI_KEYWORDS)},
        }


KIND = DicomKind()
__all__ = ["KIND", "DicomKind", "DicomOptions"]
