"""The dicom kind: folders of DICOM series -> int16 Hounsfield-unit volumes (npy + json samples), with the masks of
their segmentations (SEG) or structure sets (RTSTRUCT) where the source has them (label.npy)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from converters.dicom.discover import SeriesFiles, discover_dicom, read_header
from converters.dicom.label_volume import POLICIES, overlap_rule
from converters.dicom.options import (
    DEFAULT_MAX_VOXELS,
    DEFAULT_SALT_ENV,
    DicomOptions,
    parse_modalities,
    parse_orientation,
    parse_spacing,
    parse_structures,
    salt_from_args,
    shared_preprocessing,
)
from converters.dicom.pet import NORMALISATIONS
from converters.dicom.privacy import (
    PHI_KEYWORDS,
    file_name,
    note_random_salt,
    quiet_values,
    series_name,
    warn_keep_phi,
)
from converters.dicom.series import SeriesProcessor
from converters.kind import ArrowLayout, Discovery
from converters.sample import Rejection
from converters.tree import SPLIT_HELP
from converters.walk import first_files

DETECT_FILES = 200  # files whose header detect reads
STACKING = ("--channel: one (C, z, y, x) volume per study and frame of reference, one series per channel; the first "
            "channel's series is the grid, the others are sampled onto it by patient position (linear; their masks "
            "nearest), their smallest value outside their extent")


class DicomKind:
    name = "dicom"
    formats = ("wds",)
    member_order = ("npy", "label.npy", "json")
    # series are large: size shards from a few of them (past engine.PROBE_KEEP_BYTES a probed one is converted twice)
    probe_items = 4
    task_memory = 2 * 2**30  # --executor ray: memory a series task requests (--task-memory; ~12 bytes per voxel)

    def detect(self, src: Path, /) -> bool:
        with quiet_values():
            return any(read_header(path)[0] is not None for path in first_files(src, DETECT_FILES))

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--spacing", type=float, nargs="+", metavar="MM",
                            help="dicom, nifti: resample to this voxel spacing in mm: one value (isotropic) or Z Y X "
                                 "(slice, row, column); default: keep each volume's native spacing")
        parser.add_argument("--orientation", metavar="CODE",
                            help="dicom, nifti: reorient every volume (permuting and flipping its axes, no "
                                 "interpolation) so that x, y, z point as CODE names: LPS (DICOM's, ITK's), RAS "
                                 "(nibabel's, MONAI's Orientationd); default: keep each volume's stored orientation")
        parser.add_argument("--keep-phi", action="store_true",
                            help="dicom, nifti: copy patient names, IDs, birth dates, accession numbers, institution, "
                                 "descriptions, UIDs and source paths into the dataset (off by default)")
        parser.add_argument("--salt", default=None,
                            help=f"dicom, nifti: secret key of the pseudonyms (default: ${DEFAULT_SALT_ENV}, else a "
                                 "random one per conversion: pseudonyms then match no other conversion)")
        parser.add_argument("--allow-burned-in", action="store_true",
                            help="convert images marked BurnedInAnnotation YES (rejected by default: their pixels "
                                 "may show names)")
        parser.add_argument("--max-voxels", type=int, default=DEFAULT_MAX_VOXELS,
                            help=f"dicom, nifti: reject a series (case) larger than this before or after resampling "
                                 f"(default {DEFAULT_MAX_VOXELS}; ~12 bytes of memory per voxel)")
        parser.add_argument("--split", default="train",
                            help=SPLIT_HELP)
        parser.add_argument("--structures", metavar="NAMES",
                            help="dicom, nifti: the mask classes to keep, comma-separated, in class order: ROI names "
                                 "of structure sets (RTSTRUCT), segment meanings of SEGs, per-structure mask files' "
                                 "names (any case); a class's other names follow a |, e.g. "
                                 "\"GTV-1,Heart,Lung_L|Lung-Left\"; default: every one of the source")
        parser.add_argument("--suv", nargs="?", const="bw", default=False, choices=NORMALISATIONS, metavar="KIND",
                            help="dicom: PET series in standardized uptake values by QIBA's rules (injected dose "
                                 "decayed to the scan), float32: by body weight (bw, the default), lean body mass "
                                 "(lbm: SUL, Janmahasatian's formula; needs PatientSize and PatientSex) or body "
                                 "surface area (bsa: Du Bois'; needs PatientSize); a PET series whose header cannot "
                                 "give them is rejected with the reason")
        parser.add_argument("--overlap", choices=POLICIES, default="reject",
                            help="dicom, nifti: a voxel two structures of a mask claim: reject the case (default), or "
                                 "give it to the later class in class order (the --structures order), recording the "
                                 "voxels each took in the sample's json")

    def options_from_args(self, args: Any) -> DicomOptions:
        salt = salt_from_args(args)
        return DicomOptions(spacing=parse_spacing(args.spacing), salt=salt, keep_phi=args.keep_phi,
                            split=args.split, allow_burned_in=args.allow_burned_in, max_voxels=args.max_voxels,
                            orientation=parse_orientation(args.orientation), val_fraction=args.val_fraction,
                            structures=parse_structures(args.structures), overlap=args.overlap, suv=args.suv,
                            channels=parse_modalities(args.channel))

    def discover(self, src: Path, /, *, options: DicomOptions, follow_symlinks: bool = True) -> Discovery:
        if options.keep_phi:
            warn_keep_phi()
        elif not options.salt:
            note_random_salt()
        return discover_dicom(src, split=options.split, follow_symlinks=follow_symlinks,
                              allow_burned_in=options.allow_burned_in, private=not options.keep_phi,
                              val_fraction=options.val_fraction, structures=options.structures,
                              channels=options.channels)

    def pseudonymize(self, discovery: Discovery, options: DicomOptions) -> tuple[Discovery, dict[str, str]]:
        """Without --keep-phi, every series and file is named by its pseudonym under the (resolved) salt,
        in work items, payloads (so conversion-time reasons name no path) and rejections; returns the
        discovery renamed and {pseudonym: path relative to SRC} for the engine's private report."""
        if options.keep_phi:
            return discovery, {}
        paths: dict[str, str] = {}

        def named(rel: str, name: str) -> str:
            paths[name] = rel
            return name

        def file(path: str, rel: str) -> tuple[str, str]:
            return path, named(rel, file_name(rel, options.salt))

        def renamed(series: SeriesFiles) -> SeriesFiles:
            return replace(series, files=tuple(file(*f) for f in series.files), seg=series.seg and file(*series.seg),
                           channels=tuple(renamed(s) for s in series.channels))

        splits = {}
        for split, items in discovery.splits.items():
            splits[split] = [replace(it, rel=named(it.rel, series_name(it.payload.uid, options.salt)),
                                     payload=renamed(it.payload)) for it in items]
        rejected = [Rejection(r.split, named(r.source, file_name(r.source, options.salt)), r.reason)
                    for r in discovery.rejected]
        return replace(discovery, splits=splits, rejected=rejected), paths

    def processor(self, options: DicomOptions):
        return SeriesProcessor(options)

    def arrow_layout(self, discovery: Discovery, options: DicomOptions) -> ArrowLayout:
        raise ValueError("the dicom kind writes WebDataset tar shards only (--format wds)")

    def describe(self, discovery: Discovery, options: DicomOptions) -> dict[str, Any]:
        return {
            "preprocessing": {
                **shared_preprocessing(options, "source paths and UIDs kept (--keep-phi)"),
                "interpolation": "images linear (scipy.ndimage.affine_transform, order=1), masks nearest (order=0)",
                "values": "CT: int16 Hounsfield units; others: int16 where every value is a whole number in its range, "
                          "else float32 (RescaleSlope/RescaleIntercept applied)" + (
                              f"; PET in SUV{options.suv} (QIBA), float32" if options.suv else ""),
                "slice_order": "ImagePositionPatient projected on the ImageOrientationPatient normal",
                "slice_tolerance": options.slice_tolerance,
                "burned_in_annotation": "converted" if options.allow_burned_in else "rejected",
                **({"structures": list(options.structures)} if options.structures else {}),
                "overlap": overlap_rule(options.overlap),
                **({"channels": list(options.channels), "stacking": STACKING} if options.channels else {}),
            },
            "extra": {"phi_removed": [] if options.keep_phi else list(PHI_KEYWORDS),
                      "masks": "label.npy of a series with a segmentation (SEG) or a structure set (RTSTRUCT): its "
                               "segments' or ROIs' classes (the manifest's classes), uint8 (uint16 past 255 classes), "
                               "on the series' grid" + ("; in a stack (--channel), any one series' mask, on the "
                                                         "first channel's grid" if options.channels else "")},
        }


KIND = DicomKind()
__all__ = ["KIND", "DicomKind", "DicomOptions"]
