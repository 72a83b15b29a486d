"""Cases of a loose NIfTI tree (not the imagesTr/labelsTr layout), folder by folder.

A folder whose one mask-named file (`seg`, `segmentation`, `label`, `mask`) lies beside its images is one case:
KiTS's `case_00000/imaging.nii.gz` + `segmentation.nii.gz`, BraTS's `BraTS20_Training_001/..._flair.nii.gz`,
`_t1`, `_t1ce`, `_t2` + `_seg.nii.gz`. Its channels are named by what their file names add to the name all its
files share (flair, t1, t1ce, t2); `--channel NAME` picks one, and with it every folder is one case, masked or not
(BraTS's validation set). Without a mask or a channel name, each file is a case of its own. A folder of several
masks pairs each with the one image whose name is the mask's without its mask word, give or take a first or last
word of the image's: LiTS's `segmentation-0.nii` with `volume-0.nii`, `liver_seg.nii.gz` with `liver.nii.gz`;
with `--channel`, a mask there takes the channel files named as it is plus a last word (HECKTOR 2021's
`CHGJ007_ct`, `CHGJ007_pt` and `CHGJ007_ct_gtvt` in one folder: `case_groups`), and a folder without masks of
such files is a case a name (`unmasked_groups`).
A mask-named folder beside one image holds that image's per-structure masks (TotalSegmentator's `segmentations/`):
such cases are gathered here and made into work items once the classes of every split are known
(converters/nifti/structures.py).
"""

from __future__ import annotations

import os
import posixpath
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from converters.nifti.channels import ALL, absent_reason, picked, several_reason
from converters.nifti.options import NiftiOptions
from converters.nifti.rejected_cases import case_rejections
from converters.sample import Rejection, WorkItem

# NIfTI, Analyze and NIfTI pairs (pairs.py), FreeSurfer's MGH, MINC (minc.py), PAR/REC (parrec.py), AFNI (afni.py: a
# dataset's view, +orig, +acpc or +tlrc, is not part of its name), MetaImage and NRRD (itk_files.py): read alike
NIFTI = re.compile(r"(?i)(\.(nii(\.gz)?|hdr(\.gz)?|mgz|mgh|mnc(\.gz)?|par|mhd|mha|nrrd|nhdr)"
                   r"|(\+(orig|acpc|tlrc))?\.head)$")
MASK_WORDS = ("seg", "segs", "segmentation", "segmentations", "label", "labels", "mask", "masks", "gt")
SEPARATORS = "_-. "
_TOKENS = re.compile(r"[_\-. ]+")
LAYOUTS = "one case per folder, or the imagesTr/labelsTr layout (docs/volumes.md)"
File = tuple[str, str]  # (absolute path, path relative to SRC)


def stem(name: str) -> str:
    return NIFTI.sub("", name)


def structure_name(rel: str) -> str:
    return stem(posixpath.basename(rel))


@dataclass(frozen=True)
class StructureCase:
    """One image and its folder of per-structure masks ({structure name: file}; converters/nifti/structures.py)."""

    split: str
    image: File
    masks: dict[str, File]


class MaskWords:
    """The words that mark a file, or a folder, as masks: MASK_WORDS and the user's (`--mask-word`: FreeSurfer's
    `aseg`, LA-2018's `laendo`), each a whole word of the name between `_`, `-`, `.`, space or its ends, any case."""

    def __init__(self, extra: tuple[str, ...] = ()) -> None:
        words = "|".join(re.escape(w) for w in (*MASK_WORDS, *extra))
        self._in_name = re.compile(rf"(?i)(^|[_\-. ])({words})($|[_\-. ])")
        self._word = re.compile(rf"(?i){words}")

    def in_name(self, name: str) -> bool:
        return bool(self._in_name.search(name))

    def is_word(self, token: str) -> bool:
        return bool(self._word.fullmatch(token))

    def is_mask(self, rel: str) -> bool:
        return self.in_name(stem(posixpath.basename(rel)))


DEFAULT_WORDS = MaskWords()


def channel_names(images: list[File], mask: File | None) -> dict[str, File]:
    """{channel name: file} of one case's images: what each file name adds to the name they all (and the mask)
    share, or the whole name where that leaves nothing."""
    stems = [stem(posixpath.basename(rel)) for _, rel in images]
    prefix = os.path.commonprefix(stems + ([stem(posixpath.basename(mask[1]))] if mask else []))
    if len(images) == 1:
        prefix = ""  # KiTS: "imaging" is the name, not the empty rest of it
    return {(s[len(prefix):].strip(SEPARATORS) or s): f for s, f in zip(stems, images)}


def _tokens(rel: str) -> list[str]:
    return [t.lower() for t in _TOKENS.split(stem(posixpath.basename(rel))) if t]


