"""Find the cases of a NIfTI source, with their label masks where the layout gives them.

Two layouts:
- the Medical Segmentation Decathlon / nnU-Net one: `imagesTr/` (split train) with masks of the same name in
  `labelsTr/`, `imagesTs/` (split test, masks in `labelsTs/` where there is one), and `dataset.json`. nnU-Net names
  a case's channel files `NAME_0000.nii.gz`, `NAME_0001.nii.gz`, ... and its mask `NAME.nii.gz`; HECKTOR 2022
  names them by their channel, `NAME__CT.nii.gz` (named_files.py);
- any other tree of volume files (`.nii`, `.nii.gz`, and the other formats case_folders.NIFTI names), split by
  train/val/test folders or `--split`: case folders with a mask beside their images (KiTS, BraTS, LiTS), folders
  of per-structure masks beside their image (TotalSegmentator), and files that are unlabeled cases
  (converters/nifti/case_folders.py). A file whose name says it is a mask (`seg`, `label`, `mask`) is never
  converted as an image.
"""

from __future__ import annotations

import logging
import os
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from converters.kind import Discovery
from converters.nifti import afni, pairs, parrec
from converters.nifti.case_folders import NIFTI, CaseFolders, stem
from converters.nifti.channels import ALL, same_channels, stacks
from converters.nifti.dataset_json import DatasetInfo, read_dataset_json
from converters.nifti.itk_files import data_file_name
from converters.nifti.meta_csv import NAME as META_CSV
from converters.nifti.meta_csv import apply_case_splits, read_case_splits
from converters.nifti.named_files import choose, named_cases
from converters.nifti.options import NiftiOptions
from converters.nifti.rejected_cases import case_rejections
from converters.nifti.structures import structure_classes, structure_items, with_structures
from converters.sample import Rejection, WorkItem
from converters.tree import SPLIT_FOLDERS, outside_rejections, split_folders
from converters.walk import Walk, display, is_folder, listed
from fastdata.errors import ConvertError

log = logging.getLogger(__name__)

CHANNEL_FILE = re.compile(r"^(.+)_(\d{4})$")  # nnU-Net: NAME_0000
FOLDERS = {"imagesTr": ("train", "labelsTr"), "imagesTs": ("test", "labelsTs")}  # images -> (split, masks)
SAME_NAME = ".nii and .nii.gz, .mhd and .mha, .nrrd and .nhdr, .hdr and .PAR, +orig.HEAD and +tlrc.HEAD, ..."  # read
# alike: either is the case
DECATHLON = {*FOLDERS, *(labels for _, labels in FOLDERS.values()), "dataset.json"}
NOT_NIFTI = ("not a NIfTI, Analyze, MGH, MINC, AFNI, PAR/REC, MetaImage or NRRD file (.nii, .nii.gz, .hdr + .img, "
             ".mgz, .mgh, .mnc, .HEAD + .BRIK, .PAR + .REC, .mhd, .mha, .nrrd, .nhdr)")


@dataclass(frozen=True)
class CaseFiles:
    """The payload of a case's work item: its image and mask as (absolute path, name), the name being the path
    relative to SRC or, without --keep-phi, its pseudonym; the channel of a 4D image to take (`axis`; None: the
    image must have one); the channel the case was converted from (a number or a name, for its json); the modality;
    and the number of classes a mask's values must stay below (0: unknown). A case of per-structure masks has
    `structures` instead of a `label`."""

    image: tuple[str, str]
    label: tuple[str, str] | None
    axis: int | None
    channel: int | str | None
    modality: str
    classes: int
    structures: tuple[tuple[str, str], ...] = ()  # per-structure masks in class order (value 1, 2, ...)
    channel_files: tuple[tuple[str, str], ...] = ()  # --channel all: a case's channel files, in channel order
    channel_names: tuple[str, ...] = ()  # --channel all: the names of its channels (() for one)
    structure_names: tuple[str, ...] = ()  # the class of each of `structures`, one each (reasons, json overlaps)

    @property
    def masks(self) -> tuple[tuple[str, str], ...]:
        """Every mask file of the case: its label volume, or its structures."""
        return (self.label,) if self.label is not None else self.structures


