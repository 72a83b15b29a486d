"""The nifti kind: NIfTI volumes (`.nii`, `.nii.gz`; Analyze and NIfTI pairs, MGH, MetaImage, NRRD too), with their
segmentation masks in the Medical Segmentation Decathlon / nnU-Net layout -> the dicom kind's volume samples (npy +
json), plus `label.npy` for a mask."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from converters.dicom.label_volume import overlap_rule
from converters.dicom.options import (
    parse_orientation,
    parse_spacing,
    parse_structures,
    salt_from_args,
    shared_preprocessing,
)
from converters.dicom.privacy import file_name, note_random_salt, warn_keep_phi
from converters.kind import ArrowLayout, Discovery
from converters.nifti.case import CaseProcessor
from converters.nifti.discover import NIFTI, discover_nifti
from converters.nifti.options import NiftiOptions, parse_channel
from converters.sample import Rejection
from converters.val_fraction import apply_val_fraction
from converters.walk import first_files

ONE_SPLIT = ("volume", "decathlon")  # the layouts whose one labelled split --val-fraction may divide

DETECT_FILES = 200  # files whose names detect reads


class NiftiKind:
    name = "nifti"
    formats = ("wds",)
    member_order = ("npy", "label.npy", "json")
    probe_items = 4  # cases are large, as series are (converters/dicom)
    task_memory = 2 * 2**30

    def detect(self, src: Path, /) -> bool:
        return any(NIFTI.search(path.name) for path in first_files(src, DETECT_FILES))

    def add_arguments(self, parser: Any) -> None:
        # --spacing, --orientation, --salt, --keep-phi, --max-voxels, --split, --structures and --overlap are the
        # dicom kind's options, shared
        parser.add_argument("--channel", metavar="C",
                            help="nifti: the channel of a multi-channel case to convert: a number (a 4D image's 4th "
                                 "axis, nnU-Net's NAME_000C files), a name (BraTS's flair, t1, t1ce, t2 files), "
                                 "names (NAME,NAME: those, stacked in that order), or all (every channel, stacked: "
                                 "(C, z, y, x) volumes); default: cases of one channel only. dicom: Modality codes "
                                 "(CT,PT) stacking the series of one study that share a frame of reference, in "
                                 "that order, on the first one's grid; default: each series by itself")
        parser.add_argument("--resample-channels", action="store_true",
                            help="nifti: sample a channel file or mask that lies off its case's first channel's grid "
                                 "onto that grid (linear; masks nearest) instead of rejecting the case: a PET beside "
                                 "its CT, each on its own grid")
        parser.add_argument("--mask-word", metavar="WORD", action="append", default=[], dest="mask_words",
                            help="nifti: a word that marks a mask's file name, besides seg, segmentation, label, mask "
                                 "and gt (FreeSurfer's aseg, LA-2018's laendo); repeat for more")
        parser.add_argument("--modality", metavar="NAME",
                            help="nifti: the images' modality (CT makes their values Hounsfield units); default: the "
                                 "source's dataset.json")

    def options_from_args(self, args: Any) -> NiftiOptions:
        salt = salt_from_args(args)
        return NiftiOptions(spacing=parse_spacing(args.spacing), salt=salt, keep_phi=args.keep_phi, split=args.split,
                            max_voxels=args.max_voxels, channel=parse_channel(args.channel), modality=args.modality,
                            orientation=parse_orientation(args.orientation), val_fraction=args.val_fraction,
                            mask_words=tuple(args.mask_words), overlap=args.overlap,
                            structures=parse_structures(args.structures), resample_channels=args.resample_channels)

    def discover(self, src: Path, /, *, options: NiftiOptions, follow_symlinks: bool = True) -> Discovery:
        if options.keep_phi:
            warn_keep_phi()
        elif not options.salt:
            note_random_salt()
        found = discover_nifti(src, options=options, follow_symlinks=follow_symlinks, private=not options.keep_phi)
        held_from = "train" if found.layout == "decathlon" else options.split  # imagesTr is the train split
        return apply_val_fraction(found, options.val_fraction, held_from, layouts=ONE_SPLIT)

    def pseudonymize(self, discovery: Discovery, options: NiftiOptions) -> tuple[Discovery, dict[str, str]]:
        """Without --keep-phi, every file is named by its pseudonym under the (resolved) salt, in work items,
        payloads (written into each sample's json) and rejections; returns the discovery renamed and
        {pseudonym: path relative to SRC} for the engine's private report. File names may hold a patient's name."""
        if options.keep_phi:
            return discovery, {}
        paths: dict[str, str] = {}

        def named(rel: str) -> str:
            name = file_name(rel, options.salt)
            paths[name] = rel
            return name

        def renamed(pair: tuple[str, str] | None) -> tuple[str, str] | None:
            return None if pair is None else (pair[0], named(pair[1]))

        splits = {split: [replace(it, rel=named(it.rel), payload=replace(
            it.payload, image=renamed(it.payload.image), label=renamed(it.payload.label),
            structures=tuple(renamed(f) for f in it.payload.structures),
            channel_files=tuple(renamed(f) for f in it.payload.channel_files))) for it in items]
            for split, items in discovery.splits.items()}
        rejected = [Rejection(r.split, named(r.source), r.reason) for r in discovery.rejected]
        return replace(discovery, splits=splits, rejected=rejected), paths

    def processor(self, options: NiftiOptions) -> CaseProcessor:
        return CaseProcessor(options)

    def arrow_layout(self, discovery: Discovery, options: NiftiOptions) -> ArrowLayout:
        raise ValueError("the nifti kind writes WebDataset tar shards only (--format wds)")

    def describe(self, discovery: Discovery, options: NiftiOptions) -> dict[str, Any]:
        channels = next((it.payload.channel_names for items in discovery.splits.values() for it in items), ())
        return {
            "preprocessing": {
                **shared_preprocessing(options, "source paths kept (--keep-phi)"),
                "interpolation": "images linear (scipy.ndimage.affine_transform, order=1), masks nearest (order=0)",
                "values": "int16 where every value is a whole number in int16's range, else float32; CT in HU; "
                          "PAR/REC: display values (rescale slope and intercept)",
                "geometry": "the file's affine (NIfTI: sform, else qform; MGH: vox2ras; Analyze 7.5: nibabel's, x "
                            "right to left, or SPM's .mat; MINC: its axes' steps, starts and direction cosines; AFNI: "
                            "IJK_TO_DICOM_REAL; PAR/REC: nibabel's, of angulation and off-centre; MetaImage, NRRD: "
                            "ITK's); origin and direction in DICOM's LPS frame",
                "channel": options.channel,
                "channel_grid": ("a channel file or mask off its case's first channel's grid is sampled onto it "
                                 "(--resample-channels; the json's onto_grid)" if options.resample_channels else
                                 "every channel file and mask lies on its case's first channel's grid"),
                "modality": options.modality,
                "mask_words": list(options.mask_words),
                "overlap": overlap_rule(options.overlap),
                **({"structures": list(options.structures)} if options.structures else {}),
            },
            "extra": {"masks": "label.npy: uint8 (uint16 past 255 labels), on the image's grid",
                      **({"channels": list(channels)} if channels else {})},
        }


KIND = NiftiKind()
__all__ = ["KIND", "NiftiKind", "NiftiOptions"]