def pair_files(images: list[File], masks: list[File],
               mask_words: MaskWords = DEFAULT_WORDS) -> tuple[list[tuple[File, File]], list[File]]:
    """(image, mask) pairs of one folder, and the files left without one. A mask names the image its words make
    without its mask word; an image answers to its words, and to them less the first or the last
    (`volume-0` to `0`). Only one-to-one pairs are kept: a name two images answer to pairs neither."""
    answers: dict[str, list[File]] = defaultdict(list)
    for image in images:
        words = _tokens(image[1])
        for key in {"_".join(words), "_".join(words[1:]), "_".join(words[:-1])} - {""}:
            answers[key].append(image)
    claims: dict[File, list[File]] = defaultdict(list)
    for mask in masks:
        found = answers.get("_".join(t for t in _tokens(mask[1]) if not mask_words.is_word(t)), [])
        if len(found) == 1:
            claims[found[0]].append(mask)
    pairs = sorted((image, found[0]) for image, found in claims.items() if len(found) == 1)
    paired = {f for pair in pairs for f in pair}
    return pairs, sorted((f for f in images + masks if f not in paired), key=lambda f: f[1])


def _by_name_less_last_word(images: list[File]) -> dict[str, list[File]]:
    by_name: dict[str, list[File]] = defaultdict(list)
    for image in images:
        words = _tokens(image[1])
        if len(words) > 1:
            by_name["_".join(words[:-1])].append(image)
    return by_name


def unmasked_groups(images: list[File]) -> list[list[File]] | None:
    """Cases of channel files in one folder without masks (HECKTOR's test cases, `CHGJ100_ct` and `CHGJ100_pt`
    beside `CHGJ101_ct` and `CHGJ101_pt`): the images grouped by their names less the last word, where there are
    several groups, every image is in one, and every group's last words are the same (ct and pt); else None (the
    folder is one case: `t1_pre`, `t1_post` and `t2_fse` are not two)."""
    by_name = _by_name_less_last_word(images)
    if len(by_name) < 2 or sum(map(len, by_name.values())) != len(images):
        return None
    words = {tuple(sorted(_tokens(rel)[-1] for _, rel in group)) for group in by_name.values()}
    return [by_name[name] for name in sorted(by_name)] if len(words) == 1 else None


def case_groups(images: list[File], masks: list[File],
                mask_words: MaskWords = DEFAULT_WORDS) -> tuple[list[tuple[File, list[File]]], list[File]]:
    """Cases of channel files lying in one folder with their masks (HECKTOR 2021's `CHGJ007_ct`, `CHGJ007_pt` and
    `CHGJ007_ct_gtvt` beside the next case's files; BraTS's files taken out of their folders): (mask, its images)
    for each mask, and the files of no case. A mask's images are those whose names less their last word are the
    mask's name less its mask word; or, where one of them is named as the mask is less its mask word (a mask named
    after one channel, `_ct_gtvt`), that name less its last word. Images two masks would take, and those masks,
    are of no case."""
    by_name = _by_name_less_last_word(images)
    found: list[tuple[File, list[File]]] = []
    for mask in masks:
        words = [t for t in _tokens(mask[1]) if not mask_words.is_word(t)]
        group = by_name.get("_".join(words))
        if not group:  # a mask named after one of its case's channels (CHGJ007_ct_gtvt): that channel's case
            siblings = by_name.get("_".join(words[:-1]), [])
            group = siblings if any(_tokens(rel) == words for _, rel in siblings) else None
        if group:
            found.append((mask, group))
    taken = Counter(image for _, group in found for image in group)
    groups = [(mask, group) for mask, group in found if all(taken[image] == 1 for image in group)]
    grouped = {f for mask, group in groups for f in (mask, *group)}
    return groups, sorted((f for f in images + masks if f not in grouped), key=lambda f: f[1])