class _Found:
    """The NIfTI files under one folder, and the rejections of everything else there: files that are not NIfTI,
    and files of one name in one folder (`a.nii` and `a.nii.gz`: either could be the case; one would replace the
    other without a word)."""

    def __init__(self, src: Path, folder: Path, split: str, walk: Walk, rejected: list[Rejection]) -> None:
        found: dict[str, list[tuple[str, str]]] = defaultdict(list)
        entries = list(walk.files(folder, root=src))
        named = _read_with_headers([path for path, problem in entries if problem is None])
        refused: dict[str, str] = {}  # header -> why the walk refused its data file (a link not followed)
        for path, problem in entries:
            rel = display(path.relative_to(src).as_posix())
            if problem is None and not NIFTI.search(path.name):
                if path in named:
                    continue  # NAME.raw beside NAME.mhd, NAME.img beside NAME.hdr: read with its header
                problem = NOT_NIFTI
            if problem is None:
                found[stem(rel).lower()].append((str(path), rel))
            else:
                rejected.append(Rejection(split, rel, problem))
                refused.update((str(header), problem) for header in named.get(path, ()))
        self.files: list[tuple[str, str]] = []
        for same in found.values():
            if len(same) == 1 and same[0][0] in refused:  # the header of a refused data file: ITK would read it
                rejected.append(Rejection(split, same[0][1], f"its data file was refused: {refused[same[0][0]]}"))
            elif len(same) == 1:
                self.files.extend(same)
            else:
                reason = f"{len(same)} volume files of this name in one folder ({SAME_NAME}): keep one"
                rejected.extend(Rejection(split, rel, reason) for _, rel in sorted(same, key=lambda f: f[1]))
        self.files.sort(key=lambda f: f[1])


def _read_with(header: Path) -> list[Path]:
    """The files read with the volume file `header`: a MetaImage's or NRRD's data file (itk_files.py), a pair's
    `.img` and SPM's `.mat` (pairs.py), an AFNI dataset's `.BRIK` (afni.py), a PAR file's `.REC` (parrec.py); none
    for a file of one part."""
    for fmt in (pairs, afni, parrec):  # the formats nibabel reads from a header and the files beside it
        if fmt.is_header(header.name):
            return [Path(side) for side in fmt.sidecars(str(header))]
    name = data_file_name(header)
    return [header.with_name(name)] if name else []


def _read_with_headers(files: list[Path]) -> dict[Path, list[Path]]:
    """The files that headers among `files` name, each with those headers (_read_with)."""
    named: dict[Path, list[Path]] = defaultdict(list)
    for header in files:
        for side in _read_with(header):
            named[side].append(header)
    return dict(named)


def _volume_size(path: str) -> int:
    """The bytes of a volume's header and of the files read with it, for a resume's check that nothing changed (a
    `.raw` or `.img` rewritten beside its header)."""
    return os.path.getsize(path) + sum(f.stat().st_size for f in _read_with(Path(path)) if f.is_file())


def _modality(options: NiftiOptions, info: DatasetInfo, channel: int | None) -> str:
    return options.modality or info.modalities.get(channel or 0, "")


def _decathlon(src: Path, top: list[str], options: NiftiOptions, info: DatasetInfo, walk: Walk,
               rejected: list[Rejection]) -> dict[str, list[WorkItem]]:
    splits: dict[str, list[WorkItem]] = {}
    for folder, (split, labels_folder) in FOLDERS.items():
        if folder not in top:
            continue
        images = _Found(src, src / folder, split, walk, rejected).files
        has_masks = labels_folder in top
        masks = {stem(os.path.basename(rel)): (path, rel) for path, rel in
                 (_Found(src, src / labels_folder, split, walk, rejected).files if has_masks else [])}
        named = named_cases(images, set(masks))
        labels = labels_folder if has_masks else None
        items = (_numbered_items(split, images, masks, labels, options, info, walk, rejected) if named is None else
                 _named_items(split, named, masks, labels, options, len(info.classes), walk, rejected))
        for _, rel in masks.values():
            rejected.append(Rejection(split, rel, f"a mask without an image of the same name in {folder}"))
        splits[split] = items
    rejected += outside_rejections(src, [n for n in top if n not in DECATHLON],
                                   "not inside imagesTr, labelsTr, imagesTs or labelsTs", follow=walk.follow,
                                   private=walk.private)
    return splits


