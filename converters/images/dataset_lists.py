"""Datasets of several classes an image that come with lists of their own, converted as they lie with
--multi-label (and refused without it, naming the option): CelebA (celeba.py), Pascal VOC (voc.py), COCO (coco.py),
CheXpert (chexpert.py) and MIMIC-CXR-JPG (mimic_cxr.py). Each module reads its dataset's lists into `Labels`; the
files are taken as any listed files are (listed_files.py)."""

from __future__ import annotations

from pathlib import Path

from converters.images import celeba, chexpert, coco, mimic_cxr, voc
from converters.images.listed_files import ImageCollector, take_listed
from converters.kind import Discovery
from fastdata.errors import ConvertError


def _discover_celeba(src: Path, files: tuple[Path, Path], split: str, follow: bool, multi: bool) -> Discovery:
    """CelebA (celeba.py): its images' attributes, with --multi-label, split by its partition file."""
    if not multi:
        raise ConvertError(celeba.NEEDS_OPTION.format(src=src, attributes=files[0].name, folder=celeba.FOLDER))
    col = ImageCollector(src, follow=follow)
    table = celeba.read_celeba(src, *files)
    classes = take_listed(col, src, files[0], split, table=table, skip=celeba.FILES, multi=True)
    return Discovery(col.items, classes, col.rejected, "celeba", col.identity)


def _discover_voc(src: Path, split: str, follow: bool, multi: bool) -> Discovery:
    """Pascal VOC (voc.py): `JPEGImages/` with the classes and splits of the lists in `ImageSets/Main/`."""
    if not multi:
        raise ConvertError(voc.NEEDS_OPTION.format(src=src))
    table, unmarked = voc.read_voc(src)
    col = ImageCollector(src, follow=follow)

    def unmarked_split(name: str) -> tuple[str, str] | None:  # an image of a split no class list marks
        split_of = unmarked.get(Path(name).stem)
        return None if split_of is None else (split_of, voc.UNMARKED.format(split=split_of))

    classes = take_listed(col, src / voc.IMAGES, src / voc.LISTS, split, table=table, multi=True,
                          listing=voc.LISTS.as_posix(), why_unlisted=unmarked_split)
    return Discovery(col.items, classes, col.rejected, "voc", col.identity)


def _discover_coco(src: Path, splits: list[tuple[str, Path, Path]], follow: bool, multi: bool) -> Discovery:
    """COCO (coco.py): each split's folder with the classes its instances file gives its images."""
    if not multi:
        raise ConvertError(coco.NEEDS_OPTION.format(src=src))
    col = ImageCollector(src, follow=follow)
    classes: tuple[str, ...] = ()
    for split, instances, folder, table in coco.read_coco(src, splits):
        classes = take_listed(col, folder, instances, split, table=table, multi=True)
    return Discovery(col.items, classes, col.rejected, "coco", col.identity)


def _discover_chexpert(src: Path, files: list[tuple[str, Path]], follow: bool, multi: bool,
                       uncertain: str | None) -> Discovery:
    """CheXpert (chexpert.py): the X-rays its labels files list, each with its findings."""
    if not multi:
        raise ConvertError(chexpert.NEEDS_OPTION.format(src=src))
    col = ImageCollector(src, follow=follow)
    table = chexpert.read_chexpert(src, files, uncertain)
    classes = take_listed(col, src, files[0][1], "train", table=table, skip=tuple(chexpert.FILES), multi=True,
                          listing=" and ".join(path.name for _, path in files))
    return Discovery(col.items, classes, col.rejected, "chexpert", col.identity)


def _discover_mimic(src: Path, files: tuple[Path, Path | None], split: str, follow: bool, multi: bool,
                    uncertain: str | None) -> Discovery:
    """MIMIC-CXR-JPG (mimic_cxr.py): the X-rays under `files/` with their studies' findings, in their splits."""
    if not multi:
        raise ConvertError(mimic_cxr.NEEDS_OPTION.format(src=src, labels=files[0].name))
    table, unlabelled = mimic_cxr.read_mimic(src, *files, uncertain)
    col = ImageCollector(src, follow=follow)
    classes = take_listed(col, src / mimic_cxr.FOLDER, files[1] or files[0], split, table=table, multi=True,
                          why_unlisted=unlabelled.get)  # (read_mimic stops without a split file)
    return Discovery(col.items, classes, col.rejected, "mimic_cxr", col.identity)


def reads_uncertain(src: Path) -> bool:
    """Whether `src` is a dataset whose lists mark uncertain findings (CheXpert, MIMIC-CXR-JPG): --uncertain's."""
    return bool(chexpert.found(src)) or mimic_cxr.found(src) is not None


def discover_layout(src: Path, split: str, follow: bool, multi: bool, uncertain: str | None) -> Discovery | None:
    """A dataset of several classes an image laid out with its own lists (CelebA, Pascal VOC, COCO, CheXpert,
    MIMIC-CXR-JPG), refused without --multi-label; None for any other source."""
    attributes = celeba.found(src)
    if attributes is not None:
        return _discover_celeba(src, attributes, split, follow, multi)
    if voc.found(src):
        return _discover_voc(src, split, follow, multi)
    instances = coco.found(src)
    if instances:
        return _discover_coco(src, instances, follow, multi)
    xrays = chexpert.found(src)
    if xrays:
        return _discover_chexpert(src, xrays, follow, multi, uncertain)
    mimic = mimic_cxr.found(src)
    return None if mimic is None else _discover_mimic(src, mimic, split, follow, multi, uncertain)