class CaseFolders:
    """Turns the NIfTI files of one split into cases; `make_item(split, image, mask, channel)` makes a work item
    (channel: a 4D image's channel number, the channel name the user picked, or None)."""

    def __init__(self, options: NiftiOptions, make_item: Callable[..., WorkItem], rejected: list[Rejection], *,
                 private: bool) -> None:
        self.options, self.make_item, self.rejected, self.private = options, make_item, rejected, private
        self.named = isinstance(options.channel, str)
        self.words = MaskWords(options.mask_words)
        self.structured: list[StructureCase] = []

    def items(self, split: str, files: list[File]) -> list[WorkItem]:
        """The work items of a split's files; cases of per-structure masks are kept in `self.structured` (their
        classes depend on every split: converters/nifti/structures.py)."""
        by_folder: dict[str, list[File]] = defaultdict(list)
        for f in files:
            by_folder[posixpath.dirname(f[1])].append(f)
        for folder in sorted(by_folder):
            parent, name = posixpath.split(folder)
            if self.words.is_word(name) and folder in by_folder:
                self._structures(split, by_folder.pop(folder), by_folder.pop(parent, []))
        out: list[WorkItem] = []
        for folder in sorted(by_folder):
            out.extend(self._folder(split, folder, by_folder[folder]))
        return out

    def _structures(self, split: str, masks: list[File], beside: list[File]) -> None:
        """A folder of per-structure masks (TotalSegmentator's `segmentations/`) and the files beside it: one image
        makes a case of them; anything else is rejected, every file."""
        images = [f for f in beside if not self.words.is_mask(f[1])]
        if len(images) == 1 and len(beside) == 1 and not self.named:
            self.structured.append(StructureCase(split, images[0], {structure_name(rel): (path, rel)
                                                                    for path, rel in masks}))
            return
        if self.named:
            reason = (f"a case of per-structure masks, but --channel {self.options.channel} takes the channels of "
                      "cases with one mask")
        elif len(beside) > len(images):
            reason = "a mask beside a folder of per-structure masks: a case has one or the other"
        else:
            reason = (f"a folder of per-structure masks beside {len(images)} images: its masks are the structures of "
                      "the one image beside it")
        self._reject(split, beside + masks, reason)

    def _reject(self, split: str, files: list[File], reason: str) -> list[WorkItem]:
        self.rejected.extend(Rejection(split, rel, reason) for _, rel in files)
        return []

    def _folder(self, split: str, folder: str, files: list[File]) -> list[WorkItem]:
        if any(self.words.in_name(part) for part in folder.split("/") if part):
            return self._reject(split, files, "inside a folder whose name says it holds masks, not images: masks "
                                              f"are paired with images in {LAYOUTS}")
        masks = [f for f in files if self.words.is_mask(f[1])]
        images = [f for f in files if not self.words.is_mask(f[1])]
        if len(masks) > 1:
            return self._cases_in_one_folder(split, images, masks)
        mask = masks[0] if masks else None
        if mask is not None and not images:
            return self._reject(split, files, "a mask without an image beside it")
        if mask is None and not self.named:
            return [self.make_item(split, image, None, self.options.channel) for image in images]
        groups = unmasked_groups(images) if mask is None else None
        if groups is not None:
            return [item for group in groups for item in self._case(split, group, None)]
        return self._case(split, images, mask)

    def _cases_in_one_folder(self, split: str, images: list[File], masks: list[File]) -> list[WorkItem]:
        """A folder of several masks: cases of channel files (`case_groups`), then, without --channel NAME, images
        paired one to one with their masks (`pair_files`)."""
        groups, rest = case_groups(images, masks, self.words)
        if self.named:
            self._reject(split, rest, f"in no case of channels in a folder of {len(masks)} masks: a case's channel "
                                      "files are named as its mask is without its mask word, plus a last word "
                                      f"(CHGJ007_ct and CHGJ007_pt with CHGJ007_ct_gtvt); or {LAYOUTS}")
            return [item for mask, group in groups for item in self._case(split, group, mask)]
        several = [(mask, group) for mask, group in groups if len(group) > 1]  # _case rejects each, naming --channel
        out = [item for mask, group in several for item in self._case(split, group, mask)]
        cased = {f for mask, group in several for f in (mask, *group)}
        pairs, rest = pair_files([f for f in images if f not in cased], [f for f in masks if f not in cased],
                                 self.words)
        self._reject(split, rest, f"not paired by name in a folder of {len(masks)} masks: a mask pairs with the "
                                  "one image named as it is without its mask word (segmentation-0 and volume-0, "
                                  f"liver_seg and liver); or {LAYOUTS}")
        return out + [self.make_item(split, image, mask, self.options.channel) for image, mask in pairs]

    def _case(self, split: str, images: list[File], mask: File | None) -> list[WorkItem]:
        channels = channel_names(images, mask)
        wanted = self.options.channel
        if len(channels) == 1 and not self.named:
            return [self.make_item(split, images[0], mask, wanted)]
        if self.named and wanted in channels:
            return [self.make_item(split, channels[wanted], mask, wanted)]  # type: ignore[index]
        names = picked(wanted)
        if names and all(n in channels for n in names):  # --channel CTres,SUV: those, in that order
            files = tuple(channels[n] for n in names)
            return [self.make_item(split, files[0], mask, wanted, channel_files=files, channel_names=names)]
        first = min(images, key=lambda f: f[1])
        whole = any(name == stem(posixpath.basename(rel)) for name, (_, rel) in channels.items())
        # names that are whole file names may be a patient's: said only with --keep-phi
        listed = "named by their whole file names" if whole and self.private else ", ".join(sorted(channels))
        if wanted == ALL and len(channels) == 1:
            return [self.make_item(split, images[0], mask, ALL)]
        if wanted == ALL and not (whole and self.private):  # channels in the order of their names
            names = tuple(sorted(channels))
            files = tuple(channels[n] for n in names)
            return [self.make_item(split, files[0], mask, ALL, channel_files=files, channel_names=names)]
        if wanted == ALL:
            reason = (f"a case of {len(channels)} channel files {listed}: --channel all names the channels by what "
                      "their file names add to the name they share, and whole file names may name a patient; "
                      "convert with --keep-phi")
        elif names:
            reason = absent_reason([n for n in names if n not in channels], wanted, listed)  # type: ignore[arg-type]
        elif self.named:
            reason = f"no channel {wanted!r} (--channel) in this case; its channels are {listed}"  # NAME: the user's
        else:
            reason = several_reason(len(channels), listed)
        self.rejected.extend(case_rejections(split, first[1], reason, channels=sorted(rel for _, rel in images),
                                             masks=[mask[1]] if mask is not None else []))
        return []