def _numbered_items(split: str, images: list[tuple[str, str]], masks: dict[str, tuple[str, str]],
                    labels_folder: str | None, options: NiftiOptions, info: DatasetInfo, walk: Walk,
                    rejected: list[Rejection]) -> list[WorkItem]:
    """The cases of an imagesTr folder of whole cases (liver_0) or of nnU-Net's numbered channel files (brain_000_0000),
    each with its mask (popped from `masks`) when there is a labels folder."""
    if isinstance(options.channel, str) and options.channel != ALL:
        raise ConvertError(f"--channel {options.channel}: the imagesTr layout numbers the channels of a case "
                           "(0, 1, ...; dataset.json names them); pass a number")
    has_masks = labels_folder is not None
    channel_files = _channel_files(images, set(masks), info)
    by_channel = channel_files is not None
    cases = channel_files or {stem(os.path.basename(rel)): {0: (path, rel)} for path, rel in images}
    items = []
    every = options.channel == ALL
    for case, files in sorted(cases.items(), key=lambda c: min(r for _, r in c[1].values())):
        first = files[min(files)][1]
        wanted = options.channel if by_channel and options.channel not in (None, ALL) else min(files)
        mask = masks.pop(case, None)
        channels = [rel for _, rel in (files[c] for c in sorted(files))]
        if by_channel and not every and (len(files) > 1 and options.channel is None or wanted not in files):
            rejected.extend(case_rejections(split, first, _channels_reason(files, options.channel, info),  # type: ignore[arg-type]
                                            channels=channels, masks=[mask[1]] if mask is not None else []))
            continue
        if has_masks and mask is None:
            shown = "" if walk.private else f" ({labels_folder}/{case}.nii.gz)"  # a case's name may be a patient's
            rejected.extend(case_rejections(split, first, f"no mask of the same name in {labels_folder}{shown}",
                                            channels=channels))
            continue
        axis = None if by_channel or every else options.channel
        stacked = every and by_channel and len(files) > 1
        items.append(WorkItem(split=split, rel=files[wanted][1], source=files[wanted][0], payload=CaseFiles(
            image=files[wanted], label=mask, axis=axis,  # type: ignore[arg-type]
            channel=ALL if every else (wanted if by_channel else options.channel),
            modality=options.modality or "" if every else _modality(options, info, wanted if by_channel else axis),
            classes=len(info.classes),
            channel_files=tuple(files[c] for c in sorted(files)) if stacked else (),
            channel_names=tuple(info.modalities.get(c, f"{c:04d}") for c in sorted(files)) if stacked else ())))
    return items


def _named_items(split: str, cases: dict[str, dict[str, tuple[str, str]]], masks: dict[str, tuple[str, str]],
                 labels_folder: str | None, options: NiftiOptions, classes: int, walk: Walk,
                 rejected: list[Rejection]) -> list[WorkItem]:
    """The cases of an imagesTr folder of channel files named CASE__NAME (named_files.py), each with its mask
    (popped from `masks`) when there is a labels folder."""
    items = []
    for case, files in sorted(cases.items(), key=lambda c: min(r for _, r in c[1].values())):
        first = min(files.values(), key=lambda f: f[1])[1]
        mask = masks.pop(case, None)
        choice = choose(files, options.channel)
        if isinstance(choice, str) or labels_folder is not None and mask is None:
            shown = "" if walk.private else f" ({labels_folder}/{case}.nii.gz)"  # a case's name may be a patient's
            reason = choice if isinstance(choice, str) else f"no mask of the same name in {labels_folder}{shown}"
            rejected.extend(case_rejections(split, first, reason, channels=sorted(r for _, r in files.values()),
                                            masks=[mask[1]] if mask is not None else []))
            continue
        image = choice.files[0]
        items.append(WorkItem(split=split, rel=image[1], source=image[0], payload=CaseFiles(
            image=image, label=mask, axis=None, channel=choice.channel, modality=options.modality or "",
            classes=classes,
            channel_files=choice.files if choice.stacked else (),
            channel_names=choice.names if choice.stacked else ())))
    return items


def _channel_files(images: list[tuple[str, str]], masks: set[str],
                   info: DatasetInfo) -> dict[str, dict[int, tuple[str, str]]] | None:
    """{case: {channel: file}} when the images are nnU-Net's channel files, else None. Names that end in four
    digits are not enough (AMOS's `amos_0001.nii.gz` is a whole case name): every case's channels must run 0, 1,
    ... with none missing, masks must be named after the cases, and a case of several channels needs dataset.json
    to name as many."""
    cases: dict[str, dict[int, tuple[str, str]]] = defaultdict(dict)
    for path, rel in images:
        match = CHANNEL_FILE.match(stem(os.path.basename(rel)))
        if match is None:
            return None
        cases[match.group(1)][int(match.group(2))] = (path, rel)
    if not cases or any(sorted(files) != list(range(len(files))) for files in cases.values()):
        return None
    if masks and not masks & set(cases):
        return None
    widest = max(len(files) for files in cases.values())
    return cases if widest == 1 or widest <= len(info.modalities) else None


def _channels_reason(files: dict[int, tuple[str, str]], channel: int | None, info: DatasetInfo) -> str:
    names = ", ".join(f"{c:04d}" + (f" ({info.modalities[c]})" if c in info.modalities else "") for c in sorted(files))
    if channel is None:
        return (f"a case of {len(files)} channel files ({names}); pick one with --channel C, or stack them all with "
                "--channel all")
    return f"no channel file {channel:04d} (--channel {channel}) for this case; it has {names}"


def _plain(src: Path, top: list[str], options: NiftiOptions, info: DatasetInfo, walk: Walk,
           rejected: list[Rejection]) -> tuple[dict[str, list[WorkItem]], bool, tuple[str, ...]]:
    split_dirs = split_folders([n for n in top if is_folder(src / n, follow=walk.follow)])
    roots = [(s, src / folder) for folder, s in split_dirs.items()] if split_dirs else [(options.split, src)]
    if split_dirs:  # dataset.json too: its rejection is dropped with the others' below
        rejected += outside_rejections(src, [n for n in top if n not in split_dirs],
                                       f"not inside a split folder ({SPLIT_FOLDERS})", follow=walk.follow,
                                       private=walk.private)

    def make_item(split: str, image: tuple[str, str], mask: tuple[str, str] | None, channel: int | str | None,
                  structures: tuple[tuple[str, str], ...] = (), classes: int = len(info.classes), *,
                  channel_files: tuple[tuple[str, str], ...] = (), channel_names: tuple[str, ...] = (),
                  structure_names: tuple[str, ...] = ()) -> WorkItem:
        return WorkItem(split=split, rel=image[1], source=image[0], payload=CaseFiles(
            image=image, label=mask, axis=channel if isinstance(channel, int) else None, channel=channel,
            modality=options.modality or "" if stacks(channel) else _modality(
                options, info, channel if isinstance(channel, int) else None),
            classes=classes, structures=structures, channel_files=channel_files, channel_names=channel_names,
            structure_names=structure_names))

    folders = CaseFolders(options, make_item, rejected, private=walk.private)
    splits = {split: folders.items(split, _Found(src, root, split, walk, rejected).files) for split, root in roots}
    cases = None if split_dirs else read_case_splits(src)
    if cases is not None:  # TotalSegmentator's meta.csv gives each case its split
        rejected[:] = [r for r in rejected if r.source != META_CSV]  # read, not an input
        splits, folders.structured = apply_case_splits(splits, folders.structured, cases, rejected)
    if not folders.structured:
        if options.structures:
            raise ConvertError(f"--structures {','.join(options.structures)}, but no case of the source has a folder "
                               "of per-structure masks (TotalSegmentator's segmentations/), which it picks from")
        return splits, bool(split_dirs), info.classes
    classes = structure_classes(folders.structured, info.classes, options.structures)
    made = structure_items(folders.structured, classes, lambda split, image, structures: make_item(
        split, image, None, None, structures, len(classes), structure_names=classes[1:]), rejected,
        private=walk.private, declared=bool(info.classes), structures=options.structures)
    return with_structures(splits, made, rejected), bool(split_dirs), classes


def _masks_identity(case: CaseFiles) -> list | None:
    """What a resume compares of a case's masks: name and size of its mask, or of each of its structures."""
    if case.label is not None:
        return [case.label[1], _volume_size(case.label[0])]
    return [[rel, _volume_size(path)] for path, rel in case.structures] or None


def discover_nifti(src: Path, /, *, options: NiftiOptions, follow_symlinks: bool, private: bool) -> Discovery:
    if not src.is_dir():
        raise ConvertError(f"source {src} is not a directory")
    info = read_dataset_json(src)
    walk = Walk(follow=follow_symlinks, private=private)
    top = listed(src)
    rejected: list[Rejection] = []
    if any(folder in top for folder in FOLDERS):
        if options.structures:
            raise ConvertError(f"--structures {','.join(options.structures)}: the imagesTr layout's masks hold label "
                               "values, not structures to pick; --structures picks per-structure mask files")
        splits, layout, classes = _decathlon(src, top, options, info, walk, rejected), "decathlon", info.classes
    else:
        splits, by_folder, classes = _plain(src, top, options, info, walk, rejected)
        layout = "split/volume" if by_folder else "volume"
        rejected = [r for r in rejected if r.source != "dataset.json"]  # read above, not an input
    if options.channel == ALL:
        splits = same_channels(splits, info, rejected, options.max_voxels)
    labelled = sum(bool(it.payload.masks) for items in splits.values() for it in items)
    identity = [[split, it.payload.image[1], _volume_size(it.payload.image[0]), _masks_identity(it.payload),
                 *([[[rel, _volume_size(path)] for path, rel in it.payload.channel_files]]
                   if it.payload.channel_files else [])]
                for split, items in splits.items() for it in items]
    log.info("found %d case(s), %d with a mask (%d files rejected)", sum(len(v) for v in splits.values()),
             labelled, len(rejected))
    return Discovery(splits, classes if labelled else (), rejected, layout, identity)
